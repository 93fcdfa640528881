#!/usr/bin/env bash
# Regenerates generated/zz_generated.openapi.go with the same openapi-gen that
# Kubernetes uses. Run from anywhere; `go generate ./server/openapi/...` runs
# it too. The generator is a `tool` in go.mod, so its version is the
# k8s.io/kube-openapi that kubelab links (the one k8s.io/apimachinery v0.37.2
# pins) and it runs offline once `go mod download` has fetched it.
#
# OPENAPI_OUTPUT_DIR writes the file elsewhere (the staleness test uses it).
set -euo pipefail

want=v0.0.0-20260721132016-d427ff9ee9ad

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"
out="${OPENAPI_OUTPUT_DIR:-$here/generated}"

have="$(go list -m -f '{{.Version}}' k8s.io/kube-openapi)"
if [ "$have" != "$want" ]; then
  echo "generate.sh: go.mod has k8s.io/kube-openapi $have; the definitions are pinned to $want" >&2
  exit 1
fi

# The input packages: the package of every group version in
# registry.BuiltinGroupVersions (the one list of the served groups), plus the
# packages their types refer to (apimachinery's, and scheduling/v1alpha3,
# whose workload policies batch/v1's Job embeds). They must be in the module's
# build list. groups_test.go fails when this list and that one disagree.
inputs=(
  k8s.io/api/core/v1
  k8s.io/api/rbac/v1
  k8s.io/api/apps/v1
  k8s.io/api/coordination/v1
  k8s.io/api/authorization/v1
  k8s.io/api/authentication/v1
  k8s.io/api/autoscaling/v1
  k8s.io/api/policy/v1
  k8s.io/api/events/v1
  k8s.io/api/admissionregistration/v1
  k8s.io/api/autoscaling/v2
  k8s.io/api/batch/v1
  k8s.io/api/certificates/v1
  k8s.io/api/discovery/v1
  k8s.io/api/networking/v1
  k8s.io/api/node/v1
  k8s.io/api/scheduling/v1
  k8s.io/api/scheduling/v1alpha3
  k8s.io/api/storage/v1
  k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1
  k8s.io/kube-aggregator/pkg/apis/apiregistration/v1
  k8s.io/apimachinery/pkg/apis/meta/v1
  k8s.io/apimachinery/pkg/runtime
  k8s.io/apimachinery/pkg/version
  k8s.io/apimachinery/pkg/api/resource
  k8s.io/apimachinery/pkg/util/intstr
)

# k8s.io/api has known API rule violations (kube keeps an exceptions list);
# they are upstream's, so the report is discarded rather than failing here.
report="$(mktemp)"
trap 'rm -f "$report"' EXIT

go tool openapi-gen \
  --output-dir "$out" \
  --output-pkg github.com/kubelab/kubelab/server/openapi/generated \
  --output-file zz_generated.openapi.go \
  --report-filename "$report" \
  "${inputs[@]}"
