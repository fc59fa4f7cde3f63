//! From one watch's events to wakeups: each watch's follower keeps its own
//! bookkeeping and says whom an event wakes, and the kind's [`Forwarder`]
//! sends those wakeups to the kind's controllers and tells `health` how
//! each watch fares.

use std::{collections::HashMap, sync::Arc, time::Instant};

use futures::{SinkExt, Stream, StreamExt, channel::mpsc, future::BoxFuture};
use kube::{
    ResourceExt,
    runtime::{
        reflector::{ObjectRef, Store},
        watcher::{self, Event},
    },
};
use tokio::sync::watch;

use super::{OnDeleted, WAKEUP_BUFFER, Wakeups};
use crate::{
    cluster::watch_stream,
    decisions::consent::{Consent, NamespaceFacts},
    decisions::scope::Reach,
    index::admitting_namespaces::NamespaceMeta,
    index::caches::Caches,
    index::copy_index::CopyIndex,
    index::wakeups::{self, ClusterWake, Wake},
    kind::MirroredKind,
    ops::health::Health,
    ops::metrics::Metrics,
};

/// What one watch does with each of its events once it is cached: its own
/// bookkeeping, then whom the event wakes.
pub(super) trait Follower<T, K: MirroredKind> {
    fn follow(&mut self, event: &Event<T>) -> Wake<K>;
}

pub(super) struct SourceFollower<K: MirroredKind> {
    pub(super) caches: Caches<K>,
    pub(super) metrics: Arc<Metrics>,
    pub(super) on_deleted: OnDeleted,
    pub(super) index: CopyIndex<K>,
    pub(super) suffix: String,
}

impl<K: MirroredKind> Follower<K, K> for SourceFollower<K> {
    fn follow(&mut self, event: &Event<K>) -> Wake<K> {
        self.metrics
            .set_managed_sources(&K::kind(&()), self.caches.sources.len());
        tell_deleted(event, &self.on_deleted);
        self.caches.mirroring.observe(event);
        wakeups::source_wakeups(event, &self.suffix, &self.index)
    }
}

pub(super) struct CopyFollower<K: MirroredKind> {
    pub(super) on_deleted: OnDeleted,
    pub(super) index: CopyIndex<K>,
    pub(super) suffix: String,
}

impl<K: MirroredKind> Follower<K, K> for CopyFollower<K> {
    fn follow(&mut self, event: &Event<K>) -> Wake<K> {
        tell_deleted(event, &self.on_deleted);
        let taken_from = self.index.observe(event);
        let mut wake = wakeups::copy_wakeups(event, &self.suffix, taken_from);
        wake.prune
            .extend(wakeups::renamed_mirrors(event, &self.index));
        wake
    }
}

pub(super) struct NamespaceFollower<K: MirroredKind> {
    pub(super) caches: Caches<K>,
    pub(super) consent: Consent,
    /// What consent read of each namespace, to tell a change of it from
    /// any other.
    pub(super) seen: HashMap<String, NamespaceFacts>,
}

impl<K: MirroredKind> Follower<NamespaceMeta, K> for NamespaceFollower<K> {
    fn follow(&mut self, event: &Event<NamespaceMeta>) -> Wake<K> {
        if let Some(cache) = &self.caches.namespaces {
            let caches = &self.caches;
            (caches.admitting).follow(event, &self.consent, cache, &caches.grants);
        }
        wakeups::namespace_wakeups(event, &self.caches, &self.consent, &mut self.seen)
    }
}

/// A deleted object's retry state goes with it. (A source that merely
/// lost its label keeps none either: its reconcile no longer runs, and the
/// next list's resync drops what is left.)
fn tell_deleted<K: MirroredKind>(event: &Event<K>, on_deleted: &OnDeleted) {
    if let Event::Delete(object) = event
        && let Some(uid) = object.uid()
    {
        on_deleted(&uid);
    }
}

/// Sends each watch's wakeups to the controllers, and tells `health` how
/// each watch fares.
#[derive(Clone)]
pub(super) struct Forwarder<K: MirroredKind> {
    sync: mpsc::Sender<(ObjectRef<K>, Instant, Reach)>,
    prune: mpsc::Sender<ObjectRef<K>>,
    resync: Arc<watch::Sender<u64>>,
    cluster: mpsc::UnboundedSender<ClusterWake>,
    health: Arc<Health>,
    metrics: Arc<Metrics>,
}

impl<K: MirroredKind> Forwarder<K> {
    pub(super) fn new(health: Arc<Health>, metrics: Arc<Metrics>) -> (Forwarder<K>, Wakeups<K>) {
        let (sync_tx, sync) = mpsc::channel(WAKEUP_BUFFER);
        let (prune_tx, prune) = mpsc::channel(WAKEUP_BUFFER);
        let (resync_tx, resync) = watch::channel(0);
        let (cluster_tx, cluster) = mpsc::unbounded();
        let forwarder = Forwarder {
            sync: sync_tx,
            prune: prune_tx,
            resync: Arc::new(resync_tx),
            cluster: cluster_tx,
            health,
            metrics,
        };
        let wakeups = Wakeups {
            sync,
            prune,
            resync,
            cluster,
        };
        (forwarder, wakeups)
    }

    /// Runs until the watch `name` ends.
    pub(super) async fn forward<T>(
        &self,
        name: &'static str,
        events: impl Stream<Item = Result<Event<T>, watcher::Error>>,
        mut follower: impl Follower<T, K>,
    ) {
        let mut events = std::pin::pin!(events);
        while let Some(event) = events.next().await {
            if let Some(event) = observed(name, event, &self.health) {
                self.deliver(follower.follow(&event)).await;
            }
        }
    }

    /// Asks for a full comparison at each item of `requests`, until they
    /// end.
    pub(super) async fn resync_on(&self, requests: impl Stream<Item = ()>) {
        let mut requests = std::pin::pin!(requests);
        while let Some(()) = requests.next().await {
            self.deliver(Wake {
                resync: true,
                ..Wake::default()
            })
            .await;
        }
    }

    async fn deliver(&self, wake: Wake<K>) {
        let (mut sync, mut prune) = (self.sync.clone(), self.prune.clone());
        // A closed channel means the controllers stopped: shutting down.
        for (source, reach) in wake.sync {
            self.metrics.trigger_queued();
            let _ = sync.send((source, Instant::now(), reach)).await;
        }
        for copy in wake.prune {
            let _ = prune.send(copy).await;
        }
        for woken in wake.cluster {
            let _ = self.cluster.unbounded_send(woken);
        }
        if wake.resync {
            // Requests made while a resync runs merge into the next one.
            self.resync.send_modify(|generation| *generation += 1);
        }
    }
}

/// An event of the watch `name` for its follower, once `health` knows how
/// the watch fares; None for a failure, which the watch retries itself.
pub(super) fn observed<T>(
    name: &'static str,
    event: Result<Event<T>, watcher::Error>,
    health: &Health,
) -> Option<Event<T>> {
    let event = match event {
        Ok(event) => event,
        Err(error) => {
            watch_failed(name, &error, health);
            return None;
        }
    };
    // Init is announced before the list is even attempted, so it proves
    // nothing; any other event comes from a working list or watch.
    if !matches!(event, Event::Init)
        && let Some(failed_for) = health.watch_ok(name, Instant::now())
    {
        tracing::info!(watch = name, ?failed_for, "watch works again");
    }
    Some(event)
}

fn watch_failed(name: &'static str, error: &watcher::Error, health: &Health) {
    let source = watch_stream::error_source(error);
    let error = watch_stream::described(error);
    if health.watch_failed(name, error.clone(), source, Instant::now()) {
        tracing::warn!(watch = name, %error, "watch failed; retrying with backoff");
    } else {
        tracing::debug!(watch = name, %error, "watch failed again; retrying");
    }
}

/// One kind's share of the namespace watch.
pub(super) trait NamespaceListener: Send {
    /// The listener joins the watch, whose cache holds `cache` now.
    fn joined(&mut self, cache: &Store<NamespaceMeta>);
    fn deliver<'a>(&'a mut self, event: &'a Event<NamespaceMeta>) -> BoxFuture<'a, ()>;
    /// Every namespace's consent may have changed (the grants became
    /// known): the admitting set is taken again from `cache`, and every
    /// cached object compared.
    fn consent_changed<'a>(&'a mut self, cache: &'a Store<NamespaceMeta>) -> BoxFuture<'a, ()>;
}

pub(super) struct KindNamespaces<K: MirroredKind> {
    pub(super) follower: NamespaceFollower<K>,
    pub(super) forwarder: Forwarder<K>,
}

impl<K: MirroredKind> NamespaceListener for KindNamespaces<K> {
    fn joined(&mut self, cache: &Store<NamespaceMeta>) {
        let follower = &self.follower;
        let caches = &follower.caches;
        (caches.admitting).fill_from(cache, &follower.consent, &caches.grants);
    }

    fn deliver<'a>(&'a mut self, event: &'a Event<NamespaceMeta>) -> BoxFuture<'a, ()> {
        let wake = self.follower.follow(event);
        Box::pin(self.forwarder.deliver(wake))
    }

    fn consent_changed<'a>(&'a mut self, cache: &'a Store<NamespaceMeta>) -> BoxFuture<'a, ()> {
        self.joined(cache);
        Box::pin(self.forwarder.deliver(Wake {
            resync: true,
            ..Wake::default()
        }))
    }
}
