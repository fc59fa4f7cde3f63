//! The reconcile of a source: make its companion, and its mirrors in other
//! namespaces, what they should be.
//!
//! Level-triggered: it never asks what happened, only compares the desired
//! companion (computed from the source as it is now) with the companion as
//! the cache holds it now, and makes at most one write per copy.

use std::{collections::BTreeSet, sync::Arc};

use futures::{StreamExt, stream};
use k8s_openapi::api::core::v1::ObjectReference;
use kube::{
    ResourceExt,
    runtime::{controller::Action, reflector::ObjectRef},
};

use crate::{
    contract::warning,
    decisions::carried::{self, Lists},
    decisions::consent::{NamespaceFacts, NamespaceRefusal},
    decisions::desired::{self, Refusal, desired_companion, desired_mirror, never_a_source},
    decisions::plan::{self, NameTaken, Write},
    decisions::scope::Scope,
    decisions::targets::Targets,
    kind::MirroredKind,
    ops::metrics::Loop,
    reconcile::backoff::BackoffKey,
    reconcile::context::{Context, object_key},
    reconcile::error::{Error, Retry, soonest},
    reconcile::source_content::Source,
    reconcile::write,
};

pub async fn reconcile<K: MirroredKind>(
    source: Arc<K>,
    ctx: Arc<Context<K>>,
) -> Result<Action, Error> {
    let key = BackoffKey::new(Loop::sync, source.meta());
    let served = ctx
        .woken
        .reconcile_started(&ObjectRef::from_obj(source.as_ref()));
    let work = sync(source.as_ref(), &served.scope, &ctx);
    ctx.run_reconcile(Loop::sync, source.meta(), &key, served.woken_at, work)
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
    let key = K::current_key(&ctx.digest_key).ok_or(Error::NoDigestKey)?;
    let source = Source::new(cached, key);
    let companion = sync_companion(&source, ctx).await;
    let mirrors = match scope {
        Scope::Everything => sync_mirrors(&source, ctx).await,
        Scope::Namespaces(namespaces) => sync_mirrors_in(&source, namespaces, ctx).await,
    };
    // A key that is never carried is left off the copies, which are written
    // all the same: the owner is told once, and nothing else is held back.
    let refused_keys = match carried::refused(cached.meta(), &lists) {
        Some(keys) => Err(Error::CopyKeyRefused(keys)),
        None => Ok(()),
    };
    soonest([companion, mirrors, refused_keys])
}

async fn sync_companion<K: MirroredKind>(
    source: &Source<'_, K>,
    ctx: &Context<K>,
) -> Result<(), Error> {
    match companion_of(source.cached, &source.key, ctx)? {
        Some(desired) => sync_copy(source, desired, ctx).await,
        None => Ok(()),
    }
}

/// The companion the source should have; None for an object that is
/// quietly not copied (a copy itself, or not yet stored).
fn companion_of<K: MirroredKind>(
    source: &K,
    key: &K::DigestKey,
    ctx: &Context<K>,
) -> Result<Option<K>, Error> {
    match desired_companion(source, &ctx.suffix, key) {
        Ok(desired) => Ok(Some(finished(desired, source, ctx)?)),
        Err(Refusal::NameTooLong { name, len }) => Err(Error::NameTooLong { name, len }),
        Err(Refusal::SourceIsCompanion | Refusal::Incomplete | Refusal::BeingDeleted) => Ok(None),
    }
}

/// A built copy marked with this install's selector, carrying what the
/// source's lists select.
fn finished<K: MirroredKind>(copy: K, source: &K, ctx: &Context<K>) -> Result<K, Error> {
    desired::finished(copy, source, &ctx.selector, &ctx.source_label_keys)
        .map_err(Error::InvalidCopyList)
}

/// Compares one copy (companion or mirror) with the cache; one write at most.
pub(crate) async fn sync_copy<K: MirroredKind>(
    source: &Source<'_, K>,
    desired: K,
    ctx: &Context<K>,
) -> Result<(), Error> {
    let write = plan_copy(source.cached, desired, &source.key, ctx)?;
    write::perform(ctx, source, write).await
}

pub(crate) fn plan_copy<K: MirroredKind>(
    source: &K,
    desired: K,
    key: &K::DigestKey,
    ctx: &Context<K>,
) -> Result<Write<K>, Error> {
    let namespace = desired.namespace().unwrap_or_default();
    let name = desired.name_any();
    let actual = ctx.caches.copy(&namespace, &name);
    plan::plan(
        desired,
        actual.as_ref(),
        source.meta(),
        &ctx.source_label_keys,
        key,
    )
    .map_err(|NameTaken| Error::NameTaken {
        name: format!("{namespace}/{name}"),
    })
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
    let companion = companion_of(source, &key, ctx)
        .and_then(|desired| desired.map(|d| plan_copy(source, d, &key, ctx)).transpose());
    let companion_in_sync = matches!(companion, Ok(None | Some(Write::Nothing)));
    !companion_in_sync || !matches!(mirror_targets(source, ctx), Ok(None))
}

/// How many mirrors of one source are written at once.
const MIRROR_WRITES_AT_ONCE: usize = 16;
/// How many namespaces a mirroring source's reconcile compares before it
/// lets the rest of the process run.
const NAMESPACES_BETWEEN_YIELDS: usize = 256;

/// One copy in each namespace the source asks for and that consents. The
/// mirrors no longer wanted are removed by the prune loop.
async fn sync_mirrors<K: MirroredKind>(
    source: &Source<'_, K>,
    ctx: &Context<K>,
) -> Result<(), Error> {
    let cached = source.cached;
    let Some(targets) = mirror_targets(cached, ctx)? else {
        return Ok(());
    };
    let name = cached.name_any();
    if ctx.reserved_names.contains(&name) {
        return Err(Error::ReservedName { name });
    }
    let source_namespace = cached.namespace().unwrap_or_default();
    let mut wanted = Vec::new();
    for (checked, namespace) in ctx
        .caches
        .admitting_targets(&targets, &ctx.consent)
        .into_iter()
        .enumerate()
    {
        // Other reconciles, and the Lease renewal, share this thread.
        if checked % NAMESPACES_BETWEEN_YIELDS == NAMESPACES_BETWEEN_YIELDS - 1 {
            tokio::task::yield_now().await;
        }
        if let Some(mirror) = wanted_mirror(source, &source_namespace, &namespace, ctx)? {
            wanted.push(mirror);
        }
    }
    let results = write_mirrors(source, wanted, ctx).await;
    let protected = protected_targets(&targets, &source_namespace, ctx);
    mirror_outcome(results, protected)
}

/// The mirrors in `namespaces` only, for a reconcile woken by changes there
/// alone: the source's other mirrors are as its last reconcile, which
/// succeeded, left them (`decisions::scope`). A namespace the source does
/// not ask for, or that does not consent, needs nothing here: its mirror,
/// if any, is the prune loop's.
async fn sync_mirrors_in<K: MirroredKind>(
    source: &Source<'_, K>,
    namespaces: &BTreeSet<String>,
    ctx: &Context<K>,
) -> Result<(), Error> {
    let cached = source.cached;
    let Some(targets) = mirror_targets(cached, ctx)? else {
        return Ok(());
    };
    let name = cached.name_any();
    if ctx.reserved_names.contains(&name) {
        return Err(Error::ReservedName { name });
    }
    let source_namespace = cached.namespace().unwrap_or_default();
    let mut wanted = Vec::new();
    for (checked, namespace) in namespaces.iter().enumerate() {
        if checked % NAMESPACES_BETWEEN_YIELDS == NAMESPACES_BETWEEN_YIELDS - 1 {
            tokio::task::yield_now().await;
        }
        let Some(facts) = ctx.caches.namespace_facts(namespace) else {
            continue;
        };
        if !ctx.consent.admits(&facts) || !targets.includes(&facts.name, &facts.labels) {
            continue;
        }
        if let Some(mirror) = wanted_mirror(source, &source_namespace, &facts, ctx)? {
            wanted.push(mirror);
        }
    }
    let results = write_mirrors(source, wanted, ctx).await;
    mirror_outcome(results, Vec::new())
}

/// The mirror a namespace that admits the kind and is asked for should
/// hold, if it accepts mirrors from the source's namespace.
fn wanted_mirror<K: MirroredKind>(
    source: &Source<'_, K>,
    source_namespace: &str,
    namespace: &NamespaceFacts,
    ctx: &Context<K>,
) -> Result<Option<K>, Error> {
    match ctx.consent.verdict(source_namespace, namespace) {
        Ok(()) => match desired_mirror(source.cached, &namespace.name, &source.key) {
            Ok(mirror) => finished(mirror, source.cached, ctx).map(Some),
            Err(_) => Ok(None),
        },
        Err(NamespaceRefusal::MalformedAcceptFrom(why)) => {
            warn_namespace(ctx, namespace, &why);
            Ok(None)
        }
        Err(_) => Ok(None),
    }
}

async fn write_mirrors<K: MirroredKind>(
    source: &Source<'_, K>,
    wanted: Vec<K>,
    ctx: &Context<K>,
) -> Vec<Result<(), Error>> {
    stream::iter(wanted)
        .map(|mirror| sync_copy(source, mirror, ctx))
        .buffer_unordered(MIRROR_WRITES_AT_ONCE)
        .collect()
        .await
}

/// The protected namespaces `targets` asks for that consent to the kind:
/// they would receive a mirror but for their protection, which the source's
/// owner should hear of. (Asked for by a glob but not consenting, they
/// would receive nothing anyway: no news.)
fn protected_targets<K: MirroredKind>(
    targets: &Targets,
    source_namespace: &str,
    ctx: &Context<K>,
) -> Vec<String> {
    ctx.consent
        .protected()
        .iter()
        .filter(|name| name.as_str() != source_namespace)
        .filter_map(|name| ctx.caches.namespace_facts(name))
        .filter(|ns| {
            targets.includes(&ns.name, &ns.labels) && ctx.consent.selector.matches(&ns.labels)
        })
        .map(|ns| ns.name)
        .collect()
}

/// Tells a namespace, once per value, that its list of accepted source
/// namespaces cannot be read, so it accepts nothing.
fn warn_namespace<K: MirroredKind>(ctx: &Context<K>, namespace: &NamespaceFacts, why: &str) {
    let value = namespace.accept_from.as_deref().unwrap_or_default();
    if !ctx.namespace_warnings.is_new(&namespace.name, value) {
        return;
    }
    tracing::error!(namespace = %namespace.name, %why, "namespace accepts no mirrors until its annotation is fixed");
    let regarding = ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Namespace".into()),
        name: Some(namespace.name.clone()),
        ..ObjectReference::default()
    };
    ctx.events.warning_about(
        regarding,
        warning::INVALID_ACCEPT_MIRRORS_FROM,
        format!("{why}; this namespace accepts no mirrors until it is fixed"),
    );
}

/// Where the source asks to be mirrored; None when it does not, or when
/// this controller watches one namespace only.
fn mirror_targets<K: MirroredKind>(source: &K, ctx: &Context<K>) -> Result<Option<Targets>, Error> {
    if ctx.caches.namespaces.is_none() {
        return Ok(None);
    }
    Targets::of(source.meta()).map_err(Error::InvalidTargets)
}

/// All names taken become one condition (reported once), and so do the
/// protected namespaces asked for; a namespace being deleted needs no
/// mirror; of what is left, the failure to be retried soonest stands for
/// the rest, with every condition a person must hear of (`soonest`).
fn mirror_outcome(results: Vec<Result<(), Error>>, protected: Vec<String>) -> Result<(), Error> {
    let mut taken = Vec::new();
    let mut others = Vec::new();
    for result in results {
        match result {
            Ok(()) | Err(Error::NamespaceTerminating) => {}
            Err(Error::NameTaken { name }) => taken.push(name),
            Err(error) => others.push(Err(error)),
        }
    }
    taken.sort();
    if !taken.is_empty() {
        others.insert(0, Err(Error::MirrorNameTaken { names: taken }));
    }
    if !protected.is_empty() {
        others.push(Err(Error::MirrorNamespaceProtected {
            namespaces: protected,
        }));
    }
    soonest(others)
}

/// Decides when a failed reconcile runs again, and tells people once per
/// distinct condition (never once per retry).
pub fn error_policy<K: MirroredKind>(
    source: Arc<K>,
    error: &Error,
    ctx: Arc<Context<K>>,
) -> Action {
    let key = BackoffKey::new(Loop::sync, source.meta());
    // A condition that waits for a change of the source is found again by
    // any reconcile; a failed write must be tried again by one that looks
    // at everything (`decisions::scope`).
    if error.retry() != Retry::OnChange {
        ctx.woken.retried(&ObjectRef::from_obj(source.as_ref()));
    }
    let source_key = object_key(source.meta());
    let condition = format!("{}: {error}", error.metric_label());
    let new = ctx.backoffs.is_new_condition(&key, &condition);
    for error in error.parts() {
        tell(&ctx, &source, &source_key, new, error);
    }
    ctx.requeue_after_failure(&key, error)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn reasons(outcome: Result<(), Error>) -> Vec<&'static str> {
        let error = outcome.expect_err("a failure");
        error
            .parts()
            .iter()
            .filter_map(Error::event_reason)
            .collect()
    }

    #[test]
    fn a_taken_mirror_name_does_not_hide_a_protected_namespace() {
        let taken = Err(Error::NameTaken {
            name: "team-a/settings".into(),
        });
        let outcome = mirror_outcome(vec![Ok(()), taken], vec!["kube-system".into()]);
        assert_eq!(
            reasons(outcome),
            [
                warning::MIRROR_NAME_TAKEN,
                warning::MIRROR_NAMESPACE_PROTECTED
            ]
        );
    }

    #[test]
    fn a_transient_failure_is_retried_soon_and_tells_nothing_yet() {
        let outcome = mirror_outcome(
            vec![
                Err(Error::Stale("conflict".into())),
                Err(Error::NameTaken { name: "b/s".into() }),
            ],
            vec!["kube-system".into()],
        );
        assert!(matches!(outcome, Err(Error::Stale(_))));
    }

    #[test]
    fn a_refused_key_is_told_beside_the_mirrors_conditions() {
        let mirrors = mirror_outcome(vec![], vec!["kube-system".into()]);
        let outcome = soonest([Ok(()), mirrors, Err(Error::CopyKeyRefused("app".into()))]);
        assert_eq!(
            reasons(outcome),
            [
                warning::MIRROR_NAMESPACE_PROTECTED,
                warning::COPY_KEY_REFUSED
            ]
        );
    }
}
