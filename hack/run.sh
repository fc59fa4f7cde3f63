#!/usr/bin/env bash
# Runs the controller in the foreground: against the current kubeconfig
# context when a cluster answers there, otherwise against the local control
# plane (started on demand). Says which.
set -euo pipefail
cd "$(dirname "$0")/.."

# Any kubectl will do for the check: the user's, or the one built here.
kubectl=$(command -v kubectl || true)
if [ -z "$kubectl" ] && cached=$(bash hack/install-k8s.sh --cached-only 2>/dev/null); then
  kubectl=$cached/kubectl
fi

reachable() {
  [ -n "$kubectl" ] && "$kubectl" version --request-timeout=3s >/dev/null 2>&1
}

if [ -z "${KUBECONFIG:-}" ] && ! [ -f "$HOME/.kube/config" ] || ! reachable; then
  echo "run: no reachable cluster in the current kubeconfig context; using the local control plane"
  bash hack/cluster.sh up
  export KUBECONFIG=$PWD/.local/kubeconfig
else
  echo "run: using kubeconfig context '$("$kubectl" config current-context)'"
fi
exec target/debug/configmap-mirror --http-addr "${MIRROR_HTTP_ADDR:-127.0.0.1:8080}" "$@"
