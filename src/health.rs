//! What /healthz and /readyz report.
//!
//! Live: the process runs and no watch has been failing without pause for
//! longer than the threshold (a wedged watch is fixed by a restart).
//! Ready: both caches have completed their initial list. A standby replica
//! keeps its caches warm, so it is ready too.

use std::{
    collections::HashMap,
    sync::{
        Mutex, PoisonError,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

#[derive(Debug)]
pub struct Health {
    threshold: Duration,
    failing_since: Mutex<HashMap<&'static str, Instant>>,
    caches_synced: AtomicBool,
}

impl Health {
    pub fn new(threshold: Duration) -> Self {
        Health {
            threshold,
            failing_since: Mutex::default(),
            caches_synced: AtomicBool::new(false),
        }
    }

    /// A watch produced an error; it counts from its first error in a row.
    /// True when this error starts a new streak.
    pub fn watch_failed(&self, watch: &'static str) -> bool {
        let mut failing = self.lock();
        let new = !failing.contains_key(watch);
        failing.entry(watch).or_insert_with(Instant::now);
        new
    }

    /// A watch delivered an event, so it works. True when it was failing.
    pub fn watch_ok(&self, watch: &'static str) -> bool {
        self.lock().remove(watch).is_some()
    }

    pub fn set_caches_synced(&self) {
        self.caches_synced.store(true, Ordering::Release);
    }

    pub fn is_ready(&self) -> bool {
        self.caches_synced.load(Ordering::Acquire)
    }

    /// Ok, or the watches that have been failing for too long.
    pub fn liveness(&self, now: Instant) -> Result<(), String> {
        let wedged: Vec<String> = self
            .lock()
            .iter()
            .filter(|(_, since)| now.saturating_duration_since(**since) > self.threshold)
            .map(|(watch, since)| {
                format!(
                    "{watch} watch failing for {:?}",
                    now.saturating_duration_since(*since)
                )
            })
            .collect();
        if wedged.is_empty() {
            Ok(())
        } else {
            Err(wedged.join("; "))
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<&'static str, Instant>> {
        self.failing_since
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_watch_failing_past_the_threshold_makes_the_process_unhealthy() {
        let health = Health::new(Duration::from_secs(5));
        assert!(health.watch_failed("sources"));
        let soon = Instant::now() + Duration::from_secs(1);
        assert!(health.liveness(soon).is_ok());
        let later = Instant::now() + Duration::from_secs(6);
        let err = health.liveness(later).unwrap_err();
        assert!(err.contains("sources"), "{err}");
        assert!(health.watch_ok("sources"));
        assert!(health.liveness(later).is_ok());
        assert!(!health.watch_ok("sources"));
    }

    #[test]
    fn repeated_failures_count_from_the_first() {
        let health = Health::new(Duration::from_secs(5));
        health.watch_failed("companions");
        let first = Instant::now();
        assert!(!health.watch_failed("companions"));
        assert!(health.liveness(first + Duration::from_secs(6)).is_err());
    }

    #[test]
    fn readiness_waits_for_the_caches() {
        let health = Health::new(Duration::from_secs(5));
        assert!(!health.is_ready());
        health.set_caches_synced();
        assert!(health.is_ready());
    }
}
