//! The workqueue timing series controller dashboards plot, measured at the
//! door of kube-runtime's queue (which it keeps private), like the other
//! `workqueue_*` series:
//! - `workqueue_queue_duration_seconds`: from a wakeup reaching the sync
//!   loop's door (sent by a watch, or queued by a resync) to the loop
//!   taking it;
//! - `workqueue_work_duration_seconds`: how long each reconcile runs, both
//!   loops;
//! - `workqueue_unfinished_work_seconds`: the time the reconciles running
//!   now have been running, added up;
//! - `workqueue_longest_running_processor_seconds`: the longest of those.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, PoisonError},
    time::Instant,
};

use prometheus_client::{
    collector::Collector,
    encoding::{DescriptorEncoder, EncodeMetric},
    metrics::{
        gauge::ConstGauge,
        histogram::{Histogram, exponential_buckets},
    },
    registry::Registry,
};

use super::series::register_all;

/// The reconciles running now, by an id each gets when it starts.
#[derive(Debug, Default)]
struct Running {
    next: u64,
    since: HashMap<u64, Instant>,
}

#[derive(Debug)]
pub struct QueueTimes {
    queue_duration: Histogram,
    work_duration: Histogram,
    running: Arc<Mutex<Running>>,
}

/// One running reconcile, until [`QueueTimes::work_finished`].
#[derive(Debug)]
pub struct Work {
    id: u64,
    started: Instant,
}

impl QueueTimes {
    pub fn new() -> Self {
        // 1 ms to about 2 minutes.
        let buckets = || Histogram::new(exponential_buckets(0.001, 2.0, 18));
        QueueTimes {
            queue_duration: buckets(),
            work_duration: buckets(),
            running: Arc::default(),
        }
    }

    /// Registers every series in `queue`, the registry labeled with the
    /// queue's name.
    pub fn register(&self, queue: &mut Registry) {
        register_all(
            queue,
            [
                (
                    "workqueue_queue_duration_seconds",
                    "How long a wakeup waits at the sync loop's door before it is taken",
                    Box::new(self.queue_duration.clone()),
                ),
                (
                    "workqueue_work_duration_seconds",
                    "How long a reconcile takes",
                    Box::new(self.work_duration.clone()),
                ),
            ],
        );
        queue.register_collector(Box::new(RunningWork(self.running.clone())));
    }

    /// A wakeup queued at `queued_at` was taken now.
    pub fn taken(&self, queued_at: Instant) {
        self.queue_duration
            .observe(queued_at.elapsed().as_secs_f64());
    }

    pub fn work_started(&self) -> Work {
        let started = Instant::now();
        let mut running = self.lock();
        running.next = running.next.wrapping_add(1);
        let id = running.next;
        running.since.insert(id, started);
        Work { id, started }
    }

    pub fn work_finished(&self, work: &Work) {
        self.lock().since.remove(&work.id);
        self.work_duration
            .observe(work.started.elapsed().as_secs_f64());
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Running> {
        self.running.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The two gauges over the reconciles running at scrape time.
#[derive(Debug)]
struct RunningWork(Arc<Mutex<Running>>);

impl RunningWork {
    /// (sum, longest) of the running times, in seconds, at `now`.
    fn at(&self, now: Instant) -> (f64, f64) {
        let running = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        running
            .since
            .values()
            .map(|since| now.saturating_duration_since(*since).as_secs_f64())
            .fold((0.0, 0.0), |(sum, longest), secs| {
                (sum + secs, f64::max(longest, secs))
            })
    }
}

impl Collector for RunningWork {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let (unfinished, longest) = self.at(Instant::now());
        for (name, help, value) in [
            (
                "workqueue_unfinished_work_seconds",
                "Seconds the reconciles running now have run, added up",
                unfinished,
            ),
            (
                "workqueue_longest_running_processor_seconds",
                "Seconds the longest-running reconcile running now has run",
                longest,
            ),
        ] {
            let gauge = ConstGauge::new(value);
            gauge.encode(encoder.encode_descriptor(name, help, None, gauge.metric_type())?)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn running_work_is_summed_and_its_longest_reported_until_it_finishes() {
        let times = QueueTimes::new();
        let first = times.work_started();
        let second = times.work_started();
        let collector = RunningWork(times.running.clone());
        let later = Instant::now() + Duration::from_secs(10);
        let (sum, longest) = collector.at(later);
        assert!((20.0..20.5).contains(&sum), "{sum}");
        assert!((10.0..10.5).contains(&longest), "{longest}");
        times.work_finished(&first);
        times.work_finished(&second);
        assert_eq!(collector.at(later), (0.0, 0.0));
    }
}
