#!/usr/bin/env bash
# Writes the chart's CRD template from the binary's API types, then renders
# every plain manifest from the Helm chart, its one source
# (`make manifests`):
#   - charts/configmap-mirror/templates/crd-clustermirrors.yaml, the
#     ClusterMirror CRD as `configmap-mirror crd` prints it, behind
#     crds.enabled and crds.keep;
#   - deploy/base/*.yaml, the cluster-wide install `kubectl apply -k deploy/`
#     applies (the kustomization files around them are written by hand);
#   - deploy/components/namespaced/rbac-namespaced.yaml,
#     deploy/components/servicemonitor/servicemonitor.yaml,
#     deploy/components/secrets/rbac-secrets.yaml and
#     deploy/components/admission-policy/admission-policy.yaml and
#     admission-policy-clustermirror.yaml;
#   - configmap-mirror.yaml, the whole cluster-wide install in one file, for
#     `kubectl apply -f`.
# Writing into the repository, it first sets the chart's version and
# appVersion and deploy/'s image tag to the crate's version (Cargo.toml).
#
#   hack/manifests.sh [OUT_DIR]   write under OUT_DIR instead of the repository
#                                 (the tests compare that with what is committed)
#
#   HELM        the helm binary to use (default: hack/install-helm.sh's)
#   CONFIGMAP_MIRROR   the controller binary that prints the CRD
#               (default: `cargo run` of this checkout)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
out="${1:-$root}"

log() { printf 'manifests: %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

helm="${HELM:-}"
[ -n "$helm" ] || helm="$(bash hack/install-helm.sh)/helm"
chart=charts/configmap-mirror
release=configmap-mirror
namespace=configmap-mirror

version="$(awk -F'"' '/^\[/ {in_package = ($0 == "[package]")} in_package && /^version *=/ {print $2; exit}' Cargo.toml)"
[ -n "$version" ] || die "no version in Cargo.toml's [package]"
if [ "$out" = "$root" ]; then
  sed -i -E "s/^version: .*/version: $version/; s/^appVersion: .*/appVersion: \"$version\"/" "$chart/Chart.yaml"
  sed -i -E "s/^( *newTag: ).*/\1\"$version\"/" deploy/base/kustomization.yaml
fi

# The CRD, from the binary: the chart's template wraps its spec in the
# chart's own metadata. Written first, so that the renders below read it.
if [ -n "${CONFIGMAP_MIRROR:-}" ]; then
  crd="$("$CONFIGMAP_MIRROR" crd)"
else
  crd="$(cargo run --quiet --locked --bin configmap-mirror -- crd)"
fi
case "$crd" in *"{{"*) die "the CRD holds '{{', which Helm would read as a template" ;; esac
[ "$(printf '%s\n' "$crd" | grep -c '^kind: CustomResourceDefinition$')" = 1 ] \
  || die "configmap-mirror crd printed other than one CRD"
crd_template="$chart/templates/crd-clustermirrors.yaml"
mkdir -p "$(dirname "$out/$crd_template")"
{
  cat <<'TEMPLATE'
{{- /* Written by `make manifests` (hack/manifests.sh) from `configmap-mirror crd`: edit the Rust types in src/api/, not this file. */}}
{{- /* Cluster-wide mode only: an install limited to one namespace serves no ClusterMirror, and may not create CRDs. */}}
{{- if and .Values.crds.enabled (not .Values.controller.watchNamespace) }}
# ClusterMirror: copies one ConfigMap or Secret from an allowed source
# namespace into every namespace a selector picks (docs/user/clustermirror.md).
# Deleting this CRD deletes every ClusterMirror but no copy: the controller
# never reads a missing CRD as "every ClusterMirror was deleted".
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: clustermirrors.mirror.workshop.io
  labels:
    {{- include "configmap-mirror.labels" . | nindent 4 }}
  {{- if .Values.crds.keep }}
  annotations:
    # An uninstall leaves the CRD, and so every ClusterMirror, in place.
    helm.sh/resource-policy: keep
  {{- end }}
TEMPLATE
  printf '%s\n' "$crd" | sed -n '/^spec:$/,$p'
  echo '{{- end }}'
} >"$out/$crd_template.partial"
mv "$out/$crd_template.partial" "$out/$crd_template"

# helm template, without Helm's bookkeeping: these files are applied with
# kubectl, so they carry neither `app.kubernetes.io/managed-by: Helm` nor
# `helm.sh/chart`, nor the `# Source:` line of each template, nor the
# `helm test` Pod (a hook, which kubectl would create as a plain Pod).
render() {
  "$helm" template "$release" "$chart" --namespace "$namespace" --set namespace.create=true --set crds.keep=false --skip-tests "$@" \
    | sed -E '/^ *helm\.sh\/chart: /d; /^ *app\.kubernetes\.io\/managed-by: Helm$/d; /^# Source: /d'
}

# write FILE HEADER: stdin, under a header, without the leading document
# marker nor the blank lines helm leaves at the end of each document.
write() {
  mkdir -p "$(dirname "$out/$1")"
  {
    printf '%s\n' "$2"
    sed '1{/^---$/d}' | awk '
      /^[[:space:]]*$/ { blank++; next }
      /^---$/ { blank = 0 }
      { while (blank > 0) { print ""; blank-- } print }'
  } >"$out/$1.partial"
  mv "$out/$1.partial" "$out/$1"
}

header="# Rendered from $chart by \`make manifests\` (hack/manifests.sh): edit the chart, not this file."
for template in crd-clustermirrors namespace serviceaccount rbac-cluster rbac-clustermirror-users rbac-leader-election deployment service poddisruptionbudget; do
  render --show-only "templates/$template.yaml" | write "deploy/base/$template.yaml" "$header"
done
render --set controller.watchNamespace=target-namespace --show-only templates/rbac-namespaced.yaml \
  | write deploy/components/namespaced/rbac-namespaced.yaml "$header
# Its namespace, target-namespace, is a placeholder: the component sets it from
# the settings object (see kustomization.yaml)."
render --set metrics.serviceMonitor.enabled=true --show-only templates/servicemonitor.yaml \
  | write deploy/components/servicemonitor/servicemonitor.yaml "$header"
render --set secrets.enabled=true --show-only templates/rbac-secrets.yaml \
  | write deploy/components/secrets/rbac-secrets.yaml "$header"
render --set admissionPolicy.enabled=true --show-only templates/admission-policy.yaml \
  | write deploy/components/admission-policy/admission-policy.yaml "$header"
render --set admissionPolicy.enabled=true --show-only templates/admission-policy-clustermirror.yaml \
  | write deploy/components/admission-policy/admission-policy-clustermirror.yaml "$header"
render | write configmap-mirror.yaml "# configmap-mirror $version: the cluster-wide install, in namespace $namespace.
#
#   kubectl apply -f configmap-mirror.yaml
#
# The same objects as \`kubectl apply -k deploy/\`; \`helm install\` of $chart
# with its default values makes them too, but for the Namespace.
$header"
log "rendered with $("$helm" version --template '{{.Version}}') into ${out}"
