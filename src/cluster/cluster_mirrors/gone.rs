//! What became of a ClusterMirror the cache no longer holds, as its copy
//! asks and the API server answers: deleted by someone (its copies go by
//! its deletion policy), with its CRD (they stay, orphans), or not gone at
//! all (the cache is behind).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Api;

use super::ClusterMirrors;
use crate::{
    api::ClusterMirror,
    decisions::cluster_mirror::{DeletionMark, bound_cluster_mirror_uid},
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
    /// What became of the ClusterMirror `name` that `copy` is bound to,
    /// which the cache no longer holds: for a deletion seen, whether it was
    /// made by someone, its CRD live, read from the API server after the
    /// deletion was seen; for one nobody saw, what the copy's mark says of
    /// it, read likewise ([`Self::confirm_unseen`]). Once for all the
    /// copies of one ClusterMirror.
    pub async fn gone(&self, name: &str, copy: &ObjectMeta) -> Result<Gone, kube::Error> {
        let Some(uid) = bound_cluster_mirror_uid(copy) else {
            return Ok(Gone::WithItsCrd);
        };
        if let Some(settled) = self.deletions.settled(uid) {
            return Ok(settled.into());
        }
        if self.deletions.of(name, uid).is_some() {
            let live = self.crd_reads.live_since_absence().await?;
            return Ok(self.deletions.settle(uid, live.as_ref()).into());
        }
        match DeletionMark::on(copy) {
            Some(mark) => self.confirm_unseen(name, uid, mark).await,
            None => Ok(Gone::WithItsCrd),
        }
    }

    /// Whether the ClusterMirror `name` (`uid`), absent from the cache and
    /// not seen deleted, was deleted by someone: it is not there when
    /// read, and the CRD read after that is the one `mark` says it was
    /// made under, live. A CRD being deleted is marked so before any of
    /// its objects go, and one made again has another uid: so only a
    /// deletion by someone passes. Read in this order, never the CRD
    /// first: it could be marked for deletion between the two reads.
    async fn confirm_unseen(
        &self,
        name: &str,
        uid: &str,
        mark: DeletionMark<'_>,
    ) -> Result<Gone, kube::Error> {
        let _one_at_a_time = self.confirming.lock().await;
        if let Some(settled) = self.deletions.settled(uid) {
            return Ok(settled.into());
        }
        let api = Api::<ClusterMirror>::all(self.client.clone());
        let there = api.get_metadata_opt(name).await?;
        if there.is_some_and(|object| object.metadata.uid.as_deref() == Some(uid)) {
            return Ok(Gone::StillThere);
        }
        let live = self.crd_reads.live_now().await?;
        let by_someone = live.is_some_and(|crd| crd.uid == mark.crd_uid);
        self.deletions.confirmed(name, uid, mark.policy, by_someone);
        Ok(by_someone.into())
    }
}
