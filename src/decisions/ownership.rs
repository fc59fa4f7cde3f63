//! Which source an object belongs to, read from its owner reference or its
//! mirror annotations. Every check of an owner reference is made here.
//!
//! Pure, like `desired`.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

use crate::{
    contract::{
        CHECKSUM_ANNOTATION, MIRROR_OF_UID_ANNOTATION, annotation, is_managed_by_us, mirror_of,
        source_name_of,
    },
    decisions::cache_form::CachedCopy,
    decisions::carried,
    kind::MirroredKind,
};

/// Who an existing object at a copy's name belongs to.
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
fn refers_to<K: MirroredKind>(owner: &OwnerReference) -> bool {
    owner.api_version == K::api_version(&()) && owner.kind == K::kind(&())
}

fn owner_references(meta: &ObjectMeta) -> &[OwnerReference] {
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

/// The source, as (namespace, name), whose reconcile should look at this
/// copy: the source a mirror names; a companion's controlling owner or, when
/// the owner reference was removed by hand, the source its name comes from.
pub fn claimed_source<K: MirroredKind>(
    copy: &ObjectMeta,
    suffix: &str,
) -> Option<(String, String)> {
    if let Some(source) = mirror_of(copy) {
        return Some(source);
    }
    let namespace = copy.namespace.clone()?;
    let name = match controlling_source::<K>(copy) {
        Some(owner) => owner.to_owned(),
        None => source_name_of(copy.name.as_deref()?, suffix)?,
    };
    Some((namespace, name))
}

/// Decides whether `existing` is the companion of `source_name`/`source_uid`.
///
/// A controller reference to a ConfigMap of the source's name can only be
/// this source or a deleted predecessor of it, because names are unique in
/// a namespace; any other owner reference makes the object somebody else's. Without any owner reference, it takes our label, a checksum
/// annotation that matches the content (a copy nobody edited since it was
/// written) and no mirror annotation: the mirror of another namespace's
/// source is never a companion, however it is named.
pub fn ownership<K: MirroredKind>(
    existing: &CachedCopy<K>,
    source_name: &str,
    source_uid: &str,
) -> Ownership {
    let digest = existing.content_digest();
    let existing = existing.object().meta();
    if mirror_of(existing).is_some() {
        return Ownership::Foreign;
    }
    let refs = owner_references(existing);
    let names_source = |r: &OwnerReference| refers_to::<K>(r) && r.name == source_name;
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
    // Only a controller reference makes a companion: a plain owner
    // reference to the source is anyone's to write, and proves nothing.
    if refs
        .iter()
        .any(|r| names_source(r) && r.controller == Some(true))
    {
        return Ownership::Adoptable;
    }
    let untouched_copy =
        is_managed_by_us(existing) && annotation(existing, CHECKSUM_ANNOTATION) == Some(digest);
    if refs.is_empty() && untouched_copy {
        Ownership::Adoptable
    } else {
        Ownership::Foreign
    }
}

/// Decides whether `existing` in another namespace is the mirror of
/// `source`: it must name this source (namespace and name) in its
/// annotations and carry our label. A mirror of an earlier source of the
/// same name (deleted and recreated) is taken over; anything else, including
/// the mirror of another source with the same name, is never touched.
pub fn mirror_ownership<K: MirroredKind>(
    existing: &CachedCopy<K>,
    source: &ObjectMeta,
) -> Ownership {
    let existing = existing.object().meta();
    let source_ref = source.namespace.as_deref().zip(source.name.as_deref());
    let names_source = mirror_of(existing).zip(source_ref).is_some_and(
        |((ns, name), (source_ns, source_name))| ns == source_ns && name == source_name,
    );
    // An object with an owner (a companion, or anything else's) is never
    // taken for a mirror.
    let owned = !owner_references(existing).is_empty();
    let ours = is_managed_by_us(existing) || carried::detached(existing);
    if !names_source || !ours || owned {
        return Ownership::Foreign;
    }
    if annotation(existing, MIRROR_OF_UID_ANNOTATION) == source.uid.as_deref() {
        Ownership::Ours
    } else {
        Ownership::Adoptable
    }
}

#[cfg(test)]
mod tests;
