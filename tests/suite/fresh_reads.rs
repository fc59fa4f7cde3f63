//! The fresh reads of sources, batched into one LIST per namespace: every
//! reconcile waiting gets its own source as the API server holds it, across
//! page boundaries, and a source deleted or unselected after the decision
//! reads as its own GET would have read it.

use crate::common::{SOURCE_LABEL, Scene, mk_source, mk_unmanaged};

use std::{collections::BTreeSet, sync::Arc};

use configmap_mirror::reconcile::coalesced::{
    CachedSizes, FreshRead, FreshReads, NamespaceSources, Paging, list_pages, list_pages_until,
};
use futures::future::join_all;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::{ResourceExt, api::DeleteParams};
use serde_json::json;

fn selector() -> String {
    format!("{SOURCE_LABEL}=true")
}

/// What a cache says of the scene's namespace: it holds `count` sources
/// of one byte each (as the sources here do, but s10 and s11).
struct Cached {
    count: usize,
}

impl CachedSizes for Cached {
    fn held_in(&self, _namespace: &str) -> NamespaceSources {
        NamespaceSources {
            count: self.count,
            bytes: self.count as u64,
        }
    }

    fn bytes_of(&self, _namespace: &str, _name: &str) -> u64 {
        1
    }
}

/// Reads of the scene's sources, as a cache that says it holds `count`
/// decides them, listed `per_page` a page.
fn reads_of(scene: &Scene<'_>, count: usize, per_page: u64) -> FreshReads<ConfigMap> {
    FreshReads::new(
        scene.client.clone(),
        &selector(),
        per_page,
        Arc::new(Cached { count }),
    )
}

/// Six sources and an unmanaged ConfigMap in the scene's namespace.
async fn six_sources(scene: &Scene<'_>) -> Vec<ConfigMap> {
    scene
        .configmaps()
        .create(&mk_unmanaged("unmanaged", &[("u", "0")]))
        .await;
    let mut created = Vec::new();
    for i in 0..6 {
        let value = i.to_string();
        created.push(
            scene
                .configmaps()
                .create(&mk_source(&format!("s{i}"), &[("v", &value)]))
                .await,
        );
    }
    created
}

/// Reads of `sources` started together, as decided on from a cache that
/// holds them as given.
async fn read_all(
    reads: &FreshReads<ConfigMap>,
    namespace: &str,
    sources: &[ConfigMap],
) -> Vec<FreshRead<ConfigMap>> {
    join_all(sources.iter().map(|cm| {
        let name = cm.metadata.name.as_deref().unwrap_or_default();
        reads.read(namespace, name, cm.metadata.resource_version.as_deref())
    }))
    .await
}

/// Each answer is its own source, as created: the same object, the same
/// content.
fn each_its_own(sources: &[ConfigMap], answers: Vec<FreshRead<ConfigMap>>) {
    assert_eq!(answers.len(), sources.len());
    for (cm, answer) in sources.iter().zip(answers) {
        let read = answer
            .unwrap_or_else(|e| panic!("read {}: {e}", cm.name_any()))
            .unwrap_or_else(|| panic!("{} read as gone", cm.name_any()));
        assert_eq!(read.name_any(), cm.name_any());
        assert_eq!(read.uid(), cm.uid());
        assert_eq!(
            read.data,
            cm.data,
            "{} has another's content",
            cm.name_any()
        );
    }
}

#[tokio::test]
async fn every_page_size_lists_each_source_once() {
    let scene = Scene::new("fresh-pages").await;
    let created = six_sources(&scene).await;
    let newest = created.last().and_then(|cm| cm.resource_version());
    let expected: Vec<String> = created.iter().map(ResourceExt::name_any).collect();
    // 1 to 7 a page: boundaries inside, at, and past the last source.
    for page_size in 1..=7 {
        let mut listed = Vec::new();
        let held = list_pages(
            &scene.configmaps().api,
            &selector(),
            newest.as_deref(),
            page_size,
            |cm: ConfigMap| listed.push(cm.name_any()),
        )
        .await
        .unwrap_or_else(|e| panic!("list {page_size} a page: {e}"));
        assert_eq!(held, 6, "page size {page_size}");
        let unique: BTreeSet<&String> = listed.iter().collect();
        assert_eq!(
            unique.len(),
            listed.len(),
            "page size {page_size}: {listed:?}"
        );
        assert_eq!(
            unique.into_iter().cloned().collect::<Vec<_>>(),
            expected,
            "page size {page_size}"
        );
    }
}

#[tokio::test]
async fn reads_of_more_sources_than_one_page_are_each_answered_with_their_own() {
    let scene = Scene::new("fresh-many").await;
    let created = six_sources(&scene).await;
    let reads = reads_of(&scene, 6, 4);
    let answers = read_all(&reads, &scene.namespace, &created).await;
    each_its_own(&created, answers);
}

#[tokio::test]
async fn a_source_deleted_or_unselected_after_the_decision_reads_as_its_own_get_would() {
    let scene = Scene::new("fresh-gone").await;
    let created = six_sources(&scene).await;
    // Decided on from the cache: s0, s1 and s2 as created. Then s0 is
    // deleted and s1 unlabeled before the batch is read.
    scene
        .configmaps()
        .api
        .delete("s0", &DeleteParams::default())
        .await
        .expect("delete s0");
    scene
        .configmaps()
        .patch("s1", json!({"metadata": {"labels": {SOURCE_LABEL: null}}}))
        .await;
    let reads = reads_of(&scene, 6, 2);
    let answers = read_all(&reads, &scene.namespace, &created[..3]).await;
    let [deleted, unselected, kept] = <[_; 3]>::try_from(answers).expect("three answers");
    assert!(
        deleted.expect("read s0").is_none(),
        "a deleted source reads as gone"
    );
    // Not in the label-selected list, yet not gone: read as it is now, so
    // that the reconcile can tell it no longer matches the selector.
    let unselected = unselected.expect("read s1").expect("s1 still exists");
    assert_eq!(unselected.uid(), created[1].uid());
    assert!(!unselected.labels().contains_key(SOURCE_LABEL));
    let kept = kept.expect("read s2").expect("s2 exists");
    assert_eq!(kept.data, created[2].data);
}

#[tokio::test]
async fn a_list_stops_after_the_page_that_passes_enough() {
    let scene = Scene::new("fresh-enough").await;
    let created = six_sources(&scene).await;
    let newest = created.last().and_then(|cm| cm.resource_version());
    for (enough, held) in [(0, 2), (3, 4), (4, 6), (5, 6), (usize::MAX, 6)] {
        let mut listed = BTreeSet::new();
        let paging = Paging {
            page_size: 2,
            enough,
        };
        let counted = list_pages_until(
            &scene.configmaps().api,
            &selector(),
            newest.as_deref(),
            paging,
            |cm: ConfigMap| {
                listed.insert(cm.name_any());
            },
        )
        .await
        .unwrap_or_else(|e| panic!("list, enough {enough}: {e}"));
        assert_eq!(counted, held, "enough {enough}");
        assert_eq!(listed.len(), held, "enough {enough}: {listed:?}");
    }
}

#[tokio::test]
async fn reads_beyond_where_a_big_namespace_s_list_stopped_are_answered_by_their_own_get() {
    let scene = Scene::new("fresh-big").await;
    let mut created = six_sources(&scene).await;
    for i in 6..12 {
        let value = i.to_string();
        created.push(
            scene
                .configmaps()
                .create(&mk_source(&format!("s{i}"), &[("v", &value)]))
                .await,
        );
    }
    // One read waits at most, in a namespace a cache behind the API server
    // says holds six sources: a list stops once past 8 sources, after the
    // fifth page of two; s9 is on the sixth (s10 and s11 sort before s2).
    let reads = reads_of(&scene, 6, 2).at_most_waiting(1);
    let wanted: Vec<ConfigMap> = [0, 9, 11].iter().map(|&i| created[i].clone()).collect();
    let answers = read_all(&reads, &scene.namespace, &wanted).await;
    each_its_own(&wanted, answers);
}
