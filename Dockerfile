# syntax=docker/dockerfile:1
#
# configmap-mirror container image.
#
#   docker build -t ghcr.io/workshop-io/configmap-mirror:0.1.0 .
#
# `make image` and `make dist` (hack/image.sh) add the labels that differ
# from build to build with `--label`, which applies to the final image only:
# org.opencontainers.image.version (Cargo.toml), .revision (the git commit)
# and .source (the chart's `sources`). Build arguments would not do: buildah 1.28
# reuses a cached LABEL step whatever their values.
#
# Builder and runtime are both Debian 12 (bookworm), so the binary's glibc
# matches the runtime's. The binary uses rustls + ring, which need libc and
# libgcc, hence distroless "cc" rather than "static".

############################ planner ############################
# Reduces the sources to a skeleton: every Cargo.toml of the workspace, the
# lockfile, and stub main.rs/lib.rs files. The builder copies only this, so its
# dependency layer is reused until a manifest or Cargo.lock changes, whatever
# the workspace members are.
FROM rust:1.95-bookworm AS planner
# Every RUN here is plain POSIX sh with no pipeline: builders that ignore SHELL
# (buildah in OCI format) run it under dash, and a failure must fail the build.
WORKDIR /build
COPY . .
# find -exec ... {} + exits non-zero when the script fails for any manifest.
# (No literal "{}" may appear in the script: find would substitute it.)
RUN mkdir -p /skeleton \
    && cp Cargo.lock /skeleton/ \
    && find . -name Cargo.toml -not -path './target/*' -exec sh -ec ' \
         for manifest; do \
           dir="/skeleton/$(dirname "$manifest")"; \
           mkdir -p "$dir/src"; \
           cp "$manifest" "$dir/"; \
           echo "fn main() { }" > "$dir/src/main.rs"; \
           touch "$dir/src/lib.rs"; \
         done' sh {} +

############################ builder ############################
FROM rust:1.95-bookworm AS builder
WORKDIR /build

# 1. Dependencies only, built against the skeleton. Only the root package is
#    built (`cargo build` at the workspace root); the other members' manifests
#    are there because cargo loads the whole workspace.
COPY --from=planner /skeleton/ ./
RUN cargo build --release --locked

# 2. The real sources. Their mtimes come from the build context and may be older
#    than the stub build's outputs, so touch them to make cargo rebuild the crate.
COPY . .
RUN find src -name '*.rs' -exec touch {} + \
    && cargo build --release --locked \
    && cp target/release/configmap-mirror /configmap-mirror

############################ runtime ############################
# No shell, no package manager; runs as the distroless "nonroot" user.
FROM gcr.io/distroless/cc-debian12:nonroot

LABEL org.opencontainers.image.title="configmap-mirror" \
      org.opencontainers.image.description="Keeps an exact, self-healing copy of labeled ConfigMaps" \
      org.opencontainers.image.licenses="Apache-2.0"

COPY --from=builder /configmap-mirror /configmap-mirror

USER 65532:65532
# glibc serves allocations of 32 KiB and more from mappings of their own,
# returned when freed, instead of from its heap, where the space of a big
# source's read, decode and write would stay behind. Measured with 150
# sources of 512 KiB: +4 MiB of resident memory instead of +17 MiB, and no
# change with 10,000 small ones (docs/contributing/benchmarks.md). The bench runs the binary
# with the same setting (tests/bench/src/profile.rs).
ENV GLIBC_TUNABLES=glibc.malloc.mmap_threshold=32768
# One listener: /metrics, /healthz, /readyz (--http-addr, default [::]:8080:
# IPv4 and IPv6).
EXPOSE 8080
ENTRYPOINT ["/configmap-mirror"]
