//! A suspended ClusterMirror's copies compared, and nothing written: each
//! is in sync or not as the plan says, and a name held by an object that is
//! no copy (which the copy cache does not hold) is found by one read of the
//! objects at that name, where a write would have found it. So suspending
//! hides no `NameTaken`, and the status is what `explain` computes.

use std::collections::HashSet;

use kube::{Api, api::ListParams};

use crate::{
    decisions::plan::Write,
    kind::MirroredKind,
    reconcile::context::Context,
    reconcile::error::Error,
    reconcile::source_content::Source,
    reconcile::sync::{cached_copy, plan_copy},
};

/// How many objects one page of the read of a name holds.
const PAGE: u32 = 500;

/// Each namespace's outcome, as `sync_all` counts it: in sync or not, or
/// why its copy could not be written.
pub(super) async fn compare<K: MirroredKind>(
    source: &Source<'_, K>,
    wanted: Vec<(String, K)>,
    target_name: &str,
    ctx: &Context<K>,
) -> Result<Vec<(String, Result<bool, Error>)>, Error> {
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
    let outcomes = planned
        .into_iter()
        .map(|(namespace, planned)| {
            let outcome = match planned {
                Ok(Write::Create(_)) if held.contains(&namespace) => Err(Error::NameTaken {
                    name: format!("{namespace}/{target_name}"),
                }),
                planned => planned.map(|write| write == Write::Nothing),
            };
            (namespace, outcome)
        })
        .collect();
    Ok(outcomes)
}

/// The namespaces where an object of kind K is called `name`.
async fn held_in<K: MirroredKind>(name: &str, ctx: &Context<K>) -> Result<HashSet<String>, Error> {
    let api = Api::<K>::all(ctx.client.clone());
    let mut params = ListParams::default()
        .fields(&format!("metadata.name={name}"))
        .limit(PAGE);
    let mut held = HashSet::new();
    loop {
        let page = api.list_metadata(&params).await.map_err(Error::Transient)?;
        held.extend(page.items.into_iter().filter_map(|o| o.metadata.namespace));
        match page.metadata.continue_ {
            Some(token) if !token.is_empty() => params = params.continue_token(&token),
            _ => return Ok(held),
        }
    }
}
