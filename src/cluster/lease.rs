//! Leader election's reads and writes of its `coordination.k8s.io/v1`
//! Lease: the elector that runs the protocol of [`crate::ops::leader`]
//! round by round against the API server, and releases the Lease on the
//! way out.

use std::time::{Duration, Instant};

use k8s_openapi::{
    api::coordination::v1::{Lease, LeaseSpec},
    apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta},
    jiff::Timestamp,
};
use kube::{Api, Client, api::PostParams};
use tokio::sync::watch;

use crate::{
    contract::MANAGER_NAME,
    ops::config::LeaderConfig,
    ops::leader::{
        Claim, LeaderError, Term, claim, lead_at,
        protocol::{Observed, Round, claimed_spec, record_of},
        refusal,
        state::{ElectionState, Timings},
    },
};

/// Hears whether leader election works: the reason it cannot, or None.
pub type ElectionReport = Box<dyn Fn(Option<&str>) + Send + Sync>;

pub struct Elector {
    api: Api<Lease>,
    report: ElectionReport,
    /// The refusal last reported, so each is told once.
    refused: Option<String>,
    name: String,
    identity: String,
    lease_duration: Duration,
    renew_deadline: Duration,
    retry_period: Duration,
    observed: Option<Observed>,
}

impl Elector {
    pub fn new(
        client: Client,
        namespace: &str,
        identity: String,
        config: &LeaderConfig,
        report: ElectionReport,
    ) -> Self {
        Elector {
            api: Api::namespaced(client, namespace),
            report,
            refused: None,
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

    /// Competes for the Lease, then holds it, publishing the term on
    /// `term`. Returns an error when leadership is lost; runs until
    /// cancelled otherwise.
    pub async fn run(&mut self, term: &watch::Sender<Term>) -> Result<(), LeaderError> {
        let timings = Timings {
            renew_deadline: self.renew_deadline,
            retry_period: self.retry_period,
        };
        let mut state = ElectionState::default();
        loop {
            let started = Instant::now();
            let round =
                tokio::time::timeout(state.budget(started, timings), self.round(state.holding()))
                    .await
                    .unwrap_or(Round::Failed(None));
            self.report_round(&round);
            let step = state.step(&round, started, Instant::now(), timings);
            if let Some(published) = step.publish {
                term.send_replace(published);
            }
            if step.became_leader {
                tracing::info!(lease = %self.name, identity = %self.identity, "became leader");
            }
            if let Some(wait) = step.waiting {
                tracing::info!(
                    lease = %self.name,
                    ?wait,
                    "holding the lease; leading once its previous holder must have stopped"
                );
            }
            state = step.state;
            tokio::time::sleep(step.next?).await;
        }
    }

    /// Tells of a refusal once, with its reason, at the default log level,
    /// and once more when the Lease can be read and written again.
    fn report_round(&mut self, round: &Round) {
        let refused = match round {
            Round::Failed(None) => return,
            Round::Failed(Some(reason)) => Some(reason.clone()),
            Round::Held { .. } | Round::HeldBy(_) => None,
        };
        if refused == self.refused {
            return;
        }
        match &refused {
            Some(reason) => tracing::warn!(
                lease = %self.name,
                %reason,
                "leader election: the API server refuses this replica's Lease requests; no replica with these settings can lead"
            ),
            None => {
                tracing::info!(lease = %self.name, "leader election: the Lease can be read and written again")
            }
        }
        (self.report)(refused.as_deref());
        self.refused = refused;
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

    /// One round of the protocol. `holding`: we held the Lease after the
    /// previous round.
    async fn round(&mut self, holding: bool) -> Round {
        let lease = match self.api.get_opt(&self.name).await {
            Ok(Some(lease)) => lease,
            Ok(None) => return self.create().await,
            Err(error) => {
                tracing::debug!(lease = %self.name, %error, "could not read the lease");
                return Round::Failed(refusal(&error));
            }
        };
        let replaced = self.observe(Some(&lease));
        let record = replaced.record.clone().unwrap_or_else(|| record_of(&lease));
        let duration = record.duration.unwrap_or(self.lease_duration);
        let unchanged_for = replaced.seen_at.elapsed();
        match claim(
            record.holder.as_deref(),
            &self.identity,
            unchanged_for,
            duration,
        ) {
            Claim::Wait => Round::HeldBy(record.holder.unwrap_or_default()),
            // A leader finds another holder: it must stop now, even if the
            // record has gone unrenewed for a while.
            Claim::Take if holding => Round::HeldBy(record.holder.unwrap_or_default()),
            decision => {
                let lead_at = lead_at(replaced.seen_at, record.duration, self.lease_duration);
                match self.write(lease, decision).await {
                    Ok(()) => Round::Held { lead_at },
                    Err(refused) => Round::Failed(refused),
                }
            }
        }
    }

    /// Remembers the record if it changed; returns the observation of the
    /// record as it is now, with when it was first seen.
    fn observe(&mut self, lease: Option<&Lease>) -> Observed {
        let record = lease.map(record_of);
        let changed = self
            .observed
            .as_ref()
            .is_none_or(|seen| seen.record != record);
        if changed {
            self.observed = Some(Observed {
                record,
                seen_at: Instant::now(),
            });
        }
        self.observed.clone().unwrap_or(Observed {
            record: None,
            seen_at: Instant::now(),
        })
    }

    async fn create(&mut self) -> Round {
        // A missing Lease may have been deleted under a live leader: lead
        // only a full lease duration after first finding it missing.
        let missing = self.observe(None);
        let lease = Lease {
            metadata: ObjectMeta {
                name: Some(self.name.clone()),
                ..ObjectMeta::default()
            },
            spec: Some(self.claimed(None, Claim::Take)),
        };
        match self.api.create(&post_params(), &lease).await {
            Ok(created) => {
                self.observe(Some(&created));
                Round::Held {
                    lead_at: lead_at(missing.seen_at, None, self.lease_duration),
                }
            }
            Err(error) => {
                tracing::debug!(lease = %self.name, %error, "could not create the lease");
                Round::Failed(refusal(&error))
            }
        }
    }

    /// Our claim on the Lease whose spec was `previous`.
    fn claimed(&self, previous: Option<&LeaseSpec>, decision: Claim) -> LeaseSpec {
        let now = MicroTime(Timestamp::now());
        claimed_spec(previous, decision, &self.identity, self.lease_duration, now)
    }

    /// Writes our claim; on failure, the refusal if it was one.
    async fn write(&mut self, mut lease: Lease, decision: Claim) -> Result<(), Option<String>> {
        let previous = lease.spec.take();
        lease.spec = Some(self.claimed(previous.as_ref(), decision));
        // The resourceVersion makes this a compare-and-swap: of two
        // candidates taking the Lease at once, one gets a conflict.
        match self.api.replace(&self.name, &post_params(), &lease).await {
            Ok(written) => {
                self.observe(Some(&written));
                Ok(())
            }
            Err(error) => {
                tracing::debug!(lease = %self.name, %error, "could not write the lease");
                Err(refusal(&error))
            }
        }
    }
}

fn post_params() -> PostParams {
    PostParams {
        field_manager: Some(MANAGER_NAME.into()),
        ..PostParams::default()
    }
}
