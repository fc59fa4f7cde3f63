#!/usr/bin/env bash
# Writes the chart's CRD templates from the binary's API types, then renders
# every plain manifest from the Helm chart, its one source
# (`make manifests`):
#   - charts/configmap-mirror/templates/crd-clustermirrors.yaml,
#     crd-mirrors.yaml and crd-mirrorgrants.yaml, the ClusterMirror, Mirror
#     and MirrorGrant CRDs as `configmap-mirror crd` prints them, each behind crds.enabled and
#     crds.keep, in cluster-wide mode only;
#   - deploy/base/*.yaml, the cluster-wide install `kubectl apply -k deploy/`
#     applies (the kustomization files around them are written by hand);
#   - deploy/components/namespaced/rbac-namespaced.yaml,
#     deploy/components/servicemonitor/servicemonitor.yaml,
#     deploy/components/secrets/rbac-secrets.yaml and
#     deploy/components/admission-policy/admission-policy.yaml and
#     admission-policy-clustermirror.yaml and admission-policy-mirror.yaml;
#   - configmap-mirror.yaml, the whole cluster-wide install in one file, for
#     `kubectl apply -f`.
# Writing into the repository, it first sets the chart's version and
# appVersion and deploy/'s image tag to the crate's version (Cargo.toml).
#
#   hack/manifests.sh [OUT_DIR]   write under OUT_DIR instead of the repository
#                                 (the tests compare that with what is committed)
#
#   HELM        the helm binary to use (default: hack/install-helm.sh's)
#   CONFIGMAP_MIRROR   the controller binary that prints the CRDs
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

# The CRDs, from the binary: each gets a chart template of its own (below),
# which wraps its spec in the chart's own metadata. Written first, so that
# the renders below read them. These are every CRD the chart installs.
crd_names=(clustermirrors.mirror.workshop.io mirrors.mirror.workshop.io mirrorgrants.mirror.workshop.io)
if [ -n "${CONFIGMAP_MIRROR:-}" ]; then
  crds="$("$CONFIGMAP_MIRROR" crd)"
else
  crds="$(cargo run --quiet --locked --bin configmap-mirror -- crd)"
fi
case "$crds" in *"{{"*) die "the CRDs hold '{{', which Helm would read as a template" ;; esac

# One file per document of the stream, split on the `---` lines between
# them, without trailing blank lines (and none for an empty document): a
# `---` at the start of a line is always a separator, never part of a
# value, since a block scalar's lines are indented.
crd_dir="$(mktemp -d "${TMPDIR:-/tmp}/configmap-mirror-crds.XXXXXX")"
trap 'rm -rf "$crd_dir"' EXIT
printf '%s\n' "$crds" | awk -v dir="$crd_dir" '
  function flush() {
    sub(/[[:space:]]+$/, "", body)
    if (body != "") { n++; file = dir "/" n ".yaml"; print body > file; close(file) }
    body = ""
  }
  /^---[[:space:]]*$/ { flush(); next }
  { body = body $0 "\n" }
  END { flush() }'

# Each document by its metadata.name: every one must be one of crd_names,
# once, and every one of those must be there, before any template is
# written. A CRD added to src/api/ fails here until the chart gets its
# template, instead of being left out of every install.
declare -A crd_file=()
for file in "$crd_dir"/*.yaml; do
  [ -e "$file" ] || die "configmap-mirror crd printed no CRD"
  kind="$(awk '/^kind:/ {print $2; exit}' "$file")"
  name="$(awk '/^metadata:$/ {meta = 1; next} /^[^ ]/ {meta = 0} meta && /^  name:/ {print $2; exit}' "$file")"
  [ "$kind" = CustomResourceDefinition ] \
    || die "configmap-mirror crd printed a ${kind:-document without a kind} (${name:-no name}), not a CustomResourceDefinition"
  [[ " ${crd_names[*]} " == *" $name "* ]] \
    || die "configmap-mirror crd printed the CRD ${name:-without a name}, which hack/manifests.sh writes no chart template for"
  [ -z "${crd_file[$name]:-}" ] || die "configmap-mirror crd printed the CRD $name twice"
  grep -qx 'spec:' "$file" || die "the CRD $name that configmap-mirror crd printed has no spec"
  crd_file[$name]="$file"
done
for name in "${crd_names[@]}"; do
  [ -n "${crd_file[$name]:-}" ] || die "configmap-mirror crd printed no CRD $name"
done

declare -A crd_written=()
# crd_template NAME KIND: writes templates/crd-<plural>.yaml, the CRD NAME of
# objects KIND, behind crds.enabled and crds.keep in cluster-wide mode (an
# install limited to one namespace reads no such object, and may not create
# CRDs): the chart's metadata, the comment lines on stdin, then the spec as
# the binary printed it.
crd_template() {
  local name="$1" kind="$2" comment
  local template="$chart/templates/crd-${name%%.*}.yaml"
  comment="$(cat)"
  mkdir -p "$(dirname "$out/$template")"
  {
    # shellcheck disable=SC2016 # backquotes to print, not to run
    echo '{{- /* Written by `make manifests` (hack/manifests.sh) from `configmap-mirror crd`: edit the Rust types in src/api/, not this file. */}}'
    echo '{{- if and .Values.crds.enabled (not .Values.controller.watchNamespace) }}'
    printf '%s\n' "$comment"
    cat <<HEAD
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: $name
  labels:
    {{- include "configmap-mirror.labels" . | nindent 4 }}
  {{- if .Values.crds.keep }}
  annotations:
    # An uninstall leaves the CRD, and so every $kind, in place.
    helm.sh/resource-policy: keep
  {{- end }}
HEAD
    sed -n '/^spec:$/,$p' "${crd_file[$name]}"
    echo '{{- end }}'
  } >"$out/$template.partial"
  mv "$out/$template.partial" "$out/$template"
  crd_written[$name]=1
}

crd_template clustermirrors.mirror.workshop.io ClusterMirror <<'COMMENT'
# ClusterMirror: copies one ConfigMap or Secret from an allowed source
# namespace into every namespace a selector picks (docs/user/clustermirror.md).
# Deleting this CRD deletes every ClusterMirror but no copy: the controller
# never reads a missing CRD as "every ClusterMirror was deleted".
COMMENT

crd_template mirrors.mirror.workshop.io Mirror <<'COMMENT'
# Mirror (namespaced): a tenant's own request for copies of one ConfigMap or
# Secret of its namespace, into namespaces that consent (docs/user/mirror.md).
# Deleting this CRD deletes every Mirror but no copy, as for ClusterMirrors.
COMMENT

crd_template mirrorgrants.mirror.workshop.io MirrorGrant <<'COMMENT'
# MirrorGrant (namespaced): consent given from inside a namespace to the
# mirrors of the kinds it names, from the source namespaces it names.
# Deleting this CRD deletes every MirrorGrant, and so the consent they gave.
COMMENT
for name in "${crd_names[@]}"; do
  [ -n "${crd_written[$name]:-}" ] || die "hack/manifests.sh writes no chart template for the CRD $name"
done

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
for template in crd-clustermirrors crd-mirrors crd-mirrorgrants namespace serviceaccount rbac-cluster rbac-clustermirror-users rbac-mirror-users rbac-mirrorgrant-users rbac-leader-election deployment service poddisruptionbudget; do
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
render --set admissionPolicy.enabled=true --show-only templates/admission-policy-mirror.yaml \
  | write deploy/components/admission-policy/admission-policy-mirror.yaml "$header"
render | write configmap-mirror.yaml "# configmap-mirror $version: the cluster-wide install, in namespace $namespace.
#
#   kubectl apply -f configmap-mirror.yaml
#
# The same objects as \`kubectl apply -k deploy/\`; \`helm install\` of $chart
# with its default values makes them too, but for the Namespace.
$header"
log "rendered with $("$helm" version --template '{{.Version}}') into ${out}"
