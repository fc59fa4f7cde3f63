//! What a ClusterMirror's copies record of it, proven and read back: the
//! CRD it is made under, proven by reads before its copies record it, and
//! what became of it once the cache no longer holds it, as a copy's marks
//! ask and the API server answers: deleted by someone (its copies go by
//! their deletion policy), with its CRD (they stay, orphans), or not gone
//! at all (the cache is behind).

use std::{
    collections::HashMap,
    sync::{MutexGuard, PoisonError},
};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::ListParams;

use super::{ClusterMirrors, Served, api_of};
use crate::{
    decisions::cluster_mirror::{DeletionMark, Request, bound_cluster_mirror_uid},
    decisions::request_key::{RequestKey, RequestKind},
};

/// What became of the ClusterMirror a copy is bound to, which the cache no
/// longer holds, as read from the API server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gone {
    /// Deleted by someone while its CRD was live: its copies go by its
    /// deletion policy.
    BySomeone,
    /// Deleted with its CRD (or its deletion cannot be told apart from
    /// that): its copies are orphans.
    WithItsCrd,
    /// Still there: the cache has not caught up.
    StillThere,
}

impl From<bool> for Gone {
    fn from(by_someone: bool) -> Gone {
        match by_someone {
            true => Gone::BySomeone,
            false => Gone::WithItsCrd,
        }
    }
}

impl ClusterMirrors {
    /// Proves which CRD `request` is made under, by two reads: the CRD,
    /// read live (there, not being deleted), then the ClusterMirror, read
    /// there with its uid after it. A CRD's objects all go before it does,
    /// and a CRD of the same name cannot be made until then: so an object
    /// there after a CRD was read live is that CRD's. (Timestamps, whole
    /// seconds, could not tell a CRD replaced within the second its
    /// ClusterMirror was made.) Read once per ClusterMirror: then
    /// [`Self::proven_made_under`] says it. Not proven (the ClusterMirror
    /// gone, or no CRD live), its copies record no CRD.
    pub async fn prove_made_under(&self, request: &Request) -> Result<(), kube::Error> {
        let key = request.key();
        let kind = RequestKind::of(&key);
        let served = self.served(kind);
        if served.proven_made_under(&request.uid).is_some() {
            return Ok(());
        }
        let Some(crd) = served.crd_reads.read().await? else {
            return Ok(());
        };
        let api = api_of(self.client.clone(), &key);
        let there = api.get_metadata_opt(&key.name).await?;
        // One being deleted may be going with a CRD since deleted: proven
        // of none.
        let proven = there.is_some_and(|object| {
            object.metadata.uid.as_deref() == Some(&request.uid)
                && object.metadata.deletion_timestamp.is_none()
        });
        if proven {
            served
                .lock_made_under()
                .insert(request.uid.clone(), crd.uid);
        }
        Ok(())
    }

    /// The uid of the CRD the ClusterMirror or Mirror `uid` was proven
    /// made under.
    pub fn proven_made_under(&self, uid: &str) -> Option<String> {
        (self.cluster_mirrors.proven_made_under(uid))
            .or_else(|| self.mirrors.proven_made_under(uid))
    }

    /// What became of the ClusterMirror `name` that `copy` is bound to,
    /// which the cache no longer holds: for a deletion seen, whether it was
    /// made by someone, its CRD live, read from the API server after the
    /// deletion was seen; for one nobody saw, whether the CRD the copy's
    /// mark names was live after it was read absent
    /// ([`Self::read_absent`]). Once for all the copies of one
    /// ClusterMirror.
    pub async fn gone(&self, key: &RequestKey, copy: &ObjectMeta) -> Result<Gone, kube::Error> {
        let Some(uid) = bound_cluster_mirror_uid(copy) else {
            return Ok(Gone::WithItsCrd);
        };
        let served = self.served(RequestKind::of(key));
        if let Some(seen) = served.deletions.of(key, uid) {
            if let Some(settled) = seen.crd_live {
                return Ok(settled.into());
            }
            let live = served.crd_reads.live_since_absence().await?;
            return Ok(served.deletions.settle(uid, live.as_ref()).into());
        }
        let Some(mark) = DeletionMark::on(copy) else {
            return Ok(Gone::WithItsCrd);
        };
        match self.read_absent(served, key, uid).await? {
            None => Ok(Gone::StillThere),
            Some(live) => Ok((live.as_deref() == Some(mark.crd_uid)).into()),
        }
    }

    /// The CRD live (its uid; None: none) when the ClusterMirror `name`
    /// (`uid`), absent from the cache and not seen deleted, was read
    /// absent; None while it is there. Listed by name, not read by a get:
    /// a get answers 404 also for a version the CRD no longer serves, and
    /// a list fails then. The CRD is read after it, never before: it could
    /// be marked for deletion between the two reads, and a CRD being
    /// deleted is marked so before any of its objects go. One read at a
    /// time, so that the copies of one ClusterMirror read it once.
    async fn read_absent(
        &self,
        served: &Served,
        key: &RequestKey,
        uid: &str,
    ) -> Result<Option<Option<String>>, kube::Error> {
        let _one_at_a_time = served.confirming.lock().await;
        if let Some(live) = served.deletions.absent_under(key, uid) {
            return Ok(Some(live));
        }
        let api = api_of(self.client.clone(), key);
        let by_name = ListParams::default().fields(&format!("metadata.name={}", key.name));
        let listed = api.list_metadata(&by_name).await?;
        if (listed.items.iter()).any(|object| object.metadata.uid.as_deref() == Some(uid)) {
            return Ok(None);
        }
        let live = served.crd_reads.read().await?.map(|crd| crd.uid);
        served.deletions.found_absent(key, uid, live.clone());
        Ok(Some(live))
    }
}

impl Served {
    /// The uid of the CRD the object `uid` was proven made under.
    pub(super) fn proven_made_under(&self, uid: &str) -> Option<String> {
        self.lock_made_under().get(uid).cloned()
    }

    /// Forgets what was proven of the objects whose uids `keep` does not
    /// hold.
    pub(super) fn forget_made_under(&self, keep: impl Fn(&str) -> bool) {
        self.lock_made_under().retain(|uid, _| keep(uid));
    }

    fn lock_made_under(&self) -> MutexGuard<'_, HashMap<String, String>> {
        self.made_under
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}
