//! The ClusterMirrors, as one cache every kind shares, and whether their
//! CustomResourceDefinition is there to be trusted.
//!
//! Deleting the CRD makes the API server delete every ClusterMirror first:
//! the watch then reports each as deleted, exactly as if an admin had
//! deleted them. That must never remove a copy. So the absence of a
//! ClusterMirror removes its copies only while the CRD exists and is not
//! being deleted, as read from the API server after the absence was seen
//! (`crd_live_since_absence`): the CRD is marked for deletion before any of
//! its objects go, so that read cannot miss it. One read answers every
//! copy pruned for absences seen before it began, so deleting a
//! ClusterMirror with 5,000 copies reads the CRD once, not 5,000 times.
//! While the CRD is missing (also
//! at start), the ClusterMirror cache never completes, and no copy of a
//! ClusterMirror is pruned; the label-driven path runs as ever.

use std::{
    collections::HashMap,
    sync::{
        Arc, Mutex, PoisonError,
        atomic::{AtomicU64, Ordering},
    },
};

use futures::{StreamExt, channel::mpsc};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::{
    Api, Client, ResourceExt,
    api::{ApiResource, DynamicObject, GroupVersionKind},
    core::PartialObjectMeta,
    runtime::{
        WatchStreamExt,
        reflector::{self, Store},
        utils::Backoff,
        watcher::{self, Event},
    },
};
use tokio::sync::watch;

use crate::{
    cluster::api_client,
    contract::{
        CLUSTER_MIRROR_CRD, CLUSTER_MIRROR_GROUP, CLUSTER_MIRROR_KIND, CLUSTER_MIRROR_PLURAL,
        CLUSTER_MIRROR_VERSION,
    },
    decisions::cluster_mirror::Request,
    ops::metrics::Metrics,
};

/// What changed of one ClusterMirror's request, for the kinds to act on.
#[derive(Debug, Clone)]
pub enum Change {
    /// Its spec changed, it appeared or it went: `before` is what it asked
    /// for until now (its copies may no longer be wanted), `after` what it
    /// asks for now.
    Request {
        name: String,
        before: Option<Arc<Request>>,
        after: Option<Arc<Request>>,
    },
    /// Its status was written (by this install, or another), its spec
    /// unchanged.
    StatusWritten { name: String },
    /// The cache was listed (again): every ClusterMirror is looked at.
    Listed,
}

/// The shared ClusterMirror cache.
#[derive(Clone)]
pub struct ClusterMirrors {
    pub store: Store<DynamicObject>,
    pub resource: ApiResource,
    client: Client,
    /// The parsed requests, by name; an unreadable spec is left out.
    requests: Arc<Mutex<HashMap<String, Arc<Request>>>>,
    listed: watch::Receiver<bool>,
    listeners: Arc<Mutex<Vec<mpsc::UnboundedSender<Change>>>>,
    /// How many events that can make a ClusterMirror absent (a delete, a
    /// new list) were seen; counted before the store shows the absence.
    absences_seen: Arc<AtomicU64>,
    /// The last read of the CRD: the count of absences seen when it
    /// began, and whether the CRD was live. Held while reading, so reads
    /// waiting on it are made one at a time.
    last_crd_read: Arc<tokio::sync::Mutex<Option<(u64, bool)>>>,
}

pub fn resource() -> ApiResource {
    let gvk = GroupVersionKind::gvk(
        CLUSTER_MIRROR_GROUP,
        CLUSTER_MIRROR_VERSION,
        CLUSTER_MIRROR_KIND,
    );
    ApiResource::from_gvk_with_plural(&gvk, CLUSTER_MIRROR_PLURAL)
}

impl ClusterMirrors {
    /// Starts nothing yet: the handle, and the future that runs the
    /// ClusterMirror and CRD watches until the process ends.
    pub fn new(
        config: &kube::Config,
        client: Client,
        metrics: Arc<Metrics>,
    ) -> anyhow::Result<(ClusterMirrors, impl Future<Output = ()> + Send + use<>)> {
        let watch_client = api_client::for_watch(config, || {})?;
        let resource = resource();
        let writer = reflector::store::Writer::new(resource.clone());
        let store = writer.as_reader();
        let (listed_tx, listed) = watch::channel(false);
        let mirrors = ClusterMirrors {
            store,
            resource: resource.clone(),
            client,
            requests: Arc::default(),
            listed,
            listeners: Arc::default(),
            absences_seen: Arc::default(),
            last_crd_read: Arc::default(),
        };
        let api = Api::<DynamicObject>::all_with(watch_client.clone(), &resource);
        // Backed off in `follow`, which retries at once when the CRD comes.
        let events = watcher::watcher(api, watcher::Config::default());
        let crd_api = Api::<PartialObjectMeta<CustomResourceDefinition>>::all(watch_client);
        let crd_events = watcher::watcher(
            crd_api,
            watcher::Config::default().fields(&format!("metadata.name={CLUSTER_MIRROR_CRD}")),
        )
        .default_backoff();
        let (crd_present_tx, crd_present_rx) = watch::channel(false);
        let drive = {
            let mirrors = mirrors.clone();
            async move {
                futures::join!(
                    mirrors.follow(events, writer, listed_tx, crd_present_rx),
                    follow_crd(crd_events, metrics, crd_present_tx)
                );
            }
        };
        Ok((mirrors, drive))
    }

    /// The changes from now on, for one kind.
    pub fn subscribe(&self) -> mpsc::UnboundedReceiver<Change> {
        let (tx, rx) = mpsc::unbounded();
        self.listeners
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(tx);
        rx
    }

    /// Whether the cache has completed a list: until then (the CRD missing,
    /// say) no ClusterMirror's absence means anything.
    pub fn is_listed(&self) -> bool {
        *self.listed.borrow()
    }

    /// Waits until the cache has completed a list.
    pub async fn wait_listed(&self) {
        let _ = self.listed.clone().wait_for(|listed| *listed).await;
    }

    /// The request of the ClusterMirror called `name`, if its spec reads.
    pub fn request(&self, name: &str) -> Option<Arc<Request>> {
        self.lock_requests().get(name).cloned()
    }

    /// Every readable request.
    pub fn requests(&self) -> Vec<Arc<Request>> {
        self.lock_requests().values().cloned().collect()
    }

    /// Whether the CRD exists and is not being deleted, as read from the
    /// API server after every absence seen so far: only then does a
    /// ClusterMirror's absence mean that it was deleted by someone. A read
    /// that began after the last absence was seen answers again.
    pub async fn crd_live_since_absence(&self) -> Result<bool, kube::Error> {
        let mut last_read = self.last_crd_read.lock().await;
        let absences = self.absences_seen.load(Ordering::SeqCst);
        if let Some((seen, live)) = *last_read
            && seen == absences
        {
            return Ok(live);
        }
        let api = Api::<CustomResourceDefinition>::all(self.client.clone());
        let crd = api.get_metadata_opt(CLUSTER_MIRROR_CRD).await?;
        let live = crd.is_some_and(|crd| crd.metadata.deletion_timestamp.is_none());
        *last_read = Some((absences, live));
        Ok(live)
    }

    async fn follow(
        &self,
        events: impl futures::Stream<Item = Result<Event<DynamicObject>, watcher::Error>>,
        mut writer: reflector::store::Writer<DynamicObject>,
        listed: watch::Sender<bool>,
        mut crd_present: watch::Receiver<bool>,
    ) {
        let mut backoff = watcher::DefaultBackoff::default();
        let mut events = std::pin::pin!(events);
        let mut failing = false;
        while let Some(event) = events.next().await {
            let event = match event {
                Ok(event) => event,
                Err(error) => {
                    if !failing {
                        tracing::error!(%error, "cannot watch ClusterMirrors (is the CRD installed?); no ClusterMirror copy is written or removed until it can; label-driven mirroring goes on");
                    }
                    failing = true;
                    retry_pause(&mut backoff, &mut crd_present).await;
                    continue;
                }
            };
            failing = false;
            backoff.reset();
            // Counted before the store shows it: whoever finds a
            // ClusterMirror absent then finds the count raised, and no
            // older read of the CRD answers for it.
            if matches!(event, Event::Delete(_) | Event::InitDone) {
                self.absences_seen.fetch_add(1, Ordering::SeqCst);
            }
            let status_before = match &event {
                Event::Apply(object) => {
                    let at = reflector::ObjectRef::from_obj_with(object, self.resource.clone());
                    self.store
                        .get(&at)
                        .map(|old| old.data.get("status").cloned())
                }
                _ => None,
            };
            writer.apply_watcher_event(&event);
            for change in self.observe(&event, status_before) {
                self.tell(change);
            }
            if matches!(event, Event::InitDone) {
                listed.send_replace(true);
            }
        }
    }

    /// Keeps the parsed requests, and says what changed; `status_before`
    /// is an applied object's status as the cache held it, if it did.
    fn observe(
        &self,
        event: &Event<DynamicObject>,
        status_before: Option<Option<serde_json::Value>>,
    ) -> Vec<Change> {
        let parse = |object: &DynamicObject| {
            Request::of(&object.metadata, object.data.get("spec"))
                .ok()
                .map(Arc::new)
        };
        let mut requests = self.lock_requests();
        match event {
            Event::Apply(object) => {
                let name = object.name_any();
                let after = parse(object);
                let before = requests.get(&name).cloned();
                let same = before
                    .as_ref()
                    .zip(after.as_ref())
                    .is_some_and(|(b, a)| b.uid == a.uid && b.generation == a.generation);
                match &after {
                    Some(request) => requests.insert(name.clone(), request.clone()),
                    None => requests.remove(&name),
                };
                // A status write changes neither uid nor generation: the
                // controller's own writes wake no reconcile (whose write it
                // was is looked at, see `Change::StatusWritten`).
                let status_written = status_before
                    .is_some_and(|before| before.as_ref() != object.data.get("status"));
                match same {
                    true if status_written => vec![Change::StatusWritten { name }],
                    true => Vec::new(),
                    false => vec![Change::Request {
                        name,
                        before,
                        after,
                    }],
                }
            }
            Event::Delete(object) => {
                let name = object.name_any();
                let before = requests.remove(&name);
                vec![Change::Request {
                    name,
                    before,
                    after: None,
                }]
            }
            Event::Init => Vec::new(),
            Event::InitApply(object) => {
                if let Some(request) = parse(object) {
                    requests.insert(object.name_any(), request);
                }
                Vec::new()
            }
            Event::InitDone => {
                let listed: std::collections::HashSet<String> =
                    self.store.state().iter().map(|o| o.name_any()).collect();
                requests.retain(|name, _| listed.contains(name));
                vec![Change::Listed]
            }
        }
    }

    fn tell(&self, change: Change) {
        let mut listeners = self
            .listeners
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        listeners.retain(|listener| listener.unbounded_send(change.clone()).is_ok());
    }

    fn lock_requests(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Request>>> {
        self.requests.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The pause before the ClusterMirror watch is tried again after a
/// failure: growing as the watch's own backoff, cut short when the CRD
/// comes. A CRD installed long after the controller started is then read
/// at once, not up to half a minute later.
async fn retry_pause(
    backoff: &mut watcher::DefaultBackoff,
    crd_present: &mut watch::Receiver<bool>,
) {
    let pause = backoff.next().unwrap_or(std::time::Duration::from_secs(30));
    crd_present.borrow_and_update();
    tokio::select! {
        () = tokio::time::sleep(pause) => {}
        changed = crd_present.changed() => {
            if changed.is_ok() && *crd_present.borrow() {
                backoff.reset();
            } else {
                // Gone, or the CRD watch ended: no reason to hurry.
                tokio::time::sleep(pause).await;
            }
        }
    }
}

/// Says loudly, and in a metric, whenever the CRD goes or is being deleted.
async fn follow_crd(
    events: impl futures::Stream<
        Item = Result<Event<PartialObjectMeta<CustomResourceDefinition>>, watcher::Error>,
    >,
    metrics: Arc<Metrics>,
    present_now: watch::Sender<bool>,
) {
    let mut events = std::pin::pin!(events);
    let mut present: Option<bool> = None;
    let mut listing = false;
    while let Some(event) = events.next().await {
        let now_present = match event {
            Ok(Event::Apply(crd)) => crd.metadata.deletion_timestamp.is_none(),
            Ok(Event::Delete(_)) => false,
            Ok(Event::Init) => {
                listing = false;
                continue;
            }
            Ok(Event::InitApply(crd)) => {
                listing = crd.metadata.deletion_timestamp.is_none();
                continue;
            }
            Ok(Event::InitDone) => listing,
            Err(error) => {
                tracing::warn!(%error, crd = CLUSTER_MIRROR_CRD, "cannot watch the ClusterMirror CRD");
                continue;
            }
        };
        if present != Some(now_present) {
            match now_present {
                true => tracing::info!(
                    crd = CLUSTER_MIRROR_CRD,
                    "the ClusterMirror CRD is installed"
                ),
                false => tracing::error!(
                    crd = CLUSTER_MIRROR_CRD,
                    "the ClusterMirror CRD is missing or being deleted: no ClusterMirror copy is removed; label-driven mirroring goes on"
                ),
            }
        }
        present = Some(now_present);
        present_now.send_replace(now_present);
        metrics.set_cluster_mirror_crd_present(now_present);
    }
}
