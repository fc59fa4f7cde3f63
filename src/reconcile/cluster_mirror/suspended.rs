//! A suspended ClusterMirror's copies compared, and nothing written: each
//! is in sync or not as the plan says, and a name held by an object that is
//! no copy (which the copy cache does not hold) is found by one read of the
//! objects at that name, where a write would have found it. So suspending
//! hides no `NameTaken`, and the status is what `explain` computes. No
//! watch of this controller reports such an object, so while copies are
//! missing the ClusterMirror looks again on the slow timer.

use std::collections::HashSet;

use kube::{Api, api::ListParams};

use crate::{
    decisions::plan::Write,
    kind::MirroredKind,
    reconcile::context::Context,
    reconcile::copy::{cached_copy, plan_copy},
    reconcile::error::Error,
    reconcile::source_read::Source,
};

/// What a suspended comparison found.
pub(super) struct Compared {
    /// Each namespace's outcome, as `sync_all` counts it: in sync or not,
    /// or why its copy could not be written.
    pub(super) outcomes: Vec<(String, Result<bool, Error>)>,
    /// Whether a copy is missing where no object holds its name: only
    /// then can an object no watch reports take the name meanwhile.
    pub(super) missing: bool,
}

pub(super) async fn compare<K: MirroredKind>(
    source: &Source<'_, K>,
    wanted: Vec<(String, K)>,
    target_name: &str,
    ctx: &Context<K>,
) -> Result<Compared, Error> {
    let planned: Vec<(String, Result<Write<K>, Error>)> = wanted
        .into_iter()
        .map(|(namespace, copy)| {
            let actual = cached_copy(&copy, ctx);
            let planned = plan_copy(source.cached, copy, actual.as_ref(), &source.key, ctx);
            (namespace, planned)
        })
        .collect();
    let creates = planned
        .iter()
        .any(|(_, planned)| matches!(planned, Ok(Write::Create(_))));
    let held = match creates {
        true => held_in::<K>(target_name, ctx).await?,
        false => HashSet::new(),
    };
    let mut missing = false;
    let outcomes = planned
        .into_iter()
        .map(|(namespace, planned)| {
            let outcome = match planned {
                Ok(Write::Create(_)) if held.contains(&namespace) => Err(Error::NameTaken {
                    name: format!("{namespace}/{target_name}"),
                }),
                Ok(Write::Create(_)) => {
                    missing = true;
                    Ok(false)
                }
                planned => planned.map(|write| write.in_sync()),
            };
            (namespace, outcome)
        })
        .collect();
    Ok(Compared { outcomes, missing })
}

/// The namespaces where an object of kind K is called `name`: one list of
/// metadata, at most one object a namespace. From the API server's watch
/// cache, not etcd (such a list is not paged): what it misses, the next
/// look finds.
async fn held_in<K: MirroredKind>(name: &str, ctx: &Context<K>) -> Result<HashSet<String>, Error> {
    let params = ListParams::default()
        .fields(&format!("metadata.name={name}"))
        .match_any();
    let held = Api::<K>::all(ctx.client.clone())
        .list_metadata(&params)
        .await
        .map_err(Error::Transient)?;
    Ok(held
        .items
        .into_iter()
        .filter_map(|object| object.metadata.namespace)
        .collect())
}
