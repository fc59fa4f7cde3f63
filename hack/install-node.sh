#!/usr/bin/env bash
# Builds (or finds) everything the local kubelet node needs besides the
# control plane (`make node`; `make cluster NODE=1` and the end-to-end test
# use it):
#   - kubelet, kube-proxy and kube-scheduler, from the same Kubernetes release
#     as the control plane (hack/install-k8s.sh node);
#   - containerd and its runc shim (hack/install-containerd.sh);
#   - the node-tools image (hack/node-tools: pause, the sandbox image, and
#     http-get), as a docker-archive in target/node-tools/;
# and checks for the Debian packages it runs with: runc, the CNI plugins,
# iptables and util-linux (nsenter, unshare).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

# Also named in tests/testenv/src/node.rs.
NODE_TOOLS_IMAGE=localhost/configmap-mirror-node-tools:dev
out="$root/target/node-tools"

log() { printf 'install-node: %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

missing=()
command -v runc >/dev/null || missing+=(runc)
[ -x /usr/lib/cni/bridge ] && [ -x /usr/lib/cni/host-local ] && [ -x /usr/lib/cni/loopback ] \
  || missing+=(containernetworking-plugins)
command -v iptables >/dev/null || missing+=(iptables)
{ command -v nsenter && command -v unshare; } >/dev/null || missing+=(util-linux)
[ "${#missing[@]}" -eq 0 ] || die "missing Debian packages: apt-get install ${missing[*]}"

bash hack/install-k8s.sh node >/dev/null
bash hack/install-containerd.sh >/dev/null

command -v go >/dev/null || die "Go is required to build the node tools (see https://go.dev/doc/install)"
rm -rf "$out/rootfs" "$out/image"
mkdir -p "$out/rootfs" "$out/image"
(cd hack/node-tools && GOTOOLCHAIN=local CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$out/rootfs/pause" .) \
  || die "building hack/node-tools failed"
ln "$out/rootfs/pause" "$out/rootfs/http-get"

# A docker-archive written directly (one layer, a config, a manifest), so the
# node needs no image builder.
tar --numeric-owner --owner=0 --group=0 --mtime=@0 --sort=name \
  -C "$out/rootfs" -cf "$out/image/layer.tar" .
layer_digest="$(sha256sum "$out/image/layer.tar" | cut -d' ' -f1)"
config="{\"architecture\":\"amd64\",\"os\":\"linux\",\"config\":{\"Entrypoint\":[\"/pause\"],\"User\":\"65534:65534\"},\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[\"sha256:$layer_digest\"]}}"
config_digest="$(printf '%s' "$config" | sha256sum | cut -d' ' -f1)"
printf '%s' "$config" >"$out/image/$config_digest.json"
printf '[{"Config":"%s.json","RepoTags":["%s"],"Layers":["layer.tar"]}]' \
  "$config_digest" "$NODE_TOOLS_IMAGE" >"$out/image/manifest.json"
tar --numeric-owner --owner=0 --group=0 --mtime=@0 -C "$out/image" \
  -cf "$out/node-tools.tar.partial" manifest.json "$config_digest.json" layer.tar
mv "$out/node-tools.tar.partial" "$out/node-tools.tar"
rm -rf "$out/image"
log "node tools: $out/node-tools.tar ($NODE_TOOLS_IMAGE)"
