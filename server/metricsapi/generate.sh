#!/usr/bin/env bash
# Regenerates zz_generated.openapi.go, the OpenAPI definitions of the metrics
# server's types, with the openapi-gen Kubernetes uses (a go.mod tool, so it
# runs offline once `go mod download` has fetched it). The apimachinery
# packages are inputs too, so that the server's documents are complete on
# their own, as a real aggregated server's are: kubelab merges them into its
# own, it does not complete them.
#
# OPENAPI_OUTPUT_DIR writes the file elsewhere (the staleness test uses it).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"
out="${OPENAPI_OUTPUT_DIR:-$here}"

# The list type's ListMeta has no json name of its own, as in every kube
# list; the report of such rule violations is not this package's to keep.
report="$(mktemp)"
trap 'rm -f "$report"' EXIT

go tool openapi-gen \
  --output-dir "$out" \
  --output-pkg github.com/kubelab/kubelab/server/metricsapi \
  --output-file zz_generated.openapi.go \
  --report-filename "$report" \
  github.com/kubelab/kubelab/server/metricsapi \
  k8s.io/apimachinery/pkg/apis/meta/v1 \
  k8s.io/apimachinery/pkg/runtime
