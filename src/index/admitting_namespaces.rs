//! The names of the namespaces that admit one kind's mirrors (consent's
//! labels, and not protected), in order, kept up to date from the namespace
//! watch.
//!
//! A source that asks for mirrors by glob is compared with the namespaces
//! its globs can name: those whose names begin with a glob's literal part
//! (`team-` for `team-*`), found as a range of this ordered set. Walking
//! every cached namespace instead made each such reconcile cost in
//! proportion to the cluster's namespaces, most of which refuse the kind
//! or are never named.

use std::{
    collections::BTreeSet,
    ops::Bound,
    sync::{Arc, PoisonError, RwLock},
};

use k8s_openapi::api::core::v1::Namespace;
use kube::{
    core::PartialObjectMeta,
    runtime::{reflector::Store, watcher::Event},
};

use crate::{
    decisions::consent::{Consent, NamespaceFacts},
    index::grants::GrantIndex,
};

/// What is cached of a namespace: its metadata.
pub type NamespaceMeta = PartialObjectMeta<Namespace>;

#[derive(Clone, Default)]
pub struct AdmittingNamespaces {
    names: Arc<RwLock<BTreeSet<String>>>,
}

impl AdmittingNamespaces {
    /// Follows one event of the namespace watch, once the namespace cache
    /// holds it. A re-list is taken whole from that cache when it
    /// completes: a kind that joined the watch during the list has not
    /// seen all of it.
    pub fn follow(
        &self,
        event: &Event<NamespaceMeta>,
        consent: &Consent,
        cache: &Store<NamespaceMeta>,
        grants: &GrantIndex,
    ) {
        match event {
            Event::Apply(namespace) => {
                let facts = facts_of(namespace, grants);
                let mut names = self.write();
                if consent.admits(&facts) {
                    names.insert(facts.name);
                } else {
                    names.remove(&facts.name);
                }
            }
            Event::Delete(namespace) => {
                if let Some(name) = &namespace.metadata.name {
                    self.write().remove(name);
                }
            }
            Event::InitDone => self.fill_from(cache, consent, grants),
            Event::Init | Event::InitApply(_) => {}
        }
    }

    /// Replaces the set with what `cache` holds now.
    pub fn fill_from(&self, cache: &Store<NamespaceMeta>, consent: &Consent, grants: &GrantIndex) {
        let admitting = cache
            .state()
            .iter()
            .map(|namespace| facts_of(namespace, grants))
            .filter(|facts| consent.admits(facts))
            .map(|facts| facts.name)
            .collect();
        *self.write() = admitting;
    }

    /// The admitting namespaces whose names begin with one of `prefixes`,
    /// each once, in order; all of them when `prefixes` is None. A prefix
    /// that begins with another is left out, so that each name is visited
    /// once however many globs of a source overlap (a source may list a
    /// hundred `*...` globs, each with an empty literal part).
    pub fn beginning_with(&self, prefixes: Option<&[&str]>) -> Vec<String> {
        let names = self.names.read().unwrap_or_else(PoisonError::into_inner);
        let Some(prefixes) = prefixes else {
            return names.iter().cloned().collect();
        };
        let mut sorted = prefixes.to_vec();
        sorted.sort_unstable();
        let mut widest: Vec<&str> = Vec::new();
        for prefix in sorted {
            if !widest.last().is_some_and(|kept| prefix.starts_with(kept)) {
                widest.push(prefix);
            }
        }
        // Disjoint ranges, in order: the names come out sorted and once.
        let mut found = Vec::new();
        for prefix in widest {
            let from = (Bound::Included(prefix), Bound::Unbounded);
            found.extend(
                names
                    .range::<str, _>(from)
                    .take_while(|name| name.starts_with(prefix))
                    .cloned(),
            );
        }
        found
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, BTreeSet<String>> {
        self.names.write().unwrap_or_else(PoisonError::into_inner)
    }
}

/// What consent reads of a cached namespace, its grants as `grants` has
/// them.
fn facts_of(namespace: &NamespaceMeta, grants: &GrantIndex) -> NamespaceFacts {
    let facts = NamespaceFacts::of(&namespace.metadata);
    let held = grants.of_namespace(&facts.name);
    facts.with_grants(held)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use kube::runtime::reflector;

    use super::*;
    use crate::test_fixtures::{mk_consent, mk_consenting_labels};

    fn namespace(name: &str, labels: BTreeMap<String, String>) -> NamespaceMeta {
        NamespaceMeta {
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                labels: Some(labels),
                ..ObjectMeta::default()
            },
            ..NamespaceMeta::default()
        }
    }

    fn empty_cache() -> Store<NamespaceMeta> {
        reflector::store().0
    }

    #[test]
    fn a_namespace_is_added_when_it_consents_and_removed_when_it_stops_or_goes() {
        let index = AdmittingNamespaces::default();
        let cache = empty_cache();
        let consent = mk_consent();
        index.follow(
            &Event::Apply(namespace("team-a", mk_consenting_labels())),
            &consent,
            &cache,
            &GrantIndex::default(),
        );
        index.follow(
            &Event::Apply(namespace("team-b", mk_consenting_labels())),
            &consent,
            &cache,
            &GrantIndex::default(),
        );
        index.follow(
            &Event::Apply(namespace("team-c", BTreeMap::new())),
            &consent,
            &cache,
            &GrantIndex::default(),
        );
        index.follow(
            &Event::Apply(namespace("kube-system", mk_consenting_labels())),
            &consent,
            &cache,
            &GrantIndex::default(),
        );
        assert_eq!(index.beginning_with(None), ["team-a", "team-b"]);
        index.follow(
            &Event::Apply(namespace("team-a", BTreeMap::new())),
            &consent,
            &cache,
            &GrantIndex::default(),
        );
        assert_eq!(index.beginning_with(None), ["team-b"], "consent withdrawn");
        index.follow(
            &Event::Delete(namespace("team-b", mk_consenting_labels())),
            &consent,
            &cache,
            &GrantIndex::default(),
        );
        assert!(index.beginning_with(None).is_empty(), "namespace deleted");
    }

    #[test]
    fn a_glob_finds_exactly_the_names_beginning_with_its_literal_part() {
        let index = AdmittingNamespaces::default();
        let cache = empty_cache();
        for name in ["team", "team-a", "team-b", "teams", "tea", "web-prod", "x"] {
            index.follow(
                &Event::Apply(namespace(name, mk_consenting_labels())),
                &mk_consent(),
                &cache,
                &GrantIndex::default(),
            );
        }
        assert_eq!(index.beginning_with(Some(&["team-"])), ["team-a", "team-b"]);
        assert_eq!(
            index.beginning_with(Some(&["team", "team-", "x"])),
            ["team", "team-a", "team-b", "teams", "x"],
            "overlapping prefixes give each name once"
        );
        assert_eq!(index.beginning_with(Some(&[""])).len(), 7);
        assert_eq!(
            index.beginning_with(Some(&["", "x", "", "team-"])).len(),
            7,
            "an empty literal part covers every other prefix"
        );
        assert!(index.beginning_with(Some(&["zz"])).is_empty());
    }

    #[test]
    fn a_completed_list_is_taken_from_the_cache() {
        let index = AdmittingNamespaces::default();
        let (cache, mut writer) = reflector::store::<NamespaceMeta>();
        let consent = mk_consent();
        index.follow(
            &Event::Apply(namespace("gone", mk_consenting_labels())),
            &consent,
            &cache,
            &GrantIndex::default(),
        );
        writer.apply_watcher_event(&Event::Apply(namespace("team-a", mk_consenting_labels())));
        writer.apply_watcher_event(&Event::Apply(namespace("team-b", BTreeMap::new())));
        index.follow(&Event::Init, &consent, &cache, &GrantIndex::default());
        assert_eq!(
            index.beginning_with(None),
            ["gone"],
            "the old set serves until done"
        );
        index.follow(&Event::InitDone, &consent, &cache, &GrantIndex::default());
        assert_eq!(index.beginning_with(None), ["team-a"]);
    }
}
