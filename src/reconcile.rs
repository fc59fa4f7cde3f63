//! The three reconcile loops and their bookkeeping: the sync of a source
//! (`sync`) and the prune of a copy (`prune`), run by `controller`, and
//! the reconcile of a ClusterMirror (`cluster_mirror`); what each
//! reconcile is handed (`context`), one copy made what it should be
//! (`copy`), what the caches say of a copy and the verdict on it
//! (`copy_facts`), the one write each makes (`write`), the writes of many
//! copies at once and what their outcomes come to (`fan_out`), the full
//! comparison after a list (`resync`), the one error type (`error`), the
//! source's content read fresh when a write needs it, those reads
//! coalesced by namespace (`source_read`), the per-object retry state
//! (`backoff`), the fights over a copy (`contest`), and when each pending
//! reconcile was asked for and what it must compare (`pending`).
//!
//! The I/O a reconcile makes is made here, not in `cluster`: the writes
//! of copies, the fresh reads of sources, and a ClusterMirror's status.

pub(crate) mod api_outcome;
pub(crate) mod backoff;
pub(crate) mod cluster_mirror;
pub mod contest;
pub(crate) mod context;
pub(crate) mod controller;
pub(crate) mod copy;
pub(crate) mod copy_budget;
pub(crate) mod copy_facts;
pub(crate) mod error;
pub(crate) mod fan_out;
pub(crate) mod pending;
pub(crate) mod prune;
pub(crate) mod resync;
pub(crate) mod soonest;
pub(crate) mod source_read;
pub(crate) mod sync;
pub(crate) mod worker_share;
pub(crate) mod write;

/// The coalesced fresh reads, public for the suite that drives them.
pub use source_read::coalesced;
