//! The desired state: what a source's companion must look like.
//!
//! Everything here is pure. Given a source ConfigMap it says what the
//! companion's name, content, labels, annotations and owner must be, and given
//! the companion as it is now it says whether, and how, the two differ. The
//! reconcilers do the I/O; this module decides.

use std::collections::BTreeMap;

use k8s_openapi::{
    ByteString,
    api::core::v1::ConfigMap,
    apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference},
};
use sha2::{Digest, Sha256};

use crate::cached::{CACHED_DIGEST_KEY, content_digest};

/// Annotation on a companion holding the checksum of the source content it copies.
pub const CHECKSUM_ANNOTATION: &str = "workshop.io/source-checksum";
/// Label key marking objects this controller manages.
pub const MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";
/// Value of [`MANAGED_BY_LABEL`]; also the field manager and event reporter.
pub const MANAGER_NAME: &str = "configmap-mirror";
/// Label selector of the companions this controller watches.
pub const COMPANION_SELECTOR: &str = "app.kubernetes.io/managed-by=configmap-mirror";
/// Longest object name Kubernetes accepts for a ConfigMap (a DNS subdomain).
pub const MAX_NAME_LEN: usize = 253;
/// On a mirror in another namespace: `namespace/name` of its source.
pub const MIRROR_OF_ANNOTATION: &str = "workshop.io/mirror-of";
/// On a mirror: the uid of its source.
pub const MIRROR_OF_UID_ANNOTATION: &str = "workshop.io/mirror-of-uid";
/// On every copy: the source selector of the install that wrote it. Two
/// installs with different selectors share the managed-by label; each
/// prunes only its own copies.
pub const SOURCE_SELECTOR_ANNOTATION: &str = "workshop.io/source-selector";

/// Why a companion cannot be built for a source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The source has no name, namespace or uid yet (never true for a stored object).
    Incomplete,
    /// `<name><suffix>` would be longer than Kubernetes allows.
    NameTooLong { name: String, len: usize },
    /// The source is itself a companion; mirroring it would grow a chain.
    SourceIsCompanion,
    /// The source is being deleted: new copies would only be garbage.
    BeingDeleted,
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
    hash_map(
        &mut hasher,
        b'd',
        data.iter().map(|(k, v)| (k.as_bytes(), v.as_bytes())),
    );
    hash_map(
        &mut hasher,
        b'b',
        binary_data
            .iter()
            .map(|(k, v)| (k.as_bytes(), v.0.as_slice())),
    );
    hex::encode(hasher.finalize())
}

fn hash_map<'a>(
    hasher: &mut Sha256,
    tag: u8,
    entries: impl ExactSizeIterator<Item = (&'a [u8], &'a [u8])>,
) {
    hasher.update([tag]);
    hasher.update((entries.len() as u64).to_be_bytes());
    // BTreeMap iterates in key order, which is what makes this canonical.
    for (key, value) in entries {
        hasher.update((key.len() as u64).to_be_bytes());
        hasher.update(key);
        hasher.update((value.len() as u64).to_be_bytes());
        hasher.update(value);
    }
}

/// The checksum of a ConfigMap's own content.
pub fn content_checksum(cm: &ConfigMap) -> String {
    checksum(cm.data.as_ref(), cm.binary_data.as_ref())
}

/// The controller owner reference a companion carries to its source.
pub fn owner_reference(name: &str, uid: &str) -> OwnerReference {
    OwnerReference {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        name: name.into(),
        uid: uid.into(),
        controller: Some(true),
        // Unset on purpose: setting it needs extra RBAC on clusters that
        // enforce owner-reference permissions, and nothing here needs it.
        block_owner_deletion: None,
    }
}

/// Whether a ConfigMap carries this controller's managed-by label.
pub fn is_managed_by_us(cm: &ConfigMap) -> bool {
    cm.metadata
        .labels
        .as_ref()
        .and_then(|labels| labels.get(MANAGED_BY_LABEL))
        .is_some_and(|value| value == MANAGER_NAME)
}

/// Name, namespace and uid of a ConfigMap that may be copied: one that is
/// stored (so has all three) and is not itself a copy.
fn identity(source: &ConfigMap) -> Result<(&str, &str, &str), Refusal> {
    if is_managed_by_us(source) {
        return Err(Refusal::SourceIsCompanion);
    }
    if source.metadata.deletion_timestamp.is_some() {
        return Err(Refusal::BeingDeleted);
    }
    match (
        source.metadata.name.as_deref(),
        source.metadata.namespace.as_deref(),
        source.metadata.uid.as_deref(),
    ) {
        (Some(name), Some(namespace), Some(uid)) => Ok((name, namespace, uid)),
        _ => Err(Refusal::Incomplete),
    }
}

/// The companion a source should have, built from the source alone.
pub fn desired_companion(source: &ConfigMap, suffix: &str) -> Result<ConfigMap, Refusal> {
    let (name, namespace, uid) = identity(source)?;
    let companion = companion_name(name, suffix);
    if companion.len() > MAX_NAME_LEN {
        let len = companion.len();
        return Err(Refusal::NameTooLong {
            name: companion,
            len,
        });
    }
    Ok(ConfigMap {
        metadata: ObjectMeta {
            name: Some(companion),
            namespace: Some(namespace.into()),
            labels: Some(BTreeMap::from([(
                MANAGED_BY_LABEL.into(),
                MANAGER_NAME.into(),
            )])),
            annotations: Some(BTreeMap::from([(
                CHECKSUM_ANNOTATION.into(),
                content_checksum(source),
            )])),
            owner_references: Some(vec![owner_reference(name, uid)]),
            ..ObjectMeta::default()
        },
        data: source.data.clone(),
        binary_data: source.binary_data.clone(),
        immutable: source.immutable,
    })
}

/// The mirror of a source in namespace `target`: the companion's content
/// under the source's own name. A namespace cannot own objects in another,
/// so instead of an owner reference it names its source in annotations, and
/// the prune loop removes it when the source no longer wants it.
pub fn desired_mirror(source: &ConfigMap, target: &str) -> Result<ConfigMap, Refusal> {
    let (name, namespace, uid) = identity(source)?;
    Ok(ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(target.into()),
            labels: Some(BTreeMap::from([(
                MANAGED_BY_LABEL.into(),
                MANAGER_NAME.into(),
            )])),
            annotations: Some(BTreeMap::from([
                (CHECKSUM_ANNOTATION.into(), content_checksum(source)),
                (MIRROR_OF_ANNOTATION.into(), format!("{namespace}/{name}")),
                (MIRROR_OF_UID_ANNOTATION.into(), uid.into()),
            ])),
            ..ObjectMeta::default()
        },
        data: source.data.clone(),
        binary_data: source.binary_data.clone(),
        immutable: source.immutable,
    })
}

/// Marks a copy as written by the install with this source selector.
pub fn mark_install(mut copy: ConfigMap, selector: &str) -> ConfigMap {
    copy.metadata
        .annotations
        .get_or_insert_with(BTreeMap::new)
        .insert(SOURCE_SELECTOR_ANNOTATION.into(), selector.into());
    copy
}

/// Whether a copy was written by the install with this source selector.
pub fn written_under(copy: &ConfigMap, selector: &str) -> bool {
    annotation(copy, SOURCE_SELECTOR_ANNOTATION) == Some(selector)
}

/// The source a mirror names, as (namespace, name), if it is a mirror.
pub fn mirror_of(cm: &ConfigMap) -> Option<(String, String)> {
    let (namespace, name) = annotation(cm, MIRROR_OF_ANNOTATION)?.split_once('/')?;
    Some((namespace.to_owned(), name.to_owned()))
}

/// Decides whether `existing` in another namespace is the mirror of
/// `source`: it must name this source (namespace and name) in its
/// annotations and carry our label. A mirror of an earlier source of the
/// same name (deleted and recreated) is taken over; anything else, including
/// the mirror of another source with the same name, is never touched.
pub fn mirror_ownership(existing: &ConfigMap, source: &ConfigMap) -> Ownership {
    let source_ref = source
        .metadata
        .namespace
        .as_deref()
        .zip(source.metadata.name.as_deref());
    let names_source = mirror_of(existing).zip(source_ref).is_some_and(
        |((ns, name), (source_ns, source_name))| ns == source_ns && name == source_name,
    );
    // An object with an owner (a companion, or anything else's) is never
    // taken for a mirror.
    let owned = !existing
        .metadata
        .owner_references
        .as_deref()
        .unwrap_or(&[])
        .is_empty();
    if !names_source || !is_managed_by_us(existing) || owned {
        return Ownership::Foreign;
    }
    if annotation(existing, MIRROR_OF_UID_ANNOTATION) == source.metadata.uid.as_deref() {
        Ownership::Ours
    } else {
        Ownership::Adoptable
    }
}

/// Who an existing object at the companion's name belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ownership {
    /// Controlled by this very source.
    Ours,
    /// Ours, but its owner reference was edited away or names an earlier
    /// source of the same name (deleted and recreated): safe to take back.
    Adoptable,
    /// Somebody else's object that merely has the name. Never touched.
    Foreign,
}

/// Decides whether `existing` is the companion of `source_name`/`source_uid`.
///
/// An owner reference to a ConfigMap of the source's name can only be this
/// source or a deleted predecessor of it, because names are unique in a
/// namespace. Without any owner reference, it takes our label, a checksum
/// annotation that matches the content (a copy nobody edited since it was
/// written) and no mirror annotation: the mirror of another namespace's
/// source is never a companion, however it is named.
pub fn ownership(existing: &ConfigMap, source_name: &str, source_uid: &str) -> Ownership {
    if mirror_of(existing).is_some() {
        return Ownership::Foreign;
    }
    let refs = existing.metadata.owner_references.as_deref().unwrap_or(&[]);
    let names_source = |r: &OwnerReference| {
        r.api_version == "v1" && r.kind == "ConfigMap" && r.name == source_name
    };
    if refs
        .iter()
        .any(|r| names_source(r) && r.uid == source_uid && r.controller == Some(true))
    {
        return Ownership::Ours;
    }
    if refs
        .iter()
        .any(|r| r.controller == Some(true) && !names_source(r))
    {
        return Ownership::Foreign;
    }
    if refs.iter().any(names_source) {
        return Ownership::Adoptable;
    }
    let untouched_copy = is_managed_by_us(existing)
        && annotation(existing, CHECKSUM_ANNOTATION) == Some(content_digest(existing).as_str());
    if refs.is_empty() && untouched_copy {
        Ownership::Adoptable
    } else {
        Ownership::Foreign
    }
}

fn annotation<'a>(cm: &'a ConfigMap, key: &str) -> Option<&'a str> {
    cm.metadata
        .annotations
        .as_ref()
        .and_then(|annotations| annotations.get(key))
        .map(String::as_str)
}

/// What differs between the companion as it is and as it should be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Difference {
    /// Nothing: no write is needed.
    None,
    /// The source's content changed since the companion was written.
    SourceChanged,
    /// The companion was edited by hand (content or our metadata).
    Drifted,
}

impl Difference {
    /// Why a write is made, in the words of the log line.
    pub fn reason(self) -> &'static str {
        match self {
            Difference::None => "in sync",
            Difference::SourceChanged => "source changed",
            Difference::Drifted => "drifted",
        }
    }
}

/// Compares the fields this controller owns; other labels and annotations
/// (added by people or admission policies) are left alone, so that no
/// outside writer can make the controller write in a loop.
pub fn difference(actual: &ConfigMap, desired: &ConfigMap, source_keys: &[String]) -> Difference {
    let want_checksum = annotation(desired, CHECKSUM_ANNOTATION);
    let have_checksum = annotation(actual, CHECKSUM_ANNOTATION);
    let content_equal = content_digest(actual) == content_digest(desired)
        && actual.immutable.unwrap_or(false) == desired.immutable.unwrap_or(false);
    let metadata_equal = contains_all(&actual.metadata.annotations, &desired.metadata.annotations)
        && contains_all(&actual.metadata.labels, &desired.metadata.labels)
        && !carries_any_label(actual, source_keys)
        && actual.metadata.owner_references == desired.metadata.owner_references;
    if content_equal && metadata_equal {
        return Difference::None;
    }
    // The companion still holds what it last copied, under that copy's
    // checksum: the source moved on. Anything else was edited by hand.
    let untouched_since_written = have_checksum.is_some_and(|sum| sum == content_digest(actual));
    if have_checksum != want_checksum && untouched_since_written {
        Difference::SourceChanged
    } else {
        Difference::Drifted
    }
}

/// Whether every entry of `wanted` is in `actual`, with the same value.
fn contains_all(
    actual: &Option<BTreeMap<String, String>>,
    wanted: &Option<BTreeMap<String, String>>,
) -> bool {
    let actual = actual.as_ref();
    wanted
        .iter()
        .flatten()
        .all(|(key, value)| actual.and_then(|a| a.get(key)) == Some(value))
}

fn carries_any_label(cm: &ConfigMap, keys: &[String]) -> bool {
    cm.metadata
        .labels
        .as_ref()
        .is_some_and(|labels| keys.iter().any(|key| labels.contains_key(key)))
}

/// Whether bringing `actual` to `desired` requires changing content that
/// Kubernetes forbids changing on an immutable ConfigMap.
pub fn needs_recreate(actual: &ConfigMap, desired: &ConfigMap) -> bool {
    actual.immutable == Some(true)
        && (content_digest(actual) != content_digest(desired) || desired.immutable != Some(true))
}

/// `actual` with every field this controller owns set as in `desired`.
///
/// Keeps the resourceVersion (so the write is a compare-and-swap) and any
/// label or annotation someone else added, except the source selector's
/// label keys, which would turn the companion into a source.
pub fn merge_onto(actual: &ConfigMap, desired: &ConfigMap, source_keys: &[String]) -> ConfigMap {
    let mut merged = actual.clone();
    merged.data = desired.data.clone();
    merged.binary_data = desired.binary_data.clone();
    merged.immutable = desired.immutable;
    merged.metadata.owner_references = desired.metadata.owner_references.clone();
    let labels = merged.metadata.labels.get_or_insert_with(BTreeMap::new);
    for key in source_keys {
        labels.remove(key);
    }
    labels.extend(desired.metadata.labels.clone().unwrap_or_default());
    let annotations = merged
        .metadata
        .annotations
        .get_or_insert_with(BTreeMap::new);
    annotations.remove(CACHED_DIGEST_KEY);
    annotations.extend(desired.metadata.annotations.clone().unwrap_or_default());
    merged.metadata.managed_fields = None;
    merged
}

#[cfg(test)]
#[path = "desired_tests.rs"]
mod tests;
