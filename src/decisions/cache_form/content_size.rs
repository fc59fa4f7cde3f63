//! What a cached source costs read afresh, kept beside its slim form: a
//! number of constant size, whatever the source holds. The fresh reads
//! decide from it whether a namespace is small enough to list
//! (`reconcile::source_read::batch`), and a reconcile holds it of the
//! budget of reads while it holds its source (`reconcile::copy_budget`).
//!
//! A source costs more decoded than its values' bytes: each key, label and
//! annotation is an entry of its map, and named again in `managedFields`
//! (`kind::DECODED_ENTRY_BYTES`). A ConfigMap of 60,000 empty keys holds
//! no byte of values, and costs about 10 MiB decoded.
//!
//! It is kept in `metadata.generation`, which the API server does not set
//! on ConfigMaps or Secrets and which the slim form otherwise drops, as
//! the hash is kept in `selfLink` ([`super`]). Nothing else reads a cached
//! source's generation.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::kind::{MirroredKind, entries_cost};

/// What reading `source` afresh costs in memory, about: each key of its
/// content, label and annotation, at [`crate::kind::decoded_entry_cost`].
pub fn read_cost<K: MirroredKind>(source: &K) -> u64 {
    let keys = source.content_keys();
    let content = entries_cost(keys.iter().map(|key| (key.name, key.value.len())));
    let meta = source.meta();
    let maps = [&meta.labels, &meta.annotations];
    let metadata = entries_cost(
        (maps.into_iter().flatten().flatten()).map(|(name, value)| (name.as_str(), value.len())),
    );
    content.saturating_add(metadata)
}

/// [`super::slim_source`], keeping what the source it slims costs read.
pub fn slim_source_sized<K: MirroredKind>(source: &mut K) {
    let cost = read_cost(source);
    super::slim_source(source);
    keep(source.meta_mut(), cost);
}

/// [`super::slim_cluster_source`], keeping what the source costs read.
pub fn slim_cluster_source_sized<K: MirroredKind>(source: &mut K) {
    let cost = read_cost(source);
    super::slim_cluster_source(source);
    keep(source.meta_mut(), cost);
}

fn keep(meta: &mut ObjectMeta, cost: u64) {
    meta.generation = Some(i64::try_from(cost).unwrap_or(i64::MAX));
}

/// The bytes a cached source costs read afresh, as slimmed; 0 for one
/// that kept no size.
pub fn kept(meta: &ObjectMeta) -> u64 {
    meta.generation
        .and_then(|bytes| u64::try_from(bytes).ok())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use k8s_openapi::{ByteString, api::core::v1::ConfigMap};

    use super::*;
    use crate::kind::DECODED_ENTRY_BYTES;

    #[test]
    fn a_slim_source_keeps_what_its_keys_and_values_cost_decoded() {
        let mut source = ConfigMap {
            data: Some(BTreeMap::from([("a".into(), "12345".into())])),
            binary_data: Some(BTreeMap::from([("b".into(), ByteString(vec![0; 7]))])),
            ..ConfigMap::default()
        };
        slim_source_sized(&mut source);
        assert_eq!(source.data, None);
        assert_eq!(kept(&source.metadata), 12 + 2 + 2 * DECODED_ENTRY_BYTES);
        assert_eq!(kept(&ObjectMeta::default()), 0);
    }

    #[test]
    fn a_source_s_labels_and_annotations_count_as_its_keys_do() {
        let mut source = ConfigMap::default();
        source.metadata.labels = Some(BTreeMap::from([("l".into(), "123".into())]));
        source.metadata.annotations = Some(BTreeMap::from([("a".into(), "1".into())]));
        assert_eq!(read_cost(&source), 4 + 2 + 2 * DECODED_ENTRY_BYTES);
    }
}
