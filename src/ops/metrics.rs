//! Prometheus metrics, under the names controller-runtime uses, so existing
//! dashboards and alerts work. No label carries the name or namespace of
//! a source or a copy: the number of series stays flat as the cluster
//! grows (a ClusterMirror, an admin's object few per cluster, is named).
//!
//! One module per thing measured: [`reconciles`], the sync loop's
//! [`queue`] and its [`queue_times`], the [`copies`], the [`leader`], the
//! [`objects`] held, the [`cluster_mirrors`] and their [`orphans`], the
//! [`watches`] and the [`process`]; each registers its series as one
//! table ([`series`]).

mod cluster_mirrors;
mod copies;
mod leader;
mod objects;
mod orphans;
mod process;
mod queue;
mod queue_times;
mod reconciles;
mod series;
mod watches;

use std::{borrow::Cow, sync::Arc, time::Instant};

use prometheus_client::{encoding::text::encode, metrics::gauge::Gauge, registry::Registry};

use crate::{
    contract::MANAGER_NAME,
    contract::Operation,
    decisions::request_key::{RequestKey, RequestKind},
    ops::health::Health,
};

pub use orphans::{CountOrphans, OrphanCounts, Orphans};
pub use reconciles::{Loop, Outcome, ReconcileTimer};

pub struct Metrics {
    registry: Registry,
    reconciles: reconciles::Reconciles,
    queue: queue::Queue,
    copies: copies::Copies,
    leader: leader::Leader,
    objects: objects::Objects,
    cluster_mirrors: cluster_mirrors::ClusterMirrors,
    orphans: Orphans,
}

impl Metrics {
    pub fn new(max_concurrent_reconciles: u16, lease_name: &str) -> Self {
        let mut registry = Registry::default();
        let this = Metrics {
            registry: Registry::default(),
            reconciles: reconciles::Reconciles::new(max_concurrent_reconciles),
            queue: queue::Queue::new(),
            copies: copies::Copies::new(),
            leader: leader::Leader::default(),
            objects: objects::Objects::default(),
            cluster_mirrors: cluster_mirrors::ClusterMirrors::default(),
            orphans: Orphans::default(),
        };
        this.reconciles
            .register(registry.sub_registry_with_label(label("controller", MANAGER_NAME)));
        this.queue
            .register(registry.sub_registry_with_label(label("name", MANAGER_NAME)));
        this.leader
            .register(registry.sub_registry_with_label(label("name", lease_name.to_owned())));
        this.copies.register(&mut registry);
        this.leader.register_refusal(&mut registry);
        this.objects.register(&mut registry);
        this.cluster_mirrors.register(&mut registry);
        registry.register_collector(Box::new(process::ProcessCollector));
        registry.register_collector(Box::new(orphans::OrphanCollector(this.orphans.clone())));
        Metrics { registry, ..this }
    }

    /// Exports how long each of `health`'s watches has been failing.
    pub fn register_watches(&mut self, health: Arc<Health>) {
        self.registry
            .register_collector(Box::new(watches::WatchCollector(health)));
    }

    /// Prometheus text exposition of every metric.
    pub fn render(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = encode(&mut out, &self.registry);
        out
    }

    /// Marks a reconcile of loop `which` as running until the returned
    /// guard is finished.
    pub fn reconcile_started(&self, which: Loop) -> ReconcileTimer<'_> {
        self.reconciles.started(which, self.queue.times())
    }

    pub fn reconcile_failed(&self, which: Loop, terminal: bool) {
        self.reconciles.failed(which, terminal);
        self.queue.retried();
    }

    pub fn trigger_queued(&self) {
        self.queue.queued();
    }

    /// A wakeup queued at `queued_at` was taken by the sync loop.
    pub fn trigger_taken(&self, queued_at: Instant) {
        self.queue.taken(queued_at);
    }

    pub fn copy_written(&self, operation: Operation) {
        self.copies.written(operation);
    }

    /// A restore was held back: the copy is contested.
    pub fn restore_held_back(&self) {
        self.copies.restore_held_back();
    }

    /// A sync reconcile woken by a wakeup queued at `queued_at` succeeded
    /// now: the source's copies are what they should be.
    pub fn synced_since(&self, queued_at: Instant) {
        self.copies.healed(queued_at.elapsed());
    }

    pub fn set_leader(&self, leading: bool) {
        self.leader.set_leading(leading);
    }

    pub fn set_election_refused(&self, refused: bool) {
        self.leader.set_refused(refused);
    }

    /// The gauge the budget of copies in flight keeps at the bytes it
    /// lends.
    pub fn copy_bytes_in_flight(&self) -> Gauge {
        self.copies.bytes_in_flight()
    }

    /// The gauge the budget of reads keeps at the bytes it lends.
    pub fn read_bytes_in_flight(&self) -> Gauge {
        self.copies.read_bytes_in_flight()
    }

    /// The gauge the retry bookkeeping keeps at its size.
    pub fn failing_objects(&self) -> Gauge {
        self.objects.failing()
    }

    pub fn set_managed_sources(&self, kind: &str, count: usize) {
        self.objects.set_managed_sources(kind, count);
    }

    /// A ClusterMirror's or a Mirror's namespaces: selected, synced and
    /// failed.
    pub fn set_request_targets(&self, key: &RequestKey, counts: [usize; 3]) {
        self.cluster_mirrors.set_targets(key, counts);
    }

    /// A ClusterMirror that is gone has no series; a Mirror gone counts no
    /// more.
    pub fn forget_request(&self, key: &RequestKey) {
        self.cluster_mirrors.forget(key);
    }

    /// Counts one kind's ClusterMirror orphans at each scrape.
    pub fn count_orphans_with(&self, count: CountOrphans) {
        self.orphans.add(count);
    }

    pub fn set_crd_present(&self, kind: RequestKind, present: bool) {
        self.cluster_mirrors.set_crd_present(kind, present);
    }

    pub fn resynced(&self, which: Loop, checked: usize, queued: usize) {
        self.objects.resynced(which, checked, queued);
    }
}

fn label(
    key: &'static str,
    value: impl Into<Cow<'static, str>>,
) -> (Cow<'static, str>, Cow<'static, str>) {
    (Cow::Borrowed(key), value.into())
}

#[cfg(test)]
mod tests;
