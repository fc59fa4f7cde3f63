//! The reconcile of a companion: delete it once nothing wants it.
//!
//! A source that loses its label drops out of the source watch as if it had
//! been deleted, but it still exists, so the garbage collector will not
//! remove its companion. This reconcile does, from the companion's side.

use std::sync::Arc;

use tracing::Instrument;

use k8s_openapi::api::core::v1::{ConfigMap, ObjectReference};
use kube::{
    ResourceExt,
    runtime::{controller::Action, events::EventType},
};

use crate::{
    context::{Context, object_key},
    error::Error,
    metrics::{Operation, Outcome},
    plan, write,
};

pub async fn reconcile(companion: Arc<ConfigMap>, ctx: Arc<Context>) -> Result<Action, Error> {
    if !ctx.is_leading() {
        return Ok(Action::await_change());
    }
    let timer = ctx.metrics.reconcile_started();
    let result = prune(&companion, &ctx)
        .instrument(ctx.reconcile_span("prune", &companion))
        .await;
    timer.finish(if result.is_ok() {
        Outcome::success
    } else {
        Outcome::error
    });
    match result {
        Ok(()) => {
            ctx.backoffs.clear(&backoff_key(&companion));
            Ok(Action::await_change())
        }
        Err(Error::NamespaceTerminating) => Ok(Action::await_change()),
        Err(error) => Err(error),
    }
}

async fn prune(companion: &ConfigMap, ctx: &Context) -> Result<(), Error> {
    // Never before the source cache is complete: an incomplete cache would
    // make every source look unmanaged.
    ctx.caches.wait_ready().await;
    let namespace = companion.namespace().unwrap_or_default();
    let unwanted = plan::should_prune(companion, &ctx.suffix, |source| {
        ctx.caches.source(&namespace, source).is_some()
    });
    let (true, Some(uid)) = (unwanted, companion.uid()) else {
        return Ok(());
    };
    write::delete(ctx, &namespace, &companion.name_any(), uid).await?;
    let message = format!(
        "deleted companion {} (source no longer managed)",
        object_key(companion)
    );
    tracing::info!("{message}");
    ctx.metrics.companion_written(Operation::delete);
    if let Some(source) = source_reference(companion) {
        ctx.reporter
            .publish(source, EventType::Normal, "CompanionDeleted", message);
    }
    Ok(())
}

/// The source, as the companion's owner reference names it.
fn source_reference(companion: &ConfigMap) -> Option<ObjectReference> {
    let owner = companion
        .owner_references()
        .iter()
        .find(|r| r.controller == Some(true))?;
    Some(ObjectReference {
        api_version: Some(owner.api_version.clone()),
        kind: Some(owner.kind.clone()),
        name: Some(owner.name.clone()),
        namespace: companion.namespace(),
        uid: Some(owner.uid.clone()),
        ..ObjectReference::default()
    })
}

pub fn error_policy(companion: Arc<ConfigMap>, error: &Error, ctx: Arc<Context>) -> Action {
    let key = backoff_key(&companion);
    if ctx.backoffs.is_new_condition(&key, &error.to_string()) {
        tracing::warn!(companion = %key, %error, "could not prune companion; retrying with backoff");
    }
    ctx.requeue_after_failure(&key, error)
}

/// Kept apart from the sources' keys: a source may be named like a companion.
fn backoff_key(companion: &ConfigMap) -> String {
    format!("prune {}", object_key(companion))
}
