//! Leader election on a `coordination.k8s.io/v1` Lease, following the
//! protocol of client-go's leaderelection package, so that `kubectl get
//! lease` and other tooling read it the usual way.
//!
//! Safety rests on two monotonic deadlines:
//! - A leader may write only until `renew_deadline` after the *start* of its
//!   last successful renewal; every write checks this just before it is
//!   sent, and each renewal attempt gets only the time left. With no
//!   renewal by then it stops at once and exits.
//! - A candidate starts leading only once the record it replaced has been
//!   unchanged, as it saw it, for that record's own `leaseDurationSeconds`
//!   (its own `lease_duration` for a Lease it found missing). An expired
//!   record has been already; a released one (1 s) almost; a Lease that was
//!   deleted, or whose holder was edited to name this candidate, has not.
//!
//! The old leader's last renewal started before the record the candidate
//! replaced was written, so the old leader has stopped writing at least
//! `lease_duration - renew_deadline` before the new one starts: the margin
//! for process pauses. A leader that sees another holder in the Lease stops
//! at once, without waiting for its deadline.
//!
//! What is decided here is pure; the elector that reads and writes the
//! Lease, round by round, is [`crate::cluster::lease`].

use std::time::Duration;

#[derive(Debug, PartialEq, thiserror::Error)]
pub enum LeaderError {
    #[error("lost the lease: no renewal succeeded within the renew deadline of {0:?}")]
    Lost(Duration),
    #[error("lost the lease: it is now held by {0:?}")]
    Superseded(String),
}

pub mod protocol;
pub mod state;
pub mod term;

pub use protocol::{Claim, claim, lead_at, refusal};
pub use term::{Leadership, Term};

/// `$POD_NAME` in a cluster, else host name and pid: unique per process.
pub fn default_identity() -> String {
    if let Ok(pod) = std::env::var("POD_NAME") {
        return pod;
    }
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_else(|_| "localhost".into());
    format!("{host}_{}", std::process::id())
}
