#!/usr/bin/env bash
# Runs shellcheck on every script of the project (Debian's shellcheck
# package, which make test's prerequisites install).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v shellcheck >/dev/null || { echo "shellcheck is required: apt-get install shellcheck" >&2; exit 1; }
shellcheck -x hack/*.sh .ci/run
echo "shellcheck: OK" >&2
