//! The ClusterMirrors, as one cache every kind shares, the deletions of
//! them this process saw, and whether their CustomResourceDefinition is
//! there to be trusted.
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
mod marks;

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, PoisonError},
    time::Duration,
};

use futures::{StreamExt, channel::mpsc};
use k8s_openapi::{
    apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
    apimachinery::pkg::apis::meta::v1::ObjectMeta,
};
use kube::{
    Api, Client, CustomResourceExt, ResourceExt,
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
    api::{ClusterMirror, StoredClusterMirror, StoredStatus},
    cluster::api_client,
    decisions::cluster_mirror::{DeletionMark, LiveCrd, Request, bound_cluster_mirror_uid},
    decisions::copy_verdict::Witnessed,
    ops::metrics::Metrics,
};

use crd::{CrdReads, CrdSeen, follow_crd, retry_pause};
use deletions::Deletions;
pub use marks::Gone;

/// How long a deletion seen before the CRD watch first reported waits for
/// it: without knowing the live CRD, the deletion could remove nothing.
const CRD_FIRST_REPORT: Duration = Duration::from_secs(10);

/// What changed of one ClusterMirror's request, for the kinds to act on.
#[derive(Debug, Clone)]
pub enum Change {
    /// Its spec changed, it appeared or it went (its copies may no longer
    /// be wanted): `after` is what it asks for now.
    Request {
        name: String,
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
    pub store: Store<StoredClusterMirror>,
    /// The parsed requests, by name; an unreadable spec is left out.
    requests: Arc<Mutex<HashMap<String, Arc<Request>>>>,
    listed: watch::Receiver<bool>,
    listeners: Arc<Mutex<Vec<mpsc::UnboundedSender<Change>>>>,
    crd: watch::Receiver<CrdSeen>,
    crd_reads: CrdReads,
    deletions: Deletions,
    /// Held while a ClusterMirror nobody saw go is read absent: one at a
    /// time, so that the copies of one ClusterMirror read it once.
    confirming: Arc<tokio::sync::Mutex<()>>,
    /// By ClusterMirror uid, the uid of the CRD it was proven made under.
    made_under: Arc<Mutex<HashMap<String, String>>>,
    client: Client,
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
        let writer = reflector::store::Writer::default();
        let store = writer.as_reader();
        let (listed_tx, listed) = watch::channel(false);
        let (crd_tx, crd) = watch::channel(None);
        let mirrors = ClusterMirrors {
            store,
            requests: Arc::default(),
            listed,
            listeners: Arc::default(),
            crd,
            crd_reads: CrdReads::new(client.clone()),
            deletions: Deletions::default(),
            confirming: Arc::default(),
            made_under: Arc::default(),
            client,
        };
        // Read leniently (see `StoredClusterMirror`): a ClusterMirror this
        // version cannot read fails neither the watch nor the others.
        let api = Api::<StoredClusterMirror>::all(watch_client.clone());
        // Backed off in `follow`, which retries at once when the CRD comes.
        let events = watcher::watcher(api, watcher::Config::default());
        let crd_api = Api::<PartialObjectMeta<CustomResourceDefinition>>::all(watch_client);
        let crd_events = watcher::watcher(
            crd_api,
            watcher::Config::default()
                .fields(&format!("metadata.name={}", ClusterMirror::crd_name())),
        )
        .default_backoff();
        let drive = {
            let mirrors = mirrors.clone();
            async move {
                futures::join!(
                    mirrors.follow(events, writer, listed_tx),
                    follow_crd(crd_events, metrics, crd_tx)
                );
            }
        };
        Ok((mirrors, drive))
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

    /// Whether the cache has completed a list: until then (the CRD missing,
    /// say) no ClusterMirror's absence means anything.
    pub fn is_listed(&self) -> bool {
        *self.listed.borrow()
    }

    /// Waits until the cache has completed a list.
    pub async fn wait_listed(&self) {
        let _ = self.listed.clone().wait_for(|listed| *listed).await;
    }

    /// Whether the CRD watch last saw the CRD there and not being deleted.
    pub fn crd_live(&self) -> bool {
        self.crd.borrow().as_ref().is_some_and(Option::is_some)
    }

    /// The request of the ClusterMirror called `name`, if its spec reads.
    pub fn request(&self, name: &str) -> Option<Arc<Request>> {
        self.lock_requests().get(name).cloned()
    }

    /// Every readable request.
    pub fn requests(&self) -> Vec<Arc<Request>> {
        self.lock_requests().values().cloned().collect()
    }

    /// The deletion, seen by this process, of the ClusterMirror `name`
    /// that `copy` is bound to (by uid); else, when it was read absent
    /// though nobody saw it go, what the copy's own mark makes of that: a
    /// deletion by someone if the CRD live then is the one it names.
    pub fn deletion_of(&self, name: &str, copy: &ObjectMeta) -> Option<Witnessed> {
        let uid = bound_cluster_mirror_uid(copy)?;
        if let Some(seen) = self.deletions.of(name, uid) {
            return Some(seen);
        }
        let mark = DeletionMark::on(copy)?;
        let live = self.deletions.absent_under(name, uid)?;
        Some(Witnessed {
            policy: mark.policy,
            crd_live: Some(live.as_deref() == Some(mark.crd_uid)),
        })
    }

    /// Whether the orphans of `name` are to be told about now: once, until
    /// a ClusterMirror of that name appears again.
    pub fn first_orphaned(&self, name: &str) -> bool {
        self.deletions.first_orphaned(name)
    }

    async fn follow(
        &self,
        events: impl futures::Stream<Item = Result<Event<StoredClusterMirror>, watcher::Error>>,
        mut writer: reflector::store::Writer<StoredClusterMirror>,
        listed: watch::Sender<bool>,
    ) {
        let mut backoff = watcher::DefaultBackoff::default();
        let mut events = std::pin::pin!(events);
        let mut crd = self.crd.clone();
        let mut failing = false;
        while let Some(event) = events.next().await {
            let event = match event {
                Ok(event) => event,
                Err(error) => {
                    if !failing {
                        tracing::error!(%error, "cannot watch ClusterMirrors (is the CRD installed?); no ClusterMirror copy is written or removed until it can; label-driven mirroring goes on");
                    }
                    failing = true;
                    retry_pause(&mut backoff, &mut crd).await;
                    continue;
                }
            };
            failing = false;
            backoff.reset();
            if let Event::Delete(object) = &event {
                self.witness(object).await;
            }
            if matches!(event, Event::Delete(_) | Event::InitDone) {
                self.crd_reads.absence_seen();
            }
            let status_before = match &event {
                Event::Apply(object) => {
                    let at = reflector::ObjectRef::from_obj(object);
                    self.store.get(&at).map(|old| old.status.clone())
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

    /// The live CRD, once the CRD watch has reported (waited for a moment
    /// if it has not yet).
    async fn crd_reported(&self) -> Option<LiveCrd> {
        let mut crd = self.crd.clone();
        let reported = crd.wait_for(Option::is_some);
        match tokio::time::timeout(CRD_FIRST_REPORT, reported).await {
            Ok(Ok(seen)) => seen.clone().flatten(),
            _ => None,
        }
    }

    /// Remembers the deletion of `object`, under the CRD it was proven made
    /// under, else the one the CRD watch says is live (waited for a moment
    /// if it has not reported yet).
    async fn witness(&self, object: &StoredClusterMirror) {
        let policy = object.deletion_policy();
        let name = object.name_any();
        match &object.metadata.uid {
            Some(uid) => {
                // Proven made under a CRD, that CRD tells; else the one the
                // watch says is live, and when it was made.
                let crd = match self.proven_made_under(uid) {
                    Some(proven) => (Some(proven), true),
                    None => (self.crd_reported().await.map(|crd| crd.uid), false),
                };
                let created = object.metadata.creation_timestamp.as_ref().map(|t| t.0);
                self.deletions.record(&name, uid, policy, crd, created)
            }
            None => {
                tracing::warn!(clustermirror = %name, "a ClusterMirror deleted without a uid: its copies are kept")
            }
        }
    }

    /// Keeps the parsed requests, and says what changed; `status_before`
    /// is an applied object's status as the cache held it, if it did.
    fn observe(
        &self,
        event: &Event<StoredClusterMirror>,
        status_before: Option<Option<StoredStatus>>,
    ) -> Vec<Change> {
        let parse = |object: &StoredClusterMirror| Request::of(object).ok().map(Arc::new);
        if let Event::Apply(object) | Event::InitApply(object) = event {
            self.deletions.appeared(&object.name_any());
        }
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
                // was is looked at, see `Change::StatusWritten`). Compared
                // as stored, not as this version reads it: another
                // install's write of only fields this version does not
                // know (a newer version's) is a write all the same.
                let fingerprint = |status: &Option<StoredStatus>| {
                    status.as_ref().map(|status| status.fingerprint)
                };
                let status_written = status_before
                    .is_some_and(|before| fingerprint(&before) != fingerprint(&object.status));
                match same {
                    true if status_written => vec![Change::StatusWritten { name }],
                    true => Vec::new(),
                    false => vec![Change::Request { name, after }],
                }
            }
            Event::Delete(object) => {
                let name = object.name_any();
                requests.remove(&name);
                let uid = object.metadata.uid.as_deref().unwrap_or_default();
                self.forget_made_under(|kept| kept != uid);
                vec![Change::Request { name, after: None }]
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
                let uids: std::collections::HashSet<String> = self
                    .store
                    .state()
                    .iter()
                    .filter_map(|o| o.metadata.uid.clone())
                    .collect();
                self.forget_made_under(|uid| uids.contains(uid));
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

#[cfg(test)]
mod tests;
