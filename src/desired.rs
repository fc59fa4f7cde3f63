//! The desired state: what the copies of a source must look like.
//!
//! Everything here is pure. Given a source ConfigMap it says what its
//! companion's and its mirrors' name, content, labels, annotations and owner
//! must be. Whether an existing object is one of them is `ownership`'s
//! question, how it differs is `plan`'s; the reconcilers do the I/O.

use std::collections::BTreeMap;

use k8s_openapi::{api::core::v1::ConfigMap, apimachinery::pkg::apis::meta::v1::ObjectMeta};

use crate::{
    contract::{
        CHECKSUM_ANNOTATION, MANAGED_BY_LABEL, MANAGER_NAME, MAX_NAME_LEN, MIRROR_OF_ANNOTATION,
        MIRROR_OF_UID_ANNOTATION, SOURCE_SELECTOR_ANNOTATION, companion_name, content_checksum,
        is_managed_by_us,
    },
    ownership::owner_reference,
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

#[cfg(test)]
mod tests;
