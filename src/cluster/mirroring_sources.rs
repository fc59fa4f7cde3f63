//! The sources that ask for mirrors, with their targets parsed once per
//! change of the source, kept up to date from the sources' watch.
//!
//! A namespace created or relabeled must wake the sources that want a
//! mirror in it. Scanning (and parsing) every cached source on every
//! namespace event would cost time in proportion to all sources; this
//! index looks only at the sources that ask for mirrors, and finds those
//! naming namespaces by name alone through that name.

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
    decisions::targets::{Targets, wants_mirror},
    kind::MirroredKind,
};

#[derive(Clone)]
pub struct MirroringSources<K: MirroredKind> {
    inner: Arc<Mutex<Index<K>>>,
}

impl<K: MirroredKind> Default for MirroringSources<K> {
    fn default() -> Self {
        MirroringSources {
            inner: Arc::default(),
        }
    }
}

struct Index<K: MirroredKind> {
    /// Every source with valid mirror annotations: its namespace and targets.
    targets: HashMap<ObjectRef<K>, (String, Arc<Targets>)>,
    /// Sources that name namespaces by exact name only, by each name.
    by_name: HashMap<String, HashSet<ObjectRef<K>>>,
    /// Sources with a glob or a selector: compared with every namespace.
    by_pattern: HashSet<ObjectRef<K>>,
    /// The index being rebuilt during a re-list.
    relisting: Option<Box<Index<K>>>,
}

impl<K: MirroredKind> Default for Index<K> {
    fn default() -> Self {
        Index {
            targets: HashMap::new(),
            by_name: HashMap::new(),
            by_pattern: HashSet::new(),
            relisting: None,
        }
    }
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
        let named = index.by_name.get(&namespace.name).into_iter().flatten();
        named
            .chain(&index.by_pattern)
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
        match targets.exact_names() {
            Some(names) => {
                for name in names {
                    self.by_name
                        .entry(name.to_owned())
                        .or_default()
                        .insert(source_ref.clone());
                }
            }
            None => {
                self.by_pattern.insert(source_ref.clone());
            }
        }
        let namespace = source.namespace().unwrap_or_default();
        self.targets
            .insert(source_ref, (namespace, Arc::new(targets)));
    }

    fn unfile(&mut self, source_ref: &ObjectRef<K>) {
        let Some((_, targets)) = self.targets.remove(source_ref) else {
            return;
        };
        self.by_pattern.remove(source_ref);
        for name in targets.exact_names().into_iter().flatten() {
            if let Some(set) = self.by_name.get_mut(name) {
                set.remove(source_ref);
                if set.is_empty() {
                    self.by_name.remove(name);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
