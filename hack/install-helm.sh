#!/usr/bin/env bash
# Builds (or finds) helm, for the chart's lint and tests and for rendering
# deploy/ and the release manifest from the chart (`make manifests`), from
# the Go module of the release pinned in hack/helm-version. Statically
# linked, cached per user, keyed by version. Prints the directory holding
# the binary on stdout; everything else goes to stderr.
#
#   hack/install-helm.sh [--cached-only]
#
#   HELM_VERSION   release to build (default: hack/helm-version); the chart
#                  works with Helm 3 (v3.x) and Helm 4 (v4.x)
#
# With --cached-only it never builds: it prints the directory if the binary
# is already there and fails otherwise.
set -euo pipefail
cached_only=false
[ "${1:-}" = --cached-only ] && cached_only=true

HELM_VERSION="${HELM_VERSION:-$(cat "$(dirname "$0")/helm-version")}"
REQUIRED=(helm)

log() { printf 'install-helm: %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# shellcheck source=hack/build-cache.sh
. "$(dirname "$0")/build-cache.sh"

case "$HELM_VERSION" in
  v3.*) major=v3 ;;
  v4.*) major=v4 ;;
  *) die "HELM_VERSION=$HELM_VERSION: expected a Helm 3 or Helm 4 release tag (v3.x.y or v4.x.y)" ;;
esac
module="helm.sh/helm/$major"

dest="$(build_cache_dir "helm-$HELM_VERSION")"
print_if_cached "$dest" && exit 0
$cached_only && exit 1
command -v go >/dev/null || die "Go is required to build helm (see https://go.dev/doc/install)"

export GOTOOLCHAIN=local CGO_ENABLED=0
# `go install module@version` builds with exactly the versions the module's
# own go.mod pins, as the official release does; run outside any module.
work="$(mktemp -d "${TMPDIR:-/tmp}/configmap-mirror-helm-build.XXXXXX")"
trap 'rm -rf "$work"' EXIT
cd "$work"

# The ldflags of helm's own Makefile: the version, and for Helm 3 the
# Kubernetes version its client library targets (Helm 4 reads that from the
# module graph at run time), which `helm lint` and `helm template` assume
# when no cluster is asked.
ldflags="-s -w -X $module/internal/version.version=$HELM_VERSION"
if [ "$major" = v3 ]; then
  client_go="$(go mod download -json "$module@$HELM_VERSION" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')"
  [ -f "$client_go" ] || die "could not locate go.mod of $module@$HELM_VERSION"
  client_go="$(awk '$1 == "k8s.io/client-go" {print $2; exit}' "$client_go")"
  [[ "$client_go" =~ ^v0\.([0-9]+)\. ]] || die "no k8s.io/client-go v0.x version in the go.mod of $module@$HELM_VERSION"
  kube_minor="${BASH_REMATCH[1]}"
  for package in pkg/lint/rules pkg/chartutil; do
    ldflags+=" -X $module/$package.k8sVersionMajor=1 -X $module/$package.k8sVersionMinor=$kube_minor"
  done
fi

log "building helm $HELM_VERSION from $module (a few minutes cold; later runs use the cache)"
rm -rf "$dest"
mkdir -p "$dest/bin.partial"
GOBIN="$dest/bin.partial" go install -trimpath -ldflags "$ldflags" "$module/cmd/helm@$HELM_VERSION" \
  || die "building helm $HELM_VERSION failed"
have_all "$dest/bin.partial" || die "build finished without all of: ${REQUIRED[*]}"
reported="$("$dest/bin.partial/helm" version --template '{{.Version}}')"
[ "$reported" = "$HELM_VERSION" ] || die "the helm built reports version $reported, not $HELM_VERSION"
log "helm $reported ($("$dest/bin.partial/helm" version --template '{{.GoVersion}}'))"
mv "$dest/bin.partial" "$dest/bin"
mark_complete "$dest" "$HELM_VERSION"
log "installed: $dest/bin"
echo "$dest/bin"
