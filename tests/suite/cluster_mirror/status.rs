//! The status counts what the spec selects now: a namespace that leaves the
//! selection is counted out at once, whatever it held (a failure, or a copy
//! kept while suspended); and a suspended ClusterMirror still sees a name
//! held by someone else.

use super::*;

#[tokio::test]
async fn a_namespace_leaving_the_selection_with_its_name_taken_is_counted_out() {
    let (world, taken) = with_a_name_taken("cmir-left-taken").await;
    let a = world.namespace("a", false, &[("env", "prod")]).await;
    create(&world, "left", "app").await;
    copy_in_sync(&world, &a, "app", "left").await;
    let before = counted(&world, "left", (2, 1, 1)).await;
    assert_eq!(counts(&before).3, std::slice::from_ref(&taken));

    // Nothing else happens: leaving is the only event.
    world.label_namespace(&taken, "env", None).await;
    let after = counted(&world, "left", (1, 1, 0)).await;
    assert!(counts(&after).3.is_empty(), "{:?}", counts(&after));
    assert_eq!(condition(&after, "Ready").unwrap()["reason"], "Synced");
    clean_up(world, &["left"]).await;
}

#[tokio::test]
async fn a_namespace_leaving_the_selection_of_a_suspended_cluster_mirror_is_counted_out() {
    let (world, taken) = with_a_name_taken("cmir-left-suspended").await;
    let a = world.namespace("a", false, &[("env", "prod")]).await;
    let b = world.namespace("b", false, &[("env", "prod")]).await;
    create(&world, "paused", "app").await;
    copy_in_sync(&world, &a, "app", "paused").await;
    copy_in_sync(&world, &b, "app", "paused").await;
    counted(&world, "paused", (3, 2, 1)).await;
    patch_spec(&world, "paused", json!({"suspend": true})).await;
    ready(&world, "paused", "Suspended").await;

    // One that held a copy (kept, as suspended) and one that held a failure.
    world.label_namespace(&b, "env", None).await;
    counted(&world, "paused", (2, 1, 1)).await;
    world.label_namespace(&taken, "env", None).await;
    let after = counted(&world, "paused", (1, 1, 0)).await;
    assert!(counts(&after).3.is_empty(), "{:?}", counts(&after));
    assert!(
        world.api(&b).get_opt("app").await.unwrap().is_some(),
        "a suspended ClusterMirror deletes nothing"
    );
    clean_up(world, &["paused"]).await;
}

#[tokio::test]
async fn a_cluster_mirror_created_suspended_reports_a_name_held_by_someone_else() {
    let (world, taken) = with_a_name_taken("cmir-suspended-taken").await;
    let a = world.namespace("a", false, &[("env", "prod")]).await;
    let spec = json!({
        "source": {"kind": "ConfigMap", "namespace": world.prefix, "name": "app"},
        "target": {
            "namespaceSelector": {"matchLabels": {"env": "prod"}},
            "namespaces": [format!("{}-*", world.prefix)],
        },
        "suspend": true,
    });
    create_with(&world, "held", spec).await;
    ready(&world, "held", "Suspended").await;
    let held = counted(&world, "held", (2, 0, 1)).await;
    assert_eq!(counts(&held).3, std::slice::from_ref(&taken));
    assert!(
        world.api(&a).get_opt("app").await.unwrap().is_none(),
        "a suspended ClusterMirror writes nothing"
    );
    clean_up(world, &["held"]).await;
}
