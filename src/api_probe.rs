//! While a watch fails, asks the API server for its version every few
//! seconds: an answer shows that the failing watch is this process's
//! problem, not an outage (see `health`).

use std::{sync::Arc, time::Instant};

use kube::Client;

use crate::health::{Health, PROBE_FRESHNESS};

pub async fn while_watches_fail(client: Client, health: Arc<Health>) {
    // Three probes fit in the window in which an answer counts.
    let mut ticks = tokio::time::interval(PROBE_FRESHNESS / 3);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        if !health.any_failing() {
            continue;
        }
        match client.apiserver_version().await {
            // A refusal is an answer too.
            Ok(_) | Err(kube::Error::Api(_)) => health.api_answered(Instant::now()),
            Err(error) => tracing::debug!(%error, "the API server did not answer a probe"),
        }
    }
}
