#!/usr/bin/env bash
# Builds (or finds) cargo-deny, pinned, with `cargo install --locked` into
# the per-user cache, keyed by version. Prints the directory holding the
# binary on stdout; everything else goes to stderr.
#
#   CARGO_DENY_VERSION   release to build (default below)
set -euo pipefail

CARGO_DENY_VERSION="${CARGO_DENY_VERSION:-0.20.2}"
REQUIRED=(cargo-deny)

log() { printf 'install-cargo-deny: %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# shellcheck source=hack/build-cache.sh
. "$(dirname "$0")/build-cache.sh"

dest="$(build_cache_dir "cargo-deny-$CARGO_DENY_VERSION")"
print_if_cached "$dest" && exit 0
command -v cargo >/dev/null || die "Rust is required: see https://rustup.rs"

log "building cargo-deny $CARGO_DENY_VERSION (a few minutes once; later runs use the cache)"
rm -rf "$dest"
mkdir -p "$dest"
# Its own target directory, so the build never touches the project's.
CARGO_TARGET_DIR="$dest/target" cargo install --locked --quiet \
  --root "$dest/partial" "cargo-deny@$CARGO_DENY_VERSION" >&2 \
  || die "cargo install cargo-deny@$CARGO_DENY_VERSION failed"
have_all "$dest/partial/bin" || die "build finished without all of: ${REQUIRED[*]}"
mv "$dest/partial/bin" "$dest/bin"
rm -rf "$dest/partial" "$dest/target"
mark_complete "$dest" "$CARGO_DENY_VERSION"
log "installed: $dest/bin"
echo "$dest/bin"
