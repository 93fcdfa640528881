#!/usr/bin/env bash
# Runs the Kubernetes project's own e2e tests against a fresh kubelab:
#
#   bash test/conformance/run.sh          # focus A: the API-machinery conformance specs
#   bash test/conformance/run.sh B        # focus B: the same subject, not tagged conformance
#
# The first run builds e2e.test from k8s.io/kubernetes v1.37.2 (this
# module's go.mod) into bin/, which takes about 8 minutes on 2 cores; later
# runs reuse it. The JUnit report is kept in bin/conformance-<focus>/.
set -euo pipefail

cd "$(dirname "$0")/../.."
export PATH=/usr/local/go/bin:$PATH
root=$PWD
focus_name=${1:-A}

case "$focus_name" in
A)
	focus='\[sig-api-machinery\] (Watchers|Servers with support for API chunking|Servers with support for Table transformation|server version|Discovery|AggregatedDiscovery|CustomResourceDefinition resources|CustomResourceDefinition Watch|CustomResourcePublishOpenAPI|FieldValidation|CustomResourceFieldSelectors|Namespaces).*\[Conformance\]'
	skip='$^'
	;;
B)
	focus='\[sig-api-machinery\] (API Streaming|ServerSideApply|Servers with support for Table transformation|OpenAPIV3|health handlers|Server request timeout|Discovery should|Servers with support for API chunking)'
	skip='Serial|Slow|Disruptive'
	;;
*)
	echo "usage: $0 [A|B]" >&2
	exit 2
	;;
esac

mkdir -p bin
if [ ! -x bin/e2e.test ]; then
	echo "building e2e.test (k8s.io/kubernetes v1.37.2; minutes)..." >&2
	(cd test/conformance && go test -c -vet=off -o "$root/bin/e2e.test" k8s.io/kubernetes/test/e2e)
fi
go build -o bin/kubelab ./cmd/kubelab

data=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
bin/kubelab --listen "127.0.0.1:$port" --data-dir "$data" --etcd-listen-client= \
	--pod-start-delay 1s --compaction-interval 1m >"$data/kubelab.log" 2>&1 &
kubelab=$!
trap 'kill $kubelab 2>/dev/null; wait $kubelab 2>/dev/null; rm -rf "$data"' EXIT
for _ in $(seq 100); do
	if bin/kubelab probe "http://127.0.0.1:$port/readyz" >/dev/null 2>&1; then break; fi
	sleep 0.2
done

report="bin/conformance-$focus_name"
rm -rf "$report" && mkdir -p "$report"
set +e
bin/e2e.test --kubeconfig "$data/kubeconfig" --provider=skeleton --ginkgo.no-color \
	--ginkgo.focus="$focus" --ginkgo.skip="$skip" --report-dir="$report" \
	--ginkgo.timeout=60m >"$report/e2e.log" 2>&1
rc=$?
set -e
cp "$data/kubelab.log" "$report/" || true
grep -E '^(Ran [0-9]+ of [0-9]+ Specs|SUCCESS!|FAIL!)' "$report/e2e.log" || tail -20 "$report/e2e.log"
grep -E '^\s*\[FAIL\]' "$report/e2e.log" | sort -u || true
exit $rc
