//! What the two caches keep of each object, and how a kept copy is read back.
//!
//! The caches hold every managed object for as long as the controller runs,
//! so their size is the controller's size. They keep only what the
//! reconcilers read:
//!
//! - a source keeps its identity, its content, the managed-by label (a
//!   source that carries it is refused as a copy) and this controller's own
//!   annotations. Its other labels are vouched for by the watch's label
//!   selector, and nothing reads the rest;
//! - a copy keeps everything but its content, which is replaced by its
//!   digest (the reconcilers compare content, never read it), and the
//!   managed-by label, which the watch's selector guarantees and
//!   [`copy_from_cache`] puts back.
//!
//! Pure, like `desired`.

use std::collections::BTreeMap;

use k8s_openapi::{api::core::v1::ConfigMap, apimachinery::pkg::apis::meta::v1::ObjectMeta};

use crate::{
    contract::{CHECKSUM_ANNOTATION, MANAGED_BY_LABEL, MANAGER_NAME, content_checksum},
    targets::{MIRROR_TO_ANNOTATION, MIRROR_TO_SELECTOR_ANNOTATION},
};

/// Where a cached copy keeps the digest of its content in place of the
/// content. Not a valid annotation key, so no real annotation can collide
/// with it; `plan::compare::merge_onto` removes it, so it is never written.
pub const CACHED_DIGEST_KEY: &str = " cached content digest";

/// The only annotations of a source that any reconcile reads.
const SOURCE_ANNOTATIONS: [&str; 2] = [MIRROR_TO_ANNOTATION, MIRROR_TO_SELECTOR_ANNOTATION];

/// Reduces a source to what the reconcilers read, for the sources' cache.
pub fn slim_source(source: &mut ConfigMap) {
    let meta = std::mem::take(&mut source.metadata);
    source.metadata = ObjectMeta {
        name: meta.name,
        namespace: meta.namespace,
        uid: meta.uid,
        resource_version: meta.resource_version,
        creation_timestamp: meta.creation_timestamp,
        deletion_timestamp: meta.deletion_timestamp,
        labels: keep_only(meta.labels, &[MANAGED_BY_LABEL]),
        annotations: keep_only(meta.annotations, &SOURCE_ANNOTATIONS),
        ..ObjectMeta::default()
    };
}

/// Reduces a copy for the copies' cache: its content becomes a digest, and
/// the managed-by label goes (the cache holds only copies that carry it).
/// The digest is left out when it equals the checksum annotation, as it
/// does for every copy untouched since this controller wrote it.
pub fn slim_copy(copy: &mut ConfigMap) {
    let digest = content_checksum(copy);
    copy.data = None;
    copy.binary_data = None;
    copy.metadata.managed_fields = None;
    if let Some(labels) = &mut copy.metadata.labels {
        if labels.get(MANAGED_BY_LABEL).map(String::as_str) == Some(MANAGER_NAME) {
            labels.remove(MANAGED_BY_LABEL);
        }
        if labels.is_empty() {
            copy.metadata.labels = None;
        }
    }
    if checksum_annotation(copy) != Some(&digest) {
        annotations(copy).insert(CACHED_DIGEST_KEY.into(), digest);
    }
}

/// A cached copy as the API server holds it, but for its content, which
/// stays a digest (see [`content_digest`]).
pub fn copy_from_cache(cached: &ConfigMap) -> ConfigMap {
    let mut copy = cached.clone();
    copy.metadata
        .labels
        .get_or_insert_with(BTreeMap::new)
        .insert(MANAGED_BY_LABEL.into(), MANAGER_NAME.into());
    // Left out of the cache only where it equals the checksum annotation.
    if let Some(checksum) = checksum_annotation(&copy).cloned() {
        annotations(&mut copy)
            .entry(CACHED_DIGEST_KEY.into())
            .or_insert(checksum);
    }
    copy
}

/// The checksum of a ConfigMap's content, whether it holds the content or,
/// as a cached copy, only its digest.
pub fn content_digest(cm: &ConfigMap) -> String {
    let digest = cm
        .metadata
        .annotations
        .as_ref()
        .and_then(|annotations| annotations.get(CACHED_DIGEST_KEY));
    match digest {
        Some(digest) => digest.clone(),
        None => content_checksum(cm),
    }
}

fn checksum_annotation(cm: &ConfigMap) -> Option<&String> {
    cm.metadata.annotations.as_ref()?.get(CHECKSUM_ANNOTATION)
}

fn annotations(cm: &mut ConfigMap) -> &mut BTreeMap<String, String> {
    cm.metadata.annotations.get_or_insert_with(BTreeMap::new)
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
#[path = "cache_form_tests.rs"]
mod tests;
