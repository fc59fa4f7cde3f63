//! The leader-election flags, and the timings that are refused.

use std::time::Duration;

use super::parsers::{parse_lease_name, parse_namespace};
use crate::ops::duration;

/// Leader election, for running two or more replicas.
#[derive(Debug, Clone, clap::Args)]
pub struct LeaderConfig {
    /// Compete for a Lease and reconcile only while holding it.
    #[arg(
        id = "leader_elect",
        long = "leader-elect",
        env = "MIRROR_LEADER_ELECT",
        help_heading = "Leader election",
        default_value_t = false
    )]
    pub enabled: bool,

    /// Namespace of the Lease (default: $POD_NAMESPACE, in-cluster).
    #[arg(
        id = "leader_election_namespace",
        long = "leader-election-namespace",
        env = "MIRROR_LEADER_ELECTION_NAMESPACE",
        help_heading = "Leader election",
        value_name = "NAMESPACE",
        value_parser = parse_namespace
    )]
    pub namespace: Option<String>,

    /// Name of the Lease.
    #[arg(
        id = "leader_election_id",
        long = "leader-election-id",
        env = "MIRROR_LEADER_ELECTION_ID",
        help_heading = "Leader election",
        value_name = "NAME",
        default_value = "configmap-mirror",
        value_parser = parse_lease_name
    )]
    pub lease_name: String,

    /// Identity written into the Lease (default: $POD_NAME, else host name and pid).
    #[arg(
        id = "leader_election_identity",
        long = "leader-election-identity",
        env = "MIRROR_LEADER_ELECTION_IDENTITY",
        help_heading = "Leader election",
        value_name = "IDENTITY"
    )]
    pub identity: Option<String>,

    /// How long a standby waits after the last renewal before taking the Lease over.
    #[arg(long, env = "MIRROR_LEASE_DURATION", help_heading = "Leader election", value_name = "DURATION", default_value = "15s", value_parser = duration::parse_positive)]
    pub lease_duration: Duration,

    /// How long the leader keeps trying to renew before it gives up and exits.
    #[arg(long, env = "MIRROR_RENEW_DEADLINE", help_heading = "Leader election", value_name = "DURATION", default_value = "10s", value_parser = duration::parse_positive)]
    pub renew_deadline: Duration,

    /// How often the leader renews, and a standby tries to acquire.
    #[arg(long, env = "MIRROR_RETRY_PERIOD", help_heading = "Leader election", value_name = "DURATION", default_value = "2s", value_parser = duration::parse_positive)]
    pub retry_period: Duration,
}

impl LeaderConfig {
    /// Rejects timings under which two leaders could act at once.
    ///
    /// - The retry period must be positive and shorter than the renew
    ///   deadline, so a leader gets more than one try at renewing.
    /// - Renew deadline plus retry period must stay below the lease
    ///   duration by a tenth of it, and at least a second: that slack is
    ///   what absorbs a process pause or a slow clock.
    pub fn validate(&self) -> Result<(), String> {
        if self.retry_period.is_zero() {
            return Err("--retry-period must be greater than zero".into());
        }
        if self.retry_period >= self.renew_deadline {
            return Err("--retry-period must be shorter than --renew-deadline".into());
        }
        let slack = (self.lease_duration / 10).max(Duration::from_secs(1));
        let busy = self.renew_deadline + self.retry_period;
        if busy + slack > self.lease_duration {
            return Err(format!(
                "--renew-deadline ({:?}) plus --retry-period ({:?}) must stay at least {slack:?} \
                 below --lease-duration ({:?})",
                self.renew_deadline, self.retry_period, self.lease_duration
            ));
        }
        Ok(())
    }
}
