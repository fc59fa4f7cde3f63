#!/usr/bin/env bash
# The in-cluster journey, run for real: the image built here (make image),
# a local control plane with a kubelet node (make cluster NODE=1), and the
# Helm chart installed with the values of the in-cluster kind path in
# README.md (the loaded image, never pulled), each command printed with what
# it shows. Needs root.
#
#   KEEP=1 make demo-in-cluster   leaves the cluster and the controller running
set -euo pipefail
cd "$(dirname "$0")/.."

[ "$(id -u)" = 0 ] || { echo "the in-cluster demo starts a kubelet node and needs root" >&2; exit 1; }
bin_dir=$(bash hack/install-k8s.sh)
ctr="$(bash hack/install-containerd.sh --cached-only)/ctr"
export PATH="$bin_dir:$PATH"
ns=demo-in-cluster

bold() { printf '\n\033[1m%s\033[0m\n' "$*"; }
run() { printf '\033[36m$ %s\033[0m\n' "$*"; "$@"; }

helm="$(bash hack/install-helm.sh)/helm"

bold "Building the image (make image)"
IMAGE=localhost/configmap-mirror:dev bash hack/image.sh

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

bold "1. Install the chart with the loaded image, as on kind (README.md)"
# The namespace as deploy/ makes it, enforcing Pod Security restricted.
run kubectl apply -f deploy/base/namespace.yaml
run "$helm" install configmap-mirror charts/configmap-mirror \
  --namespace configmap-mirror \
  --set image.repository=localhost/configmap-mirror \
  --set image.tag=dev \
  --set image.pullPolicy=Never
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
run "$helm" uninstall configmap-mirror --namespace configmap-mirror --wait --timeout=240s
run kubectl delete namespace configmap-mirror --wait=true --timeout=240s
run kubectl get namespace configmap-mirror --ignore-not-found
