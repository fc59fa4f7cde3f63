//! The Lease protocol's decisions, client-go's: whom a record belongs to,
//! when a candidate may take it and when it may start leading, what a
//! round's outcome is, and which refusals no retry fixes. Pure.

use std::time::{Duration, Instant};

use k8s_openapi::{api::coordination::v1::Lease, jiff::Timestamp};

/// The Lease record as a candidate last saw it, and when it first saw it.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Observed {
    /// None: the Lease did not exist.
    pub(super) record: Option<Record>,
    pub(super) seen_at: Instant,
}

#[derive(Debug, Clone, PartialEq)]
pub(super) struct Record {
    pub(super) holder: Option<String>,
    pub(super) renew_time: Option<Timestamp>,
    pub(super) resource_version: Option<String>,
    /// `leaseDurationSeconds` as stored.
    pub(super) duration: Option<Duration>,
}

/// What a candidate may do with the Lease as it is now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claim {
    /// It names us: renew it.
    Renew,
    /// Free or expired: take it.
    Take,
    /// Someone else holds it and keeps it fresh.
    Wait,
}

/// Decides from the holder and how long ago (by our clock) the record last
/// changed, against the duration the record itself states.
pub fn claim(
    holder: Option<&str>,
    identity: &str,
    unchanged_for: Duration,
    duration: Duration,
) -> Claim {
    match holder {
        Some(holder) if holder == identity => Claim::Renew,
        Some(holder) if !holder.is_empty() && unchanged_for < duration => Claim::Wait,
        _ => Claim::Take,
    }
}

/// When a candidate that just wrote itself into the Lease may start
/// leading: once the record it replaced, first seen at `seen_at`, has had
/// its stored duration (`own` for a missing Lease or none stored).
pub fn lead_at(
    replaced_seen_at: Instant,
    replaced_duration: Option<Duration>,
    own: Duration,
) -> Instant {
    replaced_seen_at + replaced_duration.unwrap_or(own)
}

/// The outcome of one round of the protocol.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Round {
    /// We hold the Lease; a candidate may lead from `lead_at`.
    Held { lead_at: Instant },
    /// Another holder keeps it fresh.
    HeldBy(String),
    /// The API server could not be read or written; nothing is known.
    /// With the reason when it refused the request itself, which no retry
    /// fixes (see [`refusal`]).
    Failed(Option<String>),
}

/// Why the API server refused a Lease request for good, if it did: a 4xx
/// other than a conflict (two candidates writing at once, the protocol's
/// own race) and 429 (throttling, which passes). RBAC removed, a namespace
/// that does not exist, an invalid name: no retry fixes these, and the
/// operator must hear of them.
pub fn refusal(error: &kube::Error) -> Option<String> {
    match error {
        kube::Error::Api(status) if (400..500).contains(&status.code) => {
            (status.code != 409 && status.code != 429).then(|| status.message.clone())
        }
        _ => None,
    }
}

pub(super) fn record_of(lease: &Lease) -> Record {
    let spec = lease.spec.as_ref();
    Record {
        holder: spec.and_then(|s| s.holder_identity.clone()),
        renew_time: spec.and_then(|s| s.renew_time.as_ref()).map(|t| t.0),
        resource_version: lease.metadata.resource_version.clone(),
        duration: spec
            .and_then(|s| s.lease_duration_seconds)
            .and_then(|secs| u64::try_from(secs).ok())
            .map(Duration::from_secs),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DURATION: Duration = Duration::from_secs(15);

    #[test]
    fn a_free_lease_is_taken() {
        assert_eq!(claim(None, "me", Duration::ZERO, DURATION), Claim::Take);
        assert_eq!(claim(Some(""), "me", Duration::ZERO, DURATION), Claim::Take);
    }

    #[test]
    fn our_own_lease_is_renewed() {
        assert_eq!(
            claim(Some("me"), "me", Duration::from_secs(60), DURATION),
            Claim::Renew
        );
    }

    #[test]
    fn a_fresh_lease_of_another_holder_is_left_alone() {
        assert_eq!(
            claim(Some("other"), "me", Duration::from_secs(14), DURATION),
            Claim::Wait
        );
    }

    #[test]
    fn a_lease_unchanged_for_its_duration_is_taken_over() {
        assert_eq!(claim(Some("other"), "me", DURATION, DURATION), Claim::Take);
    }

    #[test]
    fn the_stored_duration_decides_expiry() {
        let stored = Duration::from_secs(30);
        assert_eq!(
            claim(Some("other"), "me", Duration::from_secs(20), stored),
            Claim::Wait
        );
    }

    #[test]
    fn leading_waits_for_the_replaced_record_to_have_had_its_duration() {
        let seen = Instant::now();
        let own = Duration::from_secs(15);
        assert_eq!(
            lead_at(seen, Some(Duration::from_secs(1)), own),
            seen + Duration::from_secs(1)
        );
        assert_eq!(lead_at(seen, None, own), seen + own);
    }
}
