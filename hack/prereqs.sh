#!/usr/bin/env bash
# Checks, before anything is built, what the machine must provide for a make
# target, and names all of it at once. As root on a machine with apt-get it
# installs what is missing (Debian's packages); otherwise it stops with one
# `apt-get install` line naming every package that is missing.
#
#   hack/prereqs.sh test|demo [--check]
#
# --check never installs. Go and Rust are not taken from Debian: the
# versions the builds need come from their own installers.
set -euo pipefail

target="${1:-test}"
mode="${2:-install}"

log() { printf 'prereqs: %s\n' "$*" >&2; }

# Each line: what to check, then the Debian package that provides it. A
# check starting with / is a path; `python3-venv` is a Python module check.
common=(
  "setpriv util-linux"
  "nsenter util-linux"
  "unshare util-linux"
  "ps procps"
  "git git"
)
# The image and the kubelet node of the end-to-end test, and the linters.
for_test=(
  "podman podman"
  "mmdebstrap mmdebstrap"
  "runc runc"
  "iptables iptables"
  "/usr/lib/cni/bridge containernetworking-plugins"
  "python3 python3"
  "python3-venv python3-venv"
  "shellcheck shellcheck"
  "promtool prometheus"
)

case "$target" in
  test) requirements=("${common[@]}" "${for_test[@]}") ;;
  demo) requirements=("${common[@]}") ;;
  *) log "unknown target $target (test or demo)"; exit 2 ;;
esac

present() {
  case "$1" in
    /*) [ -e "$1" ] ;;
    python3-venv) command -v python3 >/dev/null && python3 -c 'import ensurepip, venv' 2>/dev/null ;;
    *) command -v "$1" >/dev/null 2>&1 ;;
  esac
}

missing_packages() {
  local line check package
  local -a missing=()
  for line in "${requirements[@]}"; do
    read -r check package <<<"$line"
    present "$check" || missing+=("$package")
  done
  [ "${#missing[@]}" -eq 0 ] || printf '%s\n' "${missing[@]}" | sort -u | tr '\n' ' '
}

toolchains_missing=()
command -v go >/dev/null || toolchains_missing+=("Go (https://go.dev/doc/install)")
command -v cargo >/dev/null || toolchains_missing+=("Rust (https://rustup.rs)")

# Some packages ship a daemon Debian starts once installed and at every boot
# (prometheus, for promtool, and the node exporter it recommends). make test
# needs their programs only: while apt-get runs, a policy-rc.d refuses every
# service start (unless the machine has its own), and the daemons it just
# installed are then disabled where systemd would start them at boot.
daemons=(prometheus prometheus-node-exporter)
policy=/usr/sbin/policy-rc.d
install_packages() {
  local added="" status=0
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\n# Written by hack/prereqs.sh while it installs packages.\nexit 101\n' >"$policy"
    chmod 755 "$policy"
    added=1
    trap 'rm -f "$policy"' EXIT
  fi
  # shellcheck disable=SC2086 # one word per package
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $packages >&2 || status=$?
  if [ -n "$added" ]; then
    rm -f "$policy"
    trap - EXIT
  fi
  if command -v systemctl >/dev/null && [[ " $packages " == *" prometheus "* ]]; then
    systemctl disable --now --quiet "${daemons[@]}" 2>/dev/null || true
  fi
  return "$status"
}

packages="$(missing_packages)"
if [ -n "$packages" ]; then
  if [ "$mode" != --check ] && [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
    log "installing the missing Debian packages: $packages"
    install_packages || log "apt-get failed"
    packages="$(missing_packages)"
  fi
fi
if [ -n "$packages" ] || [ "${#toolchains_missing[@]}" -gt 0 ]; then
  [ -z "$packages" ] || log "missing Debian packages; install them with: apt-get install -y $packages"
  for toolchain in "${toolchains_missing[@]}"; do
    log "missing $toolchain"
  done
  exit 1
fi
if command -v rustup >/dev/null; then
  rustup component add rustfmt clippy >/dev/null 2>&1 || log "could not add rustfmt and clippy with rustup"
fi
