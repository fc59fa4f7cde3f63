//! The prune of a copy a ClusterMirror wrote: deleted once its
//! ClusterMirror no longer wants it, and never because the CRD went.

use kube::{ResourceExt, runtime::reflector::ObjectRef};

use crate::{
    contract::object_key,
    decisions::cluster_mirror::{CopyFate, copy_fate},
    decisions::plan::SeenVersion,
    kind::MirroredKind,
    reconcile::context::Context,
    reconcile::error::Error,
    reconcile::write,
};

/// The fate of `copy`, written by the ClusterMirror `name`, as the caches
/// say; Keep when this install has no ClusterMirrors (one namespace only),
/// or when its ClusterMirror is of another install's class.
pub fn fate<K: MirroredKind>(copy: &K, name: &str, ctx: &Context<K>) -> CopyFate {
    let Some(side) = &ctx.cluster_mirrors else {
        return CopyFate::Keep;
    };
    let exists = side
        .mirrors
        .store
        .get(&ObjectRef::new_with(name, side.mirrors.resource.clone()))
        .is_some();
    let request = side.mirrors.request(name);
    // A copy of a ClusterMirror another install serves is that install's.
    if request
        .as_ref()
        .is_some_and(|r| !r.served_by(&side.install.class))
    {
        return CopyFate::Keep;
    }
    let namespace = ctx
        .caches
        .namespace_facts(&copy.namespace().unwrap_or_default());
    copy_fate(
        copy.meta(),
        &K::kind(&()),
        &ctx.selector,
        side.mirrors.is_listed(),
        exists,
        request.as_deref(),
        namespace.as_ref(),
        &side.consent,
    )
}

/// Deletes `copy` if its ClusterMirror no longer wants it.
pub async fn prune<K: MirroredKind>(copy: &K, name: &str, ctx: &Context<K>) -> Result<(), Error> {
    let unwanted = match fate(copy, name, ctx) {
        CopyFate::Keep => false,
        CopyFate::Unwanted => true,
        CopyFate::UnwantedIfCrdLive => crd_live(ctx).await?,
    };
    let (true, Some(seen)) = (unwanted, SeenVersion::of(copy.meta())) else {
        return Ok(());
    };
    let namespace = copy.namespace().unwrap_or_default();
    write::delete(ctx, &namespace, &copy.name_any(), seen).await?;
    tracing::info!(
        clustermirror = name,
        "deleted copy {} (no longer wanted by its ClusterMirror)",
        object_key(copy.meta())
    );
    ctx.metrics.copy_written(crate::contract::Operation::Delete);
    Ok(())
}

/// Whether the CRD is there and not being deleted, read since the absence.
async fn crd_live<K: MirroredKind>(ctx: &Context<K>) -> Result<bool, Error> {
    let Some(side) = &ctx.cluster_mirrors else {
        return Ok(false);
    };
    let live = side
        .mirrors
        .crd_live_since_absence()
        .await
        .map_err(Error::Transient)?;
    if !live {
        tracing::warn!(
            "a ClusterMirror is gone while its CRD is missing or being deleted: its copies are kept"
        );
    }
    Ok(live)
}
