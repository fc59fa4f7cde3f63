//! The mirrors by namespace and by source, kept up to date from the copies'
//! watch.
//!
//! When a source changes its mirror annotations, the mirrors it no longer
//! wants must be looked at by the prune loop; when a namespace stops
//! consenting or goes, the mirrors in it. Finding either by scanning every
//! cached copy would make each such event cost in proportion to the
//! cluster; these maps answer in proportion to what the event touches.
//! Companions are in neither: consent never concerns them, and a deleted
//! namespace takes its companions with it, as their owners.

use std::{
    collections::{HashMap, HashSet},
    sync::{Arc, Mutex, MutexGuard, PoisonError},
};

use kube::{
    ResourceExt,
    runtime::{reflector::ObjectRef, watcher::Event},
};

use crate::{contract, kind::MirroredKind};

/// `(namespace, name)` of a source.
pub type SourceKey = (String, String);

#[derive(Clone, Default)]
pub struct CopyIndex<K: MirroredKind> {
    inner: Arc<Mutex<Maps<K>>>,
}

#[derive(Default)]
struct Maps<K: MirroredKind> {
    /// The mirrors, by their namespace.
    by_namespace: HashMap<String, HashSet<ObjectRef<K>>>,
    /// The mirrors, by the source their annotation names.
    by_source: HashMap<SourceKey, HashSet<ObjectRef<K>>>,
    /// The source each mirror was filed under, to refile it if edited.
    source_of: HashMap<ObjectRef<K>, SourceKey>,
    /// The index being rebuilt during a re-list.
    relisting: Option<Box<Maps<K>>>,
}

impl<K: MirroredKind> CopyIndex<K> {
    /// Follows one event of the copies' watch. Returns the source a mirror
    /// was filed under until this event, when the event takes it from that
    /// source (an edit that names another source, or none): that source
    /// is never told otherwise that its mirror is no longer its own.
    pub fn observe(&self, event: &Event<K>) -> Option<SourceKey> {
        let mut maps = self.lock();
        match event {
            Event::Apply(copy) | Event::Delete(copy) => {
                let copy_ref = ObjectRef::from(copy);
                let before = maps.source_of.get(&copy_ref).cloned();
                match event {
                    Event::Apply(_) => maps.file(copy),
                    _ => maps.unfile(&copy_ref),
                }
                before.filter(|before| contract::mirror_of(copy.meta()).as_ref() != Some(before))
            }
            Event::Init => {
                maps.relisting = Some(Box::default());
                None
            }
            Event::InitApply(copy) => {
                maps.relisting.get_or_insert_with(Box::default).file(copy);
                None
            }
            Event::InitDone => {
                let rebuilt = maps.relisting.take().unwrap_or_default();
                *maps = *rebuilt;
                None
            }
        }
    }

    /// The mirrors filed under a source.
    pub fn mirrors_of(&self, namespace: &str, name: &str) -> Vec<ObjectRef<K>> {
        let key = (namespace.to_owned(), name.to_owned());
        self.lock()
            .by_source
            .get(&key)
            .map(|set| set.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// The mirrors filed under a source in one namespace, found from the
    /// smaller of the two sets (a source mirrored into thousands of
    /// namespaces, or a namespace holding thousands of mirrors).
    pub fn mirrors_of_in(&self, source: &SourceKey, namespace: &str) -> Vec<ObjectRef<K>> {
        let maps = self.lock();
        let (Some(of_source), Some(in_namespace)) =
            (maps.by_source.get(source), maps.by_namespace.get(namespace))
        else {
            return Vec::new();
        };
        let (smaller, other) = match of_source.len() <= in_namespace.len() {
            true => (of_source, in_namespace),
            false => (in_namespace, of_source),
        };
        smaller
            .iter()
            .filter(|mirror| other.contains(*mirror))
            .cloned()
            .collect()
    }

    /// The mirrors in one namespace.
    pub fn mirrors_in(&self, namespace: &str) -> Vec<ObjectRef<K>> {
        self.lock()
            .by_namespace
            .get(namespace)
            .map(|set| set.iter().cloned().collect())
            .unwrap_or_default()
    }

    fn lock(&self) -> MutexGuard<'_, Maps<K>> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl<K: MirroredKind> Maps<K> {
    fn file(&mut self, copy: &K) {
        let copy_ref = ObjectRef::from(copy);
        self.unfile(&copy_ref);
        if let Some(source) = contract::mirror_of(copy.meta()) {
            self.by_namespace
                .entry(copy.namespace().unwrap_or_default())
                .or_default()
                .insert(copy_ref.clone());
            self.by_source
                .entry(source.clone())
                .or_default()
                .insert(copy_ref.clone());
            self.source_of.insert(copy_ref, source);
        }
    }

    fn unfile(&mut self, copy_ref: &ObjectRef<K>) {
        if let Some(source) = self.source_of.remove(copy_ref) {
            let namespace = copy_ref.namespace.clone().unwrap_or_default();
            remove_from(&mut self.by_namespace, &namespace, copy_ref);
            remove_from(&mut self.by_source, &source, copy_ref);
        }
    }
}

/// Takes `copy_ref` out of the set under `key`, and the set once empty.
fn remove_from<Q, K>(map: &mut HashMap<Q, HashSet<ObjectRef<K>>>, key: &Q, copy_ref: &ObjectRef<K>)
where
    Q: std::hash::Hash + Eq,
    K: MirroredKind,
{
    if let Some(set) = map.get_mut(key) {
        set.remove(copy_ref);
        if set.is_empty() {
            map.remove(key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_fixtures::{mk_configmap, mk_mirror};

    fn sorted<K: MirroredKind>(mut refs: Vec<ObjectRef<K>>) -> Vec<String> {
        let mut names: Vec<String> = refs
            .drain(..)
            .map(|r| format!("{}/{}", r.namespace.unwrap_or_default(), r.name))
            .collect();
        names.sort();
        names
    }

    #[test]
    fn mirrors_are_found_by_their_source_and_forgotten_when_deleted() {
        let index = CopyIndex::default();
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
        let index = CopyIndex::default();
        index.observe(&Event::Apply(mk_mirror("a", "home/shared")));
        index.observe(&Event::Apply(mk_mirror("a", "other/shared")));
        assert!(index.mirrors_of("home", "shared").is_empty());
        assert_eq!(index.mirrors_of("other", "shared").len(), 1);
        assert_eq!(
            index.mirrors_in("a").len(),
            1,
            "an edit files a mirror under its namespace once"
        );
    }

    #[test]
    fn mirrors_are_found_by_namespace_and_forgotten_when_deleted() {
        let index = CopyIndex::default();
        index.observe(&Event::Apply(mk_mirror("a", "home/shared")));
        index.observe(&Event::Apply(mk_mirror("a", "home/other")));
        index.observe(&Event::Apply(mk_mirror("b", "home/shared")));
        index.observe(&Event::Apply(mk_configmap("a", "colors-synced")));
        assert_eq!(sorted(index.mirrors_in("a")), ["a/other", "a/shared"]);
        index.observe(&Event::Delete(mk_mirror("a", "home/shared")));
        assert_eq!(sorted(index.mirrors_in("a")), ["a/other"]);
        index.observe(&Event::Delete(mk_mirror("a", "home/other")));
        assert!(index.mirrors_in("a").is_empty());
        assert_eq!(sorted(index.mirrors_in("b")), ["b/shared"]);
        assert!(
            !index.lock().by_namespace.contains_key("a"),
            "an empty namespace leaves no entry behind"
        );
    }

    #[test]
    fn an_edit_that_takes_a_mirror_from_its_source_names_that_source() {
        let index = CopyIndex::default();
        assert_eq!(
            index.observe(&Event::Apply(mk_mirror("a", "home/shared"))),
            None
        );
        assert_eq!(
            index.observe(&Event::Apply(mk_mirror("a", "home/shared"))),
            None,
            "an edit that keeps the claim takes nothing"
        );
        assert_eq!(
            index.observe(&Event::Apply(mk_mirror("a", "other/shared"))),
            Some(("home".to_owned(), "shared".to_owned()))
        );
        let mut unclaimed = mk_mirror("a", "other/shared");
        unclaimed.metadata.annotations = None;
        assert_eq!(
            index.observe(&Event::Apply(unclaimed.clone())),
            Some(("other".to_owned(), "shared".to_owned())),
            "an edit that removes the claim"
        );
        assert_eq!(index.observe(&Event::Delete(unclaimed)), None);
    }

    #[test]
    fn a_companion_is_filed_nowhere() {
        let index = CopyIndex::default();
        index.observe(&Event::Apply(mk_configmap("a", "colors-synced")));
        let maps = index.lock();
        assert!(maps.by_namespace.is_empty() && maps.by_source.is_empty());
    }

    #[test]
    fn a_relist_replaces_the_index() {
        let index = CopyIndex::default();
        index.observe(&Event::Apply(mk_mirror("a", "home/shared")));
        index.observe(&Event::Init);
        index.observe(&Event::InitApply(mk_mirror("b", "home/shared")));
        assert_eq!(
            index.mirrors_of("home", "shared").len(),
            1,
            "the old index serves until done"
        );
        assert_eq!(index.mirrors_in("a").len(), 1);
        index.observe(&Event::InitDone);
        assert_eq!(
            index.mirrors_of("home", "shared"),
            vec![ObjectRef::new("shared").within("b")]
        );
        assert!(index.mirrors_in("a").is_empty());
        assert_eq!(index.mirrors_in("b").len(), 1);
    }
}
