//! The sync loop's queue, under client-go's `workqueue_*` names (labeled
//! `name`): wakeups handed to it, waiting in it, and retried; its timings
//! are [`QueueTimes`].

use std::time::Instant;

use prometheus_client::{
    metrics::{counter::Counter, gauge::Gauge},
    registry::Registry,
};

use super::queue_times::QueueTimes;
use super::series::register_all;

pub(super) struct Queue {
    depth: Gauge,
    adds: Counter,
    retries: Counter,
    times: QueueTimes,
}

impl Queue {
    pub(super) fn new() -> Self {
        Queue {
            depth: Gauge::default(),
            adds: Counter::default(),
            retries: Counter::default(),
            times: QueueTimes::new(),
        }
    }

    /// Registers every series in `queue`, the registry labeled with the
    /// queue's name.
    pub(super) fn register(&self, queue: &mut Registry) {
        register_all(
            queue,
            [
                (
                    "workqueue_depth",
                    "Triggers waiting to be taken into the controller's queue",
                    Box::new(self.depth.clone()),
                ),
                (
                    "workqueue_adds",
                    "Triggers handed to the controller's queue",
                    Box::new(self.adds.clone()),
                ),
                (
                    "workqueue_retries",
                    "Reconciliations requeued after an error",
                    Box::new(self.retries.clone()),
                ),
            ],
        );
        self.times.register(queue);
    }

    pub(super) fn times(&self) -> &QueueTimes {
        &self.times
    }

    pub(super) fn queued(&self) {
        self.depth.inc();
        self.adds.inc();
    }

    /// A wakeup queued at `queued_at` was taken by the sync loop.
    pub(super) fn taken(&self, queued_at: Instant) {
        // Timed before it leaves the depth, as for running work.
        self.times.taken(queued_at);
        self.depth.dec();
    }

    pub(super) fn retried(&self) {
        self.retries.inc();
    }
}
