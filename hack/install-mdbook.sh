#!/usr/bin/env bash
# Builds (or finds) mdBook, which builds docs/ as a site (make docs), pinned,
# with `cargo install --locked` into the per-user cache, keyed by version.
# Prints the directory holding the binary on stdout; everything else goes to
# stderr.
#
#   MDBOOK_VERSION   release to build (default below)
#   --cached-only    print the directory if it is built, else fail; build nothing
set -euo pipefail

MDBOOK_VERSION="${MDBOOK_VERSION:-0.5.4}"
REQUIRED=(mdbook)

log() { printf 'install-mdbook: %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# shellcheck source=hack/build-cache.sh
. "$(dirname "$0")/build-cache.sh"

dest="$(build_cache_dir "mdbook-$MDBOOK_VERSION")"
print_if_cached "$dest" && exit 0
[ "${1:-}" = --cached-only ] && die "mdbook $MDBOOK_VERSION is not built: run \`make mdbook\`"
command -v cargo >/dev/null || die "Rust is required: see https://rustup.rs"

log "building mdbook $MDBOOK_VERSION (a few minutes once; later runs use the cache)"
rm -rf "$dest"
mkdir -p "$dest"
# Its own target directory, so the build never touches the project's. Only
# the search feature: `make docs` builds, it never serves or watches.
CARGO_TARGET_DIR="$dest/target" cargo install --locked --quiet \
  --no-default-features --features search \
  --root "$dest/partial" "mdbook@$MDBOOK_VERSION" >&2 \
  || die "cargo install mdbook@$MDBOOK_VERSION failed"
have_all "$dest/partial/bin" || die "build finished without all of: ${REQUIRED[*]}"
mv "$dest/partial/bin" "$dest/bin"
rm -rf "$dest/partial" "$dest/target"
mark_complete "$dest" "$MDBOOK_VERSION"
log "installed: $dest/bin"
echo "$dest/bin"
