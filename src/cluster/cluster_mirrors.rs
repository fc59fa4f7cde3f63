//! The ClusterMirrors and the Mirrors, as one cache every kind shares (the
//! one the loop that serves both reads), the deletions of them this
//! process saw, and whether each one's CustomResourceDefinition is there
//! to be trusted. What follows is said of ClusterMirrors, and holds of
//! Mirrors alike, each under its own CRD.
//!
//! A ClusterMirror's copies are removed (or released) only for a deletion
//! made by someone. One the controller saw happen is a delete event of the
//! watch, bound to the
//! deleted object's uid and to the CRD live when it came
//! (`deletions`). Deleting the CRD makes the API server delete every
//! ClusterMirror first: the watch then reports each as deleted, exactly as
//! if an admin had deleted them. That must never remove a copy. So a
//! deletion counts only once the CRD, read from the API server after the
//! deletion was seen, is that same CRD and not being deleted (`crd`): the
//! CRD is marked for deletion before any of its objects go, and a CRD
//! created again has another uid, so that read cannot mistake either. One
//! read answers every copy pruned for absences seen before it began, so
//! deleting a ClusterMirror with 5,000 copies reads the CRD once, not 5,000
//! times. A deletion nobody saw (no leader ran) is found by what the
//! copies record: the CRD their ClusterMirror was proven made under, which
//! must be live after the ClusterMirror is read absent (`marks`). A
//! ClusterMirror merely absent with nothing to tell (copies written before
//! that mark, or under a CRD since deleted or replaced) leaves its copies
//! as orphans. While the CRD is missing (also at start), the ClusterMirror
//! cache never completes, and no copy of a ClusterMirror is pruned; the
//! label-driven path runs as ever.

mod crd;
mod deletions;
mod follow;
mod marks;
mod requests;

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, PoisonError},
    time::Duration,
};

use futures::{StreamExt, TryStreamExt, channel::mpsc};
use k8s_openapi::{
    apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
    apimachinery::pkg::apis::meta::v1::ObjectMeta,
};
use kube::{
    Api, Client,
    api::{ApiResource, DynamicObject},
    core::PartialObjectMeta,
    runtime::{
        WatchStreamExt,
        reflector::{self, Store},
        watcher::{self},
    },
};
use tokio::sync::watch;

use crate::{
    api::{
        ClusterMirror, SourceKind, StoredClusterMirror, mirror::Mirror,
        mirror::stored::StoredMirror,
    },
    cluster::api_client,
    decisions::cluster_mirror::{DeletionMark, Request, bound_cluster_mirror_uid},
    decisions::copy_verdict::Witnessed,
    decisions::request_key::{RequestKey, RequestKind},
    ops::metrics::Metrics,
};

use crd::{CrdReads, CrdSeen};
use deletions::Deletions;
pub use marks::Gone;
use requests::Requests;

/// How long a deletion seen before the CRD watch first reported waits for
/// it: without knowing the live CRD, the deletion could remove nothing.
const CRD_FIRST_REPORT: Duration = Duration::from_secs(10);

/// What changed of one ClusterMirror's or Mirror's request, for the kinds
/// to act on.
#[derive(Debug, Clone)]
pub enum Change {
    /// Its spec changed, it appeared or it went (its copies may no longer
    /// be wanted): `after` is what it asks for now.
    Request {
        key: RequestKey,
        after: Option<Arc<Request>>,
    },
    /// Its status was written (by this install, or another), its spec
    /// unchanged.
    StatusWritten { key: RequestKey },
    /// The cache of one CRD's objects was listed (again): every request is
    /// looked at.
    Listed,
}

/// The API of the object `key` names (in its namespace, for a Mirror),
/// read as untyped objects: only their metadata is read.
fn api_of(client: Client, key: &RequestKey) -> Api<DynamicObject> {
    let resource = match RequestKind::of(key) {
        RequestKind::ClusterMirror => ApiResource::erase::<ClusterMirror>(&()),
        RequestKind::Mirror => ApiResource::erase::<Mirror>(&()),
    };
    match &key.namespace {
        Some(namespace) => Api::namespaced_with(client, namespace, &resource),
        None => Api::all_with(client, &resource),
    }
}

/// The shared cache of ClusterMirrors and Mirrors.
#[derive(Clone)]
pub struct ClusterMirrors {
    /// Both kinds, a Mirror by namespace and name.
    pub store: Store<StoredClusterMirror>,
    /// The parsed requests; an unreadable spec is left out.
    requests: Arc<Mutex<Requests>>,
    listeners: Arc<Mutex<Vec<mpsc::UnboundedSender<Change>>>>,
    cluster_mirrors: Served,
    mirrors: Served,
    client: Client,
}

/// What is followed of one CRD and its objects.
#[derive(Clone)]
struct Served {
    kind: RequestKind,
    listed: watch::Receiver<bool>,
    crd: watch::Receiver<CrdSeen>,
    crd_reads: CrdReads,
    deletions: Deletions,
    /// Held while an object nobody saw go is read absent: one at a time,
    /// so that the copies of one request read it once.
    confirming: Arc<tokio::sync::Mutex<()>>,
    /// By object uid, the uid of the CRD it was proven made under.
    made_under: Arc<Mutex<HashMap<String, String>>>,
}

/// What the watches of one CRD's objects need to run.
struct Follower<E> {
    served: Served,
    events: E,
    listed: watch::Sender<bool>,
    crd_events: crd::CrdEvents,
    crd: watch::Sender<CrdSeen>,
}

impl Served {
    fn new<E>(
        kind: RequestKind,
        client: &Client,
        watch_client: &Client,
        events: E,
    ) -> (Served, Follower<E>) {
        let (listed_tx, listed) = watch::channel(false);
        let (crd_tx, crd) = watch::channel(None);
        let served = Served {
            kind,
            listed,
            crd,
            crd_reads: CrdReads::new(client.clone(), kind),
            deletions: Deletions::default(),
            confirming: Arc::default(),
            made_under: Arc::default(),
        };
        let crd_api = Api::<PartialObjectMeta<CustomResourceDefinition>>::all(watch_client.clone());
        let crd_events = watcher::watcher(
            crd_api,
            watcher::Config::default().fields(&format!("metadata.name={}", kind.crd_name())),
        )
        .default_backoff()
        .boxed();
        let follower = Follower {
            served: served.clone(),
            events,
            listed: listed_tx,
            crd_events,
            crd: crd_tx,
        };
        (served, follower)
    }
}

impl ClusterMirrors {
    /// Starts nothing yet: the handle, and the future that runs the
    /// ClusterMirror, Mirror and CRD watches until the process ends.
    pub fn new(
        config: &kube::Config,
        client: Client,
        metrics: Arc<Metrics>,
    ) -> anyhow::Result<(ClusterMirrors, impl Future<Output = ()> + Send + use<>)> {
        let watch_client = api_client::for_watch(config, || {})?;
        let writer = reflector::store::Writer::default();
        // Read leniently (see `StoredClusterMirror`): an object this
        // version cannot read fails neither the watch nor the others.
        // Backed off in `follow`, which retries at once when the CRD comes.
        let cluster_events = watcher::watcher(
            Api::<StoredClusterMirror>::all(watch_client.clone()),
            watcher::Config::default(),
        )
        .boxed();
        let mirror_events = watcher::watcher(
            Api::<StoredMirror>::all(watch_client.clone()),
            watcher::Config::default(),
        )
        .map_ok(follow::as_stored)
        .boxed();
        let (cluster_mirrors, cluster_follower) = Served::new(
            RequestKind::ClusterMirror,
            &client,
            &watch_client,
            cluster_events,
        );
        let (mirrors, mirror_follower) =
            Served::new(RequestKind::Mirror, &client, &watch_client, mirror_events);
        let cache = ClusterMirrors {
            store: writer.as_reader(),
            requests: Arc::default(),
            listeners: Arc::default(),
            cluster_mirrors,
            mirrors,
            client,
        };
        let drive = {
            let cache = cache.clone();
            let writer = Arc::new(Mutex::new(writer));
            async move {
                futures::join!(
                    cache.follow(cluster_follower, writer.clone(), metrics.clone()),
                    cache.follow(mirror_follower, writer, metrics),
                );
            }
        };
        Ok((cache, drive))
    }

    fn served(&self, kind: RequestKind) -> &Served {
        match kind {
            RequestKind::ClusterMirror => &self.cluster_mirrors,
            RequestKind::Mirror => &self.mirrors,
        }
    }

    /// The changes from now on, for one subscriber.
    pub fn subscribe(&self) -> mpsc::UnboundedReceiver<Change> {
        let (tx, rx) = mpsc::unbounded();
        self.listeners
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(tx);
        rx
    }

    /// Whether the cache of `kind`'s objects has completed a list: until
    /// then (the CRD missing, say) no absence of one means anything.
    pub fn is_listed(&self, kind: RequestKind) -> bool {
        *self.served(kind).listed.borrow()
    }

    /// Waits until the cache of either kind has completed a list.
    pub async fn wait_listed(&self) {
        let listed = |served: &Served| {
            let mut listed = served.listed.clone();
            async move {
                let _ = listed.wait_for(|listed| *listed).await;
            }
        };
        let cluster_mirrors = std::pin::pin!(listed(&self.cluster_mirrors));
        let mirrors = std::pin::pin!(listed(&self.mirrors));
        futures::future::select(cluster_mirrors, mirrors).await;
    }

    /// Whether the CRD watch of `kind` last saw its CRD there and not
    /// being deleted.
    pub fn crd_live(&self, kind: RequestKind) -> bool {
        (self.served(kind).crd.borrow().as_ref()).is_some_and(Option::is_some)
    }

    /// The request of `key`, if its spec reads.
    pub fn request(&self, key: &RequestKey) -> Option<Arc<Request>> {
        self.lock_requests().get(key).cloned()
    }

    /// Every readable request.
    pub fn requests(&self) -> Vec<Arc<Request>> {
        self.lock_requests().values().cloned().collect()
    }

    /// The readable Mirrors whose copies are of `kind` and named `name`.
    pub fn mirrors_copying(&self, kind: SourceKind, name: &str) -> Vec<Arc<Request>> {
        self.lock_requests().mirrors_copying(kind, name)
    }

    /// The object of `key`, as the cache holds it.
    pub fn object(&self, key: &RequestKey) -> Option<Arc<StoredClusterMirror>> {
        let mut at = reflector::ObjectRef::new(&key.name);
        at.namespace.clone_from(&key.namespace);
        self.store.get(&at)
    }

    /// The deletion, seen by this process, of the request `key` that
    /// `copy` is bound to (by uid); else, when it was read absent though
    /// nobody saw it go, what the copy's own mark makes of that: a
    /// deletion by someone if the CRD live then is the one it names.
    pub fn deletion_of(&self, key: &RequestKey, copy: &ObjectMeta) -> Option<Witnessed> {
        let uid = bound_cluster_mirror_uid(copy)?;
        let served = self.served(RequestKind::of(key));
        if let Some(seen) = served.deletions.of(key, uid) {
            return Some(seen);
        }
        let mark = DeletionMark::on(copy)?;
        let live = served.deletions.absent_under(key, uid)?;
        Some(Witnessed {
            policy: mark.policy,
            crd_live: Some(live.as_deref() == Some(mark.crd_uid)),
        })
    }

    /// Whether the orphans of `key` are to be told about now: once, until
    /// an object of that key appears again.
    pub fn first_orphaned(&self, key: &RequestKey) -> bool {
        (self.served(RequestKind::of(key)).deletions).first_orphaned(key)
    }

    fn tell(&self, change: Change) {
        let mut listeners = self
            .listeners
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        listeners.retain(|listener| listener.unbounded_send(change.clone()).is_ok());
    }

    fn lock_requests(&self) -> std::sync::MutexGuard<'_, Requests> {
        self.requests.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests;
