//! What every reconcile is handed.

use std::sync::{
    Arc,
    atomic::{AtomicU64, Ordering},
};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::{Api, Client, ResourceExt};
use tokio::sync::watch;
use tracing::Span;

use kube::runtime::controller::Action;

use crate::{
    backoff::{Backoffs, RetryPolicy},
    caches::Caches,
    error::Error,
    metrics::Metrics,
    report::Reporter,
    selector::Selector,
};

pub struct Context {
    pub client: Client,
    pub caches: Caches,
    pub suffix: String,
    /// Label keys of the source selector; a companion must not carry them.
    pub source_label_keys: Vec<String>,
    pub reporter: Reporter,
    pub metrics: Arc<Metrics>,
    pub backoffs: Backoffs,
    pub retry_policy: RetryPolicy,
    /// Which namespaces accept mirrors.
    pub consent: Selector,
    pub leading: watch::Receiver<bool>,
}

impl Context {
    /// Whether this replica may write. Always true without leader election.
    pub fn is_leading(&self) -> bool {
        *self.leading.borrow()
    }

    /// Counts a failed reconcile of `key` and says when to try again.
    pub fn requeue_after_failure(&self, key: &str, error: &Error) -> Action {
        self.metrics.reconcile_failed(error.is_terminal());
        match self
            .backoffs
            .delay_for(key, error.retry(), &self.retry_policy)
        {
            Some(delay) => Action::requeue(delay),
            None => Action::await_change(),
        }
    }

    /// The span every log line of one reconcile carries.
    pub fn reconcile_span(&self, controller: &'static str, cm: &ConfigMap) -> Span {
        static NEXT_ID: AtomicU64 = AtomicU64::new(1);
        tracing::info_span!(
            "reconcile",
            controller,
            namespace = %cm.namespace().unwrap_or_default(),
            name = %cm.name_any(),
            reconcile_id = NEXT_ID.fetch_add(1, Ordering::Relaxed),
        )
    }

    pub fn configmaps(&self, namespace: &str) -> Api<ConfigMap> {
        Api::namespaced(self.client.clone(), namespace)
    }
}

/// `namespace/name`, as objects are named in logs.
pub fn object_key(cm: &ConfigMap) -> String {
    format!("{}/{}", cm.namespace().unwrap_or_default(), cm.name_any())
}
