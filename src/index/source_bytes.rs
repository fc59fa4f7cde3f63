//! How many sources each namespace holds, and what they cost read, in
//! bytes (`decisions::cache_form::content_size::read_cost`):
//! what the fresh reads decide from whether a namespace is small enough to
//! list (`reconcile::source_read::batch`). One entry per namespace that
//! holds sources, whatever their number; each source's own size is kept in
//! its cached form (`decisions::cache_form::content_size`).
//!
//! Followed from the sources' watch before its events reach the cache,
//! while the cache still holds what an event replaces or removes.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, MutexGuard, PoisonError},
};

use kube::{
    ResourceExt,
    runtime::{
        reflector::{ObjectRef, Store},
        watcher::Event,
    },
};

use crate::{decisions::cache_form::content_size, kind::MirroredKind};

/// What the cached sources of one namespace hold.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Held {
    pub sources: usize,
    /// What they cost read, in bytes, as each was when cached.
    pub bytes: u64,
}

/// The sources each namespace holds, by namespace.
#[derive(Clone, Default)]
pub struct SourceBytes {
    totals: Arc<Mutex<Totals>>,
}

#[derive(Default)]
struct Totals {
    by_namespace: HashMap<String, Held>,
    /// Filled by a relist, and in force once it completes.
    relisting: Option<HashMap<String, Held>>,
}

impl SourceBytes {
    /// What namespace `namespace`'s cached sources hold.
    pub fn held_in(&self, namespace: &str) -> Held {
        self.lock()
            .by_namespace
            .get(namespace)
            .copied()
            .unwrap_or_default()
    }

    /// Follows one event of the sources' watch (slimmed, with its size
    /// kept), given `cached`: what the cache holds under the same name
    /// before the event.
    pub fn observe<K: MirroredKind>(&self, event: &Event<K>, cached: impl Fn(&K) -> Option<u64>) {
        let mut totals = self.lock();
        match event {
            Event::Apply(source) => {
                if let Some(before) = cached(source) {
                    remove(&mut totals.by_namespace, source, before);
                }
                add(&mut totals.by_namespace, source);
            }
            Event::Delete(source) => {
                if let Some(before) = cached(source) {
                    remove(&mut totals.by_namespace, source, before);
                }
            }
            Event::Init => totals.relisting = Some(HashMap::new()),
            Event::InitApply(source) => add(totals.relisting.get_or_insert_default(), source),
            Event::InitDone => totals.by_namespace = totals.relisting.take().unwrap_or_default(),
        }
    }

    /// What follows each event of the sources' watch before `cache`
    /// applies it.
    pub fn following<K: MirroredKind>(&self, cache: &Store<K>) -> impl FnMut(&Event<K>) + use<K> {
        let (totals, cache) = (self.clone(), cache.clone());
        move |event| {
            totals.observe(event, |source| {
                let before = cache.get(&ObjectRef::from_obj(source))?;
                Some(content_size::kept(before.meta()))
            })
        }
    }

    fn lock(&self) -> MutexGuard<'_, Totals> {
        self.totals.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn add<K: MirroredKind>(totals: &mut HashMap<String, Held>, source: &K) {
    let held = totals
        .entry(source.namespace().unwrap_or_default())
        .or_default();
    held.sources += 1;
    held.bytes = held.bytes.saturating_add(content_size::kept(source.meta()));
}

fn remove<K: MirroredKind>(totals: &mut HashMap<String, Held>, source: &K, bytes: u64) {
    let namespace = source.namespace().unwrap_or_default();
    let Some(held) = totals.get_mut(&namespace) else {
        return;
    };
    held.sources = held.sources.saturating_sub(1);
    held.bytes = held.bytes.saturating_sub(bytes);
    if held.sources == 0 {
        totals.remove(&namespace);
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use k8s_openapi::api::core::v1::ConfigMap;

    use super::*;
    use crate::decisions::cache_form::content_size::slim_source_sized;
    use crate::kind::DECODED_ENTRY_BYTES;

    fn source(namespace: &str, name: &str, bytes: usize) -> ConfigMap {
        let mut source = ConfigMap::default();
        source.metadata.namespace = Some(namespace.into());
        source.metadata.name = Some(name.into());
        source.data = Some(BTreeMap::from([("v".into(), "x".repeat(bytes))]));
        slim_source_sized(&mut source);
        source
    }

    /// What [`source`] of `bytes` costs read: one key `v`.
    fn cost(bytes: u64) -> u64 {
        bytes + 1 + DECODED_ENTRY_BYTES
    }

    fn held(sources: usize, bytes: u64) -> Held {
        Held { sources, bytes }
    }

    #[test]
    fn a_changed_source_counts_once_with_its_new_size() {
        let totals = SourceBytes::default();
        totals.observe(&Event::Apply(source("a", "s", 10)), |_| None);
        totals.observe(&Event::Apply(source("a", "t", 5)), |_| None);
        totals.observe(&Event::Apply(source("a", "s", 100)), |_| Some(cost(10)));
        assert_eq!(totals.held_in("a"), held(2, cost(100) + cost(5)));
        assert_eq!(totals.held_in("b"), held(0, 0));
        totals.observe(&Event::Delete(source("a", "s", 100)), |_| Some(cost(100)));
        assert_eq!(totals.held_in("a"), held(1, cost(5)));
        totals.observe(&Event::Delete(source("a", "t", 5)), |_| Some(cost(5)));
        assert!(
            totals.lock().by_namespace.is_empty(),
            "no namespace left behind"
        );
    }

    #[test]
    fn a_relist_replaces_the_totals_once_complete() {
        let totals = SourceBytes::default();
        totals.observe(&Event::Apply(source("a", "gone", 50)), |_| None);
        totals.observe::<ConfigMap>(&Event::Init, |_| None);
        totals.observe(&Event::InitApply(source("b", "s", 7)), |_| None);
        assert_eq!(
            totals.held_in("a"),
            held(1, cost(50)),
            "the old list stands until the new one is whole"
        );
        totals.observe::<ConfigMap>(&Event::InitDone, |_| None);
        assert_eq!(totals.held_in("a"), held(0, 0));
        assert_eq!(totals.held_in("b"), held(1, cost(7)));
    }
}
