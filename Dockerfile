# syntax=docker/dockerfile:1
#
# frond's container image: one static binary on an empty base (scratch), run
# as 65532:65532, with its data directory in the volume /var/lib/frond so the
# root file system can be read-only. See docs/deploy.md.
#
#   docker build -t frond \
#     --build-arg FROND_VERSION="$(git describe --tags --match 'v*' 2>/dev/null || echo dev)" \
#     --build-arg FROND_COMMIT="$(git rev-parse HEAD)" \
#     --build-arg FROND_DATE="$(TZ=UTC git log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ)" .
#   docker run --read-only -v frond-data:/var/lib/frond -p 8080:8080 frond
#
# Ports: 8080 HTTP (http_addr, on by default), 9090 gRPC and 6380 the Redis
# protocol; gRPC and RESP are off unless FROND_GRPC_ADDR=:9090 and
# FROND_RESP_ADDR=:6380 are set (docs/configuration.md).
#
# It needs BuildKit (RUN --mount), Docker's builder since Docker 23.
# deploy/deploy_test.go checks this file's structure.

# The build stage is pinned to an exact Go release and Debian version. An
# image tag can be pushed again, so pin its digest too where a registry can
# be reached: read it with
#   docker buildx imagetools inspect golang:1.26.8-bookworm
# (the "Digest: sha256:..." line of the index) and write
#   FROM --platform=$BUILDPLATFORM golang:1.26.8-bookworm@sha256:<digest> AS build
# Keep the Go version that scripts/release.sh uses: the same Go and the same
# FROND_* values give the same bytes.
FROM --platform=$BUILDPLATFORM golang:1.26.8-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
# There is no .git in the build (.dockerignore): scripts/build.sh takes the
# version, commit and date it links in from these, passed as --build-arg
# (build arguments are in the environment of RUN). Unset, frond version
# says dev and unknown.
ARG FROND_VERSION
ARG FROND_COMMIT
ARG FROND_DATE
# Set by docker buildx for each --platform; pure Go cross-compiles.
ARG TARGETOS
ARG TARGETARCH
# The binary of the release archive when scripts/release.sh VERSION has
# built it into dist/ (checked against dist/SHA256SUMS): the image holds the
# bytes users download. Otherwise built here the same way: the same commit,
# Go release and FROND_* values give the same bytes.
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    archive="frond-${FROND_VERSION}-${TARGETOS:-linux}-${TARGETARCH:-amd64}"; \
    if [ -n "${FROND_VERSION}" ] && [ -f "dist/${archive}.tar.gz" ]; then \
      (cd dist && grep " ${archive}.tar.gz\$" SHA256SUMS | sha256sum -c -) && \
      mkdir -p /out && tar -xzf "dist/${archive}.tar.gz" -O "${archive}/frond" > /out/frond && chmod 0755 /out/frond; \
    else \
      bash scripts/build.sh /out/frond "${TARGETOS:-linux}/${TARGETARCH:-amd64}"; \
    fi
# The data directory, empty and owned by the user frond runs as. A new named
# volume mounted on it takes its owner and mode.
RUN install -d -m 0700 -o 65532 -g 65532 /out/data

FROM scratch
ARG FROND_VERSION
ARG FROND_COMMIT
ARG FROND_DATE
LABEL org.opencontainers.image.title="frond" \
      org.opencontainers.image.description="Distributed unique-ID service: segment IDs per business tag (Leaf's segment mode), snowflake IDs, UUIDs, serials" \
      org.opencontainers.image.source="https://github.com/frond-id/frond" \
      org.opencontainers.image.documentation="https://github.com/frond-id/frond/blob/main/docs/deploy.md" \
      org.opencontainers.image.version="${FROND_VERSION}" \
      org.opencontainers.image.revision="${FROND_COMMIT}" \
      org.opencontainers.image.created="${FROND_DATE}"
# CA certificates for TLS to stores and registries (MySQL tls=true,
# PostgreSQL sslmode=require, rediss://).
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/frond /frond
COPY --from=build --chown=65532:65532 /out/data/ /var/lib/frond/
ENV FROND_DATA_DIR=/var/lib/frond \
    FROND_HTTP_ADDR=:8080
USER 65532:65532
VOLUME ["/var/lib/frond"]
EXPOSE 8080 9090 6380
# Alive: GET /healthz on http://127.0.0.1:8080. With TLS on, or another
# http_addr, override it (docs/deploy.md).
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
    CMD ["/frond", "health", "--timeout", "4s"]
ENTRYPOINT ["/frond"]
CMD ["serve"]
