//! One copy made what it should be, whichever path asks for it (a
//! source's companion, one of its mirrors, a ClusterMirror's copy): the
//! copy the cache holds at its name, the one write the plan asks for, and
//! that write performed. The step every copy shares, below the loops that
//! ask for copies and the fan-out that writes many at once.

use kube::ResourceExt;

use crate::{
    contract::object_key,
    decisions::cache_form::CachedCopy,
    decisions::ownership::outranked_mirror,
    decisions::plan::{self, NameTaken, Write},
    kind::MirroredKind,
    reconcile::context::Context,
    reconcile::error::Error,
    reconcile::source_read::Source,
    reconcile::write::{self, Performed},
};

/// Compares one copy (companion or mirror) with the cache; one write at
/// most, planned again from the object itself when a create finds its name
/// taken by one the cache had not seen.
///
/// A ClusterMirror that takes over a source's own immutable mirror deletes
/// it and creates its copy at once: the delete wakes the source, which
/// leaves the name to the ClusterMirror, but not the ClusterMirror.
pub(crate) async fn sync_copy<K: MirroredKind>(
    source: &Source<'_, K>,
    desired: K,
    ctx: &Context<K>,
) -> Result<(), Error> {
    let mut actual = cached_copy(&desired, ctx);
    let mut took_over = false;
    loop {
        let write = plan_copy(
            source.cached,
            desired.clone(),
            actual.as_ref(),
            &source.key,
            ctx,
        )?;
        let takes_over = matches!(write, Write::DeleteToRecreate { .. })
            && actual
                .as_ref()
                .is_some_and(|a| outranked_mirror(a.object().meta(), desired.meta()));
        match (write::perform(ctx, source, write).await?, takes_over) {
            (Performed::Done, true) if !took_over => {
                took_over = true;
                actual = None;
            }
            (Performed::Done, _) => return Ok(()),
            // Once: the name was just freed, and is taken again.
            (Performed::PlanAgain(_), _) if took_over => {
                return Err(Error::Stale(format!(
                    "{} was taken again while being taken over",
                    object_key(desired.meta())
                )));
            }
            (Performed::PlanAgain(existing), _) => actual = Some(existing),
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
    key: &K::DigestKey,
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
