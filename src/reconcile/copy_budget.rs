//! The budgets of what reconciles hold in memory at once, counted in bytes
//! and shared by every reconcile of every loop and kind:
//!
//! - the copies in flight ([`COPY_BUDGET_BYTES`]): a copy's content is
//!   cloned into it, serialized, sent and answered while it is written, so
//!   the bytes of the copies being written at once are what writing costs.
//!   Without it, 16 reconciles of 16 writes each held 256 copies at once;
//! - the sources read afresh ([`READ_BUDGET_BYTES`]): a reconcile that
//!   writes holds its source, decoded, until it ends, and a source of many
//!   keys costs far more decoded than its values' bytes
//!   (`decisions::cache_form::content_size`). Without it, any number of
//!   sources of 60,000 keys were read at once, some 10 MiB each.
//!
//! A reconcile takes its read's bytes before any copy's, and holds one
//! read at most, so that no reconcile holding copies' bytes ever waits for
//! a read's: the two budgets cannot wait on each other.
//!
//! One namespace's sources hold at most an eighth of a budget
//! ([`NAMESPACE_SHARE`]). The budget bounds memory; the share bounds what
//! one tenant keeps the API server busy with, since every request in
//! flight is one that etcd and the API server work through before or
//! beside another tenant's heal (`docs/operator/sizing.md` has the
//! figures). What costs more than a namespace's share waits until its
//! namespace holds nothing and takes the share alone. The waits are fair
//! (first come, first served, as tokio's semaphore is), and hold no permit
//! of the whole budget while waiting for the namespace's share.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, MutexGuard, PoisonError},
};

use prometheus_client::metrics::gauge::Gauge;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The budget's bytes, counted as a copy's plan does (its values, and its
/// keys at `kind::decoded_entry_cost`): with what a write holds besides
/// the content (the request's body, the answer and its parsed object,
/// about four times the content in all), the copies in flight stay near
/// 64 MiB at worst, a quarter of the chart's memory limit.
pub const COPY_BUDGET_BYTES: u32 = 16 << 20;

/// The sources' bytes, decoded, that the reconciles hold at once. A source
/// is counted as its cached size says ([`content_size::kept`]); with the
/// copies' budget and what the process needs at rest, the worst case stays
/// under half the chart's memory limit.
///
/// [`content_size::kept`]: crate::decisions::cache_form::content_size::kept
pub const READ_BUDGET_BYTES: u32 = 16 << 20;

/// The part of a budget one namespace's sources hold at most: an eighth.
pub const NAMESPACE_SHARE: u32 = 8;

/// The least a copy in flight counts for, whatever its size: each write is
/// a request the API server works through, and without a floor a tenant's
/// small copies were written 128 at once (8 workers of 16 writes). With
/// it, one namespace has at most 16 writes in flight (its share of the
/// copies' budget), and every namespace together 128.
pub const WRITE_FLOOR_BYTES: u64 = 128 << 10;

/// What a copy planned at `planned` bytes holds of the copies' budget.
pub fn write_cost(planned: u64) -> u64 {
    planned.max(WRITE_FLOOR_BYTES)
}

/// What is in flight of one kind (copies, or reads), by bytes,
/// process-wide.
pub struct ByteBudget {
    whole: Arc<Semaphore>,
    /// The most one namespace's sources hold at once.
    share: u32,
    namespaces: Mutex<HashMap<String, Arc<Semaphore>>>,
    in_use: Gauge,
}

/// Bytes of a budget held for one copy or read, given back when dropped.
pub struct HeldBytes {
    // Dropped in this order: the permits before the share they came from.
    _of_whole: Option<OwnedSemaphorePermit>,
    _of_namespace: Option<OwnedSemaphorePermit>,
    share: NamespaceShare,
    bytes: u32,
}

/// A namespace's share of the budget, while anything of it is held or
/// waited for: the last to let go forgets the namespace.
struct NamespaceShare {
    budget: Arc<ByteBudget>,
    namespace: String,
    semaphore: Arc<Semaphore>,
}

impl ByteBudget {
    /// A budget of `bytes`, of which one namespace holds at most a
    /// `parts`th, and whose use `in_use` shows.
    pub fn new(bytes: u32, parts: u32, in_use: Gauge) -> Self {
        ByteBudget {
            whole: Arc::new(Semaphore::new(bytes as usize)),
            share: (bytes / parts.max(1)).max(1),
            namespaces: Mutex::default(),
            in_use,
        }
    }

    /// Waits until `bytes` for a source in `namespace` may be held (a copy
    /// built, or a source read): until the namespace's share, then the
    /// whole budget, has room for them.
    pub async fn hold(self: &Arc<Self>, namespace: &str, bytes: u64) -> HeldBytes {
        let cost = u32::try_from(bytes).unwrap_or(u32::MAX).min(self.share);
        let share = self.share_of(namespace);
        // Never closed: an error cannot come, and would only mean no wait.
        let of_namespace = share.semaphore.clone().acquire_many_owned(cost).await.ok();
        let of_whole = self.whole.clone().acquire_many_owned(cost).await.ok();
        self.in_use.inc_by(cost.into());
        HeldBytes {
            _of_whole: of_whole,
            _of_namespace: of_namespace,
            share,
            bytes: cost,
        }
    }

    fn share_of(self: &Arc<Self>, namespace: &str) -> NamespaceShare {
        let semaphore = self
            .lock()
            .entry(namespace.to_owned())
            .or_insert_with(|| Arc::new(Semaphore::new(self.share as usize)))
            .clone();
        NamespaceShare {
            budget: self.clone(),
            namespace: namespace.to_owned(),
            semaphore,
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Arc<Semaphore>>> {
        self.namespaces
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for HeldBytes {
    fn drop(&mut self) {
        self.share.budget.in_use.dec_by(self.bytes.into());
    }
}

impl Drop for NamespaceShare {
    fn drop(&mut self) {
        let mut namespaces = self.budget.lock();
        // Shares are handed out under this lock: two holders mean only the
        // map and this one, with no permit of it left anywhere.
        if Arc::strong_count(&self.semaphore) == 2 {
            namespaces.remove(&self.namespace);
        }
    }
}

#[cfg(test)]
mod tests;
