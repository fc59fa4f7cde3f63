//! How many of a loop's workers one namespace's sources may hold at once:
//! half of them (at least one). kube-runtime's Controller runs whatever is
//! due first, whoever it is for, so without a share one tenant changing 16
//! sources of wide fan-outs held all 16 workers, and every other
//! namespace's heal waited behind them.
//!
//! A reconcile refused a worker returns at once and is run again after
//! [`REFUSED_AGAIN_AFTER`]: it holds no worker while it waits, and never
//! spins. It starts nothing first, so the wakeups it was to serve stay
//! pending for the reconcile that does (`reconcile::pending`), which is
//! timed from the first of them.

use std::{
    collections::HashMap,
    sync::{Mutex, MutexGuard, PoisonError},
    time::Duration,
};

/// When a reconcile refused a worker is run again (or sooner, if a wakeup
/// comes: it is then refused again if the share is still taken).
pub const REFUSED_AGAIN_AFTER: Duration = Duration::from_millis(250);

/// The workers each namespace's reconciles hold, in one loop.
pub struct WorkerShares {
    /// The most one namespace holds; None when the workers are unbounded.
    most: Option<usize>,
    held: Mutex<HashMap<String, usize>>,
}

/// A worker held by a reconcile of a source in `namespace`, given back
/// when dropped.
pub struct WorkerShare<'a> {
    shares: &'a WorkerShares,
    namespace: String,
}

impl WorkerShares {
    /// The shares of a loop of `workers` workers (0: unbounded, as
    /// kube-runtime reads it).
    pub fn new(workers: u16) -> Self {
        WorkerShares {
            most: (workers > 0).then(|| usize::from(workers / 2).max(1)),
            held: Mutex::default(),
        }
    }

    /// A worker for a reconcile of a source in `namespace`, unless its
    /// namespace holds its share already.
    pub fn take(&self, namespace: &str) -> Option<WorkerShare<'_>> {
        let mut held = self.lock();
        let count = held.entry(namespace.to_owned()).or_default();
        if self.most.is_some_and(|most| *count >= most) {
            return None;
        }
        *count += 1;
        Some(WorkerShare {
            shares: self,
            namespace: namespace.to_owned(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, usize>> {
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for WorkerShare<'_> {
    fn drop(&mut self) {
        let mut held = self.shares.lock();
        if let Some(count) = held.get_mut(&self.namespace) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                held.remove(&self.namespace);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_namespace_holds_at_most_half_the_workers() {
        let shares = WorkerShares::new(16);
        let tenant: Vec<_> = (0..8).map(|_| shares.take("tenant")).collect();
        assert!(tenant.iter().all(Option::is_some));
        assert!(shares.take("tenant").is_none(), "a ninth is refused");
        let others: Vec<_> = (0..8).map(|_| shares.take("other")).collect();
        assert!(others.iter().all(Option::is_some), "the other half is free");
        drop(tenant);
        assert!(shares.take("tenant").is_some(), "given back when done");
    }

    #[test]
    fn a_loop_of_one_worker_lets_each_namespace_hold_it() {
        let shares = WorkerShares::new(1);
        let held = shares.take("a");
        assert!(held.is_some());
        assert!(shares.take("a").is_none());
        let unbounded = WorkerShares::new(0);
        let many: Vec<_> = (0..100).map(|_| unbounded.take("a")).collect();
        assert!(many.iter().all(Option::is_some));
    }

    #[test]
    fn a_namespace_is_forgotten_once_it_holds_no_worker() {
        let shares = WorkerShares::new(4);
        let (a, b) = (shares.take("a"), shares.take("a"));
        drop(a);
        assert_eq!(shares.lock().get("a"), Some(&1));
        drop(b);
        assert!(shares.lock().is_empty());
        assert!(shares.take("a").is_some());
    }
}
