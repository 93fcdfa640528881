#!/usr/bin/env bash
# Runs the differential suite: the same scenarios against kubelab and against
# the real kube-apiserver v1.37.2 over etcd v3.7.3, compared as a client sees
# them (see docs/CONFORMANCE.md).
#
#   KUBE_REFERENCE=path/to/reference bash test/differential/run.sh
#
# KUBE_REFERENCE is the directory of the reference's build.sh and cluster.sh.
# The reference is built into bin/reference if it is not there (10-15 minutes
# on 2 cores), started on loopback (etcd 127.0.0.1:23790, kube-apiserver
# 127.0.0.1:6443: one at a time), and stopped at the end. The table of results
# is written to bin/differential.md. It takes about 7 minutes.
set -euo pipefail

cd "$(dirname "$0")/../.."
root=$PWD
: "${KUBE_REFERENCE:?set KUBE_REFERENCE to the directory holding build.sh and cluster.sh of the reference}"
export REF_BIN=$root/bin/reference
[ -x "$REF_BIN/kube-apiserver" ] || bash "$KUBE_REFERENCE/build.sh"
# cluster.sh needs a kubectl: the one on PATH, else the project's own.
if ! command -v kubectl >/dev/null; then
	bash tools/build.sh >/dev/null
	export PATH=$root/bin:$PATH
fi
go build -o bin/kubelab ./cmd/kubelab

export REF_DIR
REF_DIR=$(mktemp -d)
trap 'bash "$KUBE_REFERENCE/cluster.sh" stop; rm -rf "$REF_DIR"' EXIT
bash "$KUBE_REFERENCE/cluster.sh" start

cd test/differential
KUBELAB_BIN=$root/bin/kubelab ETCDCTL=$REF_BIN/etcdctl DIFF_REPORT=$root/bin/differential.md \
	go test -count=1 -timeout 20m -v . 2>&1 | tail -n 80
