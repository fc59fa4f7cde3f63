//! While a watch fails, asks the API server every few seconds for one
//! ConfigMap of the controller's scope: an answer shows that the failing
//! watch is this process's problem, no answer that it is an outage (see
//! `health`).
//!
//! The probe reads what the watches read, through the API server's
//! storage: a list with `limit=1` and no resourceVersion is a consistent
//! read, which the API server serves only while it reaches etcd. (`/version`
//! would answer with etcd down.) Only a success or a refusal of its own (a
//! 4xx other than 429) counts as an answer; 429 and 5xx say the API server
//! is overloaded or without its storage. The controller's RBAC allows the
//! list already: the caches make it.

use std::{sync::Arc, time::Instant};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::{Api, Client, api::ListParams};

use crate::ops::health::{ErrorSource, Health, PROBE_FRESHNESS};

pub async fn while_watches_fail(client: Client, namespace: Option<String>, health: Arc<Health>) {
    let configmaps: Api<ConfigMap> = match &namespace {
        Some(namespace) => Api::namespaced(client, namespace),
        None => Api::all(client),
    };
    let one = ListParams::default().limit(1);
    // Three probes fit in the window in which an answer counts.
    let mut ticks = tokio::time::interval(PROBE_FRESHNESS / 3);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        if !health.any_failing() {
            continue;
        }
        let outcome = configmaps.list_metadata(&one).await;
        if answered(&outcome) {
            if health.probe_answered(Instant::now()) {
                tracing::info!("the API server answers again");
            }
        } else {
            if let Err(error) = &outcome {
                tracing::debug!(%error, "the API server did not answer a probe");
            }
            health.probe_unanswered();
        }
    }
}

/// Whether the API server answered: a success, or a refusal of its own.
fn answered<T>(outcome: &Result<T, kube::Error>) -> bool {
    match outcome {
        Ok(_) => true,
        Err(kube::Error::Api(status)) => {
            ErrorSource::of_status(status.code) == ErrorSource::Refused
        }
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::answered;
    use crate::test_fixtures::mk_api_error;

    #[test]
    fn successes_and_refusals_are_answers() {
        assert!(answered(&Ok::<(), kube::Error>(())));
        assert!(answered::<()>(&Err(mk_api_error(
            403,
            "Forbidden",
            "forbidden"
        ))));
        assert!(answered::<()>(&Err(mk_api_error(
            404,
            "NotFound",
            "namespaces \"gone\" not found"
        ))));
    }

    #[test]
    fn overload_server_errors_and_lost_links_are_not() {
        for code in [429, 500, 503, 504] {
            assert!(!answered::<()>(&Err(mk_api_error(code, "", ""))), "{code}");
        }
        assert!(!answered::<()>(&Err(kube::Error::Service(
            "request timed out".into()
        ))));
    }
}
