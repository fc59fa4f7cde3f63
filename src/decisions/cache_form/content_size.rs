//! How many bytes a cached source's content held, kept beside its slim
//! form: a number of constant size, whatever the source holds. The fresh
//! reads decide from it whether a namespace is small enough to list
//! (`reconcile::source_read::batch`).
//!
//! It is kept in `metadata.generation`, which the API server does not set
//! on ConfigMaps or Secrets and which the slim form otherwise drops, as
//! the hash is kept in `selfLink` ([`super`]). Nothing else reads a cached
//! source's generation.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::kind::MirroredKind;

/// [`super::slim_source`], keeping the size of the content it drops.
pub fn slim_source_sized<K: MirroredKind>(source: &mut K) {
    let bytes = source.content_bytes();
    super::slim_source(source);
    source.meta_mut().generation = Some(i64::try_from(bytes).unwrap_or(i64::MAX));
}

/// The bytes of content a cached source held when slimmed; 0 for one
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

    #[test]
    fn a_slim_source_keeps_how_many_bytes_its_values_held() {
        let mut source = ConfigMap {
            data: Some(BTreeMap::from([("a".into(), "12345".into())])),
            binary_data: Some(BTreeMap::from([("b".into(), ByteString(vec![0; 7]))])),
            ..ConfigMap::default()
        };
        slim_source_sized(&mut source);
        assert_eq!(source.data, None);
        assert_eq!(kept(&source.metadata), 12);
        assert_eq!(kept(&ObjectMeta::default()), 0);
    }
}
