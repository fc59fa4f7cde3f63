#!/usr/bin/env bash
# Builds (or finds) containerd, its runc shim and ctr, for the local kubelet
# node, from the Go module of the release pinned in hack/containerd-version.
# Statically linked, without the snapshotters that need C libraries; runc
# itself comes from Debian (apt-get install runc). Cached per user, keyed by
# version. Prints the directory holding the binaries on stdout; everything
# else goes to stderr.
#
#   CONTAINERD_VERSION   release to build (default: hack/containerd-version)
#
# With --cached-only it never builds: it prints the directory if the binaries
# are already there and fails otherwise.
set -euo pipefail
cached_only=false
[ "${1:-}" = --cached-only ] && cached_only=true

CONTAINERD_VERSION="${CONTAINERD_VERSION:-$(cat "$(dirname "$0")/containerd-version")}"
REQUIRED=(containerd containerd-shim-runc-v2 ctr)
module=github.com/containerd/containerd/v2

log() { printf 'install-containerd: %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# shellcheck source=hack/build-cache.sh
. "$(dirname "$0")/build-cache.sh"

dest="$(build_cache_dir "containerd-$CONTAINERD_VERSION")"
print_if_cached "$dest" && exit 0
$cached_only && exit 1
command -v go >/dev/null || die "Go is required to build containerd (see https://go.dev/doc/install)"

export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-mod=mod
work="$(mktemp -d "${TMPDIR:-/tmp}/configmap-mirror-containerd-build.XXXXXX")"
trap 'rm -rf "$work"' EXIT
cd "$work"

log "building containerd $CONTAINERD_VERSION (about a minute; later runs use the cache)"
go mod init configmap-mirror.local/containerd-build >/dev/null 2>&1
go get "$module@$CONTAINERD_VERSION" >&2 || die "go get $module@$CONTAINERD_VERSION failed"
rm -rf "$dest"
mkdir -p "$dest/bin.partial"
go build -trimpath -tags "no_btrfs no_devmapper no_zfs" \
  -ldflags "-s -w -X $module/version.Version=$CONTAINERD_VERSION" \
  -o "$dest/bin.partial/" \
  "$module/cmd/containerd" "$module/cmd/containerd-shim-runc-v2" "$module/cmd/ctr" \
  || die "building containerd $CONTAINERD_VERSION failed"
have_all "$dest/bin.partial" || die "build finished without all of: ${REQUIRED[*]}"
"$dest/bin.partial/containerd" --version >&2
mv "$dest/bin.partial" "$dest/bin"
mark_complete "$dest" "$CONTAINERD_VERSION"
log "installed: $dest/bin"
echo "$dest/bin"
