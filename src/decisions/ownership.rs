//! Which source an object belongs to, read from its owner reference (see
//! `owner_ref`) or its mirror annotations, and whether it still holds what
//! it was written with.
//!
//! Pure, like `desired`.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

use crate::{
    contract::{
        CHECKSUM_ANNOTATION, MIRROR_OF_ANNOTATION, MIRROR_OF_UID_ANNOTATION,
        SOURCE_SELECTOR_ANNOTATION, annotation, cluster_mirror_of, is_managed_by_us, mirror_of,
        source_name_of, written_under,
    },
    decisions::cache_form::CachedCopy,
    decisions::carried,
    decisions::owner_ref::{controlling_owner, controlling_source, owner_references, refers_to},
    decisions::request_key::RequestKey,
    kind::{ChecksumKey, MirroredKind, SourceId},
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

/// The source a copy says it was made from, as a Secret copy's checksum
/// names it: the one a mirror's annotations name (namespace, name and uid),
/// or the one a companion's controller owner reference names, in the
/// companion's namespace. None when it names none in full (a companion
/// whose owner reference was removed).
pub fn claimed_identity<K: MirroredKind>(copy: &ObjectMeta) -> Option<SourceId<'_>> {
    let mirror_of = annotation(copy, MIRROR_OF_ANNOTATION).and_then(|of| of.split_once('/'));
    if let Some((namespace, name)) = mirror_of {
        let uid = annotation(copy, MIRROR_OF_UID_ANNOTATION)?;
        return Some(SourceId {
            namespace,
            name,
            uid,
        });
    }
    let owner = controlling_owner::<K>(copy)?;
    Some(SourceId {
        namespace: copy.namespace.as_deref()?,
        name: &owner.name,
        uid: &owner.uid,
    })
}

/// Whether a copy still holds what it was written with: its checksum
/// annotation is the checksum of its content as a copy of the source it
/// claims, or of `otherwise` when it claims none. Only the source's own
/// checksum can match, so another copy's checksum proves nothing here.
pub fn untouched_since_written<K: MirroredKind>(
    copy: &CachedCopy<K>,
    otherwise: &SourceId<'_>,
    key: &dyn ChecksumKey<K>,
) -> bool {
    let meta = copy.object().meta();
    let claimed = claimed_identity::<K>(meta).unwrap_or(*otherwise);
    annotation(meta, CHECKSUM_ANNOTATION) == Some(&*copy.checksum_as_copy_of(&claimed, key))
}

/// Decides whether `existing` is the companion of `source`.
///
/// A controller reference to a ConfigMap of the source's name can only be
/// this source or a deleted predecessor of it, because names are unique in
/// a namespace; any other owner reference makes the object somebody else's.
/// Without any owner reference, it takes our label, a checksum annotation
/// that matches the content as a copy of this very source (a copy of it
/// nobody edited since it was written) and no mirror annotation: the mirror
/// of another namespace's source is never a companion, however it is named.
pub fn ownership<K: MirroredKind>(
    copy: &CachedCopy<K>,
    source: &SourceId<'_>,
    key: &dyn ChecksumKey<K>,
) -> Ownership {
    let (source_name, source_uid) = (source.name, source.uid);
    let existing = copy.object().meta();
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
    // With no owner reference, it claims this source by its name alone.
    let untouched_copy = is_managed_by_us(existing) && untouched_since_written(copy, source, key);
    if refs.is_empty() && untouched_copy {
        Ownership::Adoptable
    } else {
        Ownership::Foreign
    }
}

/// Decides whether `existing` in another namespace is the mirror of
/// `desired`'s source (`source`): it must name this source (namespace and
/// name) in its annotations and carry our label. A mirror of an earlier
/// source of the same name (deleted and recreated) is taken over; anything
/// else, including the mirror of another source with the same name, is
/// never touched; so is a mirror written for another requester (a
/// source's own request, a ClusterMirror, a Mirror: whoever holds the name
/// keeps it), with one exception: a ClusterMirror outranks a source's own
/// request and a Mirror, and takes over the mirror this install wrote for
/// one ([`outranked_mirror`]).
pub fn mirror_ownership<K: MirroredKind>(
    existing: &CachedCopy<K>,
    source: &ObjectMeta,
    desired: &ObjectMeta,
) -> Ownership {
    let existing = existing.object().meta();
    if outranked_mirror(existing, desired) {
        return Ownership::Adoptable;
    }
    if RequestKey::of_copy(existing) != RequestKey::of_copy(desired) {
        return Ownership::Foreign;
    }
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

/// Whether `existing` is a mirror this install wrote for a source's own
/// request (its `workshop.io/mirror-to`) or for a Mirror, which the
/// ClusterMirror copy `desired` takes over: a ClusterMirror outranks both
/// at its name. Only a mirror carrying every mark of this install's (the
/// managed-by label, a `mirror-of` annotation, no owner, and the install's
/// source selector, which `desired` carries); a mirror of another install
/// or of an older release that wrote no selector stays with its holder,
/// like anything else.
pub fn outranked_mirror(existing: &ObjectMeta, desired: &ObjectMeta) -> bool {
    let install = annotation(desired, SOURCE_SELECTOR_ANNOTATION);
    cluster_mirror_of(desired).is_some()
        && cluster_mirror_of(existing).is_none()
        && mirror_of(existing).is_some()
        && is_managed_by_us(existing)
        && owner_references(existing).is_empty()
        && install.is_some_and(|selector| written_under(existing, selector))
}

#[cfg(test)]
mod tests;
