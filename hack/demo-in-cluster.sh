#!/usr/bin/env bash
# The in-cluster journey, run for real: the image built here (make image),
# a local control plane with a kubelet node (make cluster NODE=1), and
# `kubectl apply -k deploy/` with only the image name set, each kubectl
# command printed with what it shows. Needs root.
#
#   KEEP=1 make demo-in-cluster   leaves the cluster and the controller running
set -euo pipefail
cd "$(dirname "$0")/.."

[ "$(id -u)" = 0 ] || { echo "the in-cluster demo starts a kubelet node and needs root" >&2; exit 1; }
bin_dir=$(bash hack/install-k8s.sh)
ctr="$(bash hack/install-containerd.sh --cached-only)/ctr"
export PATH="$bin_dir:$PATH"
ns=demo-in-cluster
overlay=.local/demo-in-cluster

bold() { printf '\n\033[1m%s\033[0m\n' "$*"; }
run() { printf '\033[36m$ %s\033[0m\n' "$*"; "$@"; }

bold "Building the image (make image)"
bash hack/image.sh
image="$(sed -n 's/^name=//p' target/image/configmap-mirror.tar.meta)"

bold "Starting a local control plane with a kubelet node (make cluster NODE=1)"
NODE=1 bash hack/cluster.sh up >/dev/null
export KUBECONFIG=$PWD/.local/kubeconfig
cleanup() {
  if [ "${KEEP:-}" = 1 ]; then
    bold "Still running (KEEP=1)"
    echo "export KUBECONFIG=$KUBECONFIG"
    echo "Stop with: make cluster-down"
    return
  fi
  bash hack/cluster.sh down >/dev/null
  echo "stopped the local cluster and its node"
}
trap cleanup EXIT
run kubectl get nodes -o wide

bold "Loading the image into the node's containerd (no registry needed)"
run "$ctr" --address "$PWD/.local/node/containerd/containerd.sock" --namespace k8s.io images import target/image/configmap-mirror.tar

bold "1. Install deploy/ unmodified; an overlay only sets the image"
mkdir -p "$overlay"
cat >"$overlay/kustomization.yaml" <<YAML
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - ../../deploy
images:
  - name: ghcr.io/workshop-io/configmap-mirror
    newName: ${image%:*}
    newTag: "${image##*:}"
YAML
run cat "$overlay/kustomization.yaml"
run kubectl apply -k "$overlay"
run kubectl -n configmap-mirror rollout status deployment/configmap-mirror --timeout=240s
run kubectl -n configmap-mirror get pods -o wide
run kubectl -n configmap-mirror get lease configmap-mirror -o jsonpath='{.spec.holderIdentity}{"\n"}'

bold "2. Label a ConfigMap: the controller in the pods writes its companion"
run kubectl create namespace "$ns"
run kubectl -n "$ns" create configmap colors --from-literal=primary=red
run kubectl -n "$ns" label configmap colors workshop.io/managed=true
run kubectl -n "$ns" wait --for=create configmap/colors-synced --timeout=60s
run kubectl -n "$ns" get configmap colors-synced -o jsonpath='{.data}{"\n"}'

bold "3. Delete the leader pod: the Lease moves to another pod"
leader=$(kubectl -n configmap-mirror get lease configmap-mirror -o jsonpath='{.spec.holderIdentity}')
run kubectl -n configmap-mirror delete pod "$leader" --wait=false
for _ in $(seq 300); do
  holder=$(kubectl -n configmap-mirror get lease configmap-mirror -o jsonpath='{.spec.holderIdentity}')
  [ -n "$holder" ] && [ "$holder" != "$leader" ] && break
  sleep 0.1
done
run kubectl -n configmap-mirror get lease configmap-mirror -o jsonpath='{.spec.holderIdentity}{"\n"}'
run kubectl -n "$ns" delete configmap colors-synced
run kubectl -n "$ns" wait --for=create configmap/colors-synced --timeout=60s

bold "4. /metrics through the Service's ClusterIP, from a pod"
service_ip=$(kubectl -n configmap-mirror get service configmap-mirror -o jsonpath='{.spec.clusterIP}')
run kubectl -n "$ns" run metrics --image=localhost/configmap-mirror-node-tools:dev --image-pull-policy=Never \
  --restart=Never --command -- /http-get "http://$service_ip:8080/metrics"
run kubectl -n "$ns" wait --for=jsonpath='{.status.phase}'=Succeeded pod/metrics --timeout=120s
kubectl -n "$ns" logs metrics | grep -E '^(leader_election_master_status|configmap_mirror_companion_writes_total)'

bold "5. Uninstall: nothing of it is left"
run kubectl delete -k "$overlay" --wait=true --timeout=240s
run kubectl get namespace configmap-mirror --ignore-not-found
