#!/usr/bin/env bash
# Runs every Go fuzz target in the module for a bounded time, one target
# at a time, and fails if any finds a crasher (a panic, a hang, or a broken
# property). From the repository root:
#
#   bash test/fuzz.sh            # every target, 10 s each
#   FUZZTIME=60s bash test/fuzz.sh
#   bash test/fuzz.sh FuzzPatch  # only the targets named
#
# FUZZTIME is go test's -fuzztime (a duration, or Nx for N executions);
# FUZZ_PARALLEL is how many fuzzing workers each target runs (default 1, so
# that a shared CI machine stays responsive). A crasher is written to the
# package's testdata/fuzz/<FuzzName>/ and printed; commit it as a
# regression seed with the fix.
#
# Each package's fuzz-instrumented test binary is built once (go test -c
# -fuzz, which is what turns the instrumentation on) and run once per
# target with the flags go test itself would pass: compiling and linking
# a binary that imports the Kubernetes libraries takes longer than the
# fuzzing, so one build per target spent most of the run compiling.
set -euo pipefail

cd "$(dirname "$0")/.."
export PATH=/usr/local/go/bin:$PATH

fuzztime=${FUZZTIME:-10s}
case $fuzztime in
*[0-9]) fuzztime=${fuzztime}s ;;
esac
parallel=${FUZZ_PARALLEL:-1}

# "<package dir> <FuzzName>" for every fuzz target, in a stable order.
targets=$(git ls-files -- '*_test.go' |
	xargs grep -H -o -E '^func Fuzz[A-Za-z0-9_]+\(f \*testing\.F\)' |
	sed -E 's#^(.*)/[^/]+_test\.go:func (Fuzz[A-Za-z0-9_]+).*#\1 \2#' | sort)

# coordinator_deadline: the run failed only with the fuzzing engine's own
# "context deadline exceeded", and wrote no failing input.
coordinator_deadline() {
	grep -qx '    context deadline exceeded' "$1" && ! grep -q 'Failing input written to' "$1"
}

bindir=$(mktemp -d)
trap 'rm -rf "$bindir"' EXIT
fuzzcache="$(go env GOCACHE)/fuzz"

# fuzzbinary builds package dir's instrumented test binary once and prints
# its path.
fuzzbinary() {
	local bin
	bin="$bindir/$(echo "$1" | tr / _).test"
	if [ ! -x "$bin" ]; then
		go test -c -fuzz . -o "$bin" "./$1" >&2 || return 1
	fi
	echo "$bin"
}

# fuzz runs one target from its package's directory, as go test does (its
# seed corpus and crashers are in the package's testdata/fuzz), with the
# fuzzing cache go test uses: $GOCACHE/fuzz/<import path>.
fuzz() { # dir bin name
	local importpath
	importpath=$(go list "./$1")
	(cd "$1" && "$2" -test.paniconexit0 -test.timeout=10m -test.run '^$' \
		-test.fuzz "^${3}\$" -test.fuzztime "$fuzztime" -test.parallel "$parallel" \
		-test.fuzzcachedir "$fuzzcache/$importpath")
}

failed=()
ran=0
start=$SECONDS
while read -r dir name; do
	[ -n "$name" ] || continue
	if [ $# -gt 0 ] && [[ " $* " != *" $name "* ]]; then
		continue
	fi
	ran=$((ran + 1))
	echo "=== $name (./$dir, $fuzztime)"
	t0=$SECONDS
	log=$(mktemp)
	if ! bin=$(fuzzbinary "$dir" 2>"$log"); then
		cat "$log"
		echo "--- FAIL $name (build, $((SECONDS - t0)) s)"
		failed+=("$name")
		rm -f "$log"
		continue
	fi
	if fuzz "$dir" "$bin" "$name" >"$log" 2>&1; then
		# The last progress line has the execution count.
		grep -E '^fuzz: elapsed' "$log" | tail -1 || true
		echo "--- ok $name ($((SECONDS - t0)) s)"
	elif coordinator_deadline "$log" && (cd "$dir" && "$bin" -test.run "^${name}\$") >/dev/null 2>&1; then
		# Go's fuzzing coordinator can report its own -fuzztime deadline as
		# a failure, with no input to blame (golang/go#75804, fixed in Go
		# 1.27). No failing input was written and the corpus still passes:
		# nothing was found.
		grep -E '^fuzz: elapsed' "$log" | tail -1 || true
		echo "--- ok $name ($((SECONDS - t0)) s; the fuzzing engine's deadline race, golang/go#75804, not an input)"
	else
		cat "$log"
		echo "--- FAIL $name ($((SECONDS - t0)) s)"
		failed+=("$name")
	fi
	rm -f "$log"
done <<<"$targets"

if [ "$ran" -eq 0 ]; then
	echo "no fuzz target matched: $*" >&2
	exit 1
fi
echo "fuzzed $ran targets in $((SECONDS - start)) s"
if [ ${#failed[@]} -gt 0 ]; then
	echo "crashers found by: ${failed[*]} (see testdata/fuzz/ in their packages)" >&2
	exit 1
fi
