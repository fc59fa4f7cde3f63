//! How a copy as it is differs from the copy as it should be, and the
//! write that brings one to the other. Pure, like `plan`, which uses it.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::{
    contract::{
        CHECKSUM_ANNOTATION, DELETION_POLICY_ANNOTATION, WRITTEN_UNDER_CRD_ANNOTATION, annotation,
    },
    decisions::cache_form::CachedCopy,
    decisions::carried,
    decisions::ownership::untouched_since_written,
    kind::{ChecksumKey, MirroredKind, SourceId},
};

/// What differs between the companion as it is and as it should be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Difference {
    /// Nothing: no write is needed.
    None,
    /// The source's content changed since the companion was written.
    SourceChanged,
    /// The companion was edited by hand (content or our metadata).
    Drifted,
    /// A source's own mirror, at the name of a ClusterMirror's copy: the
    /// ClusterMirror outranks it and takes it over.
    TakenOver,
    /// A ClusterMirror's copy as it should be but for its deletion mark
    /// (written by a release that did not mark copies so, or before its
    /// policy changed).
    DeletionUnmarked,
}

impl Difference {
    /// Why a write is made, in the words of the log line.
    pub fn reason(self) -> &'static str {
        match self {
            Difference::None => "in sync",
            Difference::SourceChanged => "source changed",
            Difference::Drifted => "drifted",
            Difference::TakenOver => "a source's own mirror, which a ClusterMirror outranks",
            Difference::DeletionUnmarked => {
                "to record what its ClusterMirror's deletion does to it, and under which CRD"
            }
        }
    }
}

/// Compares the fields this controller owns; other labels and annotations
/// (added by people or admission policies) are left alone, so that no
/// outside writer can make the controller write in a loop.
///
/// `desired` is a copy of `source`, with its checksum under `key`; the
/// content of `actual` is compared as a copy of that same source.
pub fn difference<K: MirroredKind>(
    actual: &CachedCopy<K>,
    desired: &K,
    source: &SourceId<'_>,
    source_keys: &[String],
    key: &dyn ChecksumKey<K>,
) -> Difference {
    // A built copy records its content's checksum in its annotation.
    let want_checksum = annotation(desired.meta(), CHECKSUM_ANNOTATION);
    let content_equal = Some(&*actual.checksum_as_copy_of(source, key)) == want_checksum
        && actual.object().is_immutable() == desired.is_immutable();
    let untouched = || untouched_since_written(actual, source, key);
    let (actual, desired) = (actual.object().meta(), desired.meta());
    let have_checksum = annotation(actual, CHECKSUM_ANNOTATION);
    if content_equal && metadata_equal(actual, desired, source_keys, &[]) {
        return Difference::None;
    }
    if content_equal && metadata_equal(actual, desired, source_keys, &DELETION_MARK_KEYS) {
        return Difference::DeletionUnmarked;
    }
    // The copy still holds what it last copied, under that copy's
    // checksum: the source moved on. Anything else was edited by hand.
    if have_checksum != want_checksum && untouched() {
        Difference::SourceChanged
    } else {
        Difference::Drifted
    }
}

/// The annotations of a ClusterMirror's copy's deletion mark.
const DELETION_MARK_KEYS: [&str; 2] = [DELETION_POLICY_ANNOTATION, WRITTEN_UNDER_CRD_ANNOTATION];

/// Whether the metadata this controller owns is in `actual` as in
/// `desired`, but for the annotations `except`.
fn metadata_equal(
    actual: &ObjectMeta,
    desired: &ObjectMeta,
    source_keys: &[String],
    except: &[&str],
) -> bool {
    contains_all(&actual.annotations, &desired.annotations, except)
        && contains_all(&actual.labels, &desired.labels, &[])
        && !carries_unwanted(actual, desired)
        && !carries_any_label(actual, source_keys)
        && actual.owner_references == desired.owner_references
}

/// Whether every entry of `wanted` but those under `except` is in
/// `actual`, with the same value.
fn contains_all(
    actual: &Option<BTreeMap<String, String>>,
    wanted: &Option<BTreeMap<String, String>>,
    except: &[&str],
) -> bool {
    let actual = actual.as_ref();
    wanted
        .iter()
        .flatten()
        .filter(|(key, _)| !except.contains(&key.as_str()))
        .all(|(key, value)| actual.and_then(|a| a.get(key)) == Some(value))
}

/// Whether `actual` still holds a key this controller carried onto it that
/// `desired` no longer carries.
fn carries_unwanted(actual: &ObjectMeta, desired: &ObjectMeta) -> bool {
    let (labels, annotations) = carried::recorded(actual);
    let stale = |keys: Vec<String>,
                 have: &Option<BTreeMap<String, String>>,
                 want: &Option<BTreeMap<String, String>>| {
        keys.iter().any(|key| {
            have.as_ref().is_some_and(|h| h.contains_key(key))
                && !want.as_ref().is_some_and(|w| w.contains_key(key))
        })
    };
    stale(labels, &actual.labels, &desired.labels)
        || stale(annotations, &actual.annotations, &desired.annotations)
}

fn carries_any_label(meta: &ObjectMeta, keys: &[String]) -> bool {
    meta.labels
        .as_ref()
        .is_some_and(|labels| keys.iter().any(|key| labels.contains_key(key)))
}

/// Whether bringing `actual` to `desired` (a copy of `source`, with its
/// checksum under `key`) requires a change Kubernetes refuses in place (the
/// content of an immutable object).
pub fn needs_recreate<K: MirroredKind>(
    actual: &CachedCopy<K>,
    desired: &K,
    source: &SourceId<'_>,
    key: &dyn ChecksumKey<K>,
) -> bool {
    K::needs_recreate(
        actual.object(),
        &actual.checksum_as_copy_of(source, key),
        desired,
    )
}

/// `actual` with every field this controller owns set as in `desired`.
///
/// Keeps the resourceVersion (so the write is a compare-and-swap) and any
/// label or annotation someone else added, except the source selector's
/// label keys, which would turn the companion into a source.
pub fn merge_onto<K: MirroredKind>(
    actual: &CachedCopy<K>,
    desired: &K,
    source_keys: &[String],
) -> K {
    let mut merged = actual.object().clone();
    merged.set_content(desired);
    let (meta, desired) = (merged.meta_mut(), desired.meta());
    meta.owner_references = desired.owner_references.clone();
    // What this controller carried before goes; what it carries now comes
    // back below. Keys others put on the copy stay.
    let (carried_labels, carried_annotations) = carried::recorded(meta);
    let labels = meta.labels.get_or_insert_with(BTreeMap::new);
    for key in source_keys.iter().chain(&carried_labels) {
        labels.remove(key);
    }
    labels.extend(desired.labels.clone().unwrap_or_default());
    let annotations = meta.annotations.get_or_insert_with(BTreeMap::new);
    for key in &carried_annotations {
        annotations.remove(key);
    }
    annotations.extend(desired.annotations.clone().unwrap_or_default());
    meta.managed_fields = None;
    merged
}

#[cfg(test)]
mod tests;
