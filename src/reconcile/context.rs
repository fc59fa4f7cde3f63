//! What every reconcile is handed.

use std::{
    collections::HashMap,
    sync::{
        Arc, Mutex, PoisonError,
        atomic::{AtomicU64, Ordering},
    },
    time::Instant,
};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::{Api, Client};
use tracing::{Instrument, Span};

use kube::runtime::{controller::Action, reflector::ObjectRef};

use crate::{
    api::StoredClusterMirror,
    cluster::events::EventPublisher,
    decisions::consent::Consent,
    decisions::install::Install,
    index::caches::Caches,
    kind::MirroredKind,
    ops::leader::Leadership,
    ops::metrics::{Loop, Metrics, Outcome},
    ops::shutdown::Shutdown,
    reconcile::backoff::{BackoffKey, Backoffs, RetryPolicy},
    reconcile::cluster_mirror::caches::ClusterMirrorCaches,
    reconcile::contest::Contests,
    reconcile::copy_budget::ByteBudget,
    reconcile::error::Error,
    reconcile::pending::PendingScopes,
    reconcile::source_read::coalesced::FreshReads,
    reconcile::worker_share::WorkerShares,
};

pub struct Context<K: MirroredKind> {
    pub client: Client,
    pub caches: Caches<K>,
    /// The install's settings, which every copy is decided with.
    pub install: Install,
    /// Where the key of this kind's checksums is read, once per reconcile.
    pub digest_key: K::KeyHandle,
    /// Which objects of this kind the install refuses as sources.
    pub source_rules: K::SourceRules,
    pub events: EventPublisher,
    pub metrics: Arc<Metrics>,
    pub backoffs: Arc<Backoffs>,
    /// Recent writes of each copy, to tell a fight from following the source.
    pub contests: Contests,
    /// When each source's pending sync was asked for.
    pub pending: PendingScopes<ObjectRef<K>>,
    pub retry_policy: RetryPolicy,
    /// Which namespaces accept this kind's mirrors, and from where.
    pub consent: Consent,
    /// Where a write's source is read afresh, batched with the other
    /// reads of its namespace.
    pub fresh_reads: FreshReads<K>,
    /// The bytes of the copies being written, process-wide.
    pub copy_budget: Arc<ByteBudget>,
    /// The bytes of the sources read afresh and held, process-wide.
    pub read_budget: Arc<ByteBudget>,
    /// The workers each namespace's sources hold, in the sync loop and in
    /// the ClusterMirror loop (by the namespace of its source).
    pub sync_workers: WorkerShares<ObjectRef<K>>,
    pub cluster_mirror_workers: WorkerShares<ObjectRef<StoredClusterMirror>>,
    /// Namespaces already told that their `accept-mirrors-from` cannot be
    /// read, with the value they were told about: once per value.
    pub namespace_warnings: NamespaceWarnings,
    pub leadership: Leadership,
    pub shutdown: Shutdown,
    /// The ClusterMirrors of this kind, when this install mirrors into
    /// other namespaces.
    pub cluster_mirrors: Option<ClusterMirrorCaches<K>>,
}

impl<K: MirroredKind> Context<K> {
    /// Whether this replica may write. Always true without leader election.
    pub fn is_leading(&self) -> bool {
        self.leadership.is_leading()
    }

    /// Checked immediately before every write: a replica whose renew
    /// deadline has passed must not send one, even mid-reconcile.
    pub fn ensure_leading(&self) -> Result<(), Error> {
        match self.is_leading() {
            true => Ok(()),
            false => Err(Error::NotLeading),
        }
    }

    /// What both loops do around their work: only the leader works (a
    /// standby keeps its caches warm and writes nothing; it reconciles
    /// everything when it becomes the leader); time and outcome are
    /// measured, and for a reconcile woken at `woken_at` that succeeds, the
    /// time since; a success forgets the object's earlier failures.
    pub async fn run_reconcile(
        &self,
        which: Loop,
        object: &ObjectMeta,
        backoff_key: &BackoffKey,
        woken_at: Option<Instant>,
        work: impl Future<Output = Result<(), Error>>,
    ) -> Result<Action, Error> {
        if !self.is_leading() {
            return Ok(Action::await_change());
        }
        let timer = self.metrics.reconcile_started(which);
        let result = work
            .instrument(self.reconcile_span(which.as_str(), object))
            .await;
        timer.finish(if result.is_ok() {
            Outcome::success
        } else {
            Outcome::error
        });
        match result {
            Ok(()) => {
                if let Some(woken_at) = woken_at {
                    self.metrics.synced_since(woken_at);
                }
                self.backoffs.clear(backoff_key);
                Ok(Action::await_change())
            }
            Err(Error::NamespaceTerminating | Error::ShuttingDown | Error::NotLeading) => {
                Ok(Action::await_change())
            }
            Err(error) => Err(error),
        }
    }

    /// Waits until every cache has completed its initial list: before that,
    /// every copy would look missing and every source gone. Gives up when
    /// the process is asked to stop, which may be before the caches can
    /// ever sync (the API server unreachable, or a list forbidden).
    pub async fn caches_ready(&self) -> Result<(), Error> {
        tokio::select! {
            () = self.caches.wait_ready() => Ok(()),
            _ = self.shutdown.requested() => Err(Error::ShuttingDown),
        }
    }

    /// Counts a failed reconcile of `key` and says when to try again.
    pub fn requeue_after_failure(&self, key: &BackoffKey, error: &Error) -> Action {
        self.metrics
            .reconcile_failed(key.which(), error.is_terminal());
        match self
            .backoffs
            .delay_for(key, error.retry(), &self.retry_policy)
        {
            Some(delay) => Action::requeue(delay),
            None => Action::await_change(),
        }
    }

    /// The span every log line of one reconcile carries.
    fn reconcile_span(&self, controller: &'static str, object: &ObjectMeta) -> Span {
        static NEXT_ID: AtomicU64 = AtomicU64::new(1);
        tracing::info_span!(
            "reconcile",
            controller,
            namespace = %object.namespace.as_deref().unwrap_or_default(),
            name = %object.name.as_deref().unwrap_or_default(),
            reconcile_id = NEXT_ID.fetch_add(1, Ordering::Relaxed),
        )
    }

    /// Objects of the mirrored kind in `namespace`.
    pub fn api(&self, namespace: &str) -> Api<K> {
        Api::namespaced(self.client.clone(), namespace)
    }
}

/// The Namespaces told of a malformed `workshop.io/accept-mirrors-from`, and
/// the value each was told of.
#[derive(Default)]
pub struct NamespaceWarnings(Mutex<HashMap<String, String>>);

impl NamespaceWarnings {
    /// Whether `namespace` has not been told of `value` yet; from now on it
    /// has. Each time a value is recorded, the namespaces for which
    /// `exists` is false are forgotten: a cluster that creates and deletes
    /// namespaces keeps no record of the gone ones.
    pub fn is_new(&self, namespace: &str, value: &str, exists: impl Fn(&str) -> bool) -> bool {
        let mut told = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if told.get(namespace).map(String::as_str) == Some(value) {
            return false;
        }
        told.retain(|told_namespace, _| exists(told_namespace));
        told.insert(namespace.to_owned(), value.to_owned());
        true
    }
}

#[cfg(test)]
mod namespace_warnings_tests {
    use super::NamespaceWarnings;

    #[test]
    fn a_namespace_is_told_once_per_value_and_a_gone_one_is_forgotten() {
        let warnings = NamespaceWarnings::default();
        let all = |_: &str| true;
        assert!(warnings.is_new("a", "x,,", all));
        assert!(!warnings.is_new("a", "x,,", all), "told once per value");
        assert!(warnings.is_new("a", "y,,", all), "a new value is told");
        assert!(warnings.is_new("b", "z,,", |ns: &str| ns != "a"));
        let kept = warnings.0.lock().map(|told| told.len()).unwrap_or_default();
        assert_eq!(kept, 1, "the gone namespace a is forgotten");
        assert!(
            warnings.is_new("a", "y,,", all),
            "a namespace made again is told again"
        );
    }
}
