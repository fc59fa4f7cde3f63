//! One copy made what it should be, whichever path asks for it (a
//! source's companion, one of its mirrors, a ClusterMirror's copy): the
//! copy the cache holds at its name, the one write the plan asks for, and
//! that write performed. The step every copy shares, below the loops that
//! ask for copies and the fan-out that writes many at once.

use kube::ResourceExt;

use crate::{
    contract::object_key,
    decisions::cache_form::CachedCopy,
    decisions::plan::{self, NameTaken, Write},
    kind::{ChecksumKey, MirroredKind},
    reconcile::context::Context,
    reconcile::error::Error,
    reconcile::source_read::Source,
    reconcile::write::{self, Performed},
};

/// Compares one copy (companion or mirror) with the cache; one write at
/// most, planned again from the object itself when a create finds its name
/// taken by one the cache had not seen.
///
/// A copy deleted to be recreated (immutable, or a source's own mirror a
/// ClusterMirror takes over) is created at once, in the same reconcile:
/// the delete's watch event may never wake one (it can reach a reconcile
/// of the source that is already running, or a replica that is no longer
/// allowed to write), and a ClusterMirror's copy is not woken by it at all.
pub(crate) async fn sync_copy<K: MirroredKind>(
    source: &Source<'_, K>,
    desired: K,
    ctx: &Context<K>,
) -> Result<(), Error> {
    let mut actual = cached_copy(&desired, ctx);
    let mut deleted = false;
    loop {
        let write = plan_copy(
            source.cached,
            desired.clone(),
            actual.as_ref(),
            &source.key,
            ctx,
        )?;
        let recreates = matches!(write, Write::DeleteToRecreate { .. });
        match write::perform(ctx, source, write).await? {
            Performed::Done if recreates && !deleted => {
                deleted = true;
                actual = None;
            }
            Performed::Done => return Ok(()),
            // Once: the name was just freed, and is taken again.
            Performed::PlanAgain(_) if deleted => {
                return Err(Error::Stale(format!(
                    "{} was taken again while being recreated",
                    object_key(desired.meta())
                )));
            }
            Performed::PlanAgain(existing) => actual = Some(existing),
        }
    }
}

/// The copy the cache holds at `desired`'s name.
pub(crate) fn cached_copy<K: MirroredKind>(desired: &K, ctx: &Context<K>) -> Option<CachedCopy<K>> {
    ctx.caches.copy(
        &desired.namespace().unwrap_or_default(),
        &desired.name_any(),
    )
}

pub(crate) fn plan_copy<K: MirroredKind>(
    source: &K,
    desired: K,
    actual: Option<&CachedCopy<K>>,
    key: &dyn ChecksumKey<K>,
    ctx: &Context<K>,
) -> Result<Write<K>, Error> {
    let name = format!(
        "{}/{}",
        desired.namespace().unwrap_or_default(),
        desired.name_any()
    );
    plan::plan(
        desired,
        actual,
        source.meta(),
        &ctx.install.source_label_keys,
        key,
    )
    .map_err(|NameTaken| Error::NameTaken { name })
}
