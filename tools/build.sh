#!/usr/bin/env bash
# Builds the real kubectl and etcdctl that tests drive kubelab with, from the
# versions pinned in tools/go.mod, into bin/kubectl and bin/etcdctl at the
# repository root. A binary newer than tools/go.mod, tools/go.sum, its main.go
# and this script is kept, so a second run costs nothing.
#
#   bash tools/build.sh          build what is missing or stale
#   FORCE=1 bash tools/build.sh  rebuild both
#
# The first kubectl build compiles several hundred packages: minutes on a
# small machine.
set -euo pipefail

tools=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$tools")
bin=$root/bin

if ! command -v go >/dev/null 2>&1; then
	export PATH=/usr/local/go/bin:$PATH
fi

# tools/ is its own module; a go.work somewhere above must not pull it in.
export GOWORK=off
export GOFLAGS=-buildvcs=false

mkdir -p "$bin"

# Two test binaries may ask for the tools at once: one builds, the other waits
# and then finds them fresh.
if command -v flock >/dev/null 2>&1; then
	exec 9>"$bin/.build.lock"
	flock 9
fi

# fresh NAME: bin/NAME exists and is newer than everything it is built from.
fresh() {
	local out=$bin/$1 src
	[ "${FORCE:-}" != 1 ] && [ -x "$out" ] || return 1
	for src in "$tools/go.mod" "$tools/go.sum" "$tools/$1/main.go" "$tools/build.sh"; do
		[ "$out" -nt "$src" ] || return 1
	done
}

cd "$tools"

# kubectl reports the Kubernetes release its k8s.io/kubectl module belongs to
# (module v0.X.Y is Kubernetes v1.X.Y), as a release build would: both
# component-base (kubectl version) and client-go (the User-Agent) are stamped.
kubectl_module=$(go list -m -f '{{.Version}}' k8s.io/kubectl)
kube_version=v1.${kubectl_module#v0.}
kube_minor=${kube_version#v1.}
kube_minor=${kube_minor%%.*}
build_date=$(go list -m -f '{{if .Time}}{{.Time.UTC.Format "2006-01-02T15:04:05Z"}}{{end}}' k8s.io/kubectl)
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
	ldflags+=" -X $pkg.gitVersion=$kube_version"
	ldflags+=" -X $pkg.gitMajor=1"
	ldflags+=" -X $pkg.gitMinor=$kube_minor"
	ldflags+=" -X $pkg.gitCommit="
	ldflags+=" -X $pkg.gitTreeState=clean"
	ldflags+=" -X $pkg.buildDate=${build_date:-1970-01-01T00:00:00Z}"
done

stale=()
for name in kubectl etcdctl; do
	if fresh "$name"; then
		echo "bin/$name is up to date"
	else
		stale+=("$name")
	fi
done

if [ ${#stale[@]} -gt 0 ]; then
	echo "building ${stale[*]} into bin/ ..."
	started=$SECONDS
	# Build into a scratch directory and move into place, so that nobody
	# ever runs a half-written binary.
	scratch=$(mktemp -d "$bin/.build.XXXXXX")
	trap 'rm -rf "$scratch"' EXIT
	pkgs=()
	for name in "${stale[@]}"; do
		pkgs+=("./$name")
	done
	nice -n 10 go build -trimpath -ldflags "$ldflags" -o "$scratch/" "${pkgs[@]}"
	for name in "${stale[@]}"; do
		mv -f "$scratch/$name" "$bin/$name"
	done
	echo "built ${stale[*]} in $((SECONDS - started))s"
fi

"$bin/kubectl" version --client
"$bin/etcdctl" version
