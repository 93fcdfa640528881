#!/usr/bin/env bash
# Makes, on a Docker engine that can reach no registry, the base images that
# the Dockerfile, docker-compose.yml and docker-compose.replicas.yml name,
# tagged with those very names, so that the compose suite builds and runs the
# exact files instructors run.
# On a machine with a registry, Docker pulls the upstream images instead and
# this script is not needed. Each stand-in replaces one upstream image:
#
#   golang:1.26                               the build stage: Debian bookworm
#       (debootstrap, minbase, plus ca-certificates and git), this machine's Go
#       toolchain in /usr/local/go, and the official image's environment
#   gcr.io/distroless/static-debian12:nonroot the runtime: CA certificates,
#       /etc/passwd and /etc/group naming nonroot (65532), /tmp, user 65532, and
#       nothing else (no shell)
#   gcr.io/etcd-development/etcd:v3.7.3       etcd, etcdctl and etcdutl at the
#       release tools/etcd-image pins (built by tools/build-docker.sh) in
#       /usr/local/bin, over the same distroless base
#   haproxy:2.6                               docker-compose.replicas.yml's
#       proxy: Debian bookworm's HAProxy (the 2.6 line), run as the haproxy
#       user with the official image's command and configuration path
#
# Each image is made by a function of its own, and carries a label with a
# hash of that function and of the files it is made from; an image whose
# label matches is kept, so a second run costs nothing, and a change to one
# recipe remakes that image only (a new golang image would cost kubelab's
# image build its cache).
#
# The host's CA bundle goes into the build-stage and runtime stand-ins: where
# HTTPS passes through a proxy with a CA of its own, `go mod download` in
# `docker build` needs it. It is never committed, since it differs between
# machines.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
if ! command -v go >/dev/null 2>&1; then
	export PATH=/usr/local/go/bin:$PATH
fi
label=io.kubelab.standin
ca_bundle=/etc/ssl/certs/ca-certificates.crt
debian_mirror=${KUBELAB_DEBIAN_MIRROR:-http://deb.debian.org/debian}
distroless_path=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# passwd_files DIR: the accounts distroless's images hold, /tmp, and the
# host's CA bundle.
passwd_files() {
	mkdir -p "$1/etc" "$1/tmp" "$1/home/nonroot"
	chmod 1777 "$1/tmp"
	chown 65532:65532 "$1/home/nonroot"
	cat >"$1/etc/passwd" <<-'EOF'
	root:x:0:0:root:/root:/sbin/nologin
	nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin
	nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin
	EOF
	cat >"$1/etc/group" <<-'EOF'
	root:x:0:
	nobody:x:65534:
	nonroot:x:65532:
	EOF
	mkdir -p "$1/etc/ssl/certs"
	cp "$ca_bundle" "$1/etc/ssl/certs/ca-certificates.crt"
}

# debian ROOTFS PACKAGES: a minimal Debian bookworm with PACKAGES.
debian() {
	debootstrap --variant=minbase --include="$2" bookworm "$1" "$debian_mirror" >"$work/debootstrap.log" 2>&1 || {
		cat "$work/debootstrap.log" >&2
		exit 1
	}
	rm -rf "$1/var/cache/apt/archives/"*.deb "$1/var/lib/apt/lists/"*
}

# import ROOTFS IMAGE HASH CHANGE...: the folder as IMAGE, labelled HASH.
import() {
	local rootfs=$1 image=$2 want=$3
	shift 3
	local changes=()
	for c in "$@"; do
		changes+=(--change "$c")
	done
	tar -C "$rootfs" -c . | docker import "${changes[@]}" --change "LABEL $label=$want" - "$image" >/dev/null
}

make_distroless() { # gcr.io/distroless/static-debian12:nonroot
	passwd_files "$1"
	import "$1" "$2" "$3" "ENV PATH=$distroless_path SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt" \
		"USER 65532:65532" "WORKDIR /home/nonroot"
}

make_etcd() { # gcr.io/etcd-development/etcd:v3.7.3
	passwd_files "$1"
	mkdir -p "$1/usr/local/bin" "$1/var/etcd" "$1/var/lib/etcd"
	cp "$root/bin/etcd-release/etcd" "$root/bin/etcd-release/etcdctl" "$root/bin/etcd-release/etcdutl" "$1/usr/local/bin/"
	# As the upstream image: root, working directory /var/lib/etcd, etcd
	# as the command.
	import "$1" "$2" "$3" "ENV PATH=$distroless_path" "WORKDIR /var/lib/etcd" \
		"EXPOSE 2379 2380" 'CMD ["/usr/local/bin/etcd"]'
}

make_golang() { # golang:1.26
	debian "$1" ca-certificates,git
	cp "$ca_bundle" "$1/etc/ssl/certs/ca-certificates.crt"
	mkdir -p "$1/usr/local" "$1/go/bin" "$1/go/src"
	cp -a "$(go env GOROOT)" "$1/usr/local/go"
	# The official image's environment: Go on the PATH, GOPATH /go, and
	# GOTOOLCHAIN=local so that the image's Go is the one that builds.
	import "$1" "$2" "$3" \
		"ENV PATH=/go/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
		"ENV GOLANG_VERSION=$(go env GOVERSION | sed 's/^go//') GOPATH=/go GOTOOLCHAIN=local" "WORKDIR /go"
}

make_haproxy() { # haproxy:2.6
	debian "$1" haproxy
	mkdir -p "$1/usr/local/etc/haproxy"
	# The official image's command and configuration path, as its haproxy
	# user.
	import "$1" "$2" "$3" "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
		"USER haproxy" "WORKDIR /var/lib/haproxy" \
		'CMD ["haproxy", "-f", "/usr/local/etc/haproxy/haproxy.cfg"]'
}

# standin IMAGE RECIPE INPUT...: makes IMAGE with the function RECIPE
# unless an image of that name was made from the same recipe and inputs.
standin() {
	local image=$1 recipe=$2 want started=$SECONDS
	shift 2
	want=$({ declare -f "$recipe" passwd_files debian import; echo "$debian_mirror"; cat "$@"; } | sha256sum | cut -c1-16)
	if [ "$(docker image inspect -f "{{index .Config.Labels \"$label\"}}" "$image" 2>/dev/null)" = "$want" ]; then
		echo "$image: stand-in is current"
		return
	fi
	local old
	old=$(docker image inspect -f '{{.Id}}' "$image" 2>/dev/null || true)
	mkdir "$work/$recipe"
	"$recipe" "$work/$recipe" "$image" "$want"
	# The stand-in it replaces would stay on the disk, nameless.
	if [ -n "$old" ]; then
		docker image rm "$old" >/dev/null 2>&1 || true
	fi
	echo "$image: stand-in made in $((SECONDS - started)) s"
}

go_version_file=$work/go-version
go env GOVERSION GOROOT >"$go_version_file"
release=$root/bin/etcd-release

standin gcr.io/distroless/static-debian12:nonroot make_distroless "$ca_bundle"
standin gcr.io/etcd-development/etcd:v3.7.3 make_etcd "$ca_bundle" "$release/etcd" "$release/etcdctl" "$release/etcdutl"
standin golang:1.26 make_golang "$ca_bundle" "$go_version_file"
standin haproxy:2.6 make_haproxy

docker image ls --format '{{.Repository}}:{{.Tag}} {{.Size}}' |
	grep -E '^(golang:1.26|gcr.io/distroless/static-debian12:nonroot|gcr.io/etcd-development/etcd:v3.7.3|haproxy:2.6) '
