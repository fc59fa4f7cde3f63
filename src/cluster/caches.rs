//! The watch caches, read by the reconciles: lookups, and whether they are
//! complete yet.
//!
//! Sources are cached with the source label selector, copies (companions
//! and mirrors alike) with the managed-by label, so memory follows the
//! managed objects only, never the number of ConfigMaps in the cluster.
//! Namespaces are cached (metadata only) when mirroring into other
//! namespaces is possible, i.e. when watching all namespaces. What fills
//! them is `watches`.

use std::{collections::BTreeMap, sync::Arc};

use k8s_openapi::api::core::v1::Namespace;
use kube::{
    Resource, ResourceExt,
    core::PartialObjectMeta,
    runtime::reflector::{ObjectRef, Store},
};
use tokio::sync::watch;

use crate::{
    cluster::mirroring_sources::MirroringSources,
    decisions::cache_form::{self, CachedCopy},
    decisions::selector::Selector,
    decisions::targets::Targets,
    kind::MirroredKind,
};

/// What is cached of a namespace: its metadata.
pub type NamespaceMeta = PartialObjectMeta<Namespace>;

/// Read-only views of the caches.
#[derive(Clone)]
pub struct Caches<K: MirroredKind> {
    pub sources: Store<K>,
    /// Companions and mirrors: every object of the kind with the
    /// managed-by label.
    pub copies: Store<K>,
    /// Namespace metadata, when mirroring into other namespaces is on.
    pub namespaces: Option<Store<NamespaceMeta>>,
    /// The sources that ask for mirrors, by what they ask for.
    pub mirroring: MirroringSources<K>,
    // `Store::wait_until_ready` wakes only the most recent of several
    // concurrent waiters, so the reconciles wait on this instead.
    pub(crate) ready: watch::Receiver<bool>,
}

impl<K: MirroredKind> Caches<K> {
    /// Waits until both caches have completed their initial list. Before
    /// that, every companion would look missing and every source gone.
    pub async fn wait_ready(&self) {
        // An error means the watch task is gone, i.e. the process is
        // shutting down; reconciles then see whatever the caches hold.
        let _ = self.ready.clone().wait_for(|ready| *ready).await;
    }

    pub fn source(&self, namespace: &str, name: &str) -> Option<Arc<K>> {
        self.sources.get(&ObjectRef::new(name).within(namespace))
    }

    /// The copy at this name, read back from its cached form.
    pub fn copy(&self, namespace: &str, name: &str) -> Option<CachedCopy<K>> {
        let cached = self.copies.get(&ObjectRef::new(name).within(namespace))?;
        Some(cache_form::copy_from_cache(&cached))
    }

    /// The namespaces that `targets` asks for and that consent to mirrors,
    /// with their labels; empty when mirroring is off. Only these are
    /// copied out of the cache: a source's reconcile walks every
    /// namespace, and copying each one's name and labels on the way cost
    /// more than the rest of the walk.
    fn consenting_namespaces(
        &self,
        targets: &Targets,
        consent: &Selector,
    ) -> Vec<(String, BTreeMap<String, String>)> {
        let Some(namespaces) = &self.namespaces else {
            return Vec::new();
        };
        namespaces
            .state()
            .iter()
            .filter(|ns| {
                let labels = ns.labels();
                targets.includes(ns.meta().name.as_deref().unwrap_or_default(), labels)
                    && consent.matches(labels)
            })
            .map(|ns| (ns.name_any(), ns.labels().clone()))
            .collect()
    }

    /// A namespace's labels, or None if it does not exist (or mirroring is off).
    pub fn namespace_labels(&self, name: &str) -> Option<BTreeMap<String, String>> {
        let namespace = self.namespaces.as_ref()?.get(&ObjectRef::new(name))?;
        Some(namespace.labels().clone())
    }

    /// Sources that want a mirror in namespace `name` with `labels`.
    pub fn sources_wanting_mirror_in(
        &self,
        name: &str,
        labels: &BTreeMap<String, String>,
        consent: &Selector,
    ) -> Vec<ObjectRef<K>> {
        self.mirroring.wanting_mirror_in(name, labels, consent)
    }

    /// The consenting namespaces `targets` asks for (when it names them
    /// all exactly, only those are looked up), with their labels.
    pub fn consenting_targets(
        &self,
        targets: &Targets,
        consent: &Selector,
    ) -> Vec<(String, BTreeMap<String, String>)> {
        match targets.exact_names() {
            Some(names) => names
                .filter_map(|name| Some((name.to_owned(), self.namespace_labels(name)?)))
                .filter(|(_, labels)| consent.matches(labels))
                .collect(),
            None => self.consenting_namespaces(targets, consent),
        }
    }

    /// The copies in one namespace.
    pub fn copies_in(&self, namespace: &str) -> Vec<ObjectRef<K>> {
        self.copies
            .state()
            .iter()
            .filter(|c| c.namespace().as_deref() == Some(namespace))
            .map(|c| ObjectRef::from(&**c))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::{api::core::v1::ConfigMap, apimachinery::pkg::apis::meta::v1::ObjectMeta};
    use kube::runtime::{reflector, watcher::Event};

    use super::*;
    use crate::test_fixtures::{mk_consent, mk_consenting_labels, mk_mirrored_source};

    fn caches_with_namespaces(
        namespaces: &[(&str, BTreeMap<String, String>)],
    ) -> Caches<ConfigMap> {
        let (store, mut writer) = reflector::store::<NamespaceMeta>();
        for (name, labels) in namespaces {
            let namespace = NamespaceMeta {
                metadata: ObjectMeta {
                    name: Some((*name).to_owned()),
                    labels: Some(labels.clone()),
                    ..ObjectMeta::default()
                },
                ..NamespaceMeta::default()
            };
            writer.apply_watcher_event(&Event::Apply(namespace));
        }
        Caches {
            sources: reflector::store().0,
            copies: reflector::store().0,
            namespaces: Some(store),
            mirroring: MirroringSources::default(),
            ready: watch::channel(true).1,
        }
    }

    #[test]
    fn a_glob_takes_from_the_cache_only_the_consenting_namespaces_it_names() {
        let caches = caches_with_namespaces(&[
            ("team-a", mk_consenting_labels()),
            ("team-b", BTreeMap::new()),
            ("other", mk_consenting_labels()),
        ]);
        let source = mk_mirrored_source("team-*");
        let targets = Targets::of(&source.metadata).unwrap().unwrap();
        let taken = caches.consenting_targets(&targets, &mk_consent());
        assert_eq!(taken, vec![("team-a".to_owned(), mk_consenting_labels())]);
    }
}
