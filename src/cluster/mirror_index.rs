//! Which mirrors each source has, kept up to date from the copies' watch.
//!
//! When a source changes its mirror annotations, the mirrors it no longer
//! wants must be looked at by the prune loop. Finding them by scanning every
//! copy on every source change would cost time in proportion to the cluster;
//! this index answers in proportion to the source's own mirrors.

use std::{
    collections::{HashMap, HashSet},
    sync::{Arc, Mutex, PoisonError},
};

use kube::runtime::{reflector::ObjectRef, watcher::Event};

use crate::{contract, kind::MirroredKind};

/// `(namespace, name)` of a source.
type SourceKey = (String, String);

#[derive(Clone)]
pub struct MirrorIndex<K: MirroredKind> {
    inner: Arc<Mutex<Maps<K>>>,
}

impl<K: MirroredKind> Default for MirrorIndex<K> {
    fn default() -> Self {
        MirrorIndex {
            inner: Arc::default(),
        }
    }
}

struct Maps<K: MirroredKind> {
    by_source: HashMap<SourceKey, HashSet<ObjectRef<K>>>,
    /// The source each mirror was filed under, to refile it if edited.
    source_of: HashMap<ObjectRef<K>, SourceKey>,
    /// The index being rebuilt during a re-list.
    relisting: Option<Box<Maps<K>>>,
}

impl<K: MirroredKind> Default for Maps<K> {
    fn default() -> Self {
        Maps {
            by_source: HashMap::new(),
            source_of: HashMap::new(),
            relisting: None,
        }
    }
}

impl<K: MirroredKind> MirrorIndex<K> {
    /// Follows one event of the copies' watch.
    pub fn observe(&self, event: &Event<K>) {
        let mut maps = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        match event {
            Event::Apply(copy) => maps.file(copy),
            Event::Delete(copy) => maps.unfile(&ObjectRef::from(copy)),
            Event::Init => maps.relisting = Some(Box::default()),
            Event::InitApply(copy) => maps.relisting.get_or_insert_with(Box::default).file(copy),
            Event::InitDone => {
                let rebuilt = maps.relisting.take().unwrap_or_default();
                *maps = *rebuilt;
            }
        }
    }

    /// The mirrors filed under a source.
    pub fn mirrors_of(&self, namespace: &str, name: &str) -> Vec<ObjectRef<K>> {
        let maps = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let key = (namespace.to_owned(), name.to_owned());
        maps.by_source
            .get(&key)
            .map(|set| set.iter().cloned().collect())
            .unwrap_or_default()
    }
}

impl<K: MirroredKind> Maps<K> {
    fn file(&mut self, copy: &K) {
        let copy_ref = ObjectRef::from(copy);
        self.unfile(&copy_ref);
        if let Some(source) = contract::mirror_of(copy.meta()) {
            self.by_source
                .entry(source.clone())
                .or_default()
                .insert(copy_ref.clone());
            self.source_of.insert(copy_ref, source);
        }
    }

    fn unfile(&mut self, copy_ref: &ObjectRef<K>) {
        let Some(source) = self.source_of.remove(copy_ref) else {
            return;
        };
        if let Some(set) = self.by_source.get_mut(&source) {
            set.remove(copy_ref);
            if set.is_empty() {
                self.by_source.remove(&source);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_fixtures::mk_mirror;

    #[test]
    fn mirrors_are_found_by_their_source_and_forgotten_when_deleted() {
        let index = MirrorIndex::default();
        index.observe(&Event::Apply(mk_mirror("a", "home/shared")));
        index.observe(&Event::Apply(mk_mirror("b", "home/shared")));
        index.observe(&Event::Apply(mk_mirror("c", "elsewhere/shared")));
        assert_eq!(index.mirrors_of("home", "shared").len(), 2);
        index.observe(&Event::Delete(mk_mirror("a", "home/shared")));
        assert_eq!(
            index.mirrors_of("home", "shared"),
            vec![ObjectRef::new("shared").within("b")]
        );
    }

    #[test]
    fn a_mirror_edited_to_name_another_source_is_refiled() {
        let index = MirrorIndex::default();
        index.observe(&Event::Apply(mk_mirror("a", "home/shared")));
        index.observe(&Event::Apply(mk_mirror("a", "other/shared")));
        assert!(index.mirrors_of("home", "shared").is_empty());
        assert_eq!(index.mirrors_of("other", "shared").len(), 1);
    }

    #[test]
    fn a_relist_replaces_the_index() {
        let index = MirrorIndex::default();
        index.observe(&Event::Apply(mk_mirror("a", "home/shared")));
        index.observe(&Event::Init);
        index.observe(&Event::InitApply(mk_mirror("b", "home/shared")));
        assert_eq!(
            index.mirrors_of("home", "shared").len(),
            1,
            "the old index serves until done"
        );
        index.observe(&Event::InitDone);
        assert_eq!(
            index.mirrors_of("home", "shared"),
            vec![ObjectRef::new("shared").within("b")]
        );
    }
}
