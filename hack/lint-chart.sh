#!/usr/bin/env bash
# Checks that the chart's version and appVersion are the crate's, lints the
# Helm chart strictly (`helm lint --strict`) with its default values and with
# each of its ci/*-values.yaml, then checks that the manifests rendered from
# it (deploy/, configmap-mirror.yaml) and its README (written from
# values.yaml by helm-docs) are the committed ones.
#
#   HELM        the helm binary to use (default: hack/install-helm.sh's)
#   HELM_DOCS   the helm-docs binary to use (default: hack/install-helm-docs.sh's)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

log() { printf 'lint-chart: %s\n' "$*" >&2; }

helm="${HELM:-}"
[ -n "$helm" ] || helm="$(bash hack/install-helm.sh)/helm"
chart=charts/configmap-mirror

# The chart's version and appVersion are the crate's (hack/manifests.sh
# writes them): the chart package and the image of a release (`make dist`)
# carry that one version.
version="$(awk -F'"' '/^\[/ {in_package = ($0 == "[package]")} in_package && /^version *=/ {print $2; exit}' Cargo.toml)"
chart_version="$(awk '/^version:/ {print $2; exit}' "$chart/Chart.yaml")"
app_version="$(awk '/^appVersion:/ {gsub(/"/, "", $2); print $2; exit}' "$chart/Chart.yaml")"
if [ -z "$version" ] || [ "$chart_version" != "$version" ] || [ "$app_version" != "$version" ]; then
  log "the crate is ${version:-?} (Cargo.toml) but $chart/Chart.yaml has version $chart_version, appVersion $app_version; run \`make manifests\`"
  exit 1
fi

"$helm" lint --strict "$chart"
for values in "$chart"/ci/*-values.yaml; do
  "$helm" lint --strict "$chart" --values "$values"
done

rendered="$(mktemp -d "${TMPDIR:-/tmp}/configmap-mirror-manifests.XXXXXX")"
docs="$(mktemp -d "${TMPDIR:-/tmp}/configmap-mirror-chart-docs.XXXXXX")"
trap 'rm -rf "$rendered" "$docs"' EXIT
HELM="$helm" bash hack/manifests.sh "$rendered"
stale=()
while IFS= read -r file; do
  cmp -s "$rendered/$file" "$file" || stale+=("$file")
done < <(cd "$rendered" && find . -type f | sed 's|^\./||' | sort)
if [ "${#stale[@]}" -gt 0 ]; then
  log "not what $chart renders: ${stale[*]}; run \`make manifests\`"
  for file in "${stale[@]}"; do
    diff -u "$file" "$rendered/$file" >&2 || true
  done
  exit 1
fi

bash hack/chart-docs.sh "$docs"
if ! cmp -s "$docs/README.md" "$chart/README.md"; then
  log "$chart/README.md is not what its values.yaml and README.md.gotmpl make; run \`make chart-docs\`"
  diff -u "$chart/README.md" "$docs/README.md" >&2 || true
  exit 1
fi
log "the chart lints, and the rendered manifests and its README are current"
