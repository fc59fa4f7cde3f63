//! What a kind's loops know of the ClusterMirrors: the shared cache of
//! their requests, this kind's cache of the objects they may copy, and
//! which namespaces none of them writes into.

use std::{
    collections::HashMap,
    sync::{Mutex, MutexGuard, PoisonError},
    time::Instant,
};

use crate::{
    api::ClusterMirrorStatus, cluster::cluster_mirrors::ClusterMirrors,
    cluster::cluster_sources::ClusterSources, decisions::consent::Consent, kind::MirroredKind,
};

pub struct ClusterMirrorSide<K: MirroredKind> {
    pub mirrors: ClusterMirrors,
    pub sources: ClusterSources<K>,
    /// The protected namespaces and the allowed source namespaces.
    pub consent: Consent,
    /// Kinds this install does not mirror, whose ClusterMirrors this
    /// kind's loop reports on (they are told why nothing is copied).
    pub reports_for: Vec<String>,
    /// Per ClusterMirror: the status last written and when, and the Ready
    /// reason last told in an Event.
    pub(super) reported: Mutex<HashMap<String, Reported>>,
}

#[derive(Default)]
pub(super) struct Reported {
    pub(super) status: Option<ClusterMirrorStatus>,
    pub(super) written_at: Option<Instant>,
    pub(super) told: Option<&'static str>,
}

impl<K: MirroredKind> ClusterMirrorSide<K> {
    pub fn new(
        mirrors: ClusterMirrors,
        sources: ClusterSources<K>,
        consent: Consent,
        reports_for: Vec<String>,
    ) -> ClusterMirrorSide<K> {
        ClusterMirrorSide {
            mirrors,
            sources,
            consent,
            reports_for,
            reported: Mutex::default(),
        }
    }

    /// Whether this kind's loop reconciles ClusterMirrors of `kind`.
    /// A ClusterMirror whose kind is neither is reported on by the
    /// ConfigMap loop.
    pub fn serves(&self, kind: &str) -> bool {
        let known = kind == "ConfigMap" || kind == "Secret";
        kind == K::kind(&())
            || self.reports_for.iter().any(|k| k == kind)
            || (!known && K::kind(&()) == "ConfigMap")
    }

    pub(super) fn reported(&self) -> MutexGuard<'_, HashMap<String, Reported>> {
        self.reported.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
