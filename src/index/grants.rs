//! The MirrorGrants of every namespace, as consent reads them, kept up to
//! date from the grants' watch; and which namespaces' consent each event
//! changes.
//!
//! Only what consent reads is kept: each grant's name and its compiled
//! entries (at most `MAX_GRANT_ENTRIES` globs of a namespace name's
//! length), or a short reason it cannot be read. The objects themselves
//! are not cached, so a grant costs memory in proportion to its spec, and
//! a namespace without grants costs nothing. Of one namespace's grants,
//! the first `MAX_GRANTS_PER_NAMESPACE` by name count: a namespace's
//! consent is read for every source that asks for it, and its admin must
//! not make that read cost without bound.

use std::{
    collections::{BTreeSet, HashMap},
    sync::{Arc, PoisonError, RwLock},
};

use kube::{ResourceExt, api::DynamicObject, runtime::watcher::Event};

use crate::decisions::grants::{Grant, MAX_GRANTS_PER_NAMESPACE, NamespaceGrants};

/// The grants of each namespace, in order of their names. A Vec, not a
/// map: most namespaces hold one grant or a few, and a map's node would
/// cost each of them room for a dozen.
type ByNamespace = HashMap<String, Vec<Grant>>;

/// What consent reads of each namespace's grants, made once per change.
fn views_of(grants: &ByNamespace) -> HashMap<String, NamespaceGrants> {
    (grants.iter())
        .map(|(namespace, held)| (namespace.clone(), view_of(held)))
        .collect()
}

fn view_of(held: &[Grant]) -> NamespaceGrants {
    let counted = held.iter().take(MAX_GRANTS_PER_NAMESPACE).cloned();
    NamespaceGrants::known(counted.collect())
}

/// Puts `grant` in `held` at its name's place, replacing the one of that
/// name; false when that one is the same.
fn put(held: &mut Vec<Grant>, grant: Grant) -> bool {
    match held.binary_search_by(|g| g.name().cmp(grant.name())) {
        Ok(at) if held[at] == grant => false,
        Ok(at) => {
            held[at] = grant;
            true
        }
        Err(at) => {
            held.insert(at, grant);
            true
        }
    }
}

/// Whose consent an event of the grants' watch changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GrantChange {
    Nothing,
    /// These namespaces' grants changed.
    Namespaces(BTreeSet<String>),
    /// The grants became known: every namespace's consent may differ.
    Everything,
}

#[derive(Default)]
struct State {
    /// None until the grants are first known: listed, or known not to
    /// exist (their CRD is not installed).
    known: Option<ByNamespace>,
    /// [`views_of`] the known grants.
    views: HashMap<String, NamespaceGrants>,
    /// The grants being listed again.
    relisting: Option<ByNamespace>,
}

#[derive(Clone, Default)]
pub struct GrantIndex {
    state: Arc<RwLock<State>>,
}

impl GrantIndex {
    /// The grants of `namespace`, as far as they are known.
    pub fn of_namespace(&self, namespace: &str) -> NamespaceGrants {
        let state = self.state.read().unwrap_or_else(PoisonError::into_inner);
        match &state.known {
            None => NamespaceGrants::NotKnown,
            Some(_) => (state.views.get(namespace).cloned()).unwrap_or_else(NamespaceGrants::none),
        }
    }

    /// Follows one event of the grants' watch.
    pub fn follow(&self, event: &Event<DynamicObject>) -> GrantChange {
        let mut state = self.state.write().unwrap_or_else(PoisonError::into_inner);
        match event {
            Event::Apply(object) => {
                let (namespace, grant) = parsed(object);
                let Some(known) = state.known.as_mut() else {
                    return GrantChange::Nothing;
                };
                let grants = known.entry(namespace.clone()).or_default();
                if !put(grants, grant) {
                    return GrantChange::Nothing;
                }
                let view = view_of(grants);
                state.views.insert(namespace.clone(), view);
                GrantChange::Namespaces(BTreeSet::from([namespace]))
            }
            Event::Delete(object) => {
                let namespace = object.namespace().unwrap_or_default();
                let Some(known) = state.known.as_mut() else {
                    return GrantChange::Nothing;
                };
                let Some(grants) = known.get_mut(&namespace) else {
                    return GrantChange::Nothing;
                };
                let name = object.name_any();
                let Ok(at) = grants.binary_search_by(|g| g.name().cmp(&name)) else {
                    return GrantChange::Nothing;
                };
                grants.remove(at);
                if grants.is_empty() {
                    known.remove(&namespace);
                    state.views.remove(&namespace);
                } else {
                    let view = view_of(grants);
                    state.views.insert(namespace.clone(), view);
                }
                GrantChange::Namespaces(BTreeSet::from([namespace]))
            }
            Event::Init => {
                state.relisting = Some(ByNamespace::new());
                GrantChange::Nothing
            }
            Event::InitApply(object) => {
                let (namespace, grant) = parsed(object);
                let relisting = state.relisting.get_or_insert_with(ByNamespace::new);
                put(relisting.entry(namespace).or_default(), grant);
                GrantChange::Nothing
            }
            Event::InitDone => {
                let listed = state.relisting.take().unwrap_or_default();
                replace(&mut state, listed)
            }
        }
    }

    /// The grants' CRD is not installed: no grant exists.
    pub fn none_exist(&self) -> GrantChange {
        let mut state = self.state.write().unwrap_or_else(PoisonError::into_inner);
        state.relisting = None;
        replace(&mut state, ByNamespace::new())
    }
}

/// Makes `now` the known grants, saying whose consent that changed.
fn replace(state: &mut State, now: ByNamespace) -> GrantChange {
    state.views = views_of(&now);
    let Some(before) = state.known.replace(now) else {
        return GrantChange::Everything;
    };
    let after = state.known.as_ref();
    let changed: BTreeSet<String> = before
        .keys()
        .chain(after.into_iter().flat_map(HashMap::keys))
        .filter(|namespace| before.get(*namespace) != after.and_then(|a| a.get(*namespace)))
        .cloned()
        .collect();
    match changed.is_empty() {
        true => GrantChange::Nothing,
        false => GrantChange::Namespaces(changed),
    }
}

/// A grant's namespace, and what consent reads of it.
fn parsed(object: &DynamicObject) -> (String, Grant) {
    let grant = Grant::parse(&object.name_any(), object.data.get("spec"));
    (object.namespace().unwrap_or_default(), grant)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::SourceKind;
    use kube::api::{ApiResource, GroupVersionKind};
    use serde_json::json;

    fn grant(namespace: &str, name: &str, from: &str) -> DynamicObject {
        let resource = ApiResource::from_gvk(&GroupVersionKind::gvk(
            "mirror.workshop.io",
            "v1alpha1",
            "MirrorGrant",
        ));
        DynamicObject::new(name, &resource)
            .within(namespace)
            .data(json!({"spec": {"from": [{"namespace": from, "kinds": ["ConfigMap"]}]}}))
    }

    fn lets_in(index: &GrantIndex, namespace: &str, from: &str) -> Option<bool> {
        match index
            .of_namespace(namespace)
            .letting_in(SourceKind::ConfigMap, from)
        {
            Ok(found) => Some(found.is_some()),
            Err(_) => None,
        }
    }

    #[test]
    fn grants_are_not_known_until_listed_and_then_change_only_their_namespace() {
        let index = GrantIndex::default();
        assert_eq!(
            index.follow(&Event::Apply(grant("b", "g", "a"))),
            GrantChange::Nothing
        );
        assert_eq!(lets_in(&index, "b", "a"), None, "not known before a list");
        index.follow(&Event::Init);
        index.follow(&Event::InitApply(grant("b", "g", "a")));
        assert_eq!(lets_in(&index, "b", "a"), None, "not known during it");
        assert_eq!(index.follow(&Event::InitDone), GrantChange::Everything);
        assert_eq!(lets_in(&index, "b", "a"), Some(true));
        assert_eq!(lets_in(&index, "c", "a"), Some(false), "known: none in c");

        assert_eq!(
            index.follow(&Event::Apply(grant("c", "g", "a"))),
            GrantChange::Namespaces(BTreeSet::from(["c".to_owned()]))
        );
        assert_eq!(
            index.follow(&Event::Apply(grant("c", "g", "a"))),
            GrantChange::Nothing,
            "the same grant again changes nothing"
        );
        assert_eq!(
            index.follow(&Event::Delete(grant("b", "g", "a"))),
            GrantChange::Namespaces(BTreeSet::from(["b".to_owned()]))
        );
        assert_eq!(lets_in(&index, "b", "a"), Some(false));
    }

    #[test]
    fn a_relist_changes_the_namespaces_whose_grants_differ() {
        let index = GrantIndex::default();
        index.follow(&Event::Init);
        index.follow(&Event::InitApply(grant("b", "g", "a")));
        index.follow(&Event::InitApply(grant("c", "g", "a")));
        index.follow(&Event::InitDone);
        index.follow(&Event::Init);
        index.follow(&Event::InitApply(grant("c", "g", "a")));
        index.follow(&Event::InitApply(grant("d", "g", "x")));
        assert_eq!(
            index.follow(&Event::InitDone),
            GrantChange::Namespaces(BTreeSet::from(["b".to_owned(), "d".to_owned()]))
        );
    }

    #[test]
    fn of_one_namespace_s_grants_only_the_first_by_name_count() {
        let index = GrantIndex::default();
        index.none_exist();
        for at in 0..=MAX_GRANTS_PER_NAMESPACE {
            index.follow(&Event::Apply(grant(
                "b",
                &format!("g{at:04}"),
                &format!("n{at}"),
            )));
        }
        assert_eq!(lets_in(&index, "b", "n0"), Some(true));
        let last = format!("n{MAX_GRANTS_PER_NAMESPACE}");
        assert_eq!(lets_in(&index, "b", &last), Some(false), "past the limit");
        index.follow(&Event::Delete(grant("b", "g0000", "n0")));
        assert_eq!(lets_in(&index, "b", &last), Some(true), "within it again");
    }

    #[test]
    fn a_missing_crd_means_no_grant_exists() {
        let index = GrantIndex::default();
        assert_eq!(index.none_exist(), GrantChange::Everything);
        assert_eq!(lets_in(&index, "b", "a"), Some(false));
        assert_eq!(index.none_exist(), GrantChange::Nothing);
        index.follow(&Event::Apply(grant("b", "g", "a")));
        assert_eq!(
            index.none_exist(),
            GrantChange::Namespaces(BTreeSet::from(["b".to_owned()]))
        );
    }
}
