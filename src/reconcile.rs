//! The two reconcile loops and their bookkeeping: what each reconcile is
//! handed (`context`), the sync of a source and the prune of a copy, the
//! one write each makes, the writes of many copies at once and what their
//! outcomes come to (`fan_out`), the full comparison after a list
//! (`resync`), the one error type, the source's content read when a write needs it
//! (`source_content`), those reads batched by namespace (`fresh_reads`),
//! the per-object retry state (`backoff`) and the fights
//! over a copy (`contest`), and when each pending sync was asked for
//! (`woken`).

pub(crate) mod backoff;
pub(crate) mod cluster_mirror;
pub mod contest;
pub(crate) mod context;
pub(crate) mod controller;
pub(crate) mod error;
pub(crate) mod fan_out;
pub(crate) mod pending;
pub(crate) mod prune;
pub(crate) mod resync;
pub(crate) mod source_read;
pub(crate) mod sync;
pub(crate) mod write;

/// The coalesced fresh reads, public for the suite that drives them.
pub use source_read::coalesced;
