//! What the fresh reads ask the cache of the sources' sizes, to choose
//! between a LIST and GETs (`batch`): behind a trait, so that a read can
//! be decided from a cache that is not this process's watches'.

use crate::{
    decisions::cache_form::content_size, index::caches::Caches, kind::MirroredKind,
    reconcile::source_read::batch::NamespaceSources,
};

/// What the cache says of the sources: how many each namespace holds and
/// what they cost read, in bytes, and what each one costs.
pub trait CachedSizes: Send + Sync + 'static {
    fn held_in(&self, namespace: &str) -> NamespaceSources;
    /// What source `namespace/name` costs read, in bytes; 0 if not cached.
    fn bytes_of(&self, namespace: &str, name: &str) -> u64;
}

impl<K: MirroredKind> CachedSizes for Caches<K> {
    fn held_in(&self, namespace: &str) -> NamespaceSources {
        let held = self.source_bytes.held_in(namespace);
        NamespaceSources {
            count: held.sources,
            bytes: held.bytes,
        }
    }

    fn bytes_of(&self, namespace: &str, name: &str) -> u64 {
        self.source(namespace, name)
            .map_or(0, |source| content_size::kept(source.meta()))
    }
}
