//! The watch caches, read by the reconciles: lookups, and whether they are
//! complete yet.
//!
//! Sources are cached with the source label selector, copies (companions
//! and mirrors alike) with the managed-by label, so memory follows the
//! managed objects only, never the number of ConfigMaps in the cluster.
//! Namespaces are cached (metadata only) when mirroring into other
//! namespaces is possible, i.e. when watching all namespaces. What fills
//! them is `watches`.

use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::{
    Resource,
    runtime::reflector::{ObjectRef, Store},
};
use tokio::sync::watch;

use crate::{
    decisions::cache_form::{self, CachedCopy},
    decisions::consent::{Consent, NamespaceFacts},
    decisions::targets::Targets,
    index::admitting_namespaces::{AdmittingNamespaces, NamespaceMeta},
    index::copy_index::CopyIndex,
    index::grants::GrantIndex,
    index::mirroring_sources::MirroringSources,
    index::source_bytes::SourceBytes,
    kind::MirroredKind,
};

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
    /// How many sources each namespace holds, and their bytes.
    pub source_bytes: SourceBytes,
    /// The mirrors by namespace and by source.
    pub index: CopyIndex<K>,
    /// The namespaces that admit this kind's mirrors, by name.
    pub admitting: AdmittingNamespaces,
    /// The MirrorGrants of every namespace, shared by every kind.
    pub grants: GrantIndex,
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

    /// Whether both caches have completed their initial list.
    pub fn is_ready(&self) -> bool {
        *self.ready.borrow()
    }

    pub fn source(&self, namespace: &str, name: &str) -> Option<Arc<K>> {
        self.sources.get(&ObjectRef::new(name).within(namespace))
    }

    /// The copy at this name, read back from its cached form.
    pub fn copy(&self, namespace: &str, name: &str) -> Option<CachedCopy<K>> {
        let cached = self.copies.get(&ObjectRef::new(name).within(namespace))?;
        Some(cache_form::copy_from_cache(&cached))
    }

    /// The namespaces that `targets` asks for and whose labels admit the
    /// kind, as consent reads them; empty when mirroring is off. Only the
    /// admitting namespaces whose names begin as one of the globs does are
    /// looked at (all of them for a selector).
    fn admitting_namespaces(&self, targets: &Targets, consent: &Consent) -> Vec<NamespaceFacts> {
        if self.namespaces.is_none() {
            return Vec::new();
        }
        let prefixes = targets.literal_prefixes();
        self.admitting
            .beginning_with(prefixes.as_deref())
            .into_iter()
            // The set follows the cache a moment behind: the cache decides.
            .filter_map(|name| self.namespace_facts(&name))
            .filter(|ns| targets.includes(&ns.name, &ns.labels) && consent.admits(ns))
            .collect()
    }

    /// What consent reads of a namespace (its grants too), or None if it
    /// does not exist (or mirroring is off).
    pub fn namespace_facts(&self, name: &str) -> Option<NamespaceFacts> {
        let namespace = self.namespaces.as_ref()?.get(&ObjectRef::new(name))?;
        Some(self.facts_of(namespace.meta()))
    }

    /// What consent reads of the namespace `meta` is of, its grants too.
    pub fn facts_of(&self, meta: &ObjectMeta) -> NamespaceFacts {
        let facts = NamespaceFacts::of(meta);
        let grants = self.grants.of_namespace(&facts.name);
        facts.with_grants(grants)
    }

    /// Sources that want a mirror in `namespace`.
    pub fn sources_wanting_mirror_in(
        &self,
        namespace: &NamespaceFacts,
        consent: &Consent,
    ) -> Vec<ObjectRef<K>> {
        self.mirroring.wanting_mirror_in(namespace, consent)
    }

    /// The namespaces `targets` asks for whose labels admit the kind (when
    /// it names them all exactly, only those are looked up). Whether each
    /// accepts the source's namespace is the caller's question: the answer
    /// differs per source, and a refusal may be worth a Warning.
    pub fn admitting_targets(&self, targets: &Targets, consent: &Consent) -> Vec<NamespaceFacts> {
        match targets.exact_names() {
            Some(names) => names
                .filter_map(|name| self.namespace_facts(name))
                .filter(|namespace| consent.admits(namespace))
                .collect(),
            None => self.admitting_namespaces(targets, consent),
        }
    }

    /// The mirrors in one namespace.
    pub fn mirrors_in(&self, namespace: &str) -> Vec<ObjectRef<K>> {
        self.index.mirrors_in(namespace)
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::{api::core::v1::ConfigMap, apimachinery::pkg::apis::meta::v1::ObjectMeta};
    use kube::runtime::{reflector, watcher::Event};

    use super::*;
    use std::collections::BTreeMap;

    use crate::test_fixtures::{
        mk_consent, mk_consenting_labels, mk_mirrored_source, mk_namespace,
    };

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
        let admitting = AdmittingNamespaces::default();
        let grants = GrantIndex::default();
        grants.none_exist();
        admitting.fill_from(&store, &mk_consent(), &grants);
        Caches {
            sources: reflector::store().0,
            copies: reflector::store().0,
            namespaces: Some(store),
            mirroring: MirroringSources::default(),
            source_bytes: SourceBytes::default(),
            index: CopyIndex::default(),
            admitting,
            grants,
            ready: watch::channel(true).1,
        }
    }

    #[test]
    fn a_glob_takes_from_the_cache_only_the_admitting_namespaces_it_names() {
        let caches = caches_with_namespaces(&[
            ("team-a", mk_consenting_labels()),
            ("team-b", BTreeMap::new()),
            ("other", mk_consenting_labels()),
            ("kube-system", mk_consenting_labels()),
        ]);
        let source = mk_mirrored_source("team-*");
        let targets = Targets::of(&source.metadata).unwrap().unwrap();
        let taken = caches.admitting_targets(&targets, &mk_consent());
        assert_eq!(taken, vec![mk_namespace("team-a", mk_consenting_labels())]);
        let everywhere = Targets::of(&mk_mirrored_source("*").metadata)
            .unwrap()
            .unwrap();
        let mut names: Vec<String> = caches
            .admitting_targets(&everywhere, &mk_consent())
            .into_iter()
            .map(|ns| ns.name)
            .collect();
        names.sort();
        assert_eq!(
            names,
            ["other", "team-a"],
            "never the protected kube-system"
        );
    }
}
