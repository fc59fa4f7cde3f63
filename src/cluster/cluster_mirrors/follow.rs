//! The watches of ClusterMirrors and of Mirrors, each under its CRD, kept
//! in the one store the loop reads: what each event changes of the
//! requests, and the deletions it witnesses.

use std::{
    collections::HashSet,
    sync::{Arc, Mutex, PoisonError},
};

use futures::StreamExt;
use kube::runtime::utils::Backoff as _;
use kube::runtime::{
    reflector::{self, store::Writer},
    watcher::{self, Event},
};
use tokio::sync::watch;

use super::{
    CRD_FIRST_REPORT, Change, ClusterMirrors, Follower, Served,
    crd::{follow_crd, retry_pause},
};
use crate::{
    api::{StoredClusterMirror, StoredStatus, mirror::stored::StoredMirror},
    decisions::cluster_mirror::{LiveCrd, Request},
    decisions::request_key::{RequestKey, RequestKind},
    ops::metrics::Metrics,
};

/// A Mirror's event, in the form the loop reads.
pub fn as_stored(event: Event<StoredMirror>) -> Event<StoredClusterMirror> {
    match event {
        Event::Apply(StoredMirror(object)) => Event::Apply(object),
        Event::Delete(StoredMirror(object)) => Event::Delete(object),
        Event::Init => Event::Init,
        Event::InitApply(StoredMirror(object)) => Event::InitApply(object),
        Event::InitDone => Event::InitDone,
    }
}

fn kind_of(object: &StoredClusterMirror) -> RequestKind {
    RequestKind::of(&RequestKey::of_meta(&object.metadata))
}

impl ClusterMirrors {
    /// Follows one CRD and its objects until the process ends.
    pub(super) async fn follow<E>(
        &self,
        follower: Follower<E>,
        writer: Arc<Mutex<Writer<StoredClusterMirror>>>,
        metrics: Arc<Metrics>,
    ) where
        E: futures::Stream<Item = Result<Event<StoredClusterMirror>, watcher::Error>> + Unpin,
    {
        let Follower {
            served,
            events,
            listed,
            crd_events,
            crd,
        } = follower;
        futures::join!(
            self.follow_objects(&served, events, writer, listed),
            follow_crd(served.kind, crd_events, metrics, crd)
        );
    }

    async fn follow_objects(
        &self,
        served: &Served,
        mut events: impl futures::Stream<Item = Result<Event<StoredClusterMirror>, watcher::Error>>
        + Unpin,
        writer: Arc<Mutex<Writer<StoredClusterMirror>>>,
        listed: watch::Sender<bool>,
    ) {
        let mut backoff = watcher::DefaultBackoff::default();
        let mut crd = served.crd.clone();
        let mut failing = false;
        // This kind's objects of a list under way: the store holds both
        // kinds, so a list of one replaces only its own.
        let mut listing = Vec::new();
        while let Some(event) = events.next().await {
            let event = match event {
                Ok(event) => event,
                Err(error) => {
                    if !failing {
                        let kind = served.kind.name();
                        tracing::error!(%error, "cannot watch {kind}s (is the CRD installed?); no {kind} copy is written or removed until it can; label-driven mirroring goes on");
                    }
                    failing = true;
                    retry_pause(&mut backoff, &mut crd).await;
                    continue;
                }
            };
            failing = false;
            backoff.reset();
            if let Event::Delete(object) = &event {
                self.witness(served, object).await;
            }
            if matches!(event, Event::Delete(_) | Event::InitDone) {
                served.crd_reads.absence_seen();
            }
            let status_before = match &event {
                Event::Apply(object) => {
                    let at = reflector::ObjectRef::from_obj(object);
                    self.store.get(&at).map(|old| old.status.clone())
                }
                _ => None,
            };
            {
                let mut writer = writer.lock().unwrap_or_else(PoisonError::into_inner);
                match &event {
                    Event::Init => listing.clear(),
                    Event::InitApply(object) => listing.push(object.clone()),
                    Event::InitDone => {
                        let others = (self.store.state().into_iter())
                            .filter(|object| kind_of(object) != served.kind);
                        writer.apply_watcher_event(&Event::Init);
                        for object in others.map(|o| (*o).clone()).chain(listing.drain(..)) {
                            writer.apply_watcher_event(&Event::InitApply(object));
                        }
                        writer.apply_watcher_event(&Event::InitDone);
                    }
                    Event::Apply(_) | Event::Delete(_) => writer.apply_watcher_event(&event),
                }
            }
            for change in self.observe(served, &event, status_before) {
                self.tell(change);
            }
            if matches!(event, Event::InitDone) {
                listed.send_replace(true);
            }
        }
    }

    /// The live CRD, once the CRD watch has reported (waited for a moment
    /// if it has not yet).
    async fn crd_reported(served: &Served) -> Option<LiveCrd> {
        let mut crd = served.crd.clone();
        let reported = crd.wait_for(Option::is_some);
        match tokio::time::timeout(CRD_FIRST_REPORT, reported).await {
            Ok(Ok(seen)) => seen.clone().flatten(),
            _ => None,
        }
    }

    /// Remembers the deletion of `object`, under the CRD it was proven made
    /// under, else the one the CRD watch says is live (waited for a moment
    /// if it has not reported yet).
    async fn witness(&self, served: &Served, object: &StoredClusterMirror) {
        let policy = object.deletion_policy();
        let key = RequestKey::of_meta(&object.metadata);
        match &object.metadata.uid {
            Some(uid) => {
                // Proven made under a CRD, that CRD tells; else the one the
                // watch says is live, and when it was made.
                let crd = match served.proven_made_under(uid) {
                    Some(proven) => (Some(proven), true),
                    None => (
                        ClusterMirrors::crd_reported(served)
                            .await
                            .map(|crd| crd.uid),
                        false,
                    ),
                };
                let created = object.metadata.creation_timestamp.as_ref().map(|t| t.0);
                served.deletions.record(&key, uid, policy, crd, created)
            }
            None => {
                tracing::warn!(request = %key, "deleted without a uid: its copies are kept")
            }
        }
    }

    /// Keeps the parsed requests, and says what changed; `status_before`
    /// is an applied object's status as the cache held it, if it did.
    pub(super) fn observe(
        &self,
        served: &Served,
        event: &Event<StoredClusterMirror>,
        status_before: Option<Option<StoredStatus>>,
    ) -> Vec<Change> {
        let parse = |object: &StoredClusterMirror| Request::of(object).ok().map(Arc::new);
        let key_of = |object: &StoredClusterMirror| RequestKey::of_meta(&object.metadata);
        if let Event::Apply(object) | Event::InitApply(object) = event {
            served.deletions.appeared(&key_of(object));
        }
        let mut requests = self.lock_requests();
        match event {
            Event::Apply(object) => {
                let key = key_of(object);
                let after = parse(object);
                let before = requests.get(&key).cloned();
                let same = before
                    .as_ref()
                    .zip(after.as_ref())
                    .is_some_and(|(b, a)| b.uid == a.uid && b.generation == a.generation);
                match &after {
                    Some(request) => requests.insert(key.clone(), request.clone()),
                    None => requests.remove(&key),
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
                    true if status_written => vec![Change::StatusWritten { key }],
                    true => Vec::new(),
                    false => vec![Change::Request { key, after }],
                }
            }
            Event::Delete(object) => {
                let key = key_of(object);
                requests.remove(&key);
                let uid = object.metadata.uid.as_deref().unwrap_or_default();
                served.forget_made_under(|kept| kept != uid);
                vec![Change::Request { key, after: None }]
            }
            Event::Init => Vec::new(),
            Event::InitApply(object) => {
                if let Some(request) = parse(object) {
                    requests.insert(key_of(object), request);
                }
                Vec::new()
            }
            Event::InitDone => {
                let state = self.store.state();
                let listed = (state.iter()).filter(|object| kind_of(object) == served.kind);
                let (keys, uids): (HashSet<RequestKey>, HashSet<&str>) = listed
                    .map(|object| (key_of(object), object.metadata.uid.as_deref()))
                    .map(|(key, uid)| (key, uid.unwrap_or_default()))
                    .unzip();
                requests.retain(|key| RequestKind::of(key) != served.kind || keys.contains(key));
                served.forget_made_under(|uid| uids.contains(uid));
                vec![Change::Listed]
            }
        }
    }
}
