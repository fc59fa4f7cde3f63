#!/usr/bin/env bash
# The journey of the README, run for real: a local control plane, the
# controller, and each kubectl command printed with what it shows.
#
#   KEEP=1 make demo   leaves the cluster and the controller running afterwards
set -euo pipefail
cd "$(dirname "$0")/.."

bin_dir=$(bash hack/install-k8s.sh)
export PATH="$bin_dir:$PATH"
bash hack/cluster.sh up >/dev/null
export KUBECONFIG=$PWD/.local/kubeconfig
# Where `make build` put the binary.
mirror=$(realpath "${CARGO_TARGET_DIR:-target}")/debug/configmap-mirror
ns=demo
log=.local/demo-controller.log
# The namespaces of part two, which mirrors into other namespaces.
team_a=demo-team-a
team_b=demo-team-b
# The namespaces of part three, which a ClusterMirror selects by a label.
prod_a=demo-prod-a
prod_b=demo-prod-b
cluster_log=.local/demo-controller-cluster-wide.log

bold() { printf '\n\033[1m%s\033[0m\n' "$*"; }
run() { printf '\033[36m$ %s\033[0m\n' "$*"; "$@"; }
ms_since() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }

# Waits (up to 10 s) until the companion's "primary" key reads $1, then shows its data.
show_companion_primary() {
  for _ in $(seq 100); do
    [ "$(kubectl -n "$ns" get configmap colors-synced -o jsonpath='{.data.primary}')" = "$1" ] && break
    sleep 0.1
  done
  run kubectl -n "$ns" get configmap colors-synced -o jsonpath='{.data}{"\n"}'
}

controller_pid=
stop_controller() {
  if [ -n "$controller_pid" ] && kill -TERM "$controller_pid" 2>/dev/null; then
    wait "$controller_pid" 2>/dev/null || true
  fi
  controller_pid=
}
cleanup() {
  if [ "${KEEP:-}" = 1 ]; then
    bold "Still running (KEEP=1): controller pid $controller_pid, log $log"
    echo "export KUBECONFIG=$KUBECONFIG"
    echo "Stop with: kill $controller_pid; make cluster-down"
    return
  fi
  stop_controller
  bash hack/cluster.sh down >/dev/null
  echo "stopped the controller and the local cluster"
}
trap cleanup EXIT

# The ClusterMirror CRD, as the chart and deploy/ install it.
"$mirror" crd | kubectl apply -f - >/dev/null
kubectl wait --for=condition=Established crd/clustermirrors.mirror.workshop.io --timeout=30s >/dev/null
kubectl delete clustermirror demo-colors --ignore-not-found --wait=true >/dev/null
kubectl delete namespace "$ns" "$team_a" "$team_b" "$prod_a" "$prod_b" --ignore-not-found --wait=true >/dev/null
kubectl create namespace "$ns" >/dev/null
"$mirror" --namespace "$ns" --log-format text --http-addr 127.0.0.1:0 >"$log" 2>&1 &
controller_pid=$!
bold "Started configmap-mirror (pid $controller_pid), watching namespace $ns; its log: $log"

bold "1. A plain ConfigMap: the controller ignores it"
run kubectl -n "$ns" create configmap colors --from-literal=primary=red --from-literal=secondary=blue
sleep 1
run kubectl -n "$ns" get configmaps

bold "2. Label it workshop.io/managed=true: a companion colors-synced appears"
run kubectl -n "$ns" label configmap colors workshop.io/managed=true
run kubectl -n "$ns" wait --for=create configmap/colors-synced --timeout=30s
run kubectl -n "$ns" get configmap colors-synced -o jsonpath='{.data}{"\n"}{.metadata.annotations}{"\n"}{.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name}{"\n"}'

bold "3. Change the source: the copy follows"
run kubectl -n "$ns" patch configmap colors --type merge -p '{"data":{"primary":"green"}}'
show_companion_primary green

bold "4. Delete the companion: it comes back"
start=$(date +%s%N)
run kubectl -n "$ns" delete configmap colors-synced
run kubectl -n "$ns" wait --for=create configmap/colors-synced --timeout=30s
echo "back after $(ms_since "$start") ms (including kubectl's own start-up, twice)"

bold "5. Edit the companion by hand: the edit is undone"
run kubectl -n "$ns" patch configmap colors-synced --type merge -p '{"data":{"primary":"hacked"}}'
show_companion_primary green

bold "6. Delete the source: its companion goes too (owner reference: the garbage collector; and the controller's prune loop, whichever is first)"
run kubectl -n "$ns" delete configmap colors
run kubectl -n "$ns" wait --for=delete configmap/colors-synced --timeout=30s
run kubectl -n "$ns" get configmaps

bold "What the controller said"
grep -E 'companion' "$log" | sed -E 's/^[^ ]+ +//' || true
run kubectl -n "$ns" get events --sort-by=.metadata.creationTimestamp -o custom-columns=TYPE:.type,REASON:.reason,OBJECT:.involvedObject.name,COUNT:.count,MESSAGE:.message

bold "7. Cluster-wide, a source asks for two more namespaces; only one consents. explain says why the other has no copy"
stop_controller
kubectl create namespace "$team_a" >/dev/null
kubectl create namespace "$team_b" >/dev/null
"$mirror" --log-format text --http-addr 127.0.0.1:0 \
  --cluster-mirror-source-namespaces "$ns" >"$cluster_log" 2>&1 &
controller_pid=$!
echo "restarted configmap-mirror (pid $controller_pid) cluster-wide; its log: $cluster_log"
run kubectl label namespace "$team_a" workshop.io/accept-mirrors=true
run kubectl -n "$ns" create configmap shared --from-literal=color=blue
run kubectl -n "$ns" annotate configmap shared workshop.io/mirror-to="$team_a,$team_b"
run kubectl -n "$ns" label configmap shared workshop.io/managed=true
run kubectl -n "$team_a" wait --for=create configmap/shared --timeout=30s
# Installed (here: linked) as kubectl-mirror, the binary is a kubectl plugin.
mkdir -p .local/bin
ln -sf "$mirror" .local/bin/kubectl-mirror
export PATH="$PWD/.local/bin:$PATH"
explained=0
run kubectl mirror explain "$ns/shared" || explained=$?
echo "exit code $explained: not everything asked for is in place"

bold "8. A ClusterMirror: the platform team copies one ConfigMap into every namespace labelled env=prod, asking them nothing"
kubectl create namespace "$prod_a" >/dev/null
kubectl create namespace "$prod_b" >/dev/null
run kubectl label namespace "$prod_a" "$prod_b" env=prod
run kubectl -n "$ns" create configmap platform-colors --from-literal=brand=purple
cluster_mirror="apiVersion: mirror.workshop.io/v1alpha1
kind: ClusterMirror
metadata:
  name: demo-colors
spec:
  source: {kind: ConfigMap, namespace: $ns, name: platform-colors}
  target:
    namespaceSelector:
      matchLabels: {env: prod}"
printf '\033[36m$ kubectl apply -f - <<EOF\n%s\nEOF\033[0m\n' "$cluster_mirror"
kubectl apply -f - <<<"$cluster_mirror"
run kubectl wait --for=condition=Ready clustermirror/demo-colors --timeout=30s
run kubectl get cmir
run kubectl get configmaps -A -l workshop.io/cluster-mirror=demo-colors
