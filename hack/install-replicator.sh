#!/usr/bin/env bash
# Builds mittwald/kubernetes-replicator, the peer the benchmark's sweep
# measures beside configmap-mirror (see docs/contributing/benchmarks.md), from a checkout of
# its source, into the per-user cache keyed by release, where
# `make bench-sweep` finds it. Its module is not on the Go module proxy, so
# the source comes from its repository; its dependencies come from the
# proxy. Prints the directory holding the binary on stdout.
#
#   git clone --branch v2.12.4 https://github.com/mittwald/kubernetes-replicator
#   hack/install-replicator.sh ./kubernetes-replicator
set -euo pipefail

REPLICATOR_VERSION=v2.12.4
# The release's commit: any other source would not be the release measured.
REPLICATOR_COMMIT=f535dd9
REQUIRED=(replicator)

log() { printf 'install-replicator: %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# shellcheck source=hack/build-cache.sh
. "$(dirname "$0")/build-cache.sh"

dest="$(build_cache_dir "replicator-$REPLICATOR_VERSION")"
print_if_cached "$dest" && exit 0

source_dir="${1:-}"
[ -n "$source_dir" ] || die "usage: $0 CHECKOUT (a clone of mittwald/kubernetes-replicator at $REPLICATOR_VERSION)"
if ! grep -qs '^module github.com/mittwald/kubernetes-replicator$' "$source_dir/go.mod"; then
  die "$source_dir is not a checkout of github.com/mittwald/kubernetes-replicator"
fi
if commit="$(git -C "$source_dir" rev-parse --short=7 HEAD 2>/dev/null)"; then
  if [ "$commit" != "$REPLICATOR_COMMIT" ]; then
    die "$source_dir is at $commit, not $REPLICATOR_VERSION ($REPLICATOR_COMMIT): git -C $source_dir checkout $REPLICATOR_VERSION"
  fi
else
  log "$source_dir is no git checkout: cannot check that it is $REPLICATOR_VERSION; building it as given"
fi
command -v go >/dev/null || die "Go is required to build replicator (see https://go.dev/doc/install)"

mkdir -p "$dest/bin"
log "building replicator $REPLICATOR_VERSION from $source_dir into $dest (a few minutes)"
(
  cd "$source_dir"
  GOTOOLCHAIN=local CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$dest/bin/replicator" .
)
mark_complete "$dest" "replicator $REPLICATOR_VERSION ($REPLICATOR_COMMIT)"
echo "$dest/bin"
