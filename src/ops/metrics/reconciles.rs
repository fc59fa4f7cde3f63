//! The reconciles of both loops, under controller-runtime's names
//! (`controller_runtime_*`, labeled `controller`): how many, with what
//! outcome, how long each took, how many run now.

use std::time::Instant;

use prometheus_client::{
    encoding::{EncodeLabelSet, EncodeLabelValue},
    metrics::{
        counter::Counter,
        family::Family,
        gauge::Gauge,
        histogram::{Histogram, exponential_buckets},
    },
    registry::Registry,
};

use super::queue_times::{QueueTimes, Work};
use super::series::register_all;

/// The outcome label of `controller_runtime_reconcile_total`.
#[derive(Debug, Clone, Copy, Hash, PartialEq, Eq, EncodeLabelValue)]
#[allow(non_camel_case_types)]
pub enum Outcome {
    success,
    error,
}

/// The `loop` label of the reconcile metrics. A ClusterMirror's
/// reconciles count as syncs.
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

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReconcileLabels {
    r#loop: Loop,
    result: Outcome,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LoopLabel {
    r#loop: Loop,
}

pub(super) struct Reconciles {
    counts: Family<ReconcileLabels, Counter>,
    errors: Family<LoopLabel, Counter>,
    terminal_errors: Family<LoopLabel, Counter>,
    time: Histogram,
    max_concurrent: Gauge,
    active_workers: Gauge,
}

impl Reconciles {
    pub(super) fn new(max_concurrent_reconciles: u16) -> Self {
        let this = Reconciles {
            counts: Family::default(),
            errors: Family::default(),
            terminal_errors: Family::default(),
            time: Histogram::new(exponential_buckets(0.0005, 2.0, 16)),
            max_concurrent: Gauge::default(),
            active_workers: Gauge::default(),
        };
        this.max_concurrent
            .set(i64::from(max_concurrent_reconciles));
        // Every loop's series exist from the start, at zero: a rate or an
        // alert on them has something to compare with before the first error.
        for which in Loop::ALL {
            for result in [Outcome::success, Outcome::error] {
                let labels = ReconcileLabels {
                    r#loop: which,
                    result,
                };
                this.counts.get_or_create(&labels).inc_by(0);
            }
            let label = LoopLabel { r#loop: which };
            this.errors.get_or_create(&label).inc_by(0);
            this.terminal_errors.get_or_create(&label).inc_by(0);
        }
        this
    }

    /// Registers every series in `runtime`, the registry labeled with the
    /// controller's name.
    pub(super) fn register(&self, runtime: &mut Registry) {
        register_all(
            runtime,
            [
                (
                    "controller_runtime_reconcile",
                    "Reconciliations by loop and result",
                    Box::new(self.counts.clone()),
                ),
                (
                    "controller_runtime_reconcile_errors",
                    "Reconciliations that failed, by loop",
                    Box::new(self.errors.clone()),
                ),
                (
                    "controller_runtime_terminal_reconcile_errors",
                    "Reconciliations that failed in a way retrying cannot fix, by loop",
                    Box::new(self.terminal_errors.clone()),
                ),
                (
                    "controller_runtime_reconcile_time_seconds",
                    "Time per reconciliation",
                    Box::new(self.time.clone()),
                ),
                (
                    "controller_runtime_max_concurrent_reconciles",
                    "Most reconciliations run at once",
                    Box::new(self.max_concurrent.clone()),
                ),
                (
                    "controller_runtime_active_workers",
                    "Reconciliations running now",
                    Box::new(self.active_workers.clone()),
                ),
            ],
        );
    }

    pub(super) fn started<'a>(
        &'a self,
        which: Loop,
        queue_times: &'a QueueTimes,
    ) -> ReconcileTimer<'a> {
        self.active_workers.inc();
        ReconcileTimer {
            reconciles: self,
            queue_times,
            which,
            started: Instant::now(),
            work: queue_times.work_started(),
            outcome: Outcome::error,
        }
    }

    pub(super) fn failed(&self, which: Loop, terminal: bool) {
        let label = LoopLabel { r#loop: which };
        self.errors.get_or_create(&label).inc();
        if terminal {
            self.terminal_errors.get_or_create(&label).inc();
        }
    }
}

/// Records a reconcile's duration and outcome when finished.
/// Records one reconcile when dropped, so that one cancelled (at
/// shutdown) or panicking is counted too, as an error.
pub struct ReconcileTimer<'a> {
    reconciles: &'a Reconciles,
    queue_times: &'a QueueTimes,
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
        self.reconciles
            .counts
            .get_or_create(&ReconcileLabels {
                r#loop: self.which,
                result: self.outcome,
            })
            .inc();
        self.reconciles
            .time
            .observe(self.started.elapsed().as_secs_f64());
        // Timed before it stops counting as running: a scrape that sees no
        // reconcile running sees every one timed.
        self.queue_times.work_finished(&self.work);
        self.reconciles.active_workers.dec();
    }
}
