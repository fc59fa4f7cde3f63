//! Prometheus metrics, under the names controller-runtime uses, so existing
//! dashboards and alerts work. No label carries an object's name or
//! namespace: the number of series stays flat as the cluster grows.

use std::{borrow::Cow, sync::Arc, time::Instant};

use prometheus_client::{
    encoding::{EncodeLabelSet, EncodeLabelValue, text::encode},
    metrics::{
        counter::Counter,
        family::Family,
        gauge::Gauge,
        histogram::{Histogram, exponential_buckets},
    },
    registry::Registry,
};

use crate::{
    contract::MANAGER_NAME,
    ops::health::Health,
    ops::process_metrics::ProcessCollector,
    ops::queue_metrics::{QueueTimes, Work},
    ops::watch_metrics::WatchCollector,
};

/// The outcome label of `controller_runtime_reconcile_total`.
#[derive(Debug, Clone, Copy, Hash, PartialEq, Eq, EncodeLabelValue)]
#[allow(non_camel_case_types)]
pub enum Outcome {
    success,
    error,
}

/// The writes of copies (companions and mirrors) the controller makes.
#[derive(Debug, Clone, Copy, Hash, PartialEq, Eq, EncodeLabelValue)]
#[allow(non_camel_case_types)]
pub enum Operation {
    create,
    update,
    delete,
    recreate,
}

/// The two reconcile loops.
#[derive(Debug, Clone, Copy, Hash, PartialEq, Eq, EncodeLabelValue)]
#[allow(non_camel_case_types)]
pub enum Loop {
    sync,
    prune,
}

impl Loop {
    pub const ALL: [Loop; 2] = [Loop::sync, Loop::prune];

    pub fn as_str(self) -> &'static str {
        match self {
            Loop::sync => "sync",
            Loop::prune => "prune",
        }
    }
}

/// What a resync did with one cached object.
#[derive(Debug, Clone, Copy, Hash, PartialEq, Eq, EncodeLabelValue)]
#[allow(non_camel_case_types)]
enum Verdict {
    queued,
    in_sync,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResyncLabels {
    r#loop: Loop,
    result: Verdict,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReconcileLabels {
    r#loop: Loop,
    result: Outcome,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LoopLabel {
    r#loop: Loop,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabel {
    kind: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OperationLabel {
    operation: Operation,
}

pub struct Metrics {
    registry: Registry,
    reconciles: Family<ReconcileLabels, Counter>,
    reconcile_errors: Family<LoopLabel, Counter>,
    terminal_errors: Family<LoopLabel, Counter>,
    reconcile_time: Histogram,
    active_workers: Gauge,
    queue_depth: Gauge,
    queue_adds: Counter,
    queue_retries: Counter,
    leader: Gauge,
    election_refused: Gauge,
    writes: Family<OperationLabel, Counter>,
    contested_restores: Counter,
    managed_sources: Family<KindLabel, Gauge>,
    failing_objects: Gauge,
    resync_objects: Family<ResyncLabels, Counter>,
    queue_times: QueueTimes,
}

impl Metrics {
    pub fn new(max_concurrent_reconciles: u16, lease_name: &str) -> Self {
        let mut registry = Registry::default();
        let this = Metrics {
            registry: Registry::default(),
            reconciles: Family::default(),
            reconcile_errors: Family::default(),
            terminal_errors: Family::default(),
            reconcile_time: Histogram::new(exponential_buckets(0.0005, 2.0, 16)),
            active_workers: Gauge::default(),
            queue_depth: Gauge::default(),
            queue_adds: Counter::default(),
            queue_retries: Counter::default(),
            leader: Gauge::default(),
            election_refused: Gauge::default(),
            writes: Family::default(),
            contested_restores: Counter::default(),
            managed_sources: Family::default(),
            failing_objects: Gauge::default(),
            resync_objects: Family::default(),
            queue_times: QueueTimes::new(),
        };
        // Every loop's series exist from the start, at zero: a rate or an
        // alert on them has something to compare with before the first error.
        for which in Loop::ALL {
            for result in [Outcome::success, Outcome::error] {
                let labels = ReconcileLabels {
                    r#loop: which,
                    result,
                };
                this.reconciles.get_or_create(&labels).inc_by(0);
            }
            let label = LoopLabel { r#loop: which };
            this.reconcile_errors.get_or_create(&label).inc_by(0);
            this.terminal_errors.get_or_create(&label).inc_by(0);
        }
        let max_concurrent: Gauge = Gauge::default();
        max_concurrent.set(i64::from(max_concurrent_reconciles));

        let runtime = registry.sub_registry_with_label(label("controller", MANAGER_NAME));
        runtime.register(
            "controller_runtime_reconcile",
            "Reconciliations by loop and result",
            this.reconciles.clone(),
        );
        runtime.register(
            "controller_runtime_reconcile_errors",
            "Reconciliations that failed, by loop",
            this.reconcile_errors.clone(),
        );
        runtime.register(
            "controller_runtime_terminal_reconcile_errors",
            "Reconciliations that failed in a way retrying cannot fix, by loop",
            this.terminal_errors.clone(),
        );
        runtime.register(
            "controller_runtime_reconcile_time_seconds",
            "Time per reconciliation",
            this.reconcile_time.clone(),
        );
        runtime.register(
            "controller_runtime_max_concurrent_reconciles",
            "Most reconciliations run at once",
            max_concurrent,
        );
        runtime.register(
            "controller_runtime_active_workers",
            "Reconciliations running now",
            this.active_workers.clone(),
        );

        let queue = registry.sub_registry_with_label(label("name", MANAGER_NAME));
        queue.register(
            "workqueue_depth",
            "Triggers waiting to be taken into the controller's queue",
            this.queue_depth.clone(),
        );
        queue.register(
            "workqueue_adds",
            "Triggers handed to the controller's queue",
            this.queue_adds.clone(),
        );
        queue.register(
            "workqueue_retries",
            "Reconciliations requeued after an error",
            this.queue_retries.clone(),
        );
        this.queue_times.register(queue);

        let election = registry.sub_registry_with_label(label("name", lease_name.to_owned()));
        election.register(
            "leader_election_master_status",
            "1 while this replica holds the lease",
            this.leader.clone(),
        );

        registry.register(
            // Named before there were mirrors; it counts theirs too, and
            // keeps its name for the dashboards and alerts that use it.
            "configmap_mirror_companion_writes",
            "Companion writes by operation",
            this.writes.clone(),
        );
        registry.register(
            "configmap_mirror_contested_restores",
            "Restores of a copy held back because someone else keeps undoing it (Warning CopyContested)",
            this.contested_restores.clone(),
        );
        registry.register(
            "configmap_mirror_leader_election_failing",
            "1 while the API server refuses this replica's Lease requests (see /readyz for why)",
            this.election_refused.clone(),
        );
        registry.register(
            "configmap_mirror_managed_sources",
            "Managed sources in the cache, by kind",
            this.managed_sources.clone(),
        );
        registry.register(
            "configmap_mirror_failing_objects",
            "Objects whose last reconcile failed, for which retry state is kept",
            this.failing_objects.clone(),
        );
        registry.register(
            "configmap_mirror_resync_objects",
            "Cached objects compared after a (re)list or a change of leader, by whether their reconcile was queued",
            this.resync_objects.clone(),
        );
        registry.register_collector(Box::new(ProcessCollector));
        Metrics { registry, ..this }
    }

    /// Exports how long each of `health`'s watches has been failing.
    pub fn register_watches(&mut self, health: Arc<Health>) {
        self.registry
            .register_collector(Box::new(WatchCollector(health)));
    }

    /// The gauge the retry bookkeeping keeps at its size.
    pub fn failing_objects(&self) -> Gauge {
        self.failing_objects.clone()
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
        self.active_workers.inc();
        ReconcileTimer {
            metrics: self,
            which,
            started: Instant::now(),
            work: self.queue_times.work_started(),
            outcome: Outcome::error,
        }
    }

    pub fn reconcile_failed(&self, which: Loop, terminal: bool) {
        let label = LoopLabel { r#loop: which };
        self.reconcile_errors.get_or_create(&label).inc();
        if terminal {
            self.terminal_errors.get_or_create(&label).inc();
        }
        self.queue_retries.inc();
    }

    pub fn copy_written(&self, operation: Operation) {
        self.writes
            .get_or_create(&OperationLabel { operation })
            .inc();
    }

    /// A restore was held back: the copy is contested.
    pub fn restore_held_back(&self) {
        self.contested_restores.inc();
    }

    pub fn set_managed_sources(&self, kind: &str, count: usize) {
        self.managed_sources
            .get_or_create(&KindLabel { kind: kind.into() })
            .set(i64::try_from(count).unwrap_or(i64::MAX));
    }

    pub fn resynced(&self, which: Loop, checked: usize, queued: usize) {
        let count = |result, n: usize| {
            self.resync_objects
                .get_or_create(&ResyncLabels {
                    r#loop: which,
                    result,
                })
                .inc_by(u64::try_from(n).unwrap_or(u64::MAX));
        };
        count(Verdict::queued, queued);
        count(Verdict::in_sync, checked.saturating_sub(queued));
    }

    pub fn trigger_queued(&self) {
        self.queue_depth.inc();
        self.queue_adds.inc();
    }

    /// A wakeup queued at `queued_at` was taken by the sync loop.
    pub fn trigger_taken(&self, queued_at: Instant) {
        // Timed before it leaves the depth, as for running work.
        self.queue_times.taken(queued_at);
        self.queue_depth.dec();
    }

    pub fn set_leader(&self, leading: bool) {
        self.leader.set(i64::from(leading));
    }

    pub fn set_election_refused(&self, refused: bool) {
        self.election_refused.set(i64::from(refused));
    }
}

/// Records a reconcile's duration and outcome when finished.
/// Records one reconcile when dropped, so that one cancelled (at
/// shutdown) or panicking is counted too, as an error.
pub struct ReconcileTimer<'a> {
    metrics: &'a Metrics,
    which: Loop,
    started: Instant,
    work: Work,
    outcome: Outcome,
}

impl ReconcileTimer<'_> {
    pub fn finish(mut self, outcome: Outcome) {
        self.outcome = outcome;
    }
}

impl Drop for ReconcileTimer<'_> {
    fn drop(&mut self) {
        self.metrics
            .reconciles
            .get_or_create(&ReconcileLabels {
                r#loop: self.which,
                result: self.outcome,
            })
            .inc();
        self.metrics
            .reconcile_time
            .observe(self.started.elapsed().as_secs_f64());
        // Timed before it stops counting as running: a scrape that sees no
        // reconcile running sees every one timed.
        self.metrics.queue_times.work_finished(&self.work);
        self.metrics.active_workers.dec();
    }
}

fn label(
    key: &'static str,
    value: impl Into<Cow<'static, str>>,
) -> (Cow<'static, str>, Cow<'static, str>) {
    (Cow::Borrowed(key), value.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_render_under_controller_runtime_names() {
        let metrics = Metrics::new(16, "configmap-mirror");
        metrics
            .reconcile_started(Loop::sync)
            .finish(Outcome::success);
        metrics.reconcile_failed(Loop::prune, true);
        metrics.restore_held_back();
        metrics.copy_written(Operation::create);
        metrics.resynced(Loop::sync, 3, 1);
        let text = metrics.render();
        for expected in [
            "controller_runtime_reconcile_total{controller=\"configmap-mirror\",loop=\"sync\",result=\"success\"} 1",
            "controller_runtime_reconcile_total{controller=\"configmap-mirror\",loop=\"prune\",result=\"error\"} 0",
            "controller_runtime_reconcile_errors_total{controller=\"configmap-mirror\",loop=\"prune\"} 1",
            "controller_runtime_reconcile_errors_total{controller=\"configmap-mirror\",loop=\"sync\"} 0",
            "controller_runtime_terminal_reconcile_errors_total{controller=\"configmap-mirror\",loop=\"prune\"} 1",
            "controller_runtime_max_concurrent_reconciles{controller=\"configmap-mirror\"} 16",
            "controller_runtime_active_workers{controller=\"configmap-mirror\"} 0",
            "controller_runtime_reconcile_time_seconds_count{controller=\"configmap-mirror\"} 1",
            "workqueue_adds_total{name=\"configmap-mirror\"} 0",
            "workqueue_work_duration_seconds_count{name=\"configmap-mirror\"} 1",
            "workqueue_queue_duration_seconds_count{name=\"configmap-mirror\"} 0",
            "workqueue_unfinished_work_seconds{name=\"configmap-mirror\"} 0",
            "workqueue_longest_running_processor_seconds{name=\"configmap-mirror\"} 0",
            "leader_election_master_status{name=\"configmap-mirror\"} 0",
            "configmap_mirror_companion_writes_total{operation=\"create\"} 1",
            "configmap_mirror_contested_restores_total 1",
            "configmap_mirror_resync_objects_total{loop=\"sync\",result=\"queued\"} 1",
            "configmap_mirror_resync_objects_total{loop=\"sync\",result=\"in_sync\"} 2",
        ] {
            assert!(text.contains(expected), "missing {expected} in:\n{text}");
        }
    }
}
