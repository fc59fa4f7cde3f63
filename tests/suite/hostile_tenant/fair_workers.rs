//! Attack 6: one tenant holds every worker. The hostile tenant changes 16
//! sources at once, each mirrored into many namespaces; the code of issue
//! 51 runs all 16 fan-outs on its 16 workers, and another tenant's heal
//! waits until one of them is done (4.8 s at 1,000 namespaces, against
//! 55 ms when idle). One namespace's sources never hold all the workers:
//! the other tenant's heal is done while every hostile fan-out still runs
//! or waits.
//!
//! No timing is asserted, only an order: when the heal is seen, no hostile
//! source has all its mirrors at the new content yet.

use std::collections::BTreeMap;

use super::*;

use configmap_mirror::contract::CHECKSUM_ANNOTATION;
use serde_json::json;

use crate::mirroring::to;

const SOURCES: usize = 16;

/// Namespaces each hostile source is mirrored into. The code of issue 51
/// fails whatever the number: the heal waits for a worker, that is for a
/// whole fan-out to end. A fixed controller passes as long as its heal
/// (about three API calls, with the test's polling) is seen before the
/// first of the hostile fan-outs it runs ends: each is 200 writes, 16 at a
/// time, about 13 rounds of API calls against the heal's three, on an API
/// server equally loaded for both: a margin of about four. More namespaces
/// would widen it, at a setup cost the test controller (a debug build)
/// pays in minutes.
const NAMESPACES: usize = 200;

/// A hostile source's mirrors per content: at the old, at the new.
fn by_content(
    copies: &[PartialObjectMeta<ConfigMap>],
    of_hostile: &str,
    old: &str,
) -> BTreeMap<String, (usize, usize)> {
    let mut counts = BTreeMap::new();
    for copy in copies {
        let Some(source) = mirror_of(copy).filter(|of| of.starts_with(of_hostile)) else {
            continue;
        };
        let checksum = copy
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(CHECKSUM_ANNOTATION));
        let (at_old, at_new) = counts.entry(source).or_insert((0, 0));
        match checksum.is_some_and(|c| c == old) {
            true => *at_old += 1,
            false => *at_new += 1,
        }
    }
    counts
}

#[tokio::test]
async fn one_namespace_s_fan_outs_never_hold_back_another_namespace_s_heal() {
    let mut tenants = Tenants::new("ht-fair").await;
    tenants.consenting_namespaces(NAMESPACES).await;
    let targets = format!("{}-t*", tenants.hostile.namespace);
    let names: Vec<String> = (0..SOURCES).map(|i| format!("fan{i:02}")).collect();
    let sources = names
        .iter()
        .map(|name| source_with(name, &[("v", "old")], &[to(&targets)]));
    // Started first: at a cold start the fan-outs are the attack itself.
    tenants.start(&[]).await;
    tenants.create_all(sources.collect()).await;

    let of_hostile = format!("{}/", tenants.hostile.namespace);
    let old = contract::content_checksum(&mk_source("any", &[("v", "old")]));
    let wanted = SOURCES * NAMESPACES;
    let written = testenv::wait_for(&format!("{wanted} mirrors"), PATIENCE * 6, || async {
        let counts = by_content(&tenants.copies().await, &of_hostile, &old);
        let at_old: usize = counts.values().map(|(at_old, _)| at_old).sum();
        (at_old == wanted).then_some(())
    })
    .await;
    written.unwrap_or_else(|e| panic!("{e:#}"));

    // The hostile tenant changes all 16 at once; the fan-outs are under
    // way once a quarter of them have written a mirror.
    let changes = names.iter().map(|name| {
        tenants
            .hostile
            .patch_json(name, json!({"data": {"v": "new"}}))
    });
    futures::future::join_all(changes).await;
    testenv::wait_for("the hostile fan-outs to start", PATIENCE, || async {
        let counts = by_content(&tenants.copies().await, &of_hostile, &old);
        let started = counts.values().filter(|(_, at_new)| *at_new > 0).count();
        (started >= SOURCES / 4).then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{e:#}"));

    tenants.other_heals().await;
    let counts = by_content(&tenants.copies().await, &of_hostile, &old);
    let finished: Vec<&String> = counts
        .iter()
        .filter(|(_, (at_old, _))| *at_old == 0)
        .map(|(source, _)| source)
        .collect();
    assert!(
        finished.is_empty(),
        "the other tenant's heal waited for hostile fan-outs to finish: {finished:?} \
         had finished when it was seen; (old, new) mirrors per source: {counts:?}"
    );
    tenants.still_leads().await;
}
