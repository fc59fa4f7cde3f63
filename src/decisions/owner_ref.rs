//! The controller owner reference a companion carries to its source, and
//! how one is read. Every other module reads owner references through
//! these functions; `ownership` decides from them whose an object is.
//!
//! Pure, like `desired`.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

use crate::kind::MirroredKind;

/// The controller owner reference a companion carries to its source.
pub fn owner_reference<K: MirroredKind>(name: &str, uid: &str) -> OwnerReference {
    OwnerReference {
        api_version: K::api_version(&()).into_owned(),
        kind: K::kind(&()).into_owned(),
        name: name.into(),
        uid: uid.into(),
        controller: Some(true),
        // Unset on purpose: setting it needs extra RBAC on clusters that
        // enforce owner-reference permissions, and nothing here needs it.
        block_owner_deletion: None,
    }
}

/// Whether an owner reference points at an object of kind `K`, the only
/// kind a source of a `K` copy can be.
pub fn refers_to<K: MirroredKind>(owner: &OwnerReference) -> bool {
    owner.api_version == K::api_version(&()) && owner.kind == K::kind(&())
}

pub fn owner_references(meta: &ObjectMeta) -> &[OwnerReference] {
    meta.owner_references.as_deref().unwrap_or_default()
}

/// The owner reference of the `K` that controls `copy`, if any.
pub fn controlling_owner<K: MirroredKind>(copy: &ObjectMeta) -> Option<&OwnerReference> {
    owner_references(copy)
        .iter()
        .find(|r| r.controller == Some(true) && refers_to::<K>(r))
}

/// The name of the `K` that controls a companion, if any.
pub fn controlling_source<K: MirroredKind>(companion: &ObjectMeta) -> Option<&str> {
    controlling_owner::<K>(companion).map(|owner| owner.name.as_str())
}
