//! A heal compares the healed copy alone, yet the status still counts the
//! whole: a failure elsewhere stays reported through heals, and a copy that
//! cannot be put back is counted as failed.

use super::*;
use k8s_openapi::api::core::v1::ConfigMap;

#[tokio::test]
async fn heals_keep_the_whole_count_and_a_failure_elsewhere_reported() {
    let (world, taken) = with_a_name_taken("cmir-heal-count").await;
    let a = world.namespace("a", false, &[("env", "prod")]).await;
    let b = world.namespace("b", false, &[("env", "prod")]).await;
    create(&world, "app", "app").await;
    cluster_copy_in_sync(&world, &a, "app", "app").await;
    cluster_copy_in_sync(&world, &b, "app", "app").await;
    let before = counted(&world, "app", (3, 2, 1)).await;
    assert_eq!(counts(&before).3, std::slice::from_ref(&taken));

    // Healed, one copy after the other: the failure in the third stays.
    for namespace in [&a, &b] {
        world
            .api(namespace)
            .delete("app", &DeleteParams::default())
            .await
            .expect("delete a copy");
        cluster_copy_in_sync(&world, namespace, "app", "app").await;
    }
    let after = counted(&world, "app", (3, 2, 1)).await;
    assert_eq!(counts(&after).3, std::slice::from_ref(&taken));

    // Freed and healed by a full comparison (the namespace changed): all in
    // sync, and a heal after that keeps it so.
    world
        .api(&taken)
        .delete("app", &DeleteParams::default())
        .await
        .expect("free the name");
    world.label_namespace(&taken, "freed", Some("yes")).await;
    cluster_copy_in_sync(&world, &taken, "app", "app").await;
    counted(&world, "app", (3, 3, 0)).await;
    world
        .api(&a)
        .delete("app", &DeleteParams::default())
        .await
        .expect("delete a copy again");
    cluster_copy_in_sync(&world, &a, "app", "app").await;
    let healed = counted(&world, "app", (3, 3, 0)).await;
    assert!(counts(&healed).3.is_empty());
    clean_up(world, &["app"]).await;
}

#[tokio::test]
async fn a_heal_after_a_failing_namespace_left_the_selection_counts_it_out() {
    let (world, taken) = with_a_name_taken("cmir-heal-left").await;
    let a = world.namespace("a", false, &[("env", "prod")]).await;
    create(&world, "left", "app").await;
    cluster_copy_in_sync(&world, &a, "app", "left").await;
    counted(&world, "left", (2, 1, 1)).await;

    // Once the failing namespace has left the selection, a heal anywhere
    // counts it out, whatever its leaving woke.
    world.label_namespace(&taken, "env", None).await;
    world
        .api(&a)
        .delete("app", &DeleteParams::default())
        .await
        .expect("delete a copy");
    cluster_copy_in_sync(&world, &a, "app", "left").await;
    let after = counted(&world, "left", (1, 1, 0)).await;
    assert!(counts(&after).3.is_empty());
    clean_up(world, &["left"]).await;
}

#[tokio::test]
async fn a_cluster_mirror_heal_is_counted_in_the_heal_histogram() {
    let world = super::world::<ConfigMap>("cmir-heal-timed").await;
    world
        .objects()
        .create(&ConfigMap::with_data("app", &[("k", "v")], false))
        .await;
    let a = world.namespace("a", false, &[("env", "prod")]).await;
    create(&world, "timed", "app").await;
    cluster_copy_in_sync(&world, &a, "app", "timed").await;
    counted(&world, "timed", (1, 1, 0)).await;
    let heals = "configmap_mirror_heal_duration_seconds_count";
    let before = world.controller().metric(heals, "").await;

    world
        .api(&a)
        .delete("app", &DeleteParams::default())
        .await
        .expect("delete a copy");
    cluster_copy_in_sync(&world, &a, "app", "timed").await;
    // Nothing in this test mirrors by label: only the ClusterMirror's
    // reconciles can be timed.
    let after = world
        .controller()
        .metric_reaching(heals, "", before + 1.0)
        .await;
    assert!(
        after > before,
        "the heal was not timed: {heals} stayed at {before}\n{}",
        world.controller().log_text()
    );
    clean_up(world, &["timed"]).await;
}
