#!/usr/bin/env bash
# Builds what the compose suite (test/compose) needs beyond Docker Engine
# itself, from the versions pinned in three modules of their own under tools/:
#
#   bin/docker/cli-plugins/docker-compose   Compose v5 (tools/docker-compose)
#   bin/docker/cli-plugins/docker-buildx    buildx (tools/docker-buildx)
#   bin/etcd-release/{etcd,etcdctl,etcdutl} etcd's release binaries, static
#                                           (tools/etcd-image), for the
#                                           stand-in etcd image
#
# The suite runs the docker CLI with DOCKER_CONFIG=bin/docker, so that these
# plugins are the ones it finds and nothing in the user's ~/.docker changes.
# Instructors use the plugins their own Docker ships.
#
# Compose and buildx each report the version they were built from: Compose
# refuses a buildx whose version reads v0.0.0+unknown. A binary newer than
# its module's go.mod and go.sum and this script is kept, so a second run
# costs nothing; the first takes minutes.
set -euo pipefail

tools=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$tools")
bin=$root/bin

if ! command -v go >/dev/null 2>&1; then
	export PATH=/usr/local/go/bin:$PATH
fi
export GOWORK=off
export GOFLAGS=-buildvcs=false

mkdir -p "$bin/docker/cli-plugins" "$bin/etcd-release"
if command -v flock >/dev/null 2>&1; then
	exec 9>"$bin/.build-docker.lock"
	flock 9
fi

# fresh OUT MODULE_DIR: OUT exists and is newer than what it is built from.
fresh() {
	local out=$1 dir=$2 src
	[ "${FORCE:-}" != 1 ] && [ -x "$out" ] || return 1
	for src in "$dir/go.mod" "$dir/go.sum" "$tools/build-docker.sh"; do
		[ "$out" -nt "$src" ] || return 1
	done
}

# build OUT MODULE_DIR PACKAGE [LDFLAGS...]: go build into a scratch file,
# then move it into place, so that nobody runs a half-written binary.
build() {
	local out=$1 dir=$2 pkg=$3 ldflags=${4:-}
	if fresh "$out" "$dir"; then
		echo "${out#"$root"/} is up to date"
		return
	fi
	echo "building ${out#"$root"/} ..."
	local started=$SECONDS tmp
	tmp=$(mktemp "$out.XXXXXX")
	(cd "$dir" && CGO_ENABLED=0 nice -n 10 go build -trimpath -ldflags "-s -w $ldflags" -o "$tmp" "$pkg")
	chmod 755 "$tmp"
	mv -f "$tmp" "$out"
	echo "built ${out#"$root"/} in $((SECONDS - started)) s"
}

# version MODULE_DIR MODULE: the version the module's go.mod pins.
version() {
	(cd "$1" && go list -m -f '{{.Version}}' "$2")
}

compose_version=$(version "$tools/docker-compose" github.com/docker/compose/v5)
build "$bin/docker/cli-plugins/docker-compose" "$tools/docker-compose" \
	github.com/docker/compose/v5/cmd \
	"-X github.com/docker/compose/v5/internal.Version=$compose_version"

buildx_version=$(version "$tools/docker-buildx" github.com/docker/buildx)
build "$bin/docker/cli-plugins/docker-buildx" "$tools/docker-buildx" \
	github.com/docker/buildx/cmd/buildx \
	"-X github.com/docker/buildx/version.Version=$buildx_version"

# etcd's own release build stamps no version either: each binary reports the
# version compiled into its module.
build "$bin/etcd-release/etcd" "$tools/etcd-image" go.etcd.io/etcd/server/v3
build "$bin/etcd-release/etcdctl" "$tools/etcd-image" go.etcd.io/etcd/etcdctl/v3
build "$bin/etcd-release/etcdutl" "$tools/etcd-image" go.etcd.io/etcd/etcdutl/v3
