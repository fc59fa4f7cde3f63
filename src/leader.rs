//! Leader election on a `coordination.k8s.io/v1` Lease, following the
//! protocol of client-go's leaderelection package, so that `kubectl get
//! lease` and other tooling read it the usual way.
//!
//! - A candidate takes the Lease when it has no holder, or when its record has
//!   not changed for `lease_duration` as measured by the candidate's own clock
//!   (so clock skew between nodes does not matter).
//! - The leader renews every `retry_period`. If no renewal succeeds for
//!   `renew_deadline`, it stops reconciling at once and exits.
//! - Since `renew_deadline < lease_duration`, the old leader has stopped before
//!   any standby may take over: two leaders never act together, as long as
//!   process pauses stay under `lease_duration - renew_deadline`.
//! - On shutdown the leader clears the holder, so a standby takes over at its
//!   next try instead of waiting for the Lease to expire.

use std::time::{Duration, Instant};

use k8s_openapi::{
    api::coordination::v1::{Lease, LeaseSpec},
    apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta},
    jiff::Timestamp,
};
use kube::{Api, Client, api::PostParams};
use tokio::sync::watch;

use crate::{config::LeaderConfig, desired::MANAGER_NAME};

#[derive(Debug, thiserror::Error)]
pub enum LeaderError {
    #[error("lost the lease: no renewal succeeded within the renew deadline of {0:?}")]
    Lost(Duration),
}

/// The Lease record as a candidate last saw it, and when it saw it change.
#[derive(Debug, Clone, PartialEq)]
struct Observed {
    holder: Option<String>,
    renew_time: Option<Timestamp>,
    resource_version: Option<String>,
    seen_at: Instant,
}

/// What a candidate may do with the Lease as it is now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claim {
    /// It is ours: renew it.
    Renew,
    /// Free or expired: take it.
    Take,
    /// Someone else holds it and keeps it fresh.
    Wait,
}

/// Decides from the holder and how long ago (by our clock) the record last
/// changed.
pub fn claim(
    holder: Option<&str>,
    identity: &str,
    unchanged_for: Duration,
    lease_duration: Duration,
) -> Claim {
    match holder {
        Some(holder) if holder == identity => Claim::Renew,
        Some(holder) if !holder.is_empty() && unchanged_for < lease_duration => Claim::Wait,
        _ => Claim::Take,
    }
}

pub struct Elector {
    api: Api<Lease>,
    name: String,
    identity: String,
    lease_duration: Duration,
    renew_deadline: Duration,
    retry_period: Duration,
    observed: Option<Observed>,
}

impl Elector {
    pub fn new(client: Client, namespace: &str, identity: String, config: &LeaderConfig) -> Self {
        Elector {
            api: Api::namespaced(client, namespace),
            name: config.lease_name.clone(),
            identity,
            lease_duration: config.lease_duration,
            renew_deadline: config.renew_deadline,
            retry_period: config.retry_period,
            observed: None,
        }
    }

    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// Competes for the Lease, then holds it, publishing on `leading` while
    /// it leads. Returns an error when leadership is lost; runs until
    /// cancelled otherwise.
    pub async fn run(&mut self, leading: &watch::Sender<bool>) -> Result<(), LeaderError> {
        loop {
            if self.try_acquire_or_renew().await {
                break;
            }
            tokio::time::sleep(self.retry_period).await;
        }
        tracing::info!(lease = %self.name, identity = %self.identity, "became leader");
        leading.send_replace(true);
        let mut last_renewal = Instant::now();
        loop {
            tokio::time::sleep(self.retry_period).await;
            let attempt = tokio::time::timeout(self.renew_deadline, self.try_acquire_or_renew());
            if matches!(attempt.await, Ok(true)) {
                last_renewal = Instant::now();
            } else if last_renewal.elapsed() >= self.renew_deadline {
                leading.send_replace(false);
                return Err(LeaderError::Lost(self.renew_deadline));
            }
        }
    }

    /// Clears the holder so a standby takes over without waiting for expiry.
    pub async fn release(&mut self) {
        let Ok(Some(mut lease)) = self.api.get_opt(&self.name).await else {
            return;
        };
        let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
        if spec.holder_identity.as_deref() != Some(self.identity.as_str()) {
            return;
        }
        let now = MicroTime(Timestamp::now());
        spec.holder_identity = None;
        spec.lease_duration_seconds = Some(1);
        spec.renew_time = Some(now.clone());
        spec.acquire_time = Some(now);
        match self.api.replace(&self.name, &post_params(), &lease).await {
            Ok(_) => tracing::info!(lease = %self.name, "released the lease"),
            Err(error) => {
                tracing::warn!(lease = %self.name, %error, "could not release the lease; it expires by itself")
            }
        }
    }

    /// One round of the protocol; true when we hold the Lease afterwards.
    async fn try_acquire_or_renew(&mut self) -> bool {
        let lease = match self.api.get_opt(&self.name).await {
            Ok(Some(lease)) => lease,
            Ok(None) => return self.create().await,
            Err(error) => {
                tracing::debug!(lease = %self.name, %error, "could not read the lease");
                return false;
            }
        };
        let unchanged_for = self.observe(&lease);
        let spec = lease.spec.clone().unwrap_or_default();
        match claim(
            spec.holder_identity.as_deref(),
            &self.identity,
            unchanged_for,
            self.lease_duration,
        ) {
            Claim::Wait => false,
            decision => self.write(lease, decision).await,
        }
    }

    /// Remembers the record if it changed; returns how long it has not.
    fn observe(&mut self, lease: &Lease) -> Duration {
        let spec = lease.spec.as_ref();
        let current = Observed {
            holder: spec.and_then(|s| s.holder_identity.clone()),
            renew_time: spec.and_then(|s| s.renew_time.as_ref()).map(|t| t.0),
            resource_version: lease.metadata.resource_version.clone(),
            seen_at: Instant::now(),
        };
        let changed = self.observed.as_ref().is_none_or(|seen| {
            (&seen.holder, &seen.renew_time, &seen.resource_version)
                != (
                    &current.holder,
                    &current.renew_time,
                    &current.resource_version,
                )
        });
        if changed {
            self.observed = Some(current);
        }
        self.observed
            .as_ref()
            .map_or(Duration::ZERO, |seen| seen.seen_at.elapsed())
    }

    async fn create(&mut self) -> bool {
        let lease = Lease {
            metadata: ObjectMeta {
                name: Some(self.name.clone()),
                ..ObjectMeta::default()
            },
            spec: Some(self.record(None, Claim::Take)),
        };
        self.api.create(&post_params(), &lease).await.is_ok()
    }

    async fn write(&mut self, mut lease: Lease, decision: Claim) -> bool {
        let previous = lease.spec.take();
        lease.spec = Some(self.record(previous.as_ref(), decision));
        // The resourceVersion makes this a compare-and-swap: of two
        // candidates taking the Lease at once, one gets a conflict.
        match self.api.replace(&self.name, &post_params(), &lease).await {
            Ok(written) => {
                self.observe(&written);
                true
            }
            Err(error) => {
                tracing::debug!(lease = %self.name, %error, "could not write the lease");
                false
            }
        }
    }

    fn record(&self, previous: Option<&LeaseSpec>, decision: Claim) -> LeaseSpec {
        let now = MicroTime(Timestamp::now());
        let transitions = previous.and_then(|p| p.lease_transitions).unwrap_or(0);
        let (acquire_time, lease_transitions) = match decision {
            Claim::Renew => (previous.and_then(|p| p.acquire_time.clone()), transitions),
            Claim::Take | Claim::Wait => {
                let taken_from_someone =
                    previous.and_then(|p| p.holder_identity.as_ref()).is_some();
                (
                    Some(now.clone()),
                    transitions + i32::from(taken_from_someone),
                )
            }
        };
        LeaseSpec {
            holder_identity: Some(self.identity.clone()),
            lease_duration_seconds: Some(
                i32::try_from(self.lease_duration.as_secs().max(1)).unwrap_or(i32::MAX),
            ),
            acquire_time,
            renew_time: Some(now),
            lease_transitions: Some(lease_transitions),
            ..previous.cloned().unwrap_or_default()
        }
    }
}

fn post_params() -> PostParams {
    PostParams {
        field_manager: Some(MANAGER_NAME.into()),
        ..PostParams::default()
    }
}

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
}
