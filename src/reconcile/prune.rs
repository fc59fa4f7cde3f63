//! The reconcile of a copy: delete it once nothing wants it.
//!
//! A source that loses its label drops out of the source watch as if it had
//! been deleted, but it still exists, so the garbage collector will not
//! remove its companion. Mirrors in other namespaces have no owner reference
//! at all (a namespace cannot own objects in another). This reconcile
//! removes both from the copy's side, so a source's deletion never waits for
//! the controller: there is no finalizer to remove.

use std::sync::Arc;

use k8s_openapi::api::core::v1::ObjectReference;
use kube::{ResourceExt, runtime::controller::Action};

use crate::{
    contract::object_key,
    contract::{self, CopyRole, MIRROR_OF_UID_ANNOTATION, Operation},
    decisions::cache_form,
    decisions::copy_verdict::{self, CopyVerdict},
    decisions::owner_ref::controlling_owner,
    decisions::plan::SeenVersion,
    decisions::request_key::RequestKey,
    kind::MirroredKind,
    ops::metrics::Loop,
    reconcile::backoff::{BackoffKey, Of},
    reconcile::cluster_mirror,
    reconcile::context::Context,
    reconcile::copy_facts::verdict,
    reconcile::write::{self, Deleted},
    reconcile::{
        api_outcome::{ApiOutcome, classify},
        error::Error,
    },
};

pub async fn reconcile<K: MirroredKind>(
    cached: Arc<K>,
    ctx: Arc<Context<K>>,
) -> Result<Action, Error> {
    // Only the copy's metadata decides its fate: its content is not read.
    let copy = cache_form::copy_from_cache(cached.as_ref());
    let copy = copy.object();
    let key = BackoffKey::new(Loop::prune, Of::Kind(K::SOURCE_KIND), copy.meta());
    (ctx.around())
        .run_reconcile(Loop::prune, copy.meta(), &key, None, prune(copy, &ctx))
        .await
}

async fn prune<K: MirroredKind>(copy: &K, ctx: &Context<K>) -> Result<(), Error> {
    // Never before the source cache is complete: an incomplete cache would
    // make every source look unmanaged.
    ctx.caches_ready().await?;
    let verdict = verdict(copy, ctx);
    if let Some(request) = RequestKey::of_copy(copy.meta()) {
        return cluster_mirror::prune::prune(copy, &request, verdict, ctx).await;
    }
    let why = match verdict {
        // Only a ClusterMirror's or a Mirror's copy is kept or released
        // for its request's sake.
        CopyVerdict::Keep | CopyVerdict::ClusterMirrorDeleted(_) | CopyVerdict::Orphaned => None,
        CopyVerdict::Unwanted(why) => Some(why.said()),
        CopyVerdict::UnwantedIfSourceGone(source, why) => {
            source_gone(&source, ctx).await?.then_some(why.said())
        }
    };
    let (Some(why), Some(seen)) = (why, SeenVersion::of(copy.meta())) else {
        return Ok(());
    };
    let namespace = copy.namespace().unwrap_or_default();
    if write::delete(ctx, &namespace, &copy.name_any(), seen).await? == Deleted::AlreadyGone {
        // Someone else, or an earlier prune of it, removed it first: nothing
        // was deleted here, so nothing is told or counted.
        tracing::debug!(copy = %object_key(copy.meta()), "copy already gone");
        return Ok(());
    }
    let role = CopyRole::of(copy.meta());
    let message = format!("deleted {} {} ({why})", role, object_key(copy.meta()));
    tracing::info!("{message}");
    ctx.metrics.copy_written(Operation::Delete);
    let source = match contract::mirror_of(copy.meta()) {
        Some((namespace, name)) => verified_mirror_source(copy, namespace, name, ctx).await,
        None => source_reference(copy),
    };
    if let Some(source) = source {
        let reason = role.event_reason(Operation::Delete);
        ctx.events.normal_about(source, reason, message);
    }
    Ok(())
}

/// Whether this cached copy's reconcile would delete it now (see `resync`).
pub fn needs_prune<K: MirroredKind>(cached: &K, ctx: &Context<K>) -> bool {
    let copy = cache_form::copy_from_cache(cached);
    // An orphan is kept: its reconcile only tells of it, which the
    // ClusterMirror loop asks for after each list.
    !matches!(
        verdict(copy.object(), ctx),
        CopyVerdict::Keep | CopyVerdict::Orphaned
    )
}

/// Whether the source no longer exists with the uid the copy records.
async fn source_gone<K: MirroredKind>(
    source: &copy_verdict::SourceRef,
    ctx: &Context<K>,
) -> Result<bool, Error> {
    let found = ctx
        .api(&source.namespace)
        .get_metadata_opt(&source.name)
        .await
        .map_err(|err| match classify::<K>(err) {
            ApiOutcome::Failed(error) => error,
            ApiOutcome::NamespaceTerminating => Error::NamespaceTerminating,
        })?;
    Ok(found.and_then(|meta| meta.metadata.uid).as_deref() != Some(source.uid.as_str()))
}

/// The source a mirror's annotations name, only if that object exists with
/// the very uid the mirror records: annotations can be written by anyone,
/// and must not make the controller post Events into another namespace. A
/// managed source is checked in the cache; one that no longer is (the
/// usual reason its mirrors go) is read once.
async fn verified_mirror_source<K: MirroredKind>(
    mirror: &K,
    namespace: String,
    name: String,
    ctx: &Context<K>,
) -> Option<ObjectReference> {
    let uid = mirror
        .annotations()
        .get(MIRROR_OF_UID_ANNOTATION)
        .cloned()?;
    let actual_uid = match ctx.caches.source(&namespace, &name) {
        Some(source) => source.meta().uid.clone(),
        None => ctx
            .api(&namespace)
            .get_metadata_opt(&name)
            .await
            .ok()
            .flatten()
            .and_then(|source| source.metadata.uid),
    };
    if actual_uid.as_deref() != Some(uid.as_str()) {
        tracing::debug!(mirror = %object_key(mirror.meta()), "the source this mirror names is not verified; no Event");
        return None;
    }
    let uid = Some(uid);
    Some(ObjectReference {
        api_version: Some(K::api_version(&()).into_owned()),
        kind: Some(K::kind(&()).into_owned()),
        name: Some(name),
        namespace: Some(namespace),
        uid,
        ..ObjectReference::default()
    })
}

/// The source, as the companion's owner reference names it.
fn source_reference<K: MirroredKind>(companion: &K) -> Option<ObjectReference> {
    let owner = controlling_owner::<K>(companion.meta())?;
    Some(ObjectReference {
        api_version: Some(owner.api_version.clone()),
        kind: Some(owner.kind.clone()),
        name: Some(owner.name.clone()),
        namespace: companion.namespace(),
        uid: Some(owner.uid.clone()),
        ..ObjectReference::default()
    })
}

pub fn error_policy<K: MirroredKind>(copy: Arc<K>, error: &Error, ctx: Arc<Context<K>>) -> Action {
    let key = BackoffKey::new(Loop::prune, Of::Kind(K::SOURCE_KIND), copy.meta());
    if ctx.backoffs.is_new_condition(&key, &error.to_string()) {
        tracing::warn!(copy = %object_key(copy.meta()), %error, "could not prune copy; retrying with backoff");
    }
    ctx.around().requeue_after_failure(&key, error)
}
