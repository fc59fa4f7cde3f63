//! The contract with users and other tools: the labels and annotations this
//! controller reads and writes, how copies are named, and how their content
//! is checksummed. Anything a user, a test or another install can observe
//! of a copy is spelled here, and only here.

use std::collections::BTreeMap;

use k8s_openapi::{
    ByteString, api::core::v1::ConfigMap, apimachinery::pkg::apis::meta::v1::ObjectMeta,
};
use sha2::{Digest, Sha256};

/// Annotation on a copy holding the checksum of the source content it copies.
pub const CHECKSUM_ANNOTATION: &str = "workshop.io/source-checksum";
/// Label key marking objects this controller manages.
pub const MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";
/// Value of [`MANAGED_BY_LABEL`]; also the field manager and event reporter.
pub const MANAGER_NAME: &str = "configmap-mirror";
/// Longest object name Kubernetes accepts for a ConfigMap (a DNS subdomain).
pub const MAX_NAME_LEN: usize = 253;
/// On a mirror in another namespace: `namespace/name` of its source.
pub const MIRROR_OF_ANNOTATION: &str = "workshop.io/mirror-of";
/// On a mirror: the uid of its source.
pub const MIRROR_OF_UID_ANNOTATION: &str = "workshop.io/mirror-of-uid";
/// On a source: the name of its mirrors in other namespaces (absent: the
/// source's own name). Its companion keeps `<name><suffix>`.
pub const MIRROR_NAME_ANNOTATION: &str = "workshop.io/mirror-name";
/// On every copy: the source selector of the install that wrote it. Two
/// installs with different selectors share the managed-by label; each
/// prunes only its own copies.
pub const SOURCE_SELECTOR_ANNOTATION: &str = "workshop.io/source-selector";

/// On a copy a ClusterMirror wrote: that ClusterMirror's name. A copy
/// without it was asked for by its source's labels.
pub const CLUSTER_MIRROR_LABEL: &str = "workshop.io/cluster-mirror";

/// On a copy a Mirror wrote: that Mirror's name. Its namespace is the
/// source's, which `workshop.io/mirror-of` names.
pub const MIRROR_LABEL: &str = "workshop.io/mirror";

/// On a copy a ClusterMirror wrote: what that ClusterMirror's deletion
/// does to it (its `deletionPolicy`), and the uid of the CRD it was made
/// under. Together they let a deletion nobody saw (no leader ran) be told
/// from its CRD being deleted or replaced.
pub const DELETION_POLICY_ANNOTATION: &str = "workshop.io/deletion-policy";
/// See [`DELETION_POLICY_ANNOTATION`].
pub const WRITTEN_UNDER_CRD_ANNOTATION: &str = "workshop.io/written-under-crd";

/// The prefix of this controller's own label and annotation keys, which a
/// copy never carries from its source.
pub const CONTROLLER_KEY_PREFIX: &str = "workshop.io/";
/// On a source: which of its labels its copies carry (an allowlist).
pub const COPY_LABELS_ANNOTATION: &str = "workshop.io/copy-labels";
/// On a source: which of its annotations its copies carry (an allowlist).
pub const COPY_ANNOTATIONS_ANNOTATION: &str = "workshop.io/copy-annotations";
/// On a copy: the label keys this controller carried onto it from its
/// source, so that it removes those only.
pub const CARRIED_LABELS_ANNOTATION: &str = "workshop.io/carried-labels";
/// On a copy: the annotation keys carried from its source.
pub const CARRIED_ANNOTATIONS_ANNOTATION: &str = "workshop.io/carried-annotations";

/// Label and annotation keys a copy never carries from its source, whatever
/// its lists (`workshop.io/copy-labels`, `workshop.io/copy-annotations`)
/// say; an entry ending in `*` is a prefix. First this controller's own: a
/// copy that carried another value of its managed-by label would drop out
/// of its copies' watch and never be updated or pruned again. Then the keys
/// by which other tools claim, track, prune, rewrite or trust an object: a
/// copy carrying them would be taken for theirs (pruned as an orphan of
/// their application, adopted, overwritten, or read as credentials). The
/// label contract (docs/user/labels.md) lists and explains them.
pub const NEVER_CARRIED: &[&str] = &[
    MANAGED_BY_LABEL,
    "workshop.io/*",
    // kubectl: apply's record and its pruning, ApplySets; the addon
    // manager prunes by its label.
    "kubectl.kubernetes.io/*",
    "applyset.kubernetes.io/*",
    "addonmanager.kubernetes.io/*",
    // Helm, and the tools that track objects by Helm's keys (Argo CD's
    // default tracking label is the instance label).
    "app.kubernetes.io/instance",
    "meta.helm.sh/*",
    "helm.sh/*",
    // Argo CD: tracking, and the Secrets it reads as cluster and
    // repository credentials (`argocd.argoproj.io/secret-type`).
    "argocd.argoproj.io/*",
    // Flux (v2 and v1).
    "kustomize.toolkit.fluxcd.io/*",
    "helm.toolkit.fluxcd.io/*",
    "fluxcd.io/*",
    // kapp, Rancher Fleet (and wrangler's object sets beneath it), Pulumi,
    // Crossplane, kluctl.
    "kapp.k14s.io/*",
    "fleet.cattle.io/*",
    "objectset.rio.cattle.io/*",
    "pulumi.com/*",
    "crossplane.io/*",
    "kluctl.io/*",
    // cli-utils inventories (kpt, Config Sync): an object's inventory, and
    // the inventory itself, whose data lists the objects it prunes; and
    // Config Sync itself.
    "config.k8s.io/owning-inventory",
    "cli-utils.sigs.k8s.io/inventory-id",
    "configsync.gke.io/*",
    "configmanagement.gke.io/*",
    // cert-manager (a Secret it adopts, a CA it injects), trust-manager.
    "cert-manager.io/*",
    "controller.cert-manager.io/*",
    "trust.cert-manager.io/*",
    // Tools that take a Secret over by its keys.
    "reconcile.external-secrets.io/*",
    "sealedsecrets.bitnami.com/*",
    // Other copying tools: a copy must become neither their source nor
    // their target.
    "reflector.v1.k8s.emberstack.com/*",
    "replicator.v1.mittwald.de/*",
    "kubed.appscode.com/*",
    "generate.kyverno.io/*",
    // OpenShift writes a CA bundle or a serving certificate into objects
    // so marked.
    "service.beta.openshift.io/*",
    "service.alpha.openshift.io/*",
    "config.openshift.io/inject-trusted-cabundle",
    // istiod reads a Secret so labeled as a remote cluster's credentials.
    "istio/multiCluster",
];

/// Whether `key` is one of [`NEVER_CARRIED`].
pub fn never_carried(key: &str) -> bool {
    NEVER_CARRIED.iter().any(|entry| names_key(entry, key))
}

/// Whether a list entry (an exact key, or a prefix ending in `*`) names
/// `key`.
fn names_key(entry: &str, key: &str) -> bool {
    match entry.strip_suffix('*') {
        Some(prefix) => key.starts_with(prefix),
        None => key == entry,
    }
}

/// The keys an install never carries: [`NEVER_CARRIED`], and the entries
/// `--never-carry` adds (an entry ending in `*` is a prefix), such as a
/// custom Argo CD `instanceLabelKey`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NeverCarried {
    added: Vec<String>,
}

impl NeverCarried {
    /// The built-in list alone.
    pub const BUILT_IN: NeverCarried = NeverCarried { added: Vec::new() };

    /// The built-in list and `added`; empty entries stand for none.
    pub fn new(added: &[String]) -> NeverCarried {
        let added = added.iter().map(|e| e.trim()).filter(|e| !e.is_empty());
        NeverCarried {
            added: added.map(str::to_owned).collect(),
        }
    }

    pub fn contains(&self, key: &str) -> bool {
        never_carried(key) || self.added_names(key)
    }

    /// Whether an entry `--never-carry` added names `key`: the
    /// ClusterMirror CRD's rules know only the built-in list.
    pub fn added_names(&self, key: &str) -> bool {
        self.added.iter().any(|entry| names_key(entry, key))
    }
}

/// Label selector of the copies (companions and mirrors) this controller
/// watches: every object carrying its managed-by label.
pub fn copy_selector() -> String {
    format!("{MANAGED_BY_LABEL}={MANAGER_NAME}")
}

/// The companion's name for a source called `source_name`.
pub fn companion_name(source_name: &str, suffix: &str) -> String {
    format!("{source_name}{suffix}")
}

/// The name of the source a companion called `companion` was made for, if
/// its name has the companion shape.
pub fn source_name_of(companion: &str, suffix: &str) -> Option<String> {
    companion
        .strip_suffix(suffix)
        .filter(|name| !name.is_empty())
        .map(str::to_owned)
}

/// SHA-256 (hex) of a canonical encoding of `data` and `binaryData`.
///
/// The encoding is unambiguous: each map is tagged, prefixed by its entry
/// count, and each key and value is length-prefixed, with keys in sorted
/// order. So no two different contents encode alike, and the same content
/// gives the same checksum whatever order its keys were written in.
pub fn checksum(
    data: Option<&BTreeMap<String, String>>,
    binary_data: Option<&BTreeMap<String, ByteString>>,
) -> String {
    let empty_text = BTreeMap::new();
    let empty_binary = BTreeMap::new();
    let data = data.unwrap_or(&empty_text);
    let binary_data = binary_data.unwrap_or(&empty_binary);
    let mut hasher = Sha256::new();
    encode_map(
        &mut hasher,
        b'd',
        data.iter().map(|(k, v)| (k.as_bytes(), v.as_bytes())),
    );
    encode_map(
        &mut hasher,
        b'b',
        binary_data
            .iter()
            .map(|(k, v)| (k.as_bytes(), v.0.as_slice())),
    );
    hex::encode(hasher.finalize())
}

/// Feeds a map's canonical encoding to a hash or a MAC: `tag`, the entry
/// count, then each key and value length-prefixed, in the order given.
pub(crate) fn encode_map<'a>(
    hasher: &mut impl sha2::digest::Update,
    tag: u8,
    entries: impl ExactSizeIterator<Item = (&'a [u8], &'a [u8])>,
) {
    hasher.update(&[tag]);
    hasher.update(&(entries.len() as u64).to_be_bytes());
    // BTreeMap iterates in key order, which is what makes this canonical.
    for (key, value) in entries {
        hasher.update(&(key.len() as u64).to_be_bytes());
        hasher.update(key);
        hasher.update(&(value.len() as u64).to_be_bytes());
        hasher.update(value);
    }
}

/// The checksum of a ConfigMap's own content, as its copies record it.
pub fn content_checksum(cm: &ConfigMap) -> String {
    checksum(cm.data.as_ref(), cm.binary_data.as_ref())
}

/// `namespace/name`, as logs, Events and `explain` name an object.
pub fn object_key(meta: &ObjectMeta) -> String {
    format!(
        "{}/{}",
        meta.namespace.as_deref().unwrap_or_default(),
        meta.name.as_deref().unwrap_or_default()
    )
}

/// Whether an object carries this controller's managed-by label.
pub fn is_managed_by_us(meta: &ObjectMeta) -> bool {
    meta.labels
        .as_ref()
        .and_then(|labels| labels.get(MANAGED_BY_LABEL))
        .is_some_and(|value| value == MANAGER_NAME)
}

/// The source a mirror names, as (namespace, name), if it is a mirror.
pub fn mirror_of(meta: &ObjectMeta) -> Option<(String, String)> {
    let (namespace, name) = annotation(meta, MIRROR_OF_ANNOTATION)?.split_once('/')?;
    Some((namespace.to_owned(), name.to_owned()))
}

/// The ClusterMirror a copy says wrote it, if any.
pub fn cluster_mirror_of(meta: &ObjectMeta) -> Option<&str> {
    meta.labels
        .as_ref()?
        .get(CLUSTER_MIRROR_LABEL)
        .map(String::as_str)
}

/// The Mirror a copy says wrote it, if any, as (namespace, name): the
/// namespace its `workshop.io/mirror-of` names, the name its label.
pub fn namespaced_mirror_of(meta: &ObjectMeta) -> Option<(&str, &str)> {
    let name = meta.labels.as_ref()?.get(MIRROR_LABEL)?;
    let (namespace, _) = annotation(meta, MIRROR_OF_ANNOTATION)?.split_once('/')?;
    Some((namespace, name))
}

/// The label by which Helm's storage drivers find its release records
/// (`owner=helm`), in either kind: such an object is never a source, and
/// the sources' cache keeps this label to tell.
pub const HELM_STORAGE_LABEL: (&str, &str) = ("owner", "helm");
/// The name prefix of Helm's release records, which its storage drivers
/// also find by [`HELM_STORAGE_LABEL`]: Helm reads a ConfigMap or Secret so
/// named, or so labeled, as the record of a release in its namespace.
pub const HELM_RELEASE_NAME_PREFIX: &str = "sh.helm.release.v1.";
/// The label by which Helm 2's Tiller finds its release records: the same
/// rule as [`HELM_STORAGE_LABEL`], for clusters that still hold them.
pub const TILLER_STORAGE_LABEL: (&str, &str) = ("OWNER", "TILLER");

/// Which of [`HELM_STORAGE_LABEL`] and [`TILLER_STORAGE_LABEL`] `meta`
/// carries, if either.
pub fn helm_storage_label(meta: &ObjectMeta) -> Option<(&'static str, &'static str)> {
    let labels = meta.labels.as_ref()?;
    [HELM_STORAGE_LABEL, TILLER_STORAGE_LABEL]
        .into_iter()
        .find(|(key, value)| labels.get(*key).is_some_and(|v| v == value))
}

pub mod condition;
pub mod warning;

/// What a copy is to its source: the companion in its namespace, or a
/// mirror in another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CopyRole {
    Companion,
    Mirror,
}

impl CopyRole {
    /// A mirror names its source in its annotations; anything else is a
    /// companion.
    pub fn of(copy: &ObjectMeta) -> CopyRole {
        match mirror_of(copy) {
            Some(_) => CopyRole::Mirror,
            None => CopyRole::Companion,
        }
    }

    /// As logs and Events call a copy.
    pub fn as_str(self) -> &'static str {
        match self {
            CopyRole::Companion => "companion",
            CopyRole::Mirror => "mirror",
        }
    }

    /// The reason of the Normal Event about `operation` on a copy.
    pub fn event_reason(self, operation: Operation) -> &'static str {
        match (self, operation) {
            (CopyRole::Mirror, Operation::Create) => "MirrorCreated",
            (CopyRole::Mirror, Operation::Update) => "MirrorUpdated",
            (CopyRole::Mirror, Operation::Delete) => "MirrorDeleted",
            (CopyRole::Mirror, Operation::Recreate) => "MirrorRecreated",
            (CopyRole::Companion, Operation::Create) => "CompanionCreated",
            (CopyRole::Companion, Operation::Update) => "CompanionUpdated",
            (CopyRole::Companion, Operation::Delete) => "CompanionDeleted",
            (CopyRole::Companion, Operation::Recreate) => "CompanionRecreated",
        }
    }
}

impl std::fmt::Display for CopyRole {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The writes of copies (companions and mirrors) the controller makes: the
/// Normal Events about a copy and the `operation` label of
/// `configmap_mirror_companion_writes_total` name them.
#[derive(Debug, Clone, Copy, Hash, PartialEq, Eq)]
pub enum Operation {
    Create,
    Update,
    Delete,
    Recreate,
}

impl Operation {
    /// As the metrics label it.
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "create",
            Operation::Update => "update",
            Operation::Delete => "delete",
            Operation::Recreate => "recreate",
        }
    }
}

/// Whether a copy was written by the install with this source selector.
pub fn written_under(copy: &ObjectMeta, selector: &str) -> bool {
    annotation(copy, SOURCE_SELECTOR_ANNOTATION) == Some(selector)
}

/// The value of one annotation, if present.
pub fn annotation<'a>(meta: &'a ObjectMeta, key: &str) -> Option<&'a str> {
    meta.annotations
        .as_ref()
        .and_then(|annotations| annotations.get(key))
        .map(String::as_str)
}

pub mod install;
mod keys;
pub use keys::*;
#[cfg(test)]
mod tests;
