//! The watches that fill the caches, and what each of their events sets off.
//!
//! Three watches run: sources (with the source label selector), copies
//! (with the managed-by label) and, when mirroring into other namespaces is
//! possible, namespaces (metadata only). Each event is cached in its slim
//! form (`cache_form`), then its watch's [`Follower`] keeps the watch's own
//! bookkeeping and says whom it wakes (`wakeups`), and [`Forwarder`] sends
//! those wakeups to the controllers.

use std::{
    collections::{BTreeMap, HashMap},
    sync::Arc,
    time::Instant,
};

use futures::{SinkExt, Stream, StreamExt, channel::mpsc};
use kube::{
    Api, Client, ResourceExt,
    runtime::{
        WatchStreamExt,
        reflector::{self, ObjectRef, Store},
        watcher::{self, Event},
    },
};
use tokio::sync::watch;

use crate::{
    cluster::api_client,
    cluster::caches::{Caches, NamespaceMeta},
    cluster::mirror_index::MirrorIndex,
    cluster::watch_stream,
    contract,
    decisions::cache_form,
    decisions::selector::Selector,
    decisions::wakeups::{self, Wake},
    kind::MirroredKind,
    ops::config::InitialList,
    ops::health::Health,
    ops::metrics::Metrics,
    reconcile::backoff::Backoffs,
};

/// What the watches ask the two controllers to look at.
pub struct Wakeups<K: MirroredKind> {
    /// With when each was sent, for the queue's timing series.
    pub sync: mpsc::Receiver<(ObjectRef<K>, Instant)>,
    pub prune: mpsc::Receiver<ObjectRef<K>>,
    /// Changes whenever every cached object must be compared again.
    pub resync: watch::Receiver<u64>,
}

/// What the watches need to know.
pub struct WatchSettings {
    /// Watch only this namespace; mirroring into others is then off.
    pub namespace: Option<String>,
    pub selector: String,
    pub suffix: String,
    pub initial_list: InitialList,
    /// Which namespaces accept mirrors.
    pub consent: Selector,
}

// The watches' names, as logs, metrics and health name them. The copies'
// watch kept the name it had before there were mirrors, as users see it.
const SOURCES: &str = "sources";
const COPIES: &str = "companions";
const NAMESPACES: &str = "namespaces";

// Deep enough that the watches never wait on the controllers' schedulers,
// which take wakeups as fast as they come and merge duplicates.
const WAKEUP_BUFFER: usize = 1024;

/// Starts nothing yet: returns the caches, the wakeups, and the future that
/// drives every watch (it runs until the watches end). Each watch has a
/// client of its own, which tells `health` when the watch reconnects.
pub fn watch<K: MirroredKind>(
    config: &kube::Config,
    settings: WatchSettings,
    health: Arc<Health>,
    metrics: Arc<Metrics>,
    backoffs: Arc<Backoffs>,
) -> anyhow::Result<(
    Caches<K>,
    Wakeups<K>,
    impl Future<Output = ()> + Send + use<K>,
)> {
    let scope = settings.namespace.as_deref();
    let (namespaces, namespace_events) = match scope {
        Some(_) => (None, None),
        None => {
            let (store, writer) = reflector::store();
            let api = Api::<NamespaceMeta>::all(client_for(config, &health, NAMESPACES)?);
            let events = watch_stream::events(
                api,
                watcher::Config::default(),
                settings.initial_list,
                NAMESPACES,
                health.clone(),
            )
            .modify(|ns: &mut NamespaceMeta| ns.managed_fields_mut().clear())
            .reflect(writer);
            (Some(store), Some(events))
        }
    };
    let (sources, source_writer) = reflector::store();
    let source_events = watch_stream::events(
        api_in::<K>(client_for(config, &health, SOURCES)?, scope),
        watcher::Config::default().labels(&settings.selector),
        settings.initial_list,
        SOURCES,
        health.clone(),
    )
    .modify(cache_form::slim_source)
    .reflect(source_writer);
    let (copies, copy_writer) = reflector::store();
    let copy_events = watch_stream::events(
        api_in::<K>(client_for(config, &health, COPIES)?, scope),
        watcher::Config::default().labels(&contract::copy_selector()),
        settings.initial_list,
        COPIES,
        health.clone(),
    )
    .modify(cache_form::slim_copy)
    .reflect(copy_writer);

    let (ready_tx, ready) = watch::channel(false);
    let caches = Caches {
        sources,
        copies,
        namespaces,
        ready,
    };
    let (forwarder, wakeups) = Forwarder::new(health.clone(), metrics.clone());
    let index = MirrorIndex::default();
    let source_follower = SourceFollower {
        caches: caches.clone(),
        metrics,
        backoffs: backoffs.clone(),
        index: index.clone(),
        suffix: settings.suffix.clone(),
    };
    let copy_follower = CopyFollower {
        backoffs,
        index,
        suffix: settings.suffix,
    };
    let namespace_follower = NamespaceFollower {
        caches: caches.clone(),
        consent: settings.consent,
        labels_seen: HashMap::new(),
    };
    let drive = {
        let caches = caches.clone();
        async move {
            let namespaces = async {
                if let Some(events) = namespace_events {
                    forwarder
                        .forward(NAMESPACES, events, namespace_follower)
                        .await;
                }
            };
            futures::join!(
                forwarder.forward(SOURCES, source_events, source_follower),
                forwarder.forward(COPIES, copy_events, copy_follower),
                namespaces,
                announce_synced(&caches, &health, ready_tx),
            );
        }
    };
    Ok((caches, wakeups, drive))
}

/// A client for one watch, which tells `health` when the watch reconnects.
///
/// Without kube's retries of 429, 503 and 504 within a request: the watch
/// retries on its own, with backoff, and those retries would keep from
/// `health` that the API server is overloaded (the request just hangs,
/// for minutes) until they run out.
fn client_for(
    config: &kube::Config,
    health: &Arc<Health>,
    watch: &'static str,
) -> anyhow::Result<Client> {
    health.register(watch);
    let health = health.clone();
    let mut config = config.clone();
    config.default_retry = false;
    api_client::for_watch(&config, move || {
        if let Some(failed_for) = health.watch_ok(watch, Instant::now()) {
            tracing::info!(watch, ?failed_for, "watch reconnected");
        }
    })
}

/// Objects of kind `K` in the watched namespace, or in all of them.
fn api_in<K: MirroredKind>(client: Client, namespace: Option<&str>) -> Api<K> {
    match namespace {
        Some(ns) => Api::namespaced(client, ns),
        None => Api::all(client),
    }
}

/// Tells `health` as each cache completes its first list, and the
/// reconciles once all have.
async fn announce_synced<K: MirroredKind>(
    caches: &Caches<K>,
    health: &Health,
    ready: watch::Sender<bool>,
) {
    let namespaces_synced = async {
        if let Some(namespaces) = &caches.namespaces {
            synced(NAMESPACES, namespaces, health).await;
        }
    };
    futures::join!(
        synced(SOURCES, &caches.sources, health),
        synced(COPIES, &caches.copies, health),
        namespaces_synced,
    );
    ready.send_replace(true);
    tracing::info!("caches synced");
}

async fn synced<K>(watch: &'static str, store: &Store<K>, health: &Health)
where
    K: kube::Resource + Clone + 'static,
    K::DynamicType: Eq + std::hash::Hash + Clone,
{
    if store.wait_until_ready().await.is_ok() {
        health.cache_synced(watch);
    }
}

/// What one watch does with each of its events once it is cached: its own
/// bookkeeping, then whom the event wakes.
trait Follower<T, K: MirroredKind> {
    fn follow(&mut self, event: &Event<T>) -> Wake<K>;
}

struct SourceFollower<K: MirroredKind> {
    caches: Caches<K>,
    metrics: Arc<Metrics>,
    backoffs: Arc<Backoffs>,
    index: MirrorIndex<K>,
    suffix: String,
}

impl<K: MirroredKind> Follower<K, K> for SourceFollower<K> {
    fn follow(&mut self, event: &Event<K>) -> Wake<K> {
        self.metrics.set_managed_sources(self.caches.sources.len());
        forget_deleted(event, &self.backoffs);
        wakeups::source_wakeups(event, &self.suffix, &self.index)
    }
}

struct CopyFollower<K: MirroredKind> {
    backoffs: Arc<Backoffs>,
    index: MirrorIndex<K>,
    suffix: String,
}

impl<K: MirroredKind> Follower<K, K> for CopyFollower<K> {
    fn follow(&mut self, event: &Event<K>) -> Wake<K> {
        forget_deleted(event, &self.backoffs);
        self.index.observe(event);
        wakeups::copy_wakeups(event, &self.suffix)
    }
}

struct NamespaceFollower<K: MirroredKind> {
    caches: Caches<K>,
    consent: Selector,
    /// Each namespace's labels, to tell a change of labels from any other.
    labels_seen: HashMap<String, BTreeMap<String, String>>,
}

impl<K: MirroredKind> Follower<NamespaceMeta, K> for NamespaceFollower<K> {
    fn follow(&mut self, event: &Event<NamespaceMeta>) -> Wake<K> {
        wakeups::namespace_wakeups(event, &self.caches, &self.consent, &mut self.labels_seen)
    }
}

/// A deleted object's retry state goes with it. (A source that merely
/// lost its label keeps none either: its reconcile no longer runs, and the
/// next list's resync drops what is left.)
fn forget_deleted<K: MirroredKind>(event: &Event<K>, backoffs: &Backoffs) {
    if let Event::Delete(object) = event
        && let Some(uid) = object.uid()
    {
        backoffs.forget(&uid);
    }
}

/// Sends each watch's wakeups to the controllers, and tells `health` how
/// each watch fares.
struct Forwarder<K: MirroredKind> {
    sync: mpsc::Sender<(ObjectRef<K>, Instant)>,
    prune: mpsc::Sender<ObjectRef<K>>,
    resync: watch::Sender<u64>,
    health: Arc<Health>,
    metrics: Arc<Metrics>,
}

impl<K: MirroredKind> Forwarder<K> {
    fn new(health: Arc<Health>, metrics: Arc<Metrics>) -> (Forwarder<K>, Wakeups<K>) {
        let (sync_tx, sync) = mpsc::channel(WAKEUP_BUFFER);
        let (prune_tx, prune) = mpsc::channel(WAKEUP_BUFFER);
        let (resync_tx, resync) = watch::channel(0);
        let forwarder = Forwarder {
            sync: sync_tx,
            prune: prune_tx,
            resync: resync_tx,
            health,
            metrics,
        };
        let wakeups = Wakeups {
            sync,
            prune,
            resync,
        };
        (forwarder, wakeups)
    }

    /// Runs until the watch `name` ends.
    async fn forward<T>(
        &self,
        name: &'static str,
        events: impl Stream<Item = Result<Event<T>, watcher::Error>>,
        mut follower: impl Follower<T, K>,
    ) {
        let (mut sync, mut prune) = (self.sync.clone(), self.prune.clone());
        let mut events = std::pin::pin!(events);
        while let Some(event) = events.next().await {
            let event = match event {
                Ok(event) => event,
                Err(error) => {
                    self.watch_failed(name, &error);
                    continue;
                }
            };
            // Init is announced before the list is even attempted, so it
            // proves nothing; any other event comes from a working list or
            // watch.
            if !matches!(event, Event::Init)
                && let Some(failed_for) = self.health.watch_ok(name, Instant::now())
            {
                tracing::info!(watch = name, ?failed_for, "watch works again");
            }
            let wake = follower.follow(&event);
            // A closed channel means the controllers stopped: shutting down.
            for source in wake.sync {
                self.metrics.trigger_queued();
                let _ = sync.send((source, Instant::now())).await;
            }
            for copy in wake.prune {
                let _ = prune.send(copy).await;
            }
            if wake.resync {
                // Requests made while a resync runs merge into the next one.
                self.resync.send_modify(|generation| *generation += 1);
            }
        }
    }

    fn watch_failed(&self, name: &'static str, error: &watcher::Error) {
        let source = watch_stream::error_source(error);
        if self
            .health
            .watch_failed(name, error.to_string(), source, Instant::now())
        {
            tracing::warn!(watch = name, %error, "watch failed; retrying with backoff");
        } else {
            tracing::debug!(watch = name, %error, "watch failed again; retrying");
        }
    }
}
