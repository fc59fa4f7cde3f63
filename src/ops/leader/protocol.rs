//! The Lease protocol's decisions, client-go's: whom a record belongs to,
//! when a candidate may take it and when it may start leading, what a
//! round's outcome is, what a claim writes, and which refusals no retry
//! fixes. Pure.

use std::time::{Duration, Instant};

use k8s_openapi::{
    api::coordination::v1::{Lease, LeaseSpec},
    apimachinery::pkg::apis::meta::v1::MicroTime,
    jiff::Timestamp,
};

/// The Lease record as a candidate last saw it, and when it first saw it.
#[derive(Debug, Clone, PartialEq)]
pub struct Observed {
    /// None: the Lease did not exist.
    pub record: Option<Record>,
    pub seen_at: Instant,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub holder: Option<String>,
    pub renew_time: Option<Timestamp>,
    pub resource_version: Option<String>,
    /// `leaseDurationSeconds` as stored.
    pub duration: Option<Duration>,
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
pub enum Round {
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

pub fn record_of(lease: &Lease) -> Record {
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

/// The spec of a Lease claimed by `identity` at `now`, for
/// `lease_duration`, over the one it had (`previous`): a renewal keeps
/// when it was acquired, a take counts a transition if someone held it.
pub fn claimed_spec(
    previous: Option<&LeaseSpec>,
    decision: Claim,
    identity: &str,
    lease_duration: Duration,
    now: MicroTime,
) -> LeaseSpec {
    let transitions = previous.and_then(|p| p.lease_transitions).unwrap_or(0);
    let (acquire_time, lease_transitions) = match decision {
        Claim::Renew => (previous.and_then(|p| p.acquire_time.clone()), transitions),
        Claim::Take | Claim::Wait => {
            let taken_from_someone = previous.and_then(|p| p.holder_identity.as_ref()).is_some();
            (
                Some(now.clone()),
                transitions + i32::from(taken_from_someone),
            )
        }
    };
    LeaseSpec {
        holder_identity: Some(identity.to_owned()),
        lease_duration_seconds: Some(
            i32::try_from(lease_duration.as_secs().max(1)).unwrap_or(i32::MAX),
        ),
        acquire_time,
        renew_time: Some(now),
        lease_transitions: Some(lease_transitions),
        ..previous.cloned().unwrap_or_default()
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

    #[test]
    fn a_renewal_keeps_its_acquire_time_and_a_take_from_another_counts_a_transition() {
        let then = MicroTime(Timestamp::UNIX_EPOCH);
        let now = MicroTime(Timestamp::now());
        let held = LeaseSpec {
            holder_identity: Some("other".into()),
            acquire_time: Some(then.clone()),
            lease_transitions: Some(2),
            ..LeaseSpec::default()
        };
        let renewed = claimed_spec(Some(&held), Claim::Renew, "me", DURATION, now.clone());
        assert_eq!(renewed.acquire_time, Some(then));
        assert_eq!(renewed.lease_transitions, Some(2));
        assert_eq!(renewed.holder_identity.as_deref(), Some("me"));
        assert_eq!(renewed.lease_duration_seconds, Some(15));
        let taken = claimed_spec(Some(&held), Claim::Take, "me", DURATION, now.clone());
        assert_eq!(taken.acquire_time, Some(now.clone()));
        assert_eq!(taken.lease_transitions, Some(3));
        let created = claimed_spec(None, Claim::Take, "me", Duration::ZERO, now.clone());
        assert_eq!(created.lease_transitions, Some(0));
        assert_eq!(created.lease_duration_seconds, Some(1), "at least a second");
        assert_eq!(created.renew_time, Some(now));
    }
}
