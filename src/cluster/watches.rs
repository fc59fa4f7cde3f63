//! The watches that fill the caches, and what each of their events sets off.
//!
//! Per mirrored kind, two watches run: sources (with the source label
//! selector) and copies (with the managed-by label). Once per process, when
//! mirroring into other namespaces is possible, a namespace watch (metadata
//! only) runs, shared by every kind. Each event is cached in its slim form
//! (`cache_form`), then its watch's follower keeps the watch's own
//! bookkeeping and says whom it wakes (`wakeups`), and the kind's forwarder
//! sends those wakeups to its controllers (`forward`).

mod forward;
mod grants;
mod namespaces;

pub use grants::GrantWarnings;
pub use namespaces::Namespaces;

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, MutexGuard},
    time::Instant,
};

use futures::{Stream, StreamExt, TryStreamExt, channel::mpsc};
use kube::{
    Api, Client,
    api::DynamicObject,
    runtime::{
        WatchStreamExt,
        reflector::{self, ObjectRef, Store},
        watcher::{self, Event},
    },
};
use tokio::sync::watch;

use crate::{
    cluster::api_client,
    cluster::watch_stream,
    contract,
    decisions::cache_form::{self, content_size},
    decisions::consent::{self, Consent},
    decisions::install::Install,
    decisions::scope::Reach,
    index::admitting_namespaces::AdmittingNamespaces,
    index::admitting_namespaces::NamespaceMeta,
    index::caches::Caches,
    index::copy_index::CopyIndex,
    index::grants::{GrantChange, GrantIndex},
    index::mirroring_sources::MirroringSources,
    index::source_bytes::SourceBytes,
    index::wakeups::ClusterWake,
    kind::MirroredKind,
    ops::config::InitialList,
    ops::health::Health,
    ops::metrics::Metrics,
};

use forward::{
    CopyFollower, Forwarder, KindNamespaces, NamespaceFollower, NamespaceListener, SourceFollower,
};

/// Told the uid of each source or copy the watches see deleted, so that
/// the retry state the reconcile loops keep of it goes with it.
pub type OnDeleted = Arc<dyn Fn(&str) + Send + Sync>;

/// What the watches ask one kind's two controllers to look at.
pub struct Wakeups<K: MirroredKind> {
    /// With when each was sent, for the queue's timing series, and which
    /// of the source's copies it is about.
    pub sync: mpsc::Receiver<(ObjectRef<K>, Instant, Reach)>,
    pub prune: mpsc::Receiver<ObjectRef<K>>,
    /// Changes whenever every cached object must be compared again.
    pub resync: watch::Receiver<u64>,
    /// What the ClusterMirrors' loop must hear of.
    pub cluster: mpsc::UnboundedReceiver<ClusterWake>,
}

/// Where the watches look, and how they list. What they select and how
/// companions are named is the install's ([`Install`]).
#[derive(Clone)]
pub struct WatchSettings {
    /// Watch only this namespace; mirroring into others is then off.
    pub namespace: Option<String>,
    pub initial_list: InitialList,
}

const NAMESPACES: &str = "namespaces";

// Deep enough that the watches never wait on the controllers' schedulers,
// which take wakeups as fast as they come and merge duplicates.
const WAKEUP_BUFFER: usize = 1024;

/// Starts nothing yet: returns one kind's caches, its wakeups, and the
/// future that drives its two watches (it runs until they end): its
/// sources, as `install` selects them, and its copies. Each watch
/// has a client of its own, which tells `health` when the watch reconnects.
/// The kind's caches and wakeups follow `namespaces` too, under the kind's
/// `consent`, and each item of `resyncs` (such as a new digest key) asks
/// for a full comparison.
#[allow(clippy::too_many_arguments)]
pub fn watch<K: MirroredKind, R: Stream<Item = ()> + Send + 'static>(
    config: &kube::Config,
    settings: WatchSettings,
    install: &Install,
    consent: Consent,
    namespaces: &Namespaces,
    resyncs: R,
    health: Arc<Health>,
    metrics: Arc<Metrics>,
    on_deleted: OnDeleted,
) -> anyhow::Result<(
    Caches<K>,
    Wakeups<K>,
    impl Future<Output = ()> + Send + use<K, R>,
)> {
    let events = |watch, labels: &str| events_of::<K>(config, &settings, &health, watch, labels);
    let (sources, source_writer) = reflector::store();
    let source_bytes = SourceBytes::default();
    let source_events = events(K::SOURCES_WATCH, &install.selector)?
        .modify(content_size::slim_source_sized::<K>)
        .inspect_ok(source_bytes.following(&sources))
        .reflect(source_writer);
    let (copies, copy_writer) = reflector::store();
    let copy_events = events(K::COPIES_WATCH, &contract::copy_selector())?
        .modify(cache_form::slim_copy::<K>)
        .reflect(copy_writer);

    let (ready_tx, ready) = watch::channel(false);
    let namespaces_listed = namespaces
        .store
        .is_some()
        .then(|| namespaces.listed.subscribe());
    let caches = Caches {
        sources,
        copies,
        namespaces: namespaces.store.clone(),
        mirroring: MirroringSources::default(),
        source_bytes,
        index: CopyIndex::default(),
        admitting: AdmittingNamespaces::default(),
        grants: namespaces.grants.clone(),
        ready,
    };
    let (forwarder, wakeups) = Forwarder::new(health.clone(), metrics.clone());
    let (source_follower, copy_follower) =
        followers(&caches, metrics, on_deleted, install.suffix.clone());
    namespaces.follow_for(&caches, consent, &forwarder);
    let drive = {
        let caches = caches.clone();
        async move {
            let watches = async {
                futures::join!(
                    forwarder.forward(K::SOURCES_WATCH, source_events, source_follower),
                    forwarder.forward(K::COPIES_WATCH, copy_events, copy_follower),
                    announce_synced(&caches, namespaces_listed, &health, ready_tx),
                );
            };
            // Runs as long as the watches do, whether or not it ends first.
            let resyncs = async {
                forwarder.resync_on(resyncs).await;
                std::future::pending::<()>().await;
            };
            tokio::select! {
                () = watches => {}
                () = resyncs => {}
            }
        }
    };
    Ok((caches, wakeups, drive))
}

/// The events of kind `K`'s watch `watch` (of its sources, or of its
/// copies), of the objects with `labels`, in the watched namespace or in
/// all of them.
fn events_of<K: MirroredKind>(
    config: &kube::Config,
    settings: &WatchSettings,
    health: &Arc<Health>,
    watch: &'static str,
    labels: &str,
) -> anyhow::Result<impl Stream<Item = Result<Event<K>, watcher::Error>> + Send + use<K>> {
    Ok(watch_stream::events(
        api_in::<K>(
            client_for(config, health, watch)?,
            settings.namespace.as_deref(),
        ),
        watcher::Config::default().labels(labels),
        settings.initial_list,
        watch,
        health.clone(),
    ))
}

/// What follows the events of the sources' watch, and of the copies'.
fn followers<K: MirroredKind>(
    caches: &Caches<K>,
    metrics: Arc<Metrics>,
    on_deleted: OnDeleted,
    suffix: String,
) -> (SourceFollower<K>, CopyFollower<K>) {
    let source_follower = SourceFollower {
        caches: caches.clone(),
        metrics,
        on_deleted: on_deleted.clone(),
        index: caches.index.clone(),
        suffix: suffix.clone(),
    };
    let copy_follower = CopyFollower {
        on_deleted,
        index: caches.index.clone(),
        suffix,
    };
    (source_follower, copy_follower)
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

/// Tells `health` as each of the kind's caches completes its first list,
/// and the kind's reconciles once all have (the shared namespace cache
/// included: without it every mirror would look unwanted).
async fn announce_synced<K: MirroredKind>(
    caches: &Caches<K>,
    namespaces_listed: Option<watch::Receiver<bool>>,
    health: &Health,
    ready: watch::Sender<bool>,
) {
    let namespaces_listed = async {
        if let Some(mut listed) = namespaces_listed {
            let _ = listed.wait_for(|listed| *listed).await;
        }
    };
    futures::join!(
        synced(K::SOURCES_WATCH, &caches.sources, health),
        synced(K::COPIES_WATCH, &caches.copies, health),
        namespaces_listed,
    );
    ready.send_replace(true);
    tracing::info!(kind = %K::kind(&()), "caches synced");
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
