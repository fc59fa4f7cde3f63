//! The desired state: what the copies of a source must look like.
//!
//! Everything here is pure, and the same for every kind. Given a source it
//! says what its
//! companion's and its mirrors' name, content, labels, annotations and owner
//! must be. Whether an existing object is one of them is `ownership`'s
//! question, how it differs is `plan`'s; the reconcilers do the I/O.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::{
    contract::{
        CHECKSUM_ANNOTATION, HELM_STORAGE_LABEL, MANAGED_BY_LABEL, MANAGER_NAME, MAX_NAME_LEN,
        MIRROR_OF_ANNOTATION, MIRROR_OF_UID_ANNOTATION, NeverCarried, SOURCE_SELECTOR_ANNOTATION,
        TILLER_STORAGE_LABEL, companion_name, helm_storage_label, install::INSTALL_OWNED_LABEL,
        is_managed_by_us,
    },
    decisions::cache_form::source_checksum,
    decisions::carried::{self, Lists},
    decisions::owner_ref::owner_reference,
    kind::MirroredKind,
};

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

/// The name prefix of Helm's release records, which its storage drivers
/// also find by [`HELM_STORAGE_LABEL`]: Helm reads a ConfigMap or Secret so
/// named, or so labeled, as the record of a release in its namespace, and
/// would trust a copy on the next upgrade. Helm 2's Tiller finds its own by
/// [`TILLER_STORAGE_LABEL`] alone.
const HELM_RELEASE_NAME_PREFIX: &str = "sh.helm.release.v1.";

/// Why `object` may never be a source, whatever its labels, if so: what an
/// install created for its own use (marked [`INSTALL_OWNED_LABEL`]), a Helm
/// release record of either kind, or what its kind refuses (some types of
/// Secret, this install's digest key). The reconcilers ask before anything
/// else: such an object has no copies, and those written before (by a
/// release that did not refuse it, or before its type was refused) are no
/// longer wanted.
pub fn never_a_source<K: MirroredKind>(object: &K, rules: &K::SourceRules) -> Option<String> {
    let meta = object.meta();
    let install_owned = meta
        .labels
        .as_ref()
        .and_then(|l| l.get(INSTALL_OWNED_LABEL));
    if let Some(role) = install_owned {
        return Some(format!(
            "it is an install's own object (labeled {INSTALL_OWNED_LABEL}={role}): what an \
             install keeps for itself is never copied"
        ));
    }
    let storage_label = helm_storage_label(meta);
    if let Some((label, value)) = storage_label.filter(|l| *l == TILLER_STORAGE_LABEL) {
        return Some(format!(
            "it is a Helm 2 release record (labeled {label}={value}): Tiller trusts its copies \
             as records of its releases"
        ));
    }
    let (label, value) = HELM_STORAGE_LABEL;
    let helm_labeled = storage_label.is_some();
    let helm_named = meta
        .name
        .as_deref()
        .is_some_and(|name| name.starts_with(HELM_RELEASE_NAME_PREFIX));
    if helm_labeled || helm_named {
        return Some(format!(
            "it is a Helm release record (named {HELM_RELEASE_NAME_PREFIX}*, or labeled \
             {label}={value}): Helm trusts its copies as records of its releases"
        ));
    }
    object.source_refusal(rules)
}

/// Name, namespace and uid of an object that may be copied: one that is
/// stored (so has all three) and is not itself a copy.
fn identity<K: MirroredKind>(object: &K) -> Result<(&str, &str, &str), Refusal> {
    let source = object.meta();
    if is_managed_by_us(source) {
        return Err(Refusal::SourceIsCompanion);
    }
    if source.deletion_timestamp.is_some() {
        return Err(Refusal::BeingDeleted);
    }
    match (
        source.name.as_deref(),
        source.namespace.as_deref(),
        source.uid.as_deref(),
    ) {
        (Some(name), Some(namespace), Some(uid)) => Ok((name, namespace, uid)),
        _ => Err(Refusal::Incomplete),
    }
}

/// The companion a source should have, built from the source alone.
pub fn desired_companion<K: MirroredKind>(
    source: &K,
    suffix: &str,
    key: &K::DigestKey,
) -> Result<K, Refusal> {
    let (name, namespace, uid) = identity(source)?;
    let companion = companion_name(name, suffix);
    if companion.len() > MAX_NAME_LEN {
        let len = companion.len();
        return Err(Refusal::NameTooLong {
            name: companion,
            len,
        });
    }
    Ok(copy_with(
        source,
        ObjectMeta {
            name: Some(companion),
            namespace: Some(namespace.into()),
            labels: Some(managed_by_us()),
            annotations: Some(BTreeMap::from([(
                CHECKSUM_ANNOTATION.into(),
                source_checksum(source, key),
            )])),
            owner_references: Some(vec![owner_reference::<K>(name, uid)]),
            ..ObjectMeta::default()
        },
    ))
}

/// The mirror of a source in namespace `target`: the companion's content
/// under the source's own name. A namespace cannot own objects in another,
/// so instead of an owner reference it names its source in annotations, and
/// the prune loop removes it when the source no longer wants it.
pub fn desired_mirror<K: MirroredKind>(
    source: &K,
    target: &str,
    key: &K::DigestKey,
) -> Result<K, Refusal> {
    let (name, namespace, uid) = identity(source)?;
    Ok(copy_with(
        source,
        ObjectMeta {
            name: Some(name.into()),
            namespace: Some(target.into()),
            labels: Some(managed_by_us()),
            annotations: Some(BTreeMap::from([
                (CHECKSUM_ANNOTATION.into(), source_checksum(source, key)),
                (MIRROR_OF_ANNOTATION.into(), format!("{namespace}/{name}")),
                (MIRROR_OF_UID_ANNOTATION.into(), uid.into()),
            ])),
            ..ObjectMeta::default()
        },
    ))
}

/// `source`'s content under `metadata`.
fn copy_with<K: MirroredKind>(source: &K, metadata: ObjectMeta) -> K {
    let mut copy = K::content_of(source);
    *copy.meta_mut() = metadata;
    copy
}

fn managed_by_us() -> BTreeMap<String, String> {
    BTreeMap::from([(MANAGED_BY_LABEL.into(), MANAGER_NAME.into())])
}

/// A built copy as the install writes it: carrying what the source's lists
/// select (never a key of `never`, nor the source selector's label keys),
/// and marked with the
/// install's source `selector`. An error names a malformed list: then
/// nothing of the source is written.
pub fn finished<K: MirroredKind>(
    mut copy: K,
    source: &K,
    selector: &str,
    never: &NeverCarried,
    source_label_keys: &[String],
) -> Result<K, String> {
    let lists = Lists::of(source.meta())?;
    let meta = std::mem::take(copy.meta_mut());
    *copy.meta_mut() = carried::carry(meta, source.meta(), &lists, never, source_label_keys);
    Ok(mark_install(copy, selector))
}

/// Marks a copy as written by the install with this source selector.
pub fn mark_install<K: MirroredKind>(mut copy: K, selector: &str) -> K {
    copy.meta_mut()
        .annotations
        .get_or_insert_with(BTreeMap::new)
        .insert(SOURCE_SELECTOR_ANNOTATION.into(), selector.into());
    copy
}

#[cfg(test)]
mod tests;
