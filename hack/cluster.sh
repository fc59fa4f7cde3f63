#!/usr/bin/env bash
# Starts or stops the local control plane used by `make run` and `make demo`.
# All of its state lives in .local/; it is stopped by the PID it recorded.
#
#   hack/cluster.sh up     start it in the background (idempotent)
#   hack/cluster.sh down   stop it and remove its state
#
#   NODE=1   with a kubelet node beside it (needs root and `make node`), so
#            that Deployments run as real pods; its files are in .local/node/
set -euo pipefail
cd "$(dirname "$0")/.."

local_dir=.local
pid_file=$local_dir/cluster.pid
kubeconfig=$PWD/$local_dir/kubeconfig
log=$local_dir/cluster.log

running_pid() {
  local pid
  [ -f "$pid_file" ] || return 1
  pid=$(cat "$pid_file")
  # Checks the name too, so that a reused PID is never taken for ours.
  [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = local-cluster ] || return 1
  echo "$pid"
}

up() {
  if pid=$(running_pid); then
    echo "local cluster already running (pid $pid)"
    echo "export KUBECONFIG=$kubeconfig"
    return
  fi
  cargo build --locked --quiet -p testenv --bin local-cluster
  mkdir -p "$local_dir"
  rm -f "$kubeconfig"
  local node_flag=() polls=600
  if [ "${NODE:-}" = 1 ]; then
    node_flag=(--node)
    # A node takes longer: it waits until kubelet reports Ready.
    polls=1500
  fi
  # setsid: a Ctrl-C in this terminal must not stop the cluster.
  setsid nohup "${CARGO_TARGET_DIR:-target}/debug/local-cluster" up --state-dir "$local_dir/cluster" \
    --kubeconfig "$kubeconfig" --pid-file "$pid_file" "${node_flag[@]}" </dev/null >"$log" 2>&1 &
  local pid=$!
  for _ in $(seq "$polls"); do
    if [ -f "$kubeconfig" ]; then
      echo "local cluster up (pid $pid, log $log)"
      echo "export KUBECONFIG=$kubeconfig"
      return
    fi
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "the local cluster failed to start:" >&2
      cat "$log" >&2
      exit 1
    fi
    sleep 0.2
  done
  echo "the local cluster was not ready after $((polls / 5)) s; see $log" >&2
  exit 1
}

down() {
  if pid=$(running_pid); then
    kill -TERM "$pid"
    # A node stops its pods first.
    for _ in $(seq 600); do
      # A zombie still answers kill -0, so look at its state instead.
      grep -qs '^State:[[:space:]]*[RSDTt]' "/proc/$pid/status" || break
      sleep 0.2
    done
  fi
  rm -f "$pid_file"
  echo "local cluster down"
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  *) echo "usage: $0 up|down" >&2; exit 2 ;;
esac
