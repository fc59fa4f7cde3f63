//! The sources that ask for mirrors, with their targets parsed once per
//! change of the source, kept up to date from the sources' watch.
//!
//! A namespace created or relabeled must wake the sources that want a
//! mirror in it. Scanning (and parsing) every cached source on every
//! namespace event would cost time in proportion to all sources; this
//! index looks only at the sources that could name the namespace: those
//! naming it exactly, those with a glob whose literal beginning its name
//! begins with (`team-` for `team-*`: one lookup per beginning of the
//! name), and those with a selector, which any namespace may match.

use std::{
    collections::{HashMap, HashSet},
    sync::{Arc, Mutex, PoisonError},
};

use kube::{
    ResourceExt,
    runtime::{reflector::ObjectRef, watcher::Event},
};

use crate::{
    decisions::consent::{Consent, NamespaceFacts},
    decisions::targets::{Filing, Targets, wants_mirror},
    kind::MirroredKind,
};

#[derive(Clone, Default)]
pub struct MirroringSources<K: MirroredKind> {
    inner: Arc<Mutex<Index<K>>>,
}

#[derive(Default)]
struct Index<K: MirroredKind> {
    /// Every source with valid mirror annotations: its namespace and targets.
    targets: HashMap<ObjectRef<K>, (String, Arc<Targets>)>,
    /// Sources by each namespace they name exactly.
    by_name: HashMap<String, HashSet<ObjectRef<K>>>,
    /// Sources by the literal beginning of each of their globs.
    by_prefix: HashMap<String, HashSet<ObjectRef<K>>>,
    /// Sources with a selector: compared with every namespace.
    by_selector: HashSet<ObjectRef<K>>,
    /// The index being rebuilt during a re-list.
    relisting: Option<Box<Index<K>>>,
}

impl<K: MirroredKind> MirroringSources<K> {
    /// Follows one event of the sources' watch.
    pub fn observe(&self, event: &Event<K>) {
        let mut index = self.lock();
        match event {
            Event::Apply(source) => index.file(source),
            Event::Delete(source) => index.unfile(&ObjectRef::from(source)),
            Event::Init => index.relisting = Some(Box::default()),
            Event::InitApply(source) => index
                .relisting
                .get_or_insert_with(Box::default)
                .file(source),
            Event::InitDone => {
                let rebuilt = index.relisting.take().unwrap_or_default();
                *index = *rebuilt;
            }
        }
    }

    /// The sources that want a mirror in namespace `name` with `labels`.
    pub fn wanting_mirror_in(
        &self,
        namespace: &NamespaceFacts,
        consent: &Consent,
    ) -> Vec<ObjectRef<K>> {
        if !consent.admits(namespace) {
            return Vec::new();
        }
        let index = self.lock();
        let name = namespace.name.as_str();
        let named = index.by_name.get(name).into_iter().flatten();
        let by_beginning = (0..=name.len())
            .filter_map(|end| name.get(..end))
            .filter_map(|beginning| index.by_prefix.get(beginning))
            .flatten();
        let candidates: HashSet<&ObjectRef<K>> = named
            .chain(by_beginning)
            .chain(&index.by_selector)
            .collect();
        candidates
            .into_iter()
            .filter(|source| {
                index
                    .targets
                    .get(*source)
                    .is_some_and(|(source_namespace, targets)| {
                        wants_mirror(targets, source_namespace, namespace, consent)
                    })
            })
            .cloned()
            .collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Index<K>> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl<K: MirroredKind> Index<K> {
    fn file(&mut self, source: &K) {
        let source_ref = ObjectRef::from(source);
        self.unfile(&source_ref);
        // Malformed annotations ask for nothing new: the source's own
        // reconcile reports them.
        let Ok(Some(targets)) = Targets::of(source.meta()) else {
            return;
        };
        for filing in targets.filings() {
            let set = match filing {
                Filing::Name(name) => self.by_name.entry(name.to_owned()).or_default(),
                Filing::Prefix(beginning) => {
                    self.by_prefix.entry(beginning.to_owned()).or_default()
                }
                Filing::Selector => &mut self.by_selector,
            };
            set.insert(source_ref.clone());
        }
        let namespace = source.namespace().unwrap_or_default();
        self.targets
            .insert(source_ref, (namespace, Arc::new(targets)));
    }

    fn unfile(&mut self, source_ref: &ObjectRef<K>) {
        let Some((_, targets)) = self.targets.remove(source_ref) else {
            return;
        };
        for filing in targets.filings() {
            let (map, key) = match filing {
                Filing::Name(name) => (&mut self.by_name, name),
                Filing::Prefix(beginning) => (&mut self.by_prefix, beginning),
                Filing::Selector => {
                    self.by_selector.remove(source_ref);
                    continue;
                }
            };
            if let Some(set) = map.get_mut(key) {
                set.remove(source_ref);
                if set.is_empty() {
                    map.remove(key);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
