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

# The generated templ code in the source must be what its .templ files
# generate (templ at the version go.mod pins): regenerate into place and fail
# the build if any generated file changed.
RUN cp -r . /tmp/committed \
 && go tool templ generate >/dev/null \
 && for f in $(find . -name '*_templ.go'); do \
      cmp -s "$f" "/tmp/committed/$f" || { echo "$f is out of date: run go tool templ generate" >&2; exit 1; }; \
    done

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
