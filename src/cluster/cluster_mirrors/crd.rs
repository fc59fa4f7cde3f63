//! The ClusterMirror CRD as the controller follows it: its watch (which
//! says loudly when it goes, and which CRD, by uid, is live), and the read
//! made after a ClusterMirror was seen deleted, which tells a deletion by
//! someone from the CRD taking its objects with it.

use std::sync::{
    Arc,
    atomic::{AtomicU64, Ordering},
};

use futures::StreamExt;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::{
    Api, Client,
    core::PartialObjectMeta,
    runtime::{
        utils::Backoff,
        watcher::{self, Event},
    },
};
use tokio::sync::watch;

use crate::decisions::request_key::RequestKind;
use crate::{decisions::cluster_mirror::LiveCrd, ops::metrics::Metrics};

/// The events of one CRD's watch.
pub type CrdEvents = futures::stream::BoxStream<
    'static,
    Result<Event<PartialObjectMeta<CustomResourceDefinition>>, watcher::Error>,
>;

/// What the CRD watch last said: None before it first reported; then the
/// CRD while it exists and is not being deleted, else None.
pub type CrdSeen = Option<Option<LiveCrd>>;

/// A read of the CRD: the count of absences seen when it began, and the
/// CRD if it was live.
type LastRead = (u64, Option<LiveCrd>);

/// The reads of the CRD made after absences.
#[derive(Clone)]
pub struct CrdReads {
    client: Client,
    kind: RequestKind,
    /// How many events that can make a ClusterMirror absent (a delete, a
    /// new list) were seen; counted before the store shows the absence.
    absences_seen: Arc<AtomicU64>,
    /// The last read of the CRD. Held while reading, so reads waiting on
    /// it are made one at a time.
    last_read: Arc<tokio::sync::Mutex<Option<LastRead>>>,
}

impl CrdReads {
    pub fn new(client: Client, kind: RequestKind) -> CrdReads {
        CrdReads {
            client,
            kind,
            absences_seen: Arc::default(),
            last_read: Arc::default(),
        }
    }

    /// An event that can make a ClusterMirror absent is about to be
    /// applied: whoever then finds one absent finds the count raised, and
    /// no older read of the CRD answers for it.
    pub fn absence_seen(&self) {
        self.absences_seen.fetch_add(1, Ordering::SeqCst);
    }

    /// The CRD if it exists and is not being deleted, as read from the API
    /// server now.
    pub async fn read(&self) -> Result<Option<LiveCrd>, kube::Error> {
        let api = Api::<CustomResourceDefinition>::all(self.client.clone());
        let crd = api.get_metadata_opt(self.kind.crd_name()).await?;
        Ok(crd.and_then(live_crd))
    }

    /// The CRD if it exists and is not being deleted, as read from the API
    /// server after every absence seen so far. A read that began after the
    /// last absence was seen answers again, so one read answers for every
    /// copy of a deleted ClusterMirror, however many.
    pub async fn live_since_absence(&self) -> Result<Option<LiveCrd>, kube::Error> {
        let mut last_read = self.last_read.lock().await;
        let absences = self.absences_seen.load(Ordering::SeqCst);
        if let Some((seen, live)) = &*last_read
            && *seen == absences
        {
            return Ok(live.clone());
        }
        let live = self.read().await?;
        *last_read = Some((absences, live.clone()));
        Ok(live)
    }
}

/// The pause before the ClusterMirror watch is tried again after a
/// failure: growing as the watch's own backoff, cut short when the CRD
/// comes. A CRD installed long after the controller started is then read
/// at once, not up to half a minute later.
pub async fn retry_pause(
    backoff: &mut watcher::DefaultBackoff,
    crd: &mut watch::Receiver<CrdSeen>,
) {
    let pause = backoff.next().unwrap_or(std::time::Duration::from_secs(30));
    crd.borrow_and_update();
    tokio::select! {
        () = tokio::time::sleep(pause) => {}
        changed = crd.changed() => {
            if changed.is_ok() && crd.borrow().as_ref().is_some_and(Option::is_some) {
                backoff.reset();
            } else {
                // Gone, or the CRD watch ended: no reason to hurry.
                tokio::time::sleep(pause).await;
            }
        }
    }
}

/// Says loudly, and in a metric, whenever the CRD goes or is being
/// deleted; tells `live` which CRD is live.
pub async fn follow_crd(
    kind: RequestKind,
    events: CrdEvents,
    metrics: Arc<Metrics>,
    live: watch::Sender<CrdSeen>,
) {
    let (crd, kind) = (kind.crd_name(), kind);
    let mut events = std::pin::pin!(events);
    let mut present: Option<bool> = None;
    let mut listing = None;
    while let Some(event) = events.next().await {
        let now_live = match event {
            Ok(Event::Apply(crd)) => live_crd(crd),
            Ok(Event::Delete(_)) => None,
            Ok(Event::Init) => {
                listing = None;
                continue;
            }
            Ok(Event::InitApply(crd)) => {
                listing = live_crd(crd);
                continue;
            }
            Ok(Event::InitDone) => listing.take(),
            Err(error) => {
                tracing::warn!(%error, crd, "cannot watch the {} CRD", kind.name());
                continue;
            }
        };
        let now_present = now_live.is_some();
        if present != Some(now_present) {
            let kind = kind.name();
            match now_present {
                true => tracing::info!(crd, "the {kind} CRD is installed"),
                false => tracing::error!(
                    crd,
                    "the {kind} CRD is missing or being deleted: no {kind} copy is removed; label-driven mirroring goes on"
                ),
            }
        }
        present = Some(now_present);
        live.send_replace(Some(now_live));
        metrics.set_crd_present(kind, now_present);
    }
}

/// The CRD as read, if it is there and not being deleted.
fn live_crd(crd: PartialObjectMeta<CustomResourceDefinition>) -> Option<LiveCrd> {
    if crd.metadata.deletion_timestamp.is_some() {
        return None;
    }
    Some(LiveCrd {
        uid: crd.metadata.uid?,
        created: crd.metadata.creation_timestamp.map(|t| t.0),
    })
}
