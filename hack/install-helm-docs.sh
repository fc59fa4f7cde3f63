#!/usr/bin/env bash
# Builds (or finds) helm-docs, which writes the chart's README from its
# values.yaml (`make chart-docs`, and hack/lint-chart.sh's freshness check),
# from the Go module of the release pinned in hack/helm-docs-version.
# Statically linked, cached per user, keyed by version, as
# hack/install-helm.sh does for helm. Prints the directory holding the
# binary on stdout; everything else goes to stderr.
#
#   hack/install-helm-docs.sh [--cached-only]
#
#   HELM_DOCS_VERSION   release to build (default: hack/helm-docs-version)
#
# With --cached-only it never builds: it prints the directory if the binary
# is already there and fails otherwise.
set -euo pipefail
cached_only=false
[ "${1:-}" = --cached-only ] && cached_only=true

HELM_DOCS_VERSION="${HELM_DOCS_VERSION:-$(cat "$(dirname "$0")/helm-docs-version")}"
REQUIRED=(helm-docs)
module=github.com/norwoodj/helm-docs

log() { printf 'install-helm-docs: %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# shellcheck source=hack/build-cache.sh
. "$(dirname "$0")/build-cache.sh"

[[ "$HELM_DOCS_VERSION" =~ ^v[0-9]+\.[0-9]+\.[0-9]+$ ]] \
  || die "HELM_DOCS_VERSION=$HELM_DOCS_VERSION: expected a release tag (vX.Y.Z)"

dest="$(build_cache_dir "helm-docs-$HELM_DOCS_VERSION")"
print_if_cached "$dest" && exit 0
$cached_only && exit 1
command -v go >/dev/null || die "Go is required to build helm-docs (see https://go.dev/doc/install)"

export GOTOOLCHAIN=local CGO_ENABLED=0
# `go install module@version` builds with exactly the versions the module's
# own go.mod pins; run outside any module.
work="$(mktemp -d "${TMPDIR:-/tmp}/configmap-mirror-helm-docs-build.XXXXXX")"
trap 'rm -rf "$work"' EXIT
cd "$work"

# The ldflags of helm-docs' own release build: the version its footer and
# --version print.
ldflags="-s -w -X main.version=${HELM_DOCS_VERSION#v}"
log "building helm-docs $HELM_DOCS_VERSION from $module (a minute or two cold; later runs use the cache)"
rm -rf "$dest"
mkdir -p "$dest/bin.partial"
GOBIN="$dest/bin.partial" go install -trimpath -ldflags "$ldflags" "$module/cmd/helm-docs@$HELM_DOCS_VERSION" \
  || die "building helm-docs $HELM_DOCS_VERSION failed"
have_all "$dest/bin.partial" || die "build finished without all of: ${REQUIRED[*]}"
reported="$("$dest/bin.partial/helm-docs" --version)"
[[ "$reported" == *"${HELM_DOCS_VERSION#v}"* ]] \
  || die "the helm-docs built reports \"$reported\", not $HELM_DOCS_VERSION"
mv "$dest/bin.partial" "$dest/bin"
mark_complete "$dest" "$HELM_DOCS_VERSION"
log "installed: $dest/bin"
echo "$dest/bin"
