//! The reconcile of a source: make its companion, and its mirrors in other
//! namespaces, what they should be.
//!
//! Level-triggered: it never asks what happened, only compares the desired
//! companion (computed from the source as it is now) with the companion as
//! the cache holds it now, and makes at most one write per copy.

use std::sync::Arc;

use kube::runtime::{controller::Action, reflector::ObjectRef};

use crate::{
    contract::object_key,
    decisions::carried::{Carried, Lists},
    decisions::copy_request::{CopyRequest, ShapeAsked},
    decisions::desired_copy::{Refusal, ShapeKeys, never_a_source, shape_keys},
    decisions::plan::Write,
    decisions::scope::Scope,
    kind::MirroredKind,
    ops::metrics::Loop,
    reconcile::backoff::{BackoffKey, Of},
    reconcile::context::Context,
    reconcile::copy::{cached_copy, plan_copy, sync_copy},
    reconcile::source_read::Source,
    reconcile::{
        error::{Error, Retry},
        soonest::soonest,
    },
};

pub(crate) mod mirrors;

pub async fn reconcile<K: MirroredKind>(
    source: Arc<K>,
    ctx: Arc<Context<K>>,
) -> Result<Action, Error> {
    // Taken before the reconcile starts: one refused serves no wakeup,
    // which stays pending for the one that runs (`worker_share`).
    let namespace = source.meta().namespace.as_deref().unwrap_or_default();
    let object = ObjectRef::from_obj(source.as_ref());
    let Some(_worker) = ctx.sync_workers.take(namespace, &object) else {
        return Ok(Action::await_change());
    };
    let key = BackoffKey::new(Loop::sync, Of::Kind(K::SOURCE_KIND), source.meta());
    let served = ctx
        .pending
        .reconcile_started(&ObjectRef::from_obj(source.as_ref()));
    let work = sync(source.as_ref(), &served.scope, &ctx);
    (ctx.around())
        .run_reconcile(Loop::sync, source.meta(), &key, served.woken_at, work)
        .await
}

async fn sync<K: MirroredKind>(cached: &K, scope: &Scope, ctx: &Context<K>) -> Result<(), Error> {
    ctx.caches_ready().await?;
    if let Some(reason) = never_a_source(cached, &ctx.source_rules) {
        return Err(Error::NeverASource { reason });
    }
    // A malformed list of keys to carry stops every write of this source:
    // a typo must not strip labels that tools rely on from its copies.
    let lists = Lists::of(cached.meta()).map_err(Error::InvalidCopyList)?;
    // So does a malformed or type-breaking list of keys to mirror: what the
    // copies hold is decided once, for the companion and every mirror.
    let keys = shape_keys(cached, ShapeAsked::Annotated);
    let missing_keys = keys_missing(&keys)?;
    let key = K::current_key(&ctx.digest_key).ok_or(Error::NoDigestKey)?;
    let source = Source::new(cached, key).knowing(keys);
    let companion = sync_companion(&source, ctx).await;
    let mirrors = mirrors::sync_mirrors(&source, scope, ctx).await;
    // A key that is never carried is left off the copies, which are written
    // all the same: the owner is told once, and nothing else is held back.
    let carried = Carried::Listed {
        source: cached.meta(),
        lists: &lists,
    };
    let refused_keys = match carried.refused(&ctx.install.never_carried) {
        Some(keys) => Err(Error::CopyKeyRefused(keys)),
        None => Ok(()),
    };
    soonest([companion, mirrors, refused_keys, missing_keys])
}

/// What the source's `workshop.io/mirror-keys` names that it lacks, as the
/// outcome to tell (its copies are written without them); an error when
/// the list cannot be read or would break the Secret's type.
fn keys_missing(keys: &Result<ShapeKeys<'_>, Refusal>) -> Result<Result<(), Error>, Error> {
    let missing = match keys {
        Ok(keys) => keys.keys.as_ref().map(|keys| keys.missing.clone()),
        Err(refusal) => return Error::of_refusal(refusal.clone()).map_or(Ok(Ok(())), Err),
    };
    let missing = missing.unwrap_or_default();
    Ok(match missing.is_empty() {
        true => Ok(()),
        false => Err(Error::KeyMissing(missing.join(", "))),
    })
}

async fn sync_companion<K: MirroredKind>(
    source: &Source<'_, K>,
    ctx: &Context<K>,
) -> Result<(), Error> {
    match companion_of(source, ctx)? {
        Some(desired) => sync_copy(source, desired, ctx).await,
        None => Ok(()),
    }
}

/// The companion the source should have; None for an object that is
/// quietly not copied (a copy itself, or not yet stored).
fn companion_of<K: MirroredKind>(
    source: &Source<'_, K>,
    ctx: &Context<K>,
) -> Result<Option<K>, Error> {
    let namespace = source
        .cached
        .meta()
        .namespace
        .as_deref()
        .unwrap_or_default();
    match source.answered(&CopyRequest::COMPANION, &ctx.install) {
        Ok(answered) => Ok(Some(answered.copy_in(namespace, &ctx.install))),
        Err(refusal) => Error::of_refusal(refusal).map_or(Ok(None), Err),
    }
}

/// Whether this source's reconcile would do anything now (see `resync`):
/// its companion needs a write or cannot be written, or it may have mirrors,
/// which its reconcile compares one by one. Without a key, every source
/// waits for one: its reconcile says so (and counts as failing until a key
/// arrives, which asks for a resync), whether the source was listed before
/// or after the key was found missing.
pub fn needs_sync<K: MirroredKind>(source: &K, ctx: &Context<K>) -> bool {
    if never_a_source(source, &ctx.source_rules).is_some() {
        return true;
    }
    let Some(key) = K::current_key(&ctx.digest_key) else {
        return true;
    };
    let cached = Source::new(source, key);
    let companion = companion_of(&cached, ctx).and_then(|desired| {
        desired
            .map(|d| {
                plan_copy(
                    source,
                    d.clone(),
                    cached_copy(&d, ctx).as_ref(),
                    &cached.key,
                    ctx,
                )
            })
            .transpose()
    });
    let companion_in_sync = matches!(companion, Ok(None | Some(Write::Nothing)));
    !companion_in_sync || !matches!(mirrors::mirror_targets(source, ctx), Ok(None))
}

/// Decides when a failed reconcile runs again, and tells people once per
/// distinct condition (never once per retry).
pub fn error_policy<K: MirroredKind>(
    source: Arc<K>,
    error: &Error,
    ctx: Arc<Context<K>>,
) -> Action {
    let key = BackoffKey::new(Loop::sync, Of::Kind(K::SOURCE_KIND), source.meta());
    // A condition that waits for a change of the source is found again by
    // any reconcile; a failed write must be tried again by one that looks
    // at everything (`decisions::scope`).
    if error.retry() != Retry::OnChange {
        ctx.pending.retried(&ObjectRef::from_obj(source.as_ref()));
    }
    let source_key = object_key(source.meta());
    let condition = format!("{}: {error}", error.metric_label());
    let new = ctx.backoffs.is_new_condition(&key, &condition);
    for error in error.parts() {
        tell(&ctx, &source, &source_key, new, error);
    }
    ctx.around().requeue_after_failure(&key, error)
}

/// Tells people of one condition of a failed reconcile, if it is `new`.
fn tell<K: MirroredKind>(ctx: &Context<K>, source: &K, source_key: &str, new: bool, error: &Error) {
    match (new, error.event_reason()) {
        // The copies are written: a warning, not a failure to mirror.
        (true, Some(reason)) if matches!(error, Error::CopyKeyRefused(_)) => {
            tracing::warn!(source = %source_key, %error, kind = error.metric_label(), "copies written without keys the source asked for");
            ctx.events.warning(source, reason, error.to_string());
        }
        (true, Some(reason)) => {
            tracing::error!(source = %source_key, %error, kind = error.metric_label(), "cannot mirror source");
            ctx.events.warning(source, reason, error.to_string());
        }
        // A stale cache is the normal cost of reading from a cache: it is
        // fixed by reconciling again from the newer state, soon.
        (true, None) if matches!(error, Error::Stale(_)) => {
            tracing::debug!(source = %source_key, %error, "cache was stale; reconciling again")
        }
        // Told once for all sources, by the watch of the key.
        (true, None) if matches!(error, Error::NoDigestKey) => {
            tracing::debug!(source = %source_key, %error, "waiting for the digest key")
        }
        (true, None) => {
            tracing::warn!(source = %source_key, %error, "reconcile failed; retrying with backoff")
        }
        (false, _) => {
            tracing::debug!(source = %source_key, %error, "reconcile failed again; retrying")
        }
    }
}
