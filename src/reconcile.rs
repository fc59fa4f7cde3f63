//! The reconcile of a source: make its companion what it should be.
//!
//! Level-triggered: it never asks what happened, only compares the desired
//! companion (computed from the source as it is now) with the companion as
//! the cache holds it now, and makes at most one write.

use std::sync::Arc;

use tracing::Instrument;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::{ResourceExt, runtime::controller::Action};

use crate::{
    context::{Context, object_key},
    desired::{Refusal, desired_companion},
    error::Error,
    metrics::Outcome,
    plan::{self, NameTaken},
    write,
};

pub async fn reconcile(source: Arc<ConfigMap>, ctx: Arc<Context>) -> Result<Action, Error> {
    if !ctx.is_leading() {
        // A standby keeps its caches warm and writes nothing; it reconciles
        // everything when it becomes the leader.
        return Ok(Action::await_change());
    }
    let timer = ctx.metrics.reconcile_started();
    let result = sync(&source, &ctx)
        .instrument(ctx.reconcile_span("sync", &source))
        .await;
    timer.finish(if result.is_ok() {
        Outcome::success
    } else {
        Outcome::error
    });
    match result {
        Ok(()) => {
            ctx.backoffs.clear(&object_key(&source));
            Ok(Action::await_change())
        }
        Err(Error::NamespaceTerminating) => Ok(Action::await_change()),
        Err(error) => Err(error),
    }
}

async fn sync(source: &ConfigMap, ctx: &Context) -> Result<(), Error> {
    ctx.caches.wait_ready().await;
    let desired = match desired_companion(source, &ctx.suffix) {
        Ok(desired) => desired,
        Err(Refusal::NameTooLong { name, len }) => return Err(Error::NameTooLong { name, len }),
        Err(Refusal::SourceIsCompanion | Refusal::Incomplete) => return Ok(()),
    };
    let namespace = source.namespace().unwrap_or_default();
    let name = desired.name_any();
    let actual = ctx.caches.companion(&namespace, &name);
    let write = plan::plan(desired, actual.as_deref(), source, &ctx.source_label_keys).map_err(
        |NameTaken| Error::NameTaken {
            name: format!("{namespace}/{name}"),
        },
    )?;
    write::perform(ctx, source, write).await
}

/// Decides when a failed reconcile runs again, and tells people once per
/// distinct condition (never once per retry).
pub fn error_policy(source: Arc<ConfigMap>, error: &Error, ctx: Arc<Context>) -> Action {
    let key = object_key(&source);
    let condition = format!("{}: {error}", error.metric_label());
    let new = ctx.backoffs.is_new_condition(&key, &condition);
    match (new, error.event_reason()) {
        (true, Some(reason)) => {
            tracing::error!(source = %key, %error, kind = error.metric_label(), "cannot mirror source");
            ctx.reporter.warning(&source, reason, error.to_string());
        }
        (true, None) => {
            tracing::warn!(source = %key, %error, "reconcile failed; retrying with backoff")
        }
        (false, _) => tracing::debug!(source = %key, %error, "reconcile failed again; retrying"),
    }
    ctx.requeue_after_failure(&key, error)
}
