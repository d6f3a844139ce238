# syntax=docker/dockerfile:1
#
# paydispatch in one image: a static binary whose subcommand (serve,
# worker, relay, migrate, rail-sim, ...) is the container's command.
# deploy/compose.yaml and deploy/k8s/ run it.
#
# It holds no PostgreSQL and no Temporal. Without DATABASE_URL the binary
# starts a private PostgreSQL from the server binaries
# (/usr/lib/postgresql/15/bin), and without TEMPORAL_ADDRESS an embedded
# Temporal; in a container both are always set, so the binary is enough.
#
#   docker build --build-arg VERSION=$(git describe --always) -t paydispatch:dev .

# go.mod asks for Go 1.26.8 and the golang images build with
# GOTOOLCHAIN=local: the tag must resolve to 1.26.8 or later.
ARG GO_VERSION=1.26
FROM golang:${GO_VERSION} AS build
WORKDIR /src
# The modules first, so that a change in the sources does not fetch them again.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG VERSION=dev
# Static (no cgo: the SQLite of the embedded Temporal is pure Go), so it
# runs on distroless/static. The version comes from VERSION, not from git,
# which the build context may not hold.
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath -buildvcs=false -ldflags="-X main.version=${VERSION}" \
    -o /out/paydispatch ./cmd/paydispatch

# CA certificates and time zones, no shell.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/paydispatch /paydispatch
# The binary listens on loopback by default, which nothing outside the
# container reaches: serve's API, relay's /metrics, rail-sim's rail.
ENV PAYDISPATCH_HTTP_ADDR=0.0.0.0:8080 \
    PAYDISPATCH_METRICS_ADDR=0.0.0.0:9091 \
    PAYDISPATCH_RAIL_SIM_ADDR=0.0.0.0:9090
EXPOSE 8080 9091 9090
# Numeric, so that Kubernetes' runAsNonRoot can check it (nonroot is 65532).
USER 65532:65532
# Writable: serve writes the first admin token to ./.paydispatch when
# PAYDISPATCH_BOOTSTRAP_TOKEN is not set.
WORKDIR /home/nonroot
ENTRYPOINT ["/paydispatch"]
CMD ["serve"]
