#!/usr/bin/env bash
# Writes the chart's README.md from its README.md.gotmpl and the `# --`
# comment of every value in its values.yaml, with helm-docs
# (`make chart-docs`). A value without one fails it, naming the value
# (helm-docs' own strict mode knows only the older `# key -- text` form).
#
#   hack/chart-docs.sh [OUT_DIR]   write OUT_DIR/README.md instead of the chart's
#                                  (hack/lint-chart.sh compares the two)
#
#   HELM_DOCS   the helm-docs binary to use (default: hack/install-helm-docs.sh's)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
chart=charts/configmap-mirror
out="${1:-$root/$chart}"

log() { printf 'chart-docs: %s\n' "$*" >&2; }

helm_docs="${HELM_DOCS:-}"
[ -n "$helm_docs" ] || helm_docs="$(bash hack/install-helm-docs.sh)/helm-docs"

# helm-docs writes the README beside the chart it finds: it runs on a copy,
# so the repository changes only when the whole README is written.
work="$(mktemp -d "${TMPDIR:-/tmp}/configmap-mirror-chart-docs.XXXXXX")"
trap 'rm -rf "$work"' EXIT
cp -R "$chart" "$work/configmap-mirror"
rm -f "$work/configmap-mirror/README.md"
# Values in the order of values.yaml, which groups them.
(
  cd "$work"
  "$helm_docs" --chart-search-root . --template-files README.md.gotmpl \
    --sort-values-order file --skip-version-footer --log-level warning
) >&2
readme="$work/configmap-mirror/README.md"
[ -f "$readme" ] || { log "ERROR: helm-docs wrote no README.md"; exit 1; }
# A row of the values table with an empty description is a value without a
# `# --` comment (a documented map or list covers what is inside it).
undocumented="$(awk '/^## Values$/ {table = 1} table && /^\| / && /\|[[:space:]]*\|$/ {print $2}' "$readme")"
if [ -n "$undocumented" ]; then
  log "ERROR: values without a \`# --\` comment in $chart/values.yaml: $(echo "$undocumented" | paste -sd ' ')"
  exit 1
fi
mkdir -p "$out"
cp "$readme" "$out/README.md.partial"
mv "$out/README.md.partial" "$out/README.md"
log "wrote $out/README.md with $("$helm_docs" --version)"
