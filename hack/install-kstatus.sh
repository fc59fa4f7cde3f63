#!/usr/bin/env bash
# Builds (or finds) kstatus (hack/kstatus), which prints how the kstatus
# library of sigs.k8s.io/cli-utils reads an object's status: the suite asks
# it of ClusterMirrors and Mirrors. Built from hack/kstatus's go.mod and
# go.sum (the library's version pinned there), statically linked, cached per
# user, keyed by that version and a digest of the program, as
# hack/install-helm-docs.sh does. Prints the directory holding the binary
# on stdout; everything else goes to stderr.
#
#   hack/install-kstatus.sh [--cached-only]
#
# With --cached-only it never builds: it prints the directory if the binary
# is already there and fails otherwise.
set -euo pipefail
cached_only=false
[ "${1:-}" = --cached-only ] && cached_only=true

REQUIRED=(kstatus)
src="$(cd "$(dirname "$0")/kstatus" && pwd)"

log() { printf 'install-kstatus: %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# shellcheck source=hack/build-cache.sh
. "$(dirname "$0")/build-cache.sh"

version="$(awk '$1 == "sigs.k8s.io/cli-utils" { print $2 }' "$src/go.mod")"
[[ "$version" =~ ^v[0-9]+\.[0-9]+\.[0-9]+$ ]] \
  || die "hack/kstatus/go.mod names no release of sigs.k8s.io/cli-utils ($version)"
digest="$(cat "$src/go.mod" "$src/go.sum" "$src/main.go" | sha256sum | cut -c1-12)"

dest="$(build_cache_dir "kstatus-$version-$digest")"
print_if_cached "$dest" && exit 0
$cached_only && exit 1
command -v go >/dev/null || die "Go is required to build kstatus (see https://go.dev/doc/install)"

export GOTOOLCHAIN=local CGO_ENABLED=0
log "building kstatus (sigs.k8s.io/cli-utils $version; a minute cold, later runs use the cache)"
rm -rf "$dest"
mkdir -p "$dest/bin.partial"
(cd "$src" && go build -mod=readonly -trimpath -ldflags "-s -w" -o "$dest/bin.partial/kstatus" .) \
  || die "building kstatus failed"
have_all "$dest/bin.partial" || die "build finished without all of: ${REQUIRED[*]}"
answer="$(printf '%s' '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","generation":1}}' | "$dest/bin.partial/kstatus")"
[[ "$answer" == *'"status":"Current"'* ]] \
  || die "the kstatus built reads a ConfigMap as $answer, not Current"
mv "$dest/bin.partial" "$dest/bin"
mark_complete "$dest" "$version $digest"
log "installed: $dest/bin"
echo "$dest/bin"
