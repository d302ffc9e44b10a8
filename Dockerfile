# syntax=docker/dockerfile:1
# elicitgate container image: a multi-stage build with the locked dependencies, run as a
# non-root user on a minimal base (distroless: glibc, CA certificates, no shell, no package
# manager). Build:   docker build --build-arg REVISION=$(git rev-parse HEAD) -t elicitgate:0.1.0 .
# The orchestrator probes /healthz and /readyz on the admin port; no HEALTHCHECK here.
# CI builds this file's runtime stage with podman on a locally assembled base and runs it
# read-only as uid 65532 (.ci/image.sh: /healthz, a blocked elicitation, a drain on SIGTERM);
# tests/it/image_runtime.rs proves the same assumptions without a container engine.

FROM rust:1.95-bookworm AS build
WORKDIR /src
# Manifests first: the dependency download is a layer of its own, rebuilt only when
# Cargo.lock changes. (Cargo needs every workspace member's manifest and each target's file
# to resolve, so empty stand-ins take the sources' place for this step.)
COPY Cargo.toml Cargo.lock ./
COPY crates/core/Cargo.toml crates/core/Cargo.toml
RUN mkdir -p src crates/core/src benches examples \
 && touch src/lib.rs src/main.rs crates/core/src/lib.rs benches/inspect.rs benches/relay.rs \
 && cargo fetch --locked \
 && rm -rf src crates/core/src benches examples
COPY crates ./crates
COPY src ./src
COPY benches ./benches
COPY examples ./examples
# The compiled dependencies are kept between builds in BuildKit's cache (not in the image).
RUN --mount=type=cache,target=/src/target,sharing=locked \
    cargo build --release --locked --bin elicitgate \
 && strip -o /elicitgate target/release/elicitgate

FROM gcr.io/distroless/cc-debian12:nonroot
ARG VERSION=0.1.0
ARG REVISION=unknown
LABEL org.opencontainers.image.title="elicitgate" \
      org.opencontainers.image.description="A reverse proxy that enforces policy on MCP elicitation" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /elicitgate /usr/local/bin/elicitgate
COPY deploy/docker/elicitgate.yaml /etc/elicitgate/elicitgate.yaml
# distroless' nonroot user (65532); nothing is written outside mounted volumes.
USER 65532:65532
EXPOSE 8080 9464
ENTRYPOINT ["/usr/local/bin/elicitgate"]
CMD ["serve", "--config", "/etc/elicitgate/elicitgate.yaml"]
