#!/usr/bin/env bash
# Makes, on a Docker engine that can reach no registry, the three base images
# that the Dockerfile and docker-compose.yml name, tagged with those very names,
# so that the compose suite builds and runs the exact files instructors run.
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
#
# Each image carries a label with a hash of everything it is made from; an
# image whose label matches is kept, so a second run costs nothing.
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

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# current IMAGE HASH: IMAGE exists and was made from inputs hashing to HASH.
current() {
	[ "$(docker image inspect -f "{{index .Config.Labels \"$label\"}}" "$1" 2>/dev/null)" = "$2" ]
}

# hash FILE...: one hash of the files' contents and of this script.
hash() {
	cat "$@" "${BASH_SOURCE[0]}" | sha256sum | cut -c1-16
}

# passwd_files DIR: the accounts distroless's images hold.
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

distroless_path=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

# --- gcr.io/distroless/static-debian12:nonroot ------------------------------
image=gcr.io/distroless/static-debian12:nonroot
want=$(hash "$ca_bundle")
if current "$image" "$want"; then
	echo "$image: stand-in is current"
else
	rootfs=$work/distroless
	passwd_files "$rootfs"
	tar -C "$rootfs" -c . | docker import \
		--change "ENV PATH=$distroless_path SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt" \
		--change "USER 65532:65532" --change "WORKDIR /home/nonroot" \
		--change "LABEL $label=$want" - "$image" >/dev/null
	echo "$image: stand-in made"
fi

# --- gcr.io/etcd-development/etcd:v3.7.3 ------------------------------------
image=gcr.io/etcd-development/etcd:v3.7.3
release=$root/bin/etcd-release
want=$(hash "$ca_bundle" "$release/etcd" "$release/etcdctl" "$release/etcdutl")
if current "$image" "$want"; then
	echo "$image: stand-in is current"
else
	rootfs=$work/etcd
	passwd_files "$rootfs"
	mkdir -p "$rootfs/usr/local/bin" "$rootfs/var/etcd" "$rootfs/var/lib/etcd"
	cp "$release/etcd" "$release/etcdctl" "$release/etcdutl" "$rootfs/usr/local/bin/"
	# As the upstream image: root, working directory /var/lib/etcd, etcd as
	# the command.
	tar -C "$rootfs" -c . | docker import \
		--change "ENV PATH=$distroless_path" --change "WORKDIR /var/lib/etcd" \
		--change "EXPOSE 2379 2380" --change 'CMD ["/usr/local/bin/etcd"]' \
		--change "LABEL $label=$want" - "$image" >/dev/null
	echo "$image: stand-in made"
fi

# --- golang:1.26 ------------------------------------------------------------
image=golang:1.26
goroot=$(go env GOROOT)
go_version=$(go env GOVERSION)
want=$(echo "$go_version $debian_mirror" | hash "$ca_bundle" -)
if current "$image" "$want"; then
	echo "$image: stand-in is current"
else
	started=$SECONDS
	rootfs=$work/golang
	debootstrap --variant=minbase --include=ca-certificates,git bookworm \
		"$rootfs" "$debian_mirror" >"$work/debootstrap.log" 2>&1 || {
		cat "$work/debootstrap.log" >&2
		exit 1
	}
	rm -rf "$rootfs/var/cache/apt/archives/"*.deb "$rootfs/var/lib/apt/lists/"*
	cp "$ca_bundle" "$rootfs/etc/ssl/certs/ca-certificates.crt"
	mkdir -p "$rootfs/usr/local" "$rootfs/go/bin" "$rootfs/go/src"
	cp -a "$goroot" "$rootfs/usr/local/go"
	# The official image's environment: Go on the PATH, GOPATH /go, and
	# GOTOOLCHAIN=local so that the image's Go is the one that builds.
	tar -C "$rootfs" -c . | docker import \
		--change "ENV PATH=/go/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
		--change "ENV GOLANG_VERSION=${go_version#go} GOPATH=/go GOTOOLCHAIN=local" \
		--change "WORKDIR /go" --change "LABEL $label=$want" - "$image" >/dev/null
	echo "$image: stand-in made in $((SECONDS - started)) s"
fi

docker image ls --format '{{.Repository}}:{{.Tag}} {{.Size}}' |
	grep -E '^(golang:1.26|gcr.io/distroless/static-debian12:nonroot|gcr.io/etcd-development/etcd:v3.7.3) '
