#!/usr/bin/env bash
# Writes docs/operator/flags-reference.md from the binary's own clap
# definitions (examples/flags-reference.rs), as `make flags-docs` does;
# with --check, writes nothing and fails when the committed page is stale
# (make lint), as hack/lint-chart.sh does for the chart's README.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
page=docs/operator/flags-reference.md

log() { printf 'flags-docs: %s\n' "$*" >&2; }

rendered="$(mktemp "${TMPDIR:-/tmp}/configmap-mirror-flags.XXXXXX")"
trap 'rm -f "$rendered"' EXIT
cargo run --quiet --locked --example flags-reference >"$rendered"

if [ "${1:-}" = --check ]; then
  if ! cmp -s "$rendered" "$page"; then
    log "$page is not what the binary's flags make; run \`make flags-docs\`"
    diff -u "$page" "$rendered" >&2 || true
    exit 1
  fi
  log "$page is current"
  exit 0
fi
cp "$rendered" "$page.partial"
mv "$page.partial" "$page"
log "wrote $page"
