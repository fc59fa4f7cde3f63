//! What a kind's loops know of the ClusterMirrors: the shared cache of
//! their requests, this kind's cache of the objects they may copy (and,
//! for the ConfigMap loop, the Secrets whose keys it may publish), and
//! which namespaces none of them writes into.

use std::{
    collections::HashMap,
    sync::{Mutex, MutexGuard, PoisonError},
    time::Instant,
};

use k8s_openapi::api::core::v1::Secret;

use crate::{
    api::{ClusterMirrorStatus, SourceKind, StoredClusterMirror},
    cluster::cluster_mirrors::ClusterMirrors,
    cluster::cluster_sources::ClusterSources,
    decisions::cluster_mirror::{Request, standing::Standing},
    decisions::consent::Consent,
    kind::MirroredKind,
    kind::secret::{SecretSourceRules, SharedDigestKey},
    reconcile::pending::PendingScopes,
};

pub struct ClusterMirrorCaches<K: MirroredKind> {
    pub mirrors: ClusterMirrors,
    pub sources: ClusterSources<K>,
    /// The Secrets this kind's copies may publish the keys of
    /// (`target.kind: ConfigMap`): for the ConfigMap loop of an install
    /// that mirrors Secrets too; None otherwise.
    pub published: Option<PublishedSecrets>,
    /// The protected namespaces and the allowed source namespaces.
    pub consent: Consent,
    /// Kinds this install does not mirror, whose ClusterMirrors this
    /// kind's loop reports on (they are told why nothing is copied).
    pub reports_for: Vec<SourceKind>,
    /// The install's identity toward ClusterMirrors: the class it serves,
    /// and the field manager its status writes name it by.
    pub install: InstallClass,
    /// Per ClusterMirror: the status last written and when, and the Ready
    /// reason last told in an Event.
    pub(super) reported: Mutex<HashMap<String, Reported>>,
    /// Per ClusterMirror: when the wakeups waiting for its next reconcile
    /// came and what they ask it to compare, as a source's.
    pub(super) pending: PendingScopes<String>,
    /// Per ClusterMirror: where its copies stood after its last full
    /// comparison, for a narrower one to build on.
    standing: Mutex<HashMap<String, Standing>>,
}

/// What the ConfigMap loop reads to publish Secrets' keys: the Secrets
/// ClusterMirrors may copy (the Secret loop's cache, shared), the
/// install's key, under which such a copy's checksum is keyed, and which
/// Secrets are never sources (its own key among them).
#[derive(Clone)]
pub struct PublishedSecrets {
    pub sources: ClusterSources<Secret>,
    pub key: SharedDigestKey,
    pub rules: SecretSourceRules,
}

/// Which ClusterMirrors an install serves (`--cluster-mirror-class`), and
/// the field manager it writes their status under.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InstallClass {
    pub class: String,
    pub field_manager: String,
}

#[derive(Default)]
pub(super) struct Reported {
    pub(super) status: Option<ClusterMirrorStatus>,
    pub(super) written_at: Option<Instant>,
    pub(super) told: Option<&'static str>,
    /// The other installs' field managers already told of, as having
    /// written its status.
    pub(super) conflicts_told: Vec<String>,
}

impl<K: MirroredKind> ClusterMirrorCaches<K> {
    pub fn new(
        mirrors: ClusterMirrors,
        sources: ClusterSources<K>,
        published: Option<PublishedSecrets>,
        consent: Consent,
        reports_for: Vec<SourceKind>,
        install: InstallClass,
    ) -> ClusterMirrorCaches<K> {
        ClusterMirrorCaches {
            mirrors,
            sources,
            published,
            consent,
            reports_for,
            install,
            reported: Mutex::default(),
            pending: PendingScopes::default(),
            standing: Mutex::default(),
        }
    }

    /// Where `name`'s copies stood after its last full comparison.
    pub(super) fn standing(&self, name: &str) -> Option<Standing> {
        lock(&self.standing).get(name).cloned()
    }

    /// Keeps (or, with None, drops) where `name`'s copies stand.
    pub(super) fn stand(&self, name: &str, standing: Option<Standing>) {
        let mut all = lock(&self.standing);
        match standing {
            Some(standing) => all.insert(name.to_owned(), standing),
            None => all.remove(name),
        };
    }

    /// Whether this kind's loop reconciles ClusterMirrors whose copies are
    /// of `kind`. A ClusterMirror whose kind is neither (None: one this controller
    /// does not know) is reported on by the ConfigMap loop.
    pub fn serves(&self, kind: Option<SourceKind>) -> bool {
        match kind {
            Some(kind) => kind == K::SOURCE_KIND || self.reports_for.contains(&kind),
            None => K::SOURCE_KIND == SourceKind::ConfigMap,
        }
    }

    /// Whether this install serves the ClusterMirror `object` at all: its
    /// `spec.className` is the install's class (read even from a spec that
    /// does not read otherwise).
    pub fn serves_class(&self, object: &StoredClusterMirror) -> bool {
        object.class() == self.install.class
    }

    /// Whether this kind's loop reconciles `request`: of its class and kind.
    pub fn serves_request(&self, request: &Request) -> bool {
        request.served_by(&self.install.class) && self.serves(Some(request.copy_kind()))
    }

    pub(super) fn reported(&self) -> MutexGuard<'_, HashMap<String, Reported>> {
        lock(&self.reported)
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
