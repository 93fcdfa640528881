# syntax=docker/dockerfile:1
#
# kubelab's container image: the official Go image builds a static binary, and
# a distroless image with no shell and no package manager runs it as a
# non-root user.
#
#   docker build -t kubelab .
#   docker run --rm -p 8080:8080 -v kubelab-data:/data kubelab
#
# On its own the image runs kubelab with its embedded etcd in /data;
# docker-compose.yml runs it against a 3-member etcd cluster instead.

FROM golang:1.26 AS build
WORKDIR /src

# Modules first, in a layer of their own: it is rebuilt only when go.mod or
# go.sum change, not on every source edit.
COPY go.mod go.sum ./
RUN go mod download

COPY . .

# --- Generated code (to do) ---------------------------------------------------
# kubelab has no templ views yet. When the web package arrives, this is where
# `templ generate` runs (templ at the version pinned in go.mod), followed by a
# check that fails the build if it changed any committed generated file.
# ------------------------------------------------------------------------------

RUN --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o /out/kubelab ./cmd/kubelab

# An empty /data owned by the runtime user: a named volume mounted there
# starts as a copy of it, so kubelab can write to it without root.
RUN mkdir -p /out/data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/kubelab /kubelab
COPY --from=build --chown=65532:65532 /out/data /data

# 65532 is distroless's "nonroot" user.
USER 65532:65532
ENV KUBELAB_DATA_DIR=/data \
    KUBELAB_LISTEN=:8080
VOLUME ["/data"]
EXPOSE 8080

# The image has no shell and no curl, so the binary probes its own /readyz
# (which anyone may read, as on kube-apiserver).
HEALTHCHECK --interval=10s --timeout=6s --start-period=30s --retries=3 \
    CMD ["/kubelab", "probe", "http://127.0.0.1:8080/readyz"]

ENTRYPOINT ["/kubelab"]
