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
# that a shared CI machine stays responsive); FUZZ_JOBS how many targets
# fuzz at once (default 2). A crasher is written to the
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
logdir=$(mktemp -d)
trap 'rm -rf "$bindir" "$logdir"' EXIT
fuzzcache="$(go env GOCACHE)/fuzz"

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

# Every package's fuzz binary first, two builds at a time (a link is
# mostly one core's work), then the targets, FUZZ_JOBS at a time: each
# target still fuzzes for the whole fuzztime with its own workers; running
# two side by side only stops one core idling while the other fuzzes.
jobs=${FUZZ_JOBS:-2}
selected=$(while read -r dir name; do
	[ -n "$name" ] || continue
	if [ $# -gt 0 ] && [[ " $* " != *" $name "* ]]; then
		continue
	fi
	echo "$dir $name"
done <<<"$targets")
if [ -z "$selected" ]; then
	echo "no fuzz target matched: $*" >&2
	exit 1
fi

start=$SECONDS
build() { # dir
	local bin
	bin="$bindir/$(echo "$1" | tr / _).test"
	if go test -c -fuzz . -o "$bin" "./$1" >"$logdir/build-$(echo "$1" | tr / _)" 2>&1; then
		echo "--- built ./$1 ($((SECONDS - start)) s)"
	else
		echo "--- FAIL build ./$1" >&2
		cat "$logdir/build-$(echo "$1" | tr / _)" >&2
		touch "$logdir/build-failed"
	fi
}
while read -r dir; do
	while [ "$(jobs -rp | wc -l)" -ge 2 ]; do wait -n || true; done
	build "$dir" &
done < <(echo "$selected" | cut -d' ' -f1 | sort -u)
wait
if [ -e "$logdir/build-failed" ]; then
	exit 1
fi

# target fuzzes one target and writes its log and its verdict (ok or FAIL,
# with the seconds it took) to $logdir/<name>.
target() { # dir name
	local dir=$1 name=$2 t0=$SECONDS bin log
	bin="$bindir/$(echo "$dir" | tr / _).test"
	log="$logdir/$name"
	echo "=== $name (./$dir, $fuzztime)" >"$log"
	if fuzz "$dir" "$bin" "$name" >"$log.out" 2>&1; then
		# The last progress line has the execution count.
		grep -E '^fuzz: elapsed' "$log.out" | tail -1 >>"$log" || true
		echo "--- ok $name ($((SECONDS - t0)) s)" >>"$log"
	elif coordinator_deadline "$log.out" && (cd "$dir" && "$bin" -test.run "^${name}\$") >/dev/null 2>&1; then
		# Go's fuzzing coordinator can report its own -fuzztime deadline as
		# a failure, with no input to blame (golang/go#75804, fixed in Go
		# 1.27). No failing input was written and the corpus still passes:
		# nothing was found.
		grep -E '^fuzz: elapsed' "$log.out" | tail -1 >>"$log" || true
		echo "--- ok $name ($((SECONDS - t0)) s; the fuzzing engine's deadline race, golang/go#75804, not an input)" >>"$log"
	else
		cat "$log.out" >>"$log"
		echo "--- FAIL $name ($((SECONDS - t0)) s)" >>"$log"
	fi
}
while read -r dir name; do
	while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
	target "$dir" "$name" &
done <<<"$selected"
wait

failed=()
ran=0
while read -r dir name; do
	ran=$((ran + 1))
	cat "$logdir/$name"
	if tail -1 "$logdir/$name" | grep -q '^--- FAIL'; then
		failed+=("$name")
	fi
done <<<"$selected"
echo "fuzzed $ran targets in $((SECONDS - start)) s"
if [ ${#failed[@]} -gt 0 ]; then
	echo "crashers found by: ${failed[*]} (see testdata/fuzz/ in their packages)" >&2
	exit 1
fi
