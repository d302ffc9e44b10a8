# syntax=docker/dockerfile:1
# elicitgate container image: a multi-stage build with the locked dependencies, run as a
# non-root user on a minimal base (distroless: glibc, CA certificates, no shell, no package
# manager). Build:   docker build -t elicitgate:0.1.0 .
# The orchestrator probes /healthz and /readyz on the admin port; no HEALTHCHECK here.
# What the runtime stage assumes (uid 65532, config under /etc/elicitgate, a read-only root,
# no shell) is exercised by tests/it/image_runtime.rs; the build command is the one .ci/run runs.

FROM rust:1.95-bookworm AS build
WORKDIR /src
# Manifests first, so the dependency download is cached apart from source changes.
COPY Cargo.toml Cargo.lock ./
COPY crates ./crates
COPY src ./src
COPY benches ./benches
COPY examples ./examples
RUN cargo build --release --locked --bin elicitgate \
 && strip target/release/elicitgate

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /src/target/release/elicitgate /usr/local/bin/elicitgate
COPY deploy/docker/elicitgate.yaml /etc/elicitgate/elicitgate.yaml
# distroless' nonroot user (65532); nothing is written outside mounted volumes.
USER 65532:65532
EXPOSE 8080 9090
ENTRYPOINT ["/usr/local/bin/elicitgate"]
CMD ["serve", "--config", "/etc/elicitgate/elicitgate.yaml"]
