//! What every reconcile is handed.

use std::{
    collections::HashMap,
    hash::{DefaultHasher, Hash, Hasher},
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
    /// The workers each namespace's sources hold in the sync loop.
    pub sync_workers: WorkerShares<ObjectRef<K>>,
    /// Namespaces already told that their `accept-mirrors-from` cannot be
    /// read, with the value they were told about: once per value.
    pub namespace_warnings: NamespaceWarnings,
    pub leadership: Leadership,
    pub shutdown: Shutdown,
    /// What the ClusterMirror loop knows of the ClusterMirrors, shared by
    /// every kind, when this install mirrors into other namespaces.
    pub cluster_mirrors: Option<Arc<ClusterMirrorCaches>>,
}

impl<K: MirroredKind> Context<K> {
    /// See [`Around::ensure_leading`].
    pub fn ensure_leading(&self) -> Result<(), Error> {
        self.around().ensure_leading()
    }

    /// What every reconcile of this kind does around its work.
    pub fn around(&self) -> Around<'_> {
        Around {
            metrics: &self.metrics,
            backoffs: &self.backoffs,
            retry_policy: &self.retry_policy,
            leadership: &self.leadership,
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

    /// Objects of the mirrored kind in `namespace`.
    pub fn api(&self, namespace: &str) -> Api<K> {
        Api::namespaced(self.client.clone(), namespace)
    }
}

/// What every reconcile does around its work, of whichever loop and kind:
/// only the leader works, time, outcome and retries are counted.
#[derive(Clone, Copy)]
pub struct Around<'a> {
    pub metrics: &'a Metrics,
    pub backoffs: &'a Backoffs,
    pub retry_policy: &'a RetryPolicy,
    pub leadership: &'a Leadership,
}

impl Around<'_> {
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

    /// What every loop does around its work: only the leader works (a
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

    /// Counts a failed reconcile of `key` and says when to try again.
    pub fn requeue_after_failure(&self, key: &BackoffKey, error: &Error) -> Action {
        self.metrics
            .reconcile_failed(key.which(), error.is_terminal());
        match self
            .backoffs
            .delay_for(key, error.retry(), self.retry_policy)
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
}

/// The Namespaces told of a malformed `workshop.io/accept-mirrors-from`, and
/// a digest of the value each was told of: a namespace's owner writes up to
/// 8 KiB there, and a number per namespace is all that is kept of it.
#[derive(Default)]
pub struct NamespaceWarnings(Mutex<Told>);

#[derive(Default)]
struct Told {
    by_namespace: HashMap<String, u64>,
    /// Namespaces kept by the last sweep of the gone ones.
    kept: usize,
}

/// Below this many namespaces told, the gone ones are not swept.
const SWEEP_FLOOR: usize = 64;

impl NamespaceWarnings {
    /// Whether `namespace` has not been told of `value` yet; from now on it
    /// has. A cluster that creates and deletes namespaces keeps no record
    /// of the gone ones for long: whenever the namespaces told have doubled
    /// since the last sweep, those for which `exists` is false are
    /// forgotten, so each new namespace costs a constant share of a sweep,
    /// and a value changed again and again costs none.
    pub fn is_new(&self, namespace: &str, value: &str, exists: impl Fn(&str) -> bool) -> bool {
        let digest = value_digest(value);
        let mut told = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if told.by_namespace.get(namespace) == Some(&digest) {
            return false;
        }
        if told.by_namespace.len() >= (2 * told.kept).max(SWEEP_FLOOR) {
            told.by_namespace
                .retain(|told_namespace, _| exists(told_namespace));
            told.kept = told.by_namespace.len();
        }
        told.by_namespace.insert(namespace.to_owned(), digest);
        true
    }
}

/// A digest of a value, stable within the process. Two values of one
/// digest would only spare their namespace a second Warning.
fn value_digest(value: &str) -> u64 {
    let mut hasher = DefaultHasher::new();
    value.hash(&mut hasher);
    hasher.finish()
}

#[cfg(test)]
mod namespace_warnings_tests {
    use super::{NamespaceWarnings, SWEEP_FLOOR};

    fn told(warnings: &NamespaceWarnings) -> usize {
        (warnings.0.lock())
            .map(|told| told.by_namespace.len())
            .unwrap_or_default()
    }

    #[test]
    fn a_namespace_is_told_once_per_value() {
        let warnings = NamespaceWarnings::default();
        let all = |_: &str| true;
        assert!(warnings.is_new("a", "x,,", all));
        assert!(!warnings.is_new("a", "x,,", all), "told once per value");
        assert!(warnings.is_new("a", "y,,", all), "a new value is told");
        assert!(warnings.is_new("a", "x,,", all), "and the old one again");
        assert!(warnings.is_new("b", "x,,", all), "each namespace is told");
    }

    #[test]
    fn gone_namespaces_are_forgotten_once_the_record_has_doubled() {
        let warnings = NamespaceWarnings::default();
        let gone = |ns: &str| !ns.starts_with("gone-");
        for i in 0..SWEEP_FLOOR {
            assert!(warnings.is_new(&format!("gone-{i}"), "x,,", |_: &str| true));
        }
        assert_eq!(told(&warnings), SWEEP_FLOOR);
        assert!(warnings.is_new("live-0", "x,,", gone));
        assert_eq!(told(&warnings), 1, "the gone ones swept, the new one kept");
        assert!(
            warnings.is_new("gone-0", "x,,", gone),
            "a namespace made again is told again"
        );
    }

    #[test]
    fn a_value_changed_again_and_again_sweeps_nothing() {
        let warnings = NamespaceWarnings::default();
        for i in 0..SWEEP_FLOOR {
            assert!(warnings.is_new(&format!("ns-{i}"), "x,,", |_: &str| true));
        }
        let calls = std::cell::Cell::new(0);
        let counted = |_: &str| {
            calls.set(calls.get() + 1);
            true
        };
        for round in 0..1_000 {
            assert!(warnings.is_new("ns-0", &format!("{round},,"), counted));
        }
        assert_eq!(
            calls.get(),
            SWEEP_FLOOR,
            "one sweep, then none until the record doubles"
        );
    }
}
