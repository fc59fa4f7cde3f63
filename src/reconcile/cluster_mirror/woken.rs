//! Whom each input of the loop wakes, among the ClusterMirrors and
//! Mirrors this install serves, and what a changed one's copies are
//! pruned for.

use std::sync::Arc;

use crate::{
    api::{SourceKind, StoredClusterMirror},
    cluster::cluster_mirrors::Change,
    cluster::cluster_sources::SourceChange,
    decisions::cluster_mirror::Request,
    decisions::request_key::RequestKey,
    decisions::scope::Reach,
    index::wakeups::{self, ClusterWake},
};

use super::{ClusterMirrorLoop, Input, publish};

/// Whom one input wakes, among the ClusterMirrors this install serves, and
/// about which of their copies: a copy's event about that copy alone,
/// anything else about all (it may change what is selected). A changed or
/// deleted ClusterMirror also wakes the prune of the copies carrying its
/// name.
pub(super) fn woken(this: &ClusterMirrorLoop, input: Input) -> Vec<(RequestKey, Reach)> {
    if let Input::Watch(
        kind,
        ClusterWake::Copy {
            mirror,
            namespace,
            name,
        },
    ) = input
    {
        let ours = (this.caches.mirrors.object(&mirror)).is_some_and(|o| this.serves(&o));
        let contenders = contending_mirrors(this, kind, &namespace, &name, &mirror);
        let woken = ours.then_some(mirror).into_iter().chain(contenders);
        return woken
            .map(|key| (key, Reach::Namespace(namespace.clone())))
            .collect();
    }
    names_woken(this, input)
        .into_iter()
        .map(|name| (name, Reach::Everything))
        .collect()
}

/// The Mirrors served that ask for copies of kind `kind` named `name` in
/// `namespace`, but `besides`: a copy there written or gone may have taken
/// their name, or given it back, and their status must say so now, not
/// on the slow timer. Only those that ask for that namespace: a tenant
/// wakes no Mirror but those that contend for a name with its copies.
fn contending_mirrors(
    this: &ClusterMirrorLoop,
    kind: SourceKind,
    namespace: &str,
    name: &str,
    besides: &RequestKey,
) -> Vec<RequestKey> {
    let Some(facts) = this.writers.namespace_facts(kind, namespace) else {
        return Vec::new();
    };
    (this.caches.mirrors.mirrors_copying(kind, name).into_iter())
        .filter(|request| request.served_by(&this.caches.install.class) && request.asks_for(&facts))
        .map(|request| request.key())
        .filter(|key| key != besides)
        .collect()
}

fn names_woken(this: &ClusterMirrorLoop, input: Input) -> Vec<RequestKey> {
    let caches = &this.caches;
    let kinds = this.writers.kinds();
    // The readable ClusterMirrors served, by the kind that reports on them.
    let served = |by: Option<SourceKind>| {
        (caches.mirrors.requests().into_iter()).filter(move |r| {
            let reporter = kinds.reporter(Some(r.copy_kind()));
            r.served_by(&caches.install.class)
                && reporter.is_some()
                && by.is_none_or(|by| reporter == Some(by))
        })
    };
    // Every ClusterMirror served, readable or not, by the kind that
    // reports on them (None: by any).
    let of_class = |by: Option<SourceKind>| {
        (caches.mirrors.store.state().iter())
            .filter(|o| this.serves(o))
            .filter(|o| by.is_none_or(|by| kinds.reporter(o.copy_kind()) == Some(by)))
            .map(|o| RequestKey::of_meta(&o.metadata))
            .collect()
    };
    // Copies of a ClusterMirror or Mirror that went while none was
    // watched: kept as orphans, and told about.
    let any_cluster_mirror = |meta: &_| RequestKey::of_copy(meta).is_some();
    match input {
        Input::Everything | Input::Change(Change::Listed) => {
            caches.follow_mirror_sources();
            this.writers.prune_copies(None, any_cluster_mirror);
            publish::forget_failures_of_the_gone(&this.caches, &this.ctx);
            publish::forget_the_gone(&this.caches, &this.ctx);
            of_class(None)
        }
        Input::CompareAll(kind) => {
            this.writers.prune_copies(Some(kind), any_cluster_mirror);
            of_class(Some(kind))
        }
        Input::Change(Change::StatusWritten { key }) => {
            let serves = |object: &StoredClusterMirror| this.serves(object);
            publish::status_written(&key, serves, caches, &this.ctx)
                .into_iter()
                .collect()
        }
        Input::Change(Change::Request { key, after }) => request_changed(this, key, after),
        Input::Source(SourceChange::Listed { kind, namespace }) => served(None)
            .filter(|r| r.kind == kind && r.source_namespace == namespace)
            .map(|r| r.key())
            .collect(),
        Input::NewKey => served(None)
            .filter(|r| r.publishes_secret())
            .map(|r| r.key())
            .collect(),
        Input::Source(SourceChange::Object {
            kind,
            namespace,
            name,
        }) => wakeups::cluster_mirrors_copying(served(None), kind, &namespace, &name),
        // Each kind's watches tell of every namespace: each wakes the
        // ClusterMirrors its kind's writer reports on.
        Input::Watch(kind, wake) => wake.woken(served(Some(kind))),
    }
}

/// Whom a changed (or, with no `after`, deleted) ClusterMirror or Mirror
/// `key` wakes, after the prune of every copy carrying its name.
fn request_changed(
    this: &ClusterMirrorLoop,
    name: RequestKey,
    after: Option<Arc<Request>>,
) -> Vec<RequestKey> {
    // Every copy it wrote, whatever source, name or kind it asked
    // for when it wrote it (a suspended one may have changed its
    // spec many times since).
    let carrying = |meta: &_| name.marks(meta);
    this.writers.prune_copies(None, carrying);
    let caches = &this.caches;
    if name.is_mirror() {
        // Before its reconcile: it waits for its source's namespace to be
        // listed (`ClusterMirrorLoop::listed`).
        caches.follow_mirror_sources();
    }
    let reported = |kind| this.writers.kinds().reporter(kind).is_some();
    match after {
        Some(after) if !after.served_by(&caches.install.class) => {
            // Handed over to another install: this one forgets it.
            publish::forget(&name, caches, &this.ctx);
            Vec::new()
        }
        Some(after) if reported(Some(after.copy_kind())) => vec![name],
        Some(_) => {
            // Asks now for copies of a kind this install does not report
            // on: it forgets it, as it never knew it.
            publish::forget(&name, caches, &this.ctx);
            Vec::new()
        }
        None => {
            publish::forget(&name, caches, &this.ctx);
            publish::forget_failures_of_the_gone(&this.caches, &this.ctx);
            // An unreadable spec is reported by the install of its class
            // that reports on the kind it names, if it reads that far.
            vec![name]
        }
    }
}
