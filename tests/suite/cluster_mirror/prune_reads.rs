//! Deleting a ClusterMirror reads its CRD once to tell a deletion from a
//! CRD being deleted, however many copies go: not once per copy.

use super::*;
use k8s_openapi::api::core::v1::ConfigMap;

const COPIES: usize = 10;

/// The GETs of CustomResourceDefinitions the API server has answered, by
/// its own request counter.
async fn crd_gets(client: &Client) -> u64 {
    let request = http::Request::get("/metrics")
        .body(Vec::new())
        .expect("a request for /metrics");
    let text = client
        .request_text(request)
        .await
        .expect("scrape the API server's /metrics");
    text.lines()
        .filter(|line| {
            line.starts_with("apiserver_request_total{")
                && line.contains("resource=\"customresourcedefinitions\"")
                && line.contains("verb=\"GET\"")
        })
        .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>() as u64
}

#[tokio::test]
async fn deleting_a_clustermirror_reads_its_crd_once_for_all_its_copies() {
    let world = super::world::<ConfigMap>("cmir-prune-reads").await;
    world
        .objects()
        .create(&ConfigMap::with_data("shared", &[("k", "v")], false))
        .await;
    let mut namespaces = Vec::new();
    for i in 0..COPIES {
        namespaces.push(
            world
                .namespace(&format!("t{i}"), false, &[("env", "prod")])
                .await,
        );
    }
    create(&world, "shared", "shared").await;
    for namespace in &namespaces {
        cluster_copy_in_sync(&world, namespace, "shared", "shared").await;
    }

    let before = crd_gets(&world.scene.client).await;
    cluster_mirrors(&world.scene.client)
        .delete("shared", &DeleteParams::default())
        .await
        .expect("delete the ClusterMirror");
    for namespace in &namespaces {
        world.objects_in(namespace).wait_gone("shared").await;
    }
    let reads = crd_gets(&world.scene.client).await - before;
    // One read for the deletion; a second only if the ClusterMirror watch
    // happened to list again meanwhile (another absence to check).
    assert!(
        (1..=2).contains(&reads),
        "{reads} reads of the CRD for {COPIES} copies of one deleted ClusterMirror\n{}",
        world.controller().log_text()
    );
    clean_up(world, &[]).await;
}
