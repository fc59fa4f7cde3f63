//! What the ClusterMirror loop, and each kind's prune, know of the
//! ClusterMirrors: the cache of their requests, the cache of each source
//! kind's objects they may copy, and which namespaces none of them writes
//! into.

use std::{
    collections::{BTreeSet, HashMap},
    sync::{Mutex, MutexGuard, PoisonError},
    time::Instant,
};

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::runtime::reflector::ObjectRef;

use crate::{
    api::{ClusterMirrorStatus, SourceKind, StoredClusterMirror},
    cluster::cluster_mirrors::ClusterMirrors,
    cluster::cluster_sources::ClusterSources,
    decisions::cluster_mirror::{Origin, Request, standing::Standing},
    decisions::consent::Consent,
    decisions::request_key::RequestKey,
    kind::secret::{SecretSourceRules, SharedDigestKey},
    reconcile::pending::PendingScopes,
    reconcile::worker_share::WorkerShares,
};

pub struct ClusterMirrorCaches {
    pub mirrors: ClusterMirrors,
    /// The ConfigMaps ClusterMirrors may copy, when this install mirrors
    /// ConfigMaps.
    pub configmaps: Option<ClusterSources<ConfigMap>>,
    /// The Secrets ClusterMirrors may copy, or publish the keys of, when
    /// this install mirrors Secrets.
    pub secrets: Option<SecretSources>,
    /// The protected namespaces and the allowed source namespaces.
    pub consent: Consent,
    /// The install's identity toward ClusterMirrors: the class it serves,
    /// and the field manager its status writes name it by.
    pub install: InstallClass,
    /// Per ClusterMirror: the status last written and when, and the Ready
    /// reason last told in an Event.
    pub(super) reported: Mutex<HashMap<RequestKey, Reported>>,
    /// Per ClusterMirror: when the wakeups waiting for its next reconcile
    /// came and what they ask it to compare, as a source's.
    pub(super) pending: PendingScopes<RequestKey>,
    /// Per ClusterMirror: where its copies stood after its last full
    /// comparison, for a narrower one to build on.
    standing: Mutex<HashMap<RequestKey, Standing>>,
    /// Per ClusterMirror: whether its reconciles write copies (neither
    /// suspended, blocked nor failing), from before the first write of
    /// each. Only while it writes does it claim its copies' name where it
    /// has no copy yet (`Request::claims`).
    writing: Mutex<HashMap<RequestKey, bool>>,
    /// The workers each source namespace's ClusterMirrors hold.
    pub(super) workers: WorkerShares<ObjectRef<StoredClusterMirror>>,
}

/// The Secrets ClusterMirrors may copy, with what a copy of one needs: the
/// install's key, under which every copy of a Secret's content is
/// checksummed, whatever the copy's kind, and which Secrets are never
/// sources (the key's own among them).
#[derive(Clone)]
pub struct SecretSources {
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

impl ClusterMirrorCaches {
    pub fn new(
        mirrors: ClusterMirrors,
        configmaps: Option<ClusterSources<ConfigMap>>,
        secrets: Option<SecretSources>,
        consent: Consent,
        install: InstallClass,
        workers: u16,
    ) -> ClusterMirrorCaches {
        ClusterMirrorCaches {
            mirrors,
            configmaps,
            secrets,
            consent,
            install,
            reported: Mutex::default(),
            pending: PendingScopes::default(),
            standing: Mutex::default(),
            writing: Mutex::default(),
            workers: WorkerShares::new(workers),
        }
    }

    /// Where `key`'s copies stood after its last full comparison.
    pub(super) fn standing(&self, key: &RequestKey) -> Option<Standing> {
        lock(&self.standing).get(key).cloned()
    }

    /// Keeps (or, with None, drops) where `key`'s copies stand.
    pub(super) fn stand(&self, key: &RequestKey, standing: Option<Standing>) {
        let mut all = lock(&self.standing);
        match standing {
            Some(standing) => all.insert(key.clone(), standing),
            None => all.remove(key),
        };
    }

    /// Keeps whether `key`'s reconciles write copies.
    pub(super) fn writes_for(&self, key: &RequestKey, writes: bool) {
        lock(&self.writing).insert(key.clone(), writes);
    }

    /// Forgets what `key`'s reconciles did.
    pub(super) fn forget_writes(&self, key: &RequestKey) {
        lock(&self.writing).remove(key);
    }

    /// Whether `request`'s ClusterMirror writes copies. One not reconciled
    /// since this process started (a new leader's) is taken to, unless
    /// suspended (`Request::claims`): its copies' names are not left open
    /// to a source's mirrors until it has looked. A spec changed since
    /// the last reconcile keeps the answer for the one before, until its
    /// own reconcile says otherwise: a change of spec opens no name
    /// between the delete and the create of an immutable copy.
    pub fn writes(&self, request: &Request) -> bool {
        (lock(&self.writing).get(&request.key()).copied()).unwrap_or(true)
    }

    /// Whether this install serves the ClusterMirror `object` at all: its
    /// `spec.className` is the install's class (read even from a spec that
    /// does not read otherwise).
    pub fn serves_class(&self, object: &StoredClusterMirror) -> bool {
        object.class() == self.install.class
    }

    /// Whether the objects of `kind` in `namespace` that requests may
    /// copy have been listed; true for a kind or a namespace not watched,
    /// whose requests their route refuses.
    pub fn sources_listed(&self, kind: SourceKind, namespace: &str) -> bool {
        match kind {
            SourceKind::ConfigMap => {
                (self.configmaps.as_ref()).is_none_or(|c| c.is_listed(namespace))
            }
            SourceKind::Secret => {
                (self.secrets.as_ref()).is_none_or(|s| s.sources.is_listed(namespace))
            }
        }
    }

    /// Whether the objects of `kind` in `namespace` are watched; true for a
    /// kind not watched at all, whose requests their route refuses.
    pub fn sources_watched(&self, kind: SourceKind, namespace: &str) -> bool {
        match kind {
            SourceKind::ConfigMap => {
                (self.configmaps.as_ref()).is_none_or(|c| c.is_watched(namespace))
            }
            SourceKind::Secret => {
                (self.secrets.as_ref()).is_none_or(|s| s.sources.is_watched(namespace))
            }
        }
    }

    /// Watches the sources of the Mirrors there are, in their namespaces,
    /// and no other namespace's besides the allowed ones.
    pub fn follow_mirror_sources(&self) {
        let mut configmaps = BTreeSet::new();
        let mut secrets = BTreeSet::new();
        for request in self.mirrors.requests() {
            if request.origin == Origin::ClusterMirror {
                continue;
            }
            let namespace = request.source_namespace.clone();
            match request.kind {
                SourceKind::ConfigMap => configmaps.insert(namespace),
                SourceKind::Secret => secrets.insert(namespace),
            };
        }
        if let Some(sources) = &self.configmaps {
            sources.follow_mirrors_in(&configmaps);
        }
        if let Some(secrets_sources) = &self.secrets {
            secrets_sources.sources.follow_mirrors_in(&secrets);
        }
    }

    pub(super) fn reported(&self) -> MutexGuard<'_, HashMap<RequestKey, Reported>> {
        lock(&self.reported)
    }
}

/// Where the loop's store holds the object of `key`.
pub fn object_ref(key: &RequestKey) -> ObjectRef<StoredClusterMirror> {
    let mut at = ObjectRef::new(&key.name);
    at.namespace.clone_from(&key.namespace);
    at
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
