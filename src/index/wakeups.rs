//! Which reconciles each watch event wakes.
//!
//! | change                       | wakes                                  |
//! |------------------------------|----------------------------------------|
//! | source created or changed    | sync of that source, all its copies    |
//! | source deleted or unlabeled  | prune of its companion and of its mirrors (from the mirror index) |
//! | copy changed or deleted      | sync of its source, that copy only (and of the source an edit took it from); prune of itself; its ClusterMirror, that copy only |
//! | namespace's labels changed   | sync of the sources that want a mirror in it, that mirror only; prune of the mirrors in it; the ClusterMirrors that asked for it before or ask for it now |
//! | namespace deleted            | prune of the mirrors in it (its companions go with their sources); the ClusterMirrors that asked for it |
//! | a ClusterMirror's source created, changed or deleted | the ClusterMirrors that copy it |
//! | any list (re)completed       | a resync of both loops ([`crate::reconcile::resync`]) |
//!
//! Objects delivered by a (re)list wake nothing one by one: the resync that
//! follows the list compares them all, and wakes only those that need work.
//!
//! A label-selected watch reports a source that loses its label as deleted,
//! and the sync controller cannot run for an object no longer in its cache;
//! that is why unlabeling is handled from the companion's side, by prune.
//!
//! No I/O: `watches` sends what these functions decide, and the
//! ClusterMirror loop wakes the ClusterMirrors they name
//! ([`ClusterWake::woken`], [`cluster_mirrors_copying`]).

use std::{borrow::Borrow, collections::HashMap};

use kube::{
    ResourceExt,
    runtime::{reflector::ObjectRef, watcher::Event},
};

use crate::{
    api::SourceKind,
    contract,
    decisions::cluster_mirror::Request,
    decisions::consent::{Consent, NamespaceFacts},
    decisions::ownership,
    decisions::request_key::RequestKey,
    decisions::scope::Reach,
    index::admitting_namespaces::NamespaceMeta,
    index::caches::Caches,
    index::copy_index::CopyIndex,
    kind::MirroredKind,
};

/// Who must look at something after one watch event, and for a source's
/// sync, which of its copies.
#[derive(Debug, PartialEq)]
pub struct Wake<K: MirroredKind> {
    pub sync: Vec<(ObjectRef<K>, Reach)>,
    pub prune: Vec<ObjectRef<K>>,
    pub resync: bool,
    /// What the ClusterMirrors' loop must hear of.
    pub cluster: Vec<ClusterWake>,
}

/// An event a ClusterMirror may have to act on.
#[derive(Debug, Clone, PartialEq)]
pub enum ClusterWake {
    /// A copy the ClusterMirror or Mirror `mirror` wrote, in `namespace`,
    /// under `name`, changed or went: its request compares that copy, and
    /// so do the Mirrors asking for that name there (it may have taken
    /// their name, or given it back).
    Copy {
        mirror: RequestKey,
        namespace: String,
        name: String,
    },
    /// A namespace appeared, went, or changed what selection reads of it:
    /// the ClusterMirrors that asked for it as it was (`before`: they
    /// counted it) or ask for it as it is (`after`) look again.
    Namespace {
        before: Option<NamespaceFacts>,
        after: Option<NamespaceFacts>,
    },
}

impl ClusterWake {
    /// The names of the ClusterMirrors that look again, of the `served`
    /// ones for a namespace: one leaving the selection wakes those that
    /// counted it, whatever they held there (a failure, or nothing while
    /// suspended).
    pub fn woken<R: Borrow<Request>>(
        &self,
        served: impl IntoIterator<Item = R>,
    ) -> Vec<RequestKey> {
        match self {
            ClusterWake::Copy { mirror, .. } => vec![mirror.clone()],
            ClusterWake::Namespace { before, after } => served
                .into_iter()
                .filter(|r| r.borrow().concerned_by(before.as_ref(), after.as_ref()))
                .map(|r| r.borrow().key())
                .collect(),
        }
    }
}

/// The names of the ClusterMirrors, of the `served` ones, that copy the
/// object at `namespace`/`name`: its creation, change or deletion wakes
/// them.
pub fn cluster_mirrors_copying<R: Borrow<Request>>(
    served: impl IntoIterator<Item = R>,
    kind: SourceKind,
    namespace: &str,
    name: &str,
) -> Vec<RequestKey> {
    served
        .into_iter()
        .filter(|r| {
            let request = r.borrow();
            request.kind == kind
                && request.source_namespace == namespace
                && request.source_name == name
        })
        .map(|r| r.borrow().key())
        .collect()
}

impl<K: MirroredKind> Default for Wake<K> {
    fn default() -> Self {
        Wake {
            sync: Vec::new(),
            prune: Vec::new(),
            resync: false,
            cluster: Vec::new(),
        }
    }
}

pub fn source_wakeups<K: MirroredKind>(
    event: &Event<K>,
    suffix: &str,
    index: &CopyIndex<K>,
) -> Wake<K> {
    let mut wake = match event {
        Event::Apply(source) => Wake {
            sync: vec![(ObjectRef::from(source), Reach::Everything)],
            ..Wake::default()
        },
        Event::Delete(source) => Wake {
            prune: source
                .meta()
                .namespace
                .as_deref()
                .map(|ns| {
                    ObjectRef::new(&contract::companion_name(&source.name_any(), suffix)).within(ns)
                })
                .into_iter()
                .collect(),
            ..Wake::default()
        },
        // Sources that vanished while the watch was down produce no delete
        // event; comparing everything after a re-list catches them.
        Event::InitDone => Wake {
            resync: true,
            ..Wake::default()
        },
        Event::Init | Event::InitApply(_) => Wake::default(),
    };
    // A changed source may want fewer mirrors than it has, and a deleted one
    // none: the index knows which it has.
    if let Event::Apply(source) | Event::Delete(source) = event {
        let namespace = source.namespace().unwrap_or_default();
        wake.prune
            .extend(index.mirrors_of(&namespace, &source.name_any()));
    }
    wake
}

/// `taken_from` is the source an edit just took the copy from (see
/// `CopyIndex::observe`): it is woken for that namespace too, since its
/// mirror there is gone as far as it is concerned.
pub fn copy_wakeups<K: MirroredKind>(
    event: &Event<K>,
    suffix: &str,
    taken_from: Option<(String, String)>,
) -> Wake<K> {
    // Only the copy that changed is compared again: the source's other
    // copies are as its last reconcile left them.
    let source_of = |copy: &K| {
        let reach = Reach::Namespace(copy.namespace().unwrap_or_default());
        ownership::claimed_source::<K>(copy.meta(), suffix)
            .map(|(namespace, name)| (ObjectRef::new(&name).within(&namespace), reach))
            .into_iter()
            .collect()
    };
    let with_taken = |copy: &K, mut sync: Vec<(ObjectRef<K>, Reach)>| {
        if let Some((namespace, name)) = &taken_from {
            let reach = Reach::Namespace(copy.namespace().unwrap_or_default());
            sync.push((ObjectRef::new(name).within(namespace), reach));
        }
        sync
    };
    let cluster = |copy: &K| {
        RequestKey::of_copy(copy.meta())
            .map(|mirror| ClusterWake::Copy {
                mirror,
                name: copy.name_any(),
                namespace: copy.namespace().unwrap_or_default(),
            })
            .into_iter()
            .collect()
    };
    match event {
        Event::Apply(copy) => Wake {
            sync: with_taken(copy, source_of(copy)),
            prune: vec![ObjectRef::from(copy)],
            resync: false,
            cluster: cluster(copy),
        },
        Event::Delete(copy) => Wake {
            sync: with_taken(copy, source_of(copy)),
            cluster: cluster(copy),
            ..Wake::default()
        },
        Event::InitDone => Wake {
            resync: true,
            ..Wake::default()
        },
        Event::Init | Event::InitApply(_) => Wake::default(),
    }
}

/// A mirror written or changed wakes the prune of its source's other
/// mirrors in its namespace: one under an earlier name waits for the
/// mirror under the name its source gives now before it goes
/// (`copy_verdict::mirror_name_wanted`).
pub fn renamed_mirrors<K: MirroredKind>(
    event: &Event<K>,
    index: &CopyIndex<K>,
) -> Vec<ObjectRef<K>> {
    let Event::Apply(mirror) = event else {
        return Vec::new();
    };
    // A ClusterMirror's copy is its ClusterMirror's to prune.
    let Some(source) = contract::mirror_of(mirror.meta())
        .filter(|_| contract::cluster_mirror_of(mirror.meta()).is_none())
    else {
        return Vec::new();
    };
    let namespace = mirror.namespace().unwrap_or_default();
    let name = mirror.name_any();
    let others = index.mirrors_of_in(&source, &namespace).into_iter();
    others.filter(|other| other.name != name).collect()
}

/// A namespace that appears or changes what consent reads of it (its
/// labels, the source namespaces it accepts from, its grants: a grant's
/// change is delivered as an event of its namespace) may now be wanted by some
/// mirroring sources (those look again), and may no longer want the mirrors
/// it holds (those look again). Any other change of a namespace (other
/// annotations, its status) wakes nothing. A namespace that goes takes its
/// mirrors with it. `seen` remembers what consent read of each namespace,
/// to tell.
pub fn namespace_wakeups<K: MirroredKind>(
    event: &Event<NamespaceMeta>,
    caches: &Caches<K>,
    consent: &Consent,
    seen: &mut HashMap<String, NamespaceFacts>,
) -> Wake<K> {
    match event {
        Event::Apply(namespace) => {
            let facts = caches.facts_of(&namespace.metadata);
            let before = seen.get(&facts.name).cloned();
            if before.as_ref() == Some(&facts) {
                return Wake::default();
            }
            let reach = Reach::Namespace(facts.name.clone());
            // Which requests it concerns is theirs to say: ClusterMirrors
            // select by labels alone, Mirrors need consent too
            // (`Request::concerned_by`).
            let cluster = vec![ClusterWake::Namespace {
                before: before.clone(),
                after: Some(facts.clone()),
            }];
            let wake = Wake {
                sync: caches
                    .sources_wanting_mirror_in(&facts, consent)
                    .into_iter()
                    .map(|source| (source, reach.clone()))
                    .collect(),
                prune: caches.mirrors_in(&facts.name),
                resync: false,
                cluster,
            };
            seen.insert(facts.name.clone(), facts);
            wake
        }
        Event::Delete(namespace) => {
            let name = namespace.name_any();
            let gone = seen.remove(&name);
            Wake {
                prune: caches.mirrors_in(&name),
                cluster: gone
                    .map(|before| ClusterWake::Namespace {
                        before: Some(before),
                        after: None,
                    })
                    .into_iter()
                    .collect(),
                ..Wake::default()
            }
        }
        Event::Init => {
            seen.clear();
            Wake::default()
        }
        Event::InitApply(namespace) => {
            let facts = caches.facts_of(&namespace.metadata);
            seen.insert(facts.name.clone(), facts);
            Wake::default()
        }
        Event::InitDone => Wake {
            resync: true,
            ..Wake::default()
        },
    }
}

#[cfg(test)]
mod tests;
