//! The prune of a copy a ClusterMirror or a Mirror wrote: deleted once
//! its request no longer wants it, or was deleted by someone, seen or
//! found so (released instead, with `deletionPolicy: Orphan`); kept as an
//! orphan when its request went with its CRD, or is gone with nothing to
//! tell how.

use crate::ops::metrics::OrphanCounts;

use kube::{ResourceExt, api::PostParams};

use crate::{
    api::DeletionPolicy,
    cluster::cluster_mirrors::Gone,
    contract::{MANAGER_NAME, Operation, object_key, warning},
    decisions::cache_form,
    decisions::cluster_mirror::release as release_marks,
    decisions::copy_verdict::CopyVerdict,
    decisions::plan::SeenVersion,
    decisions::request_key::{RequestKey, RequestKind},
    kind::MirroredKind,
    reconcile::context::Context,
    reconcile::copy_facts::verdict,
    reconcile::write::{self, Deleted},
    reconcile::{
        api_outcome::{ApiOutcome, classify},
        error::Error,
    },
};

/// Carries out `verdict` on `copy`, written by the ClusterMirror or
/// Mirror `key`.
pub async fn prune<K: MirroredKind>(
    copy: &K,
    key: &RequestKey,
    verdict: CopyVerdict,
    ctx: &Context<K>,
) -> Result<(), Error> {
    match verdict {
        CopyVerdict::Keep => Ok(()),
        // A source's own copy's verdict, never a ClusterMirror's.
        CopyVerdict::UnwantedIfSourceGone(..) => Ok(()),
        CopyVerdict::Unwanted(why) => delete(copy, key, ctx, why.said()).await,
        CopyVerdict::ClusterMirrorDeleted(policy) => {
            match gone(copy, key, ctx).await? {
                Gone::BySomeone => {}
                Gone::WithItsCrd => {
                    orphaned(copy, key, ctx);
                    return Ok(());
                }
                Gone::StillThere => return Ok(()),
            }
            match policy {
                DeletionPolicy::Delete => {
                    let why = format!("its {} was deleted", key.kind().name());
                    delete(copy, key, ctx, &why).await
                }
                DeletionPolicy::Orphan => release(copy, key, ctx).await,
            }
        }
        CopyVerdict::Orphaned => {
            orphaned(copy, key, ctx);
            Ok(())
        }
    }
}

async fn delete<K: MirroredKind>(
    copy: &K,
    key: &RequestKey,
    ctx: &Context<K>,
    why: &str,
) -> Result<(), Error> {
    let Some(seen) = SeenVersion::of(copy.meta()) else {
        return Ok(());
    };
    let namespace = copy.namespace().unwrap_or_default();
    if write::delete(ctx, &namespace, &copy.name_any(), seen).await? == Deleted::AlreadyGone {
        // Someone else, or an earlier prune of it, removed it first: nothing
        // was deleted here, so nothing is told or counted.
        tracing::debug!(copy = %object_key(copy.meta()), "copy already gone");
        return Ok(());
    }
    done(
        copy,
        key,
        ctx,
        Operation::Delete,
        ("deleted", &format!(" ({why})")),
    );
    Ok(())
}

/// Leaves `copy` in place as a plain object: without the controller's
/// labels and annotations, nothing (this controller, the admission
/// policy) takes it for a copy any more. Read and replaced, as every
/// write of a copy is (no `patch` right is needed), and only if it is
/// still the version decided on.
async fn release<K: MirroredKind>(
    copy: &K,
    key: &RequestKey,
    ctx: &Context<K>,
) -> Result<(), Error> {
    let namespace = copy.namespace().unwrap_or_default();
    let api = ctx.api(&namespace);
    let Some(mut current) = api.get_opt(&copy.name_any()).await.map_err(failed::<K>)? else {
        return Ok(());
    };
    if current.meta().resource_version != copy.meta().resource_version {
        let key = object_key(copy.meta());
        return Err(Error::Stale(format!("{key} changed since it was seen")));
    }
    release_marks(current.meta_mut());
    let params = PostParams {
        field_manager: Some(MANAGER_NAME.into()),
        ..PostParams::default()
    };
    ctx.ensure_leading()?;
    match api.replace(&copy.name_any(), &params, &current).await {
        Ok(_) => {}
        Err(kube::Error::Api(status)) if status.is_not_found() => return Ok(()),
        Err(err) => return Err(failed::<K>(err)),
    }
    let after = format!(
        " (its {} was deleted with deletionPolicy Orphan): it stays, a plain object the controller no longer keeps",
        key.kind().name()
    );
    done(copy, key, ctx, Operation::Update, ("released", &after));
    Ok(())
}

/// Logs and counts the write `operation` made of `copy`, of the request
/// `key`: "`verb` copy namespace/name`after`".
fn done<K: MirroredKind>(
    copy: &K,
    key: &RequestKey,
    ctx: &Context<K>,
    operation: Operation,
    (verb, after): (&str, &str),
) {
    tracing::info!(
        request = %key,
        "{verb} copy {}{after}",
        object_key(copy.meta())
    );
    ctx.metrics.copy_written(operation);
}

fn failed<K: MirroredKind>(err: kube::Error) -> Error {
    match classify::<K>(err) {
        ApiOutcome::Failed(error) => error,
        ApiOutcome::NamespaceTerminating => Error::NamespaceTerminating,
    }
}

/// What became of the request `key` that `copy` is bound to, read from
/// the API server (see [`ClusterMirrors::gone`]).
///
/// [`ClusterMirrors::gone`]: crate::cluster::cluster_mirrors::ClusterMirrors::gone
async fn gone<K: MirroredKind>(
    copy: &K,
    key: &RequestKey,
    ctx: &Context<K>,
) -> Result<Gone, Error> {
    let Some(cluster_mirrors) = &ctx.cluster_mirrors else {
        return Ok(Gone::StillThere);
    };
    cluster_mirrors
        .mirrors
        .gone(key, copy.meta())
        .await
        .map_err(Error::Transient)
}

/// `copy` is an orphan: told once per request, in the log and as a
/// Warning Event about the copy.
fn orphaned<K: MirroredKind>(copy: &K, key: &RequestKey, ctx: &Context<K>) {
    let Some(cluster_mirrors) = &ctx.cluster_mirrors else {
        return;
    };
    // Each orphan's prune says it kept it, told or not: the one trace that
    // the prune of every copy of a gone ClusterMirror has been made.
    tracing::debug!(
        request = %key,
        "kept copy {} as an orphan",
        object_key(copy.meta())
    );
    if !cluster_mirrors.mirrors.first_orphaned(key) {
        return;
    }
    let said = key.said();
    let message = format!(
        "{said} is gone and its deletion was not seen (its CRD was deleted or replaced, or it went while the controller was not running and its copies, written by an earlier release, record no CRD): its copies, such as this one, are kept as orphans, neither updated nor removed. Apply {said} again to adopt them; delete it then to remove them"
    );
    tracing::warn!(request = %key, copy = %object_key(copy.meta()), "{message}");
    ctx.events
        .warning(copy, warning::CLUSTER_MIRROR_COPY_ORPHANED, message);
}

/// Adds the orphans among this kind's cached copies to `counts`: a
/// ClusterMirror's by its name, a Mirror's to their sum (a tenant's name is
/// no label). None of a kind while its cache is not listed or its CRD is
/// missing: then no absence means anything.
pub fn count_orphans<K: MirroredKind>(ctx: &Context<K>, counts: &mut OrphanCounts) {
    let Some(cluster_mirrors) = &ctx.cluster_mirrors else {
        return;
    };
    let requests = &cluster_mirrors.mirrors;
    let told = |kind: RequestKind| requests.is_listed(kind) && requests.crd_live(kind);
    for cached in ctx.caches.copies.state() {
        let Some(asker) = RequestKey::of_copy(cached.meta()).filter(|key| told(key.kind())) else {
            continue;
        };
        let copy = cache_form::copy_from_cache(cached.as_ref());
        if verdict(copy.object(), ctx) != CopyVerdict::Orphaned {
            continue;
        }
        match asker.is_mirror() {
            false => *counts.by_cluster_mirror.entry(asker.name).or_default() += 1,
            true => counts.of_mirrors += 1,
        }
    }
}
