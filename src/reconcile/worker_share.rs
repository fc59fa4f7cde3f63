//! How many of a loop's workers one namespace's sources may hold at once:
//! half of them (at least one). kube-runtime's Controller runs whatever is
//! due first, whoever it is for, so without a share one tenant changing 16
//! sources of wide fan-outs held all 16 workers, and every other
//! namespace's heal waited behind them.
//!
//! A reconcile refused a worker returns at once, holding none, and its
//! object is parked: it is not requeued (a namespace of 10,000 sources
//! would otherwise spin through refusals), but sent to its loop again
//! when its namespace gives a worker back ([`WorkerShares::unparked`]),
//! or woken by its next event as before. It starts nothing first, so the
//! wakeups it was to serve stay pending for the reconcile that does
//! (`reconcile::pending`), which is timed from the first of them.

use std::{
    collections::{HashMap, HashSet},
    hash::Hash,
    sync::{Mutex, MutexGuard, PoisonError},
};

use futures::{Stream, channel::mpsc, stream};

/// The workers each namespace's reconciles hold in one loop, and the
/// objects refused one, by namespace.
pub struct WorkerShares<Key> {
    /// The most one namespace holds; None when the workers are unbounded.
    most: Option<usize>,
    by_namespace: Mutex<HashMap<String, Namespace<Key>>>,
    unparked: mpsc::UnboundedSender<Key>,
    /// Taken once, by the loop.
    to_loop: Mutex<Option<mpsc::UnboundedReceiver<Key>>>,
}

struct Namespace<Key> {
    held: usize,
    parked: HashSet<Key>,
}

/// A worker held by a reconcile of a source in `namespace`, given back
/// when dropped.
pub struct WorkerShare<'a, Key: Hash + Eq + Clone> {
    shares: &'a WorkerShares<Key>,
    namespace: String,
}

impl<Key: Hash + Eq + Clone> WorkerShares<Key> {
    /// The shares of a loop of `workers` workers (0: unbounded, as
    /// kube-runtime reads it).
    pub fn new(workers: u16) -> Self {
        let (unparked, to_loop) = mpsc::unbounded();
        WorkerShares {
            most: (workers > 0).then(|| usize::from(workers / 2).max(1)),
            by_namespace: Mutex::default(),
            unparked,
            to_loop: Mutex::new(Some(to_loop)),
        }
    }

    /// A worker for a reconcile of `object`, in `namespace`; None, and
    /// `object` parked, when its namespace holds its share already.
    pub fn take(&self, namespace: &str, object: &Key) -> Option<WorkerShare<'_, Key>> {
        let mut by_namespace = self.lock();
        let state = by_namespace
            .entry(namespace.to_owned())
            .or_insert_with(|| Namespace {
                held: 0,
                parked: HashSet::new(),
            });
        if self.most.is_some_and(|most| state.held >= most) {
            state.parked.insert(object.clone());
            return None;
        }
        state.held += 1;
        Some(WorkerShare {
            shares: self,
            namespace: namespace.to_owned(),
        })
    }

    /// The objects to reconcile again as their namespace gives workers
    /// back: for the loop to merge into its wakeups (empty after the
    /// first call).
    pub fn unparked(&self) -> impl Stream<Item = Key> + Send + use<Key>
    where
        Key: Send + 'static,
    {
        let taken = self
            .to_loop
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        match taken {
            Some(receiver) => stream::StreamExt::left_stream(receiver),
            None => stream::StreamExt::right_stream(stream::empty()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Namespace<Key>>> {
        self.by_namespace
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

impl<Key: Hash + Eq + Clone> Drop for WorkerShare<'_, Key> {
    fn drop(&mut self) {
        let mut by_namespace = self
            .shares
            .by_namespace
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let Some(state) = by_namespace.get_mut(&self.namespace) else {
            return;
        };
        state.held = state.held.saturating_sub(1);
        // One parked object takes the worker given back; when the
        // namespace holds none (one sent back may have left the cache),
        // every parked one is sent, and those refused again park again.
        let sent: Vec<Key> = match state.held {
            0 => state.parked.drain().collect(),
            _ => state.parked.iter().next().into_iter().cloned().collect(),
        };
        for object in sent {
            state.parked.remove(&object);
            // Closed only when the loop stopped: nothing to wake.
            let _ = self.shares.unparked.unbounded_send(object);
        }
        if state.held == 0 && state.parked.is_empty() {
            by_namespace.remove(&self.namespace);
        }
    }
}

#[cfg(test)]
mod tests;
