#!/usr/bin/env bash
# Builds the controller's container image from the project's Dockerfile,
# unmodified, with podman, and saves it as a docker-archive under
# target/image/ (for `podman load`, `docker load` or `ctr images import`).
#
# Its OCI labels name the crate's version (Cargo.toml), the commit it is
# built from (`git rev-parse HEAD`, with "-dirty" when the work tree has
# changes git does not ignore) and the repository (the chart's `home`).
#
# No container registry is needed. The two base images the Dockerfile names
# are made here first, as local stand-ins tagged with those very names:
#   - the builder (rust:<version>-bookworm): a Debian bookworm root file system
#     from mmdebstrap, plus the Rust toolchain already installed on this
#     machine, which must be the version the tag names;
#   - the runtime (distroless cc, nonroot): the Debian packages distroless is
#     made of, unpacked into an empty file system, with user nonroot (65532).
# They are for building offline only; with Docker and a registry, the
# Dockerfile gets the real ones. They are kept in a podman storage of the
# project's own (under the per-user cache), so they never shadow the real
# images in your own podman or Docker storage, and are rebuilt only when what
# they were made from changes.
#
#   IMAGE            name of the built image (default: localhost/configmap-mirror:dev)
#   ARCHIVE          where to save it (default: target/image/configmap-mirror.tar)
#   ARCHIVE_FORMAT   docker-archive (default) or oci-archive
#   REVISION         the revision label (default: the commit, as above)
#
# Needs root, podman and mmdebstrap (apt-get install podman mmdebstrap).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

IMAGE="${IMAGE:-localhost/configmap-mirror:dev}"
archive="${ARCHIVE:-$root/target/image/configmap-mirror.tar}"
archive_format="${ARCHIVE_FORMAT:-docker-archive}"
# name= and size_bytes= lines, read by the end-to-end test.
meta="$archive.meta"

# The Debian packages of gcr.io/distroless/cc-debian12 (its "static" set plus
# libgcc); nothing else: the binary links only against libc and libgcc_s.
RUNTIME_PACKAGES=(base-files netbase tzdata ca-certificates libc6 libgcc-s1)
# What the builder needs besides the toolchain: a C compiler and libc headers
# for `ring`, and CA certificates for crates.io.
BUILDER_PACKAGES=(ca-certificates gcc libc6-dev)
STAND_IN_LABEL=org.configmap-mirror.stand-in

log() { printf 'image: %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

case "$archive_format" in
  docker-archive | oci-archive) ;;
  *) die "ARCHIVE_FORMAT=$archive_format: expected docker-archive or oci-archive" ;;
esac

[ "$(id -u)" = 0 ] || die "needs root (podman's storage and mmdebstrap run as root here)"
command -v podman >/dev/null || die "podman is required: apt-get install podman"
command -v mmdebstrap >/dev/null || die "mmdebstrap is required: apt-get install mmdebstrap"
command -v rustc >/dev/null || die "rustc is required: see https://rustup.rs"

# Podman's configuration and storage: the project's own, so nothing under /etc
# changes and the stand-ins stay out of the user's storage.
cache_root="${XDG_CACHE_HOME:-$HOME/.cache}/configmap-mirror"
podman_state="$root/.local/podman"
mkdir -p "$podman_state" "$cache_root/containers"
cat >"$podman_state/containers.conf" <<'EOF'
[containers]
# Raising RLIMIT_NOFILE needs CAP_SYS_RESOURCE, which root may lack (in some
# VMs and containers); an empty list keeps the limits podman inherits.
default_ulimits = []

[engine]
# crun also sets rlimits itself; runc does not when none are asked for.
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
EOF
cat >"$podman_state/storage.conf" <<EOF
[storage]
driver = "overlay"
graphroot = "$cache_root/containers/storage"
runroot = "$podman_state/run"
EOF
export CONTAINERS_CONF="$podman_state/containers.conf"
export CONTAINERS_STORAGE_CONF="$podman_state/storage.conf"

# The base images, as the Dockerfile names them: the builder is the first
# stage's, the runtime the last stage's.
from_images=()
while read -r image; do from_images+=("$image"); done \
  < <(awk 'toupper($1) == "FROM" { print $2 }' Dockerfile)
[ "${#from_images[@]}" -ge 2 ] || die "expected at least two FROM lines in the Dockerfile"
builder_image="${from_images[0]}"
runtime_image="${from_images[${#from_images[@]} - 1]}"
# rust:<version>-<suite>
[[ "$builder_image" =~ ^rust:([0-9]+\.[0-9]+(\.[0-9]+)?)-([a-z]+)$ ]] \
  || die "the builder image $builder_image is not of the form rust:<version>-<debian suite>"
rust_version="${BASH_REMATCH[1]}"
suite="${BASH_REMATCH[3]}"

# The installed toolchain must be the one the tag names: the Dockerfile's
# release build must be the build CI tests.
sysroot="$(rustc --print sysroot)"
rustc_reported="$(rustc --version)"
case "$rustc_reported" in
  "rustc $rust_version "* | "rustc $rust_version."*) ;;
  *) die "the Dockerfile builds with Rust $rust_version but rustc is: $rustc_reported (rustup toolchain install $rust_version)" ;;
esac
full_rust_version="$(awk '{ print $2 }' <<<"$rustc_reported")"
# Named as rustup names it in the official image.
toolchain_name="$full_rust_version-$(rustc -vV | sed -n 's/^host: //p')"

# A stand-in is reused while this key matches the label it was made with.
builder_key="$suite rust $full_rust_version packages ${BUILDER_PACKAGES[*]} ${RUNTIME_PACKAGES[*]} v1"
runtime_key="$suite packages ${RUNTIME_PACKAGES[*]} from the builder of ($builder_key) v1"

stand_in_key() {
  podman image inspect --format "{{ index .Config.Labels \"$STAND_IN_LABEL\" }}" "$1" 2>/dev/null || true
}

work="$(mktemp -d "${TMPDIR:-/tmp}/configmap-mirror-image.XXXXXX")"
trap 'rm -rf "$work"' EXIT

# Debian packages the runtime is made of, kept from the builder's own
# bootstrap so both have the very same libc.
debs="$cache_root/stand-in-debs/$suite-rust-$full_rust_version"

make_builder() {
  log "making the builder stand-in $builder_image: Debian $suite + Rust $full_rust_version (once; about a minute)"
  local toolchain_dir="/usr/local/rustup/toolchains/$toolchain_name"
  rm -rf "$debs"
  mkdir -p "$debs.partial"
  # tar on stdout: mmdebstrap then cleans up its own mounts and directory.
  # essential/unlink: keep the essential packages' .debs (libc6, base-files) for the copy.
  mmdebstrap --quiet --variant=minbase --skip=essential/unlink \
    --include="$(IFS=,; echo "${BUILDER_PACKAGES[*]},${RUNTIME_PACKAGES[*]}")" \
    --customize-hook="cp \"\$1\"/var/cache/apt/archives/*.deb '$debs.partial/'" \
    --customize-hook="mkdir -p \"\$1$toolchain_dir\" \"\$1/usr/local/cargo/bin\"" \
    --customize-hook="cp -a '$sysroot/bin' '$sysroot/lib' '$sysroot/libexec' '$sysroot/etc' \"\$1$toolchain_dir/\"" \
    --customize-hook="for tool in cargo rustc rustdoc; do ln -s '$toolchain_dir/bin/'\$tool \"\$1/usr/local/cargo/bin/\$tool\"; done" \
    "$suite" "$work/builder.tar"
  mv "$debs.partial" "$debs"
  # The environment of the official rust image.
  podman import \
    --change "ENV RUSTUP_HOME=/usr/local/rustup CARGO_HOME=/usr/local/cargo RUST_VERSION=$full_rust_version" \
    --change "ENV PATH=/usr/local/cargo/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
    --change "LABEL $STAND_IN_LABEL=\"$builder_key\"" \
    --change 'CMD ["bash"]' \
    "$work/builder.tar" "$builder_image" >/dev/null
  rm -f "$work/builder.tar"
}

make_runtime() {
  log "making the runtime stand-in $runtime_image from Debian packages: ${RUNTIME_PACKAGES[*]}"
  local rootfs="$work/runtime" package deb
  mkdir -p "$rootfs"
  for package in "${RUNTIME_PACKAGES[@]}"; do
    deb=("$debs/${package}"_*.deb)
    [ -f "${deb[0]}" ] || die "no $package package among the builder's in $debs"
    dpkg-deb --extract "${deb[0]}" "$rootfs"
  done
  # What package scripts would have made, and distroless ships.
  cat "$rootfs"/usr/share/ca-certificates/*/*.crt >"$rootfs/etc/ssl/certs/ca-certificates.crt"
  cat >"$rootfs/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin
nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin
EOF
  cat >"$rootfs/etc/group" <<'EOF'
root:x:0:
nobody:x:65534:
tty:x:5:
staff:x:50:
nonroot:x:65532:
EOF
  mkdir -p "$rootfs/tmp" "$rootfs/home/nonroot" "$rootfs/root"
  chmod 1777 "$rootfs/tmp"
  chmod 700 "$rootfs/home/nonroot" "$rootfs/root"
  chown 65532:65532 "$rootfs/home/nonroot"
  # Licences stay, as in distroless; the rest of the documentation goes.
  find "$rootfs/usr/share/doc" -type f ! -name copyright -delete
  rm -rf "$rootfs/usr/share/man" "$rootfs/usr/share/info" "$rootfs/usr/share/lintian"
  tar --numeric-owner -C "$rootfs" -cf "$work/runtime.tar" .
  podman import \
    --change "USER 65532:65532" \
    --change "WORKDIR /home/nonroot" \
    --change "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt" \
    --change "LABEL $STAND_IN_LABEL=\"$runtime_key\"" \
    "$work/runtime.tar" "$runtime_image" >/dev/null
}

started=$(date +%s)
if [ "$(stand_in_key "$builder_image")" != "$builder_key" ] || [ ! -d "$debs" ]; then
  make_builder
else
  log "builder stand-in $builder_image: cached"
fi
if [ "$(stand_in_key "$runtime_image")" != "$runtime_key" ]; then
  make_runtime
else
  log "runtime stand-in $runtime_image: cached"
fi

# The OCI labels that differ from build to build. `--label` adds them to the
# final image alone, and a new value rebuilds nothing but that step.
version="$(awk -F'"' '/^\[/ {in_package = ($0 == "[package]")} in_package && /^version *=/ {print $2; exit}' Cargo.toml)"
[ -n "$version" ] || die "no version in Cargo.toml's [package]"
source_url="$(awk '/^home:/ {print $2; exit}' charts/configmap-mirror/Chart.yaml)"
[ -n "$source_url" ] || die "no home: in charts/configmap-mirror/Chart.yaml"
if [ -n "${REVISION:-}" ]; then
  revision="$REVISION"
elif revision="$(git rev-parse --verify HEAD 2>/dev/null)"; then
  [ -z "$(git status --porcelain)" ] || revision="$revision-dirty"
else
  log "not a git checkout: the image's revision label is empty"
  revision=""
fi

# Host networking: build steps reach the package registries without a bridge
# or NAT rules of podman's own. The host's CA bundle is mounted over the
# builder's so the build trusts what this machine trusts (e.g. a proxy's CA).
build_args=(--pull=never --format docker --network host -t "$IMAGE" -f Dockerfile
  --label "org.opencontainers.image.version=$version"
  --label "org.opencontainers.image.revision=$revision"
  --label "org.opencontainers.image.source=$source_url")
host_ca=/etc/ssl/certs/ca-certificates.crt
[ -f "$host_ca" ] && build_args+=(-v "$host_ca:$host_ca:ro")
log "podman build ${build_args[*]} ."
podman build "${build_args[@]}" . >&2

mkdir -p "$(dirname "$archive")"
rm -f "$archive" "$meta"
podman save --quiet --format "$archive_format" -o "$archive.partial" "$IMAGE"
mv "$archive.partial" "$archive"
size_bytes="$(podman image inspect --format '{{.Size}}' "$IMAGE")"
printf 'name=%s\nsize_bytes=%s\n' "$IMAGE" "$size_bytes" >"$meta"
log "built $IMAGE in $(($(date +%s) - started)) s: $(awk -v b="$size_bytes" 'BEGIN { printf "%.1f MB", b / 1e6 }') (saved as $archive_format to ${archive#"$root"/})"
