#!/usr/bin/env bash
# Builds (or finds) the control-plane binaries the tests, the demo and the
# benchmark run: kube-apiserver, kube-controller-manager, kubectl and etcd.
# With the component set "node" first, it builds instead what a kubelet node
# adds, from the same release: kubelet, kube-proxy and kube-scheduler. Each
# set is cached on its own, so the control plane alone never pays for a node.
#
# Nothing ships these binaries for this machine, so they are compiled from the
# official Go modules. The result is cached per user, keyed by version, so only
# the first run is slow. Prints the directory holding the binaries on stdout;
# everything else goes to stderr.
#
#   hack/install-k8s.sh [node] [--cached-only]
#
#   KUBE_VERSION        Kubernetes release to build (default: hack/kube-version)
#   KUBE_BIN_DIR        use control-plane binaries from this directory instead of building
#   KUBE_NODE_BIN_DIR   the same, for the node set
#
# With --cached-only it never builds: it prints the directory if the binaries
# are already there and fails otherwise.
set -euo pipefail
component_set=control-plane
[ "${1:-}" = node ] && { component_set=node; shift; }
cached_only=false
[ "${1:-}" = --cached-only ] && cached_only=true

# hack/kube-version pins the release; its minor matches the k8s-openapi
# feature in Cargo.toml.
KUBE_VERSION="${KUBE_VERSION:-$(cat "$(dirname "$0")/kube-version")}"
REQUIRED=(etcd kube-apiserver kube-controller-manager kubectl)
packages=(
  k8s.io/kubernetes/cmd/kube-apiserver
  k8s.io/kubernetes/cmd/kube-controller-manager
  k8s.io/kubernetes/cmd/kubectl
  go.etcd.io/etcd/server/v3
)
given_bin_dir="${KUBE_BIN_DIR:-}"
given_bin_dir_variable=KUBE_BIN_DIR
cache_name="k8s-$KUBE_VERSION"
if [ "$component_set" = node ]; then
  REQUIRED=(kubelet kube-proxy kube-scheduler)
  packages=(
    k8s.io/kubernetes/cmd/kubelet
    k8s.io/kubernetes/cmd/kube-proxy
    k8s.io/kubernetes/cmd/kube-scheduler
  )
  given_bin_dir="${KUBE_NODE_BIN_DIR:-}"
  given_bin_dir_variable=KUBE_NODE_BIN_DIR
  cache_name="k8s-node-$KUBE_VERSION"
fi

log() { printf 'install-k8s: %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# Runs a command and, if it fails, names it before exiting.
run() {
  if ! "$@"; then
    die "command failed: $*"
  fi
}

# shellcheck source=hack/build-cache.sh
. "$(dirname "$0")/build-cache.sh"

if [ -n "$given_bin_dir" ]; then
  have_all "$given_bin_dir" || die "$given_bin_dir_variable=$given_bin_dir lacks one of: ${REQUIRED[*]}"
  log "using binaries from $given_bin_dir_variable"
  echo "$given_bin_dir"
  exit 0
fi

dest="$(build_cache_dir "$cache_name")"
print_if_cached "$dest" && exit 0
$cached_only && exit 1
command -v go >/dev/null || die "Go is required to build the control plane (apt-get install golang, or see https://go.dev/doc/install)"

export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-mod=mod
minor="${KUBE_VERSION#v1.}"
staging_version="v0.${minor}"

work="$(mktemp -d "${TMPDIR:-/tmp}/configmap-mirror-k8s-build.XXXXXX")"
trap 'rm -rf "$work"' EXIT
cd "$work"

log "building Kubernetes $KUBE_VERSION, $component_set set (a cold build takes a while; later runs use the cache)"
run go mod init configmap-mirror.local/k8s-build >/dev/null 2>&1
run go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" >"$work/download.json"
upstream_mod="$(sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p' "$work/download.json")"
[ -f "$upstream_mod" ] || die "could not locate go.mod of k8s.io/kubernetes@$KUBE_VERSION"

go_line="$(grep -m1 '^go ' "$upstream_mod")"
godebug_line="$(grep -m1 '^godebug ' "$upstream_mod" || true)"
etcd_version="$(awk '$1 == "go.etcd.io/etcd/server/v3" {print $2; exit}' "$upstream_mod")"
[ -n "$etcd_version" ] || die "no go.etcd.io/etcd/server/v3 version in the Kubernetes go.mod"

# Kubernetes requires its staging modules as v0.0.0 and replaces them with
# local paths; outside that repository each must point at its published tag.
replaces="$(awk '/^require/,/^\)/ { if ($1 ~ /^k8s\.io\// && $2 == "v0.0.0") print "replace " $1 " => " $1 " '"$staging_version"'" }' "$upstream_mod")"
[ -n "$replaces" ] || die "found no staging modules to replace in the Kubernetes go.mod"

{
  echo "module configmap-mirror.local/k8s-build"
  echo
  echo "$go_line"
  [ -n "$godebug_line" ] && echo "$godebug_line"
  echo
  echo "require k8s.io/kubernetes $KUBE_VERSION"
  echo "require go.etcd.io/etcd/server/v3 $etcd_version"
  echo
  echo "$replaces"
} >go.mod

# Versions are explicit: a bare `go get` would upgrade each to its latest
# release and build a different etcd (and etcd client) than Kubernetes pins.
run go get "k8s.io/kubernetes@$KUBE_VERSION" "go.etcd.io/etcd/server/v3@$etcd_version" >&2

rm -rf "$dest"
mkdir -p "$dest/bin.partial"
ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$KUBE_VERSION -X k8s.io/client-go/pkg/version.gitVersion=$KUBE_VERSION"
# One invocation, so the commands share every compiled package.
run go build -trimpath -ldflags "$ldflags" -o "$dest/bin.partial/" "${packages[@]}"
# The etcd main package's path ends in /server/v3, so Go names it "server".
[ "$component_set" = control-plane ] && mv "$dest/bin.partial/server" "$dest/bin.partial/etcd"

have_all "$dest/bin.partial" || die "build finished without all of: ${REQUIRED[*]}"
# The module graph must be exactly what Kubernetes pins. (Outputs are
# captured first: `grep -q` closing a pipe early trips pipefail.)
if [ "$component_set" = node ]; then
  kubelet_modules="$(go version -m "$dest/bin.partial/kubelet")"
  grep -qE "[[:space:]]k8s.io/kubernetes[[:space:]]+$KUBE_VERSION([[:space:]]|$)" <<<"$kubelet_modules" \
    || die "kubelet was not built with k8s.io/kubernetes $KUBE_VERSION"
  run "$dest/bin.partial/kubelet" --version >&2
else
  apiserver_modules="$(go version -m "$dest/bin.partial/kube-apiserver")"
  for pinned in "k8s.io/kubernetes $KUBE_VERSION" "go.etcd.io/etcd/client/v3 $etcd_version"; do
    grep -qE "[[:space:]]${pinned% *}[[:space:]]+${pinned#* }([[:space:]]|$)" <<<"$apiserver_modules" \
      || die "kube-apiserver was not built with $pinned"
  done
  etcd_reported="$("$dest/bin.partial/etcd" --version)"
  grep -q "etcd Version: ${etcd_version#v}" <<<"$etcd_reported" || die "etcd is not version $etcd_version"
  run "$dest/bin.partial/etcd" --version >&2
  run "$dest/bin.partial/kube-apiserver" --version >&2
fi
mv "$dest/bin.partial" "$dest/bin"
mark_complete "$dest" "$KUBE_VERSION etcd $etcd_version"
log "installed: $dest/bin"
echo "$dest/bin"
