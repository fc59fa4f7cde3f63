//! What the two caches keep of each object, and how a kept copy is read back.
//!
//! The caches hold every managed object for as long as the controller runs,
//! so their size is the controller's size. They keep only what the
//! reconcilers read:
//!
//! - a source keeps its identity, the managed-by label (a source that
//!   carries it is refused as a copy), the install-owned label (an
//!   install's own object is refused too), this controller's own annotations and
//!   the hash of its content ([`MirroredKind::content_hash`]) in place of
//!   the content, which a reconcile reads from the API server only when it
//!   writes (`reconcile::source_read`). So memory does not follow what the sources
//!   hold, and no Secret value is kept. Its other labels are vouched for by
//!   the watch's label selector, and nothing reads the rest;
//! - a copy keeps everything but its content, which is replaced by its
//!   hash (the reconcilers compare content, never read it), and the
//!   managed-by label, which the watch's selector guarantees. Its
//!   resourceVersion stays: a replace sends it, which makes the write a
//!   compare-and-swap. It is read back as a [`CachedCopy`] by
//!   [`copy_from_cache`].
//!
//! The hashes need no key: a Secret's checksum, keyed and bound to its
//! source, is computed from the hash when a reconcile compares. So what is
//! cached does not change with the key, and the prune loop, which reads
//! only metadata, runs while no key is known.
//!
//! A map of annotations costs a B-tree node of about half a KiB however
//! few entries it holds, more than the rest of a cached object's strings.
//! So the one string each object would otherwise keep a map for, a
//! source's hash and a copy's checksum annotation, is kept in
//! `metadata.selfLink` instead ([`aside`]): a field the API server has not
//! set since Kubernetes 1.20, which nothing here reads or writes. Most
//! cached objects then have no map at all (see docs/contributing/benchmarks.md
//! for what that saves). A companion's one other annotation, the install marker
//! (`workshop.io/source-selector`), is kept there too, after the checksum.
//! Likewise a companion's owner reference, a list of one entry
//! with four strings, is kept as the two that vary, in
//! `metadata.generateName` ([`owner_aside`]), a field that means nothing
//! once an object exists, when it is exactly the reference this controller
//! writes.
//!
//! A source whose copies may hold chosen keys keeps, after its hash in the
//! aside, what its copies hold: a label-path source, the hash they cover
//! and the keys they miss ([`copy_keys`]); a ClusterMirror source, its
//! keys' digests ([`key_digests`]). A copy of chosen keys is hashed by key
//! (`decisions::key_shape::checksum`).
//!
//! Pure, like `desired`.

use std::{borrow::Cow, collections::BTreeMap};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::{
    contract::{
        CHECKSUM_ANNOTATION, COPY_ANNOTATIONS_ANNOTATION, COPY_LABELS_ANNOTATION, MANAGED_BY_LABEL,
        MANAGER_NAME, MIRROR_KEYS_ANNOTATION, MIRROR_NAME_ANNOTATION, SOURCE_SELECTOR_ANNOTATION,
        helm_storage_label, install::INSTALL_OWNED_LABEL,
    },
    decisions::carried::{self, Lists},
    decisions::key_shape::checksum::copy_content_hash,
    decisions::owner_ref::owner_reference,
    decisions::targets::{MIRROR_TO_ANNOTATION, MIRROR_TO_SELECTOR_ANNOTATION},
    kind::{ChecksumKey, MirroredKind, SourceId},
};

pub mod content_size;
mod copy_keys;
pub mod key_digests;

/// Where a copy in the cache keeps the hash of its content in place of
/// the content. Not a valid annotation key, so no real annotation can
/// collide with it. It never leaves this module: a copy is read back as a
/// [`CachedCopy`], whose object does not carry it, so it is never written.
const CACHED_HASH_KEY: &str = " cached content hash";

/// The annotations of a source that its reconcile reads, besides those its
/// lists select.
const SOURCE_ANNOTATIONS: [&str; 6] = [
    MIRROR_KEYS_ANNOTATION,
    MIRROR_NAME_ANNOTATION,
    MIRROR_TO_ANNOTATION,
    MIRROR_TO_SELECTOR_ANNOTATION,
    COPY_LABELS_ANNOTATION,
    COPY_ANNOTATIONS_ANNOTATION,
];

/// Reduces a source to what the reconcilers read, for the sources' cache:
/// when it carries a `workshop.io/mirror-keys` that can be read, what its
/// copies hold is kept too, in a few strings whatever its number of keys.
pub fn slim_source<K: MirroredKind>(source: &mut K) {
    let kept = copy_keys::aside_of(&*source);
    slim_source_keeping(source, kept);
}

/// [`slim_source`] for the caches of ClusterMirror sources: every source
/// keeps its keys' digests, as the cache cannot know which ClusterMirror
/// copies chosen keys of it.
pub fn slim_cluster_source<K: MirroredKind>(source: &mut K) {
    let kept = key_digests::with_digests(source.content_hash(), &*source);
    slim_source_keeping(source, kept);
}

/// `source` reduced, keeping `kept` aside.
fn slim_source_keeping<K: MirroredKind>(source: &mut K, kept: String) {
    source.drop_content();
    let meta = std::mem::take(source.meta_mut());
    // A malformed list selects nothing: the reconcile reports it.
    let [carried_labels, carried_annotations] =
        carried::selected_of(&meta, &Lists::of(&meta).unwrap_or_default());
    // Helm's (or Tiller's) storage label makes a source one that is never
    // copied.
    let helm_record = helm_storage_label(&meta);
    let mut annotations = keep_only(meta.annotations, &SOURCE_ANNOTATIONS).unwrap_or_default();
    annotations.extend(carried_annotations);
    // The managed-by label makes a source a copy, the install-owned one an
    // install's own object: either is never copied.
    let kept_labels = [MANAGED_BY_LABEL, INSTALL_OWNED_LABEL];
    let mut labels = keep_only(meta.labels, &kept_labels).unwrap_or_default();
    labels.extend(carried_labels);
    if let Some((helm_key, helm_value)) = helm_record {
        labels.insert(helm_key.into(), helm_value.into());
    }
    *source.meta_mut() = ObjectMeta {
        name: meta.name,
        namespace: meta.namespace,
        uid: meta.uid,
        resource_version: meta.resource_version,
        creation_timestamp: meta.creation_timestamp,
        deletion_timestamp: meta.deletion_timestamp,
        labels: (!labels.is_empty()).then_some(labels),
        annotations: (!annotations.is_empty()).then_some(annotations),
        ..ObjectMeta::default()
    };
    *aside(source.meta_mut()) = Some(kept);
}

/// The string a cached object keeps outside its annotations (see the
/// module's documentation): a source's hash, a copy's checksum.
fn aside(meta: &mut ObjectMeta) -> &mut Option<String> {
    &mut meta.self_link
}

/// The hash of a source's content: as its slim form records it, or
/// computed from the content of a full object.
fn source_hash<K: MirroredKind>(source: &K) -> String {
    match &source.meta().self_link {
        Some(kept) => key_digests::hash_part(kept).to_owned(),
        None => source.content_hash(),
    }
}

/// The checksum a copy of `source` (slim or full) records.
pub fn source_checksum<K: MirroredKind>(source: &K, key: &dyn ChecksumKey<K>) -> String {
    K::checksum(&source_hash(source), &SourceId::of(source.meta()), key).into_owned()
}

/// Where a cached copy keeps its owner reference when that is the one
/// this controller writes: `"<uid> <name>"` (neither holds a space).
fn owner_aside(meta: &mut ObjectMeta) -> &mut Option<String> {
    &mut meta.generate_name
}

/// The owner references of a copy in the form its cache keeps: None and
/// the owner aside when they are exactly the one this controller writes,
/// else as they are.
fn slim_owner<K: MirroredKind>(meta: &mut ObjectMeta) {
    *owner_aside(meta) = None;
    let Some([owner]) = meta.owner_references.as_deref() else {
        return;
    };
    let written_by_us = *owner == owner_reference::<K>(&owner.name, &owner.uid)
        && !owner.uid.contains(' ')
        && !owner.name.contains(' ');
    if written_by_us {
        let aside = format!("{} {}", owner.uid, owner.name);
        meta.owner_references = None;
        *owner_aside(meta) = Some(aside);
    }
}

/// Reduces a copy for the copies' cache: its content becomes a hash, and
/// the managed-by label goes (the cache holds only copies that carry it).
/// The hash is left out when it equals the checksum annotation, as it does
/// for every ConfigMap copy untouched since this controller wrote it (a
/// Secret's checksum is keyed, so never its hash), and the checksum
/// annotation and this controller's owner reference are kept aside.
pub fn slim_copy<K: MirroredKind>(copy: &mut K) {
    let hash = copy_content_hash(copy);
    copy.drop_content();
    let meta = copy.meta_mut();
    meta.managed_fields = None;
    slim_owner::<K>(meta);
    if let Some(labels) = &mut meta.labels {
        if labels.get(MANAGED_BY_LABEL).map(String::as_str) == Some(MANAGER_NAME) {
            labels.remove(MANAGED_BY_LABEL);
        }
        if labels.is_empty() {
            meta.labels = None;
        }
    }
    if checksum_annotation(meta) != Some(&hash) {
        meta.annotations
            .get_or_insert_with(BTreeMap::new)
            .insert(CACHED_HASH_KEY.into(), hash);
    }
    // A checksum edited to hold the separator stays in its map: read back
    // from the aside, it would be split.
    let checksum = meta.annotations.as_mut().and_then(|annotations| {
        let fits = annotations
            .get(CHECKSUM_ANNOTATION)
            .is_some_and(|checksum| !checksum.contains(ASIDE_SEPARATOR));
        fits.then(|| annotations.remove(CHECKSUM_ANNOTATION))
            .flatten()
    });
    let marker = checksum.as_ref().and_then(|_| only_install_marker(meta));
    *aside(meta) = match (checksum, marker) {
        (Some(checksum), Some(selector)) => {
            meta.annotations = None;
            Some(format!("{checksum}{ASIDE_SEPARATOR}{selector}"))
        }
        (checksum, _) => checksum,
    };
    if meta.annotations.as_ref().is_some_and(BTreeMap::is_empty) {
        meta.annotations = None;
    }
}

/// Between a copy's checksum and its install marker when both are kept
/// aside: neither a checksum this controller writes nor a label selector
/// holds it, and a copy whose annotations were edited to hold it keeps
/// its map instead.
const ASIDE_SEPARATOR: char = '\n';

/// The value of a copy's install marker when it is the only annotation
/// left besides the checksum, as it is on every companion: then the map
/// would cost a node of half a KiB for one entry.
fn only_install_marker(meta: &ObjectMeta) -> Option<String> {
    let annotations = meta.annotations.as_ref()?;
    let [(key, value)] = annotations.iter().collect::<Vec<_>>()[..] else {
        return None;
    };
    let fits = key == SOURCE_SELECTOR_ANNOTATION && !value.contains(ASIDE_SEPARATOR);
    fits.then(|| value.clone())
}

/// A copy in the form the reconcilers compare: its metadata, and its content
/// by hash only. The content itself is left out, so whatever compares
/// content must take this type and ask [`CachedCopy::checksum_as_copy_of`].
#[derive(Clone, PartialEq)]
pub struct CachedCopy<K> {
    object: K,
    hash: String,
}

impl<K: MirroredKind> CachedCopy<K> {
    /// A full object (read from the API server, or built) in this form.
    pub fn of(full: &K) -> CachedCopy<K> {
        let mut object = full.clone();
        object.drop_content();
        CachedCopy {
            object,
            hash: copy_content_hash(full),
        }
    }

    /// The copy as the API server holds it, but for its content, which
    /// is left out: compare it through [`CachedCopy::checksum_as_copy_of`].
    pub fn object(&self) -> &K {
        &self.object
    }

    /// The checksum of the copy's content as a copy of `source` would
    /// record it.
    pub fn checksum_as_copy_of(
        &self,
        source: &SourceId<'_>,
        key: &dyn ChecksumKey<K>,
    ) -> Cow<'_, str> {
        K::checksum(&self.hash, source, key)
    }
}

/// Without the content's hash, which stays in the process.
impl<K: std::fmt::Debug> std::fmt::Debug for CachedCopy<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CachedCopy")
            .field("object", &self.object)
            .finish_non_exhaustive()
    }
}

/// A copy read back from its slim form in the cache.
pub fn copy_from_cache<K: MirroredKind>(cached: &K) -> CachedCopy<K> {
    let mut object = cached.clone();
    let meta = object.meta_mut();
    meta.labels
        .get_or_insert_with(BTreeMap::new)
        .insert(MANAGED_BY_LABEL.into(), MANAGER_NAME.into());
    if let Some(kept) = aside(meta).take() {
        let annotations = meta.annotations.get_or_insert_with(BTreeMap::new);
        match kept.split_once(ASIDE_SEPARATOR) {
            Some((checksum, selector)) => {
                annotations.insert(CHECKSUM_ANNOTATION.into(), checksum.into());
                annotations.insert(SOURCE_SELECTOR_ANNOTATION.into(), selector.into());
            }
            None => {
                annotations.insert(CHECKSUM_ANNOTATION.into(), kept);
            }
        }
    }
    if let Some((uid, name)) = owner_aside(meta)
        .take()
        .as_deref()
        .and_then(|o| o.split_once(' '))
    {
        meta.owner_references = Some(vec![owner_reference::<K>(name, uid)]);
    }
    let hash = meta
        .annotations
        .as_mut()
        .and_then(|annotations| annotations.remove(CACHED_HASH_KEY));
    // Left out of the cache only where it equals the checksum annotation;
    // `slim_copy` records it in every other case.
    let hash = hash
        .or_else(|| checksum_annotation(meta).cloned())
        .unwrap_or_default();
    CachedCopy { object, hash }
}

fn checksum_annotation(meta: &ObjectMeta) -> Option<&String> {
    meta.annotations.as_ref()?.get(CHECKSUM_ANNOTATION)
}

/// `map` with only the entries under `keys`; None when none is left, which
/// (unlike an empty map) costs no allocation.
fn keep_only(
    map: Option<BTreeMap<String, String>>,
    keys: &[&str],
) -> Option<BTreeMap<String, String>> {
    let kept: BTreeMap<_, _> = map?
        .into_iter()
        .filter(|(key, _)| keys.contains(&key.as_str()))
        .collect();
    (!kept.is_empty()).then_some(kept)
}

#[cfg(test)]
mod tests;
