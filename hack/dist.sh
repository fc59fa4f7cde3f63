#!/usr/bin/env bash
# Writes everything a release publishes into one folder (`make dist`), all at
# the crate's version (Cargo.toml):
#   configmap-mirror-VERSION.tgz                  the Helm chart (`helm package`)
#   configmap-mirror.yaml                         the release manifest, as `make manifests` renders it
#   configmap-mirror-VERSION-OS-ARCH.oci.tar      the image (`make image`), as an OCI archive
#   configmap-mirror-VERSION.cdx.json             the binary's SBOM, CycloneDX JSON (hack/sbom.py)
#   SHA256SUMS                                    of the other files, for `sha256sum -c`
# It refuses to start when the chart's version or appVersion is not the
# crate's, and writes the folder whole or not at all.
#
#   hack/dist.sh [OUT_DIR]   (default: dist/VERSION)
#
#   HELM   the helm binary to use (default: hack/install-helm.sh's)
#
# Needs root, podman and mmdebstrap (for the image, see hack/image.sh),
# python3 and git.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

log() { printf 'dist: %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

chart=charts/configmap-mirror
name=configmap-mirror

# Every program missing, named at once with the command that installs it.
missing=()
for program in podman mmdebstrap python3 git sha256sum; do
  command -v "$program" >/dev/null 2>&1 || missing+=("$program")
done
if [ "${#missing[@]}" -gt 0 ]; then
  packages="$(printf '%s\n' "${missing[@]}" | sed 's/^sha256sum$/coreutils/' | tr '\n' ' ')"
  die "missing ${missing[*]}: apt-get install -y ${packages% } (or \`make prereqs\`, which installs what \`make test\` needs)"
fi
command -v cargo >/dev/null || die "cargo is required (the SBOM asks it for the crates): see https://rustup.rs"
[ "$(id -u)" = 0 ] || die "needs root (the image is built by hack/image.sh)"

version="$(awk -F'"' '/^\[/ {in_package = ($0 == "[package]")} in_package && /^version *=/ {print $2; exit}' Cargo.toml)"
[ -n "$version" ] || die "no version in Cargo.toml's [package]"
chart_version="$(awk '/^version:/ {print $2; exit}' "$chart/Chart.yaml")"
app_version="$(awk '/^appVersion:/ {gsub(/"/, "", $2); print $2; exit}' "$chart/Chart.yaml")"
if [ "$chart_version" != "$version" ] || [ "$app_version" != "$version" ]; then
  die "the crate is $version (Cargo.toml) but $chart/Chart.yaml has version $chart_version, appVersion $app_version: run \`make manifests\`"
fi
revision="$(git rev-parse --verify HEAD 2>/dev/null)" \
  || die "not a git checkout: a release names the commit it is built from"
[ -z "$(git status --porcelain)" ] \
  || log "WARNING: the work tree has changes not committed: the image's revision is $revision-dirty"

out="${1:-$root/dist/$version}"
mkdir -p "$(dirname "$out")"
out="$(cd "$(dirname "$out")" && pwd)/$(basename "$out")"
stage="$out.partial"
work="$(mktemp -d "${TMPDIR:-/tmp}/configmap-mirror-dist.XXXXXX")"
trap 'rm -rf "$work" "$stage"' EXIT
rm -rf "$stage"
mkdir -p "$stage"

helm="${HELM:-}"
[ -n "$helm" ] || helm="$(bash hack/install-helm.sh)/helm"
started=$(date +%s)

log "chart: helm package $chart"
"$helm" package "$chart" --destination "$stage" >&2
[ -f "$stage/$name-$version.tgz" ] || die "helm package wrote no $name-$version.tgz"

log "manifest: rendered from the chart (hack/manifests.sh)"
HELM="$helm" bash hack/manifests.sh "$work/manifests"
cp "$work/manifests/$name.yaml" "$stage/$name.yaml"
image="$(awk '$1 == "image:" {print $2; exit}' "$stage/$name.yaml")"
[ "$image" != "${image%:"$version"}" ] \
  || die "the manifest's image is $image, not one tagged $version"

log "image: $image (hack/image.sh)"
# Labeled with the commit, whatever the environment says.
unset REVISION
IMAGE="$image" ARCHIVE="$work/image.oci.tar" ARCHIVE_FORMAT=oci-archive bash hack/image.sh
# The platform, from the image's own configuration; the archive holds one image.
platform="$(python3 - "$work/image.oci.tar" <<'EOF'
import json, sys, tarfile
with tarfile.open(sys.argv[1]) as archive:
    def blob(descriptor):
        algorithm, digest = descriptor["digest"].split(":")
        return json.load(archive.extractfile(f"blobs/{algorithm}/{digest}"))
    manifests = json.load(archive.extractfile("index.json"))["manifests"]
    if len(manifests) != 1:
        sys.exit(f"the image archive holds {len(manifests)} images, not one")
    config = blob(blob(manifests[0])["config"])
    print(f"{config['os']}-{config['architecture']}")
EOF
)" || die "cannot read the image's platform from its archive"
mv "$work/image.oci.tar" "$stage/$name-$version-$platform.oci.tar"

log "SBOM: hack/sbom.py"
SOURCE_DATE_EPOCH="$(git log -1 --format=%ct HEAD)" python3 hack/sbom.py >"$stage/$name-$version.cdx.json"

(cd "$stage" && find . -maxdepth 1 -type f -printf '%f\n' | LC_ALL=C sort \
  | xargs -d '\n' sha256sum -- >"$work/SHA256SUMS")
mv "$work/SHA256SUMS" "$stage/SHA256SUMS"

rm -rf "$out"
mv "$stage" "$out"
log "wrote ${out#"$root"/} at $revision in $(($(date +%s) - started)) s:"
(cd "$out" && ls -l) >&2
