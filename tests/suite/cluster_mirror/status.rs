//! The status counts what the spec selects now: a namespace that leaves the
//! selection is counted out at once, whatever it held (a failure, or a copy
//! kept while suspended); a suspended ClusterMirror still sees a name held
//! by someone else; and a source that is missing or never copied leaves
//! the namespaces selected, none synced.

use super::*;
use k8s_openapi::api::core::v1::ConfigMap;

/// The ClusterMirror gauge's value for `name` in `state`, once it reads
/// `want` (or its value when patience runs out).
async fn gauge(world: &World<ConfigMap>, name: &str, state: &str, want: f64) -> f64 {
    let metric = "configmap_mirror_clustermirror_targets";
    let labels = format!("clustermirror=\"{name}\",state=\"{state}\"");
    let controller = world.controller();
    let what = format!("{metric}{{{labels}}} to read {want}");
    let reached = testenv::wait_for(&what, PATIENCE, || async {
        let value = controller.metric(metric, &labels).await;
        (value == want).then_some(value)
    })
    .await;
    match reached {
        Ok(value) => value,
        Err(_) => controller.metric(metric, &labels).await,
    }
}

/// How the kstatus library reads `object`, a ClusterMirror as the API
/// server returned it: what Argo CD's and Flux's health checks say.
fn kstatus_of(object: &DynamicObject) -> String {
    let object = serde_json::to_value(object).expect("a ClusterMirror as JSON");
    crate::common::kstatus(&object).0
}

/// Counted out, and read by the kstatus library: `Failed` while a name is
/// taken (a failure that waits for a person), `Current` once synced.
#[tokio::test]
async fn a_namespace_leaving_the_selection_with_its_name_taken_is_counted_out() {
    let (world, taken) = with_a_name_taken("cmir-left-taken").await;
    let a = world.namespace("a", false, &[("env", "prod")]).await;
    create(&world, "left", "app").await;
    cluster_copy_in_sync(&world, &a, "app", "left").await;
    let before = counted(&world, "left", (2, 1, 1)).await;
    assert_eq!(counts(&before).3, std::slice::from_ref(&taken));
    assert_eq!(kstatus_of(&before), "Failed", "NameTaken");

    // Nothing else happens: leaving is the only event.
    world.label_namespace(&taken, "env", None).await;
    let after = counted(&world, "left", (1, 1, 0)).await;
    assert!(counts(&after).3.is_empty(), "{:?}", counts(&after));
    assert_eq!(condition(&after, "Ready").unwrap()["reason"], "Synced");
    assert_eq!(kstatus_of(&after), "Current");
    clean_up(world, &["left"]).await;
}

#[tokio::test]
async fn a_namespace_leaving_the_selection_of_a_suspended_cluster_mirror_is_counted_out() {
    let (world, taken) = with_a_name_taken("cmir-left-suspended").await;
    let a = world.namespace("a", false, &[("env", "prod")]).await;
    let b = world.namespace("b", false, &[("env", "prod")]).await;
    create(&world, "paused", "app").await;
    cluster_copy_in_sync(&world, &a, "app", "paused").await;
    cluster_copy_in_sync(&world, &b, "app", "paused").await;
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

#[tokio::test]
async fn a_suspended_cluster_mirror_sees_a_name_taken_where_its_copy_is_missing() {
    let world = super::world::<ConfigMap>("cmir-suspended-later").await;
    world
        .objects()
        .create(&ConfigMap::with_data("app", &[("k", "v")], false))
        .await;
    let a = world.namespace("a", false, &[("env", "prod")]).await;
    create(&world, "later", "app").await;
    cluster_copy_in_sync(&world, &a, "app", "later").await;
    patch_spec(&world, "later", json!({"suspend": true})).await;
    ready(&world, "later", "Suspended").await;
    let b = world.namespace("b", false, &[("env", "prod")]).await;
    counted(&world, "later", (2, 1, 0)).await;

    // No watch of the controller sees a tenant's object: its slow timer does.
    let mut theirs = ConfigMap::with_data("app", &[("k", "theirs")], false);
    theirs.metadata.namespace = Some(b.clone());
    world
        .api(&b)
        .create(&PostParams::default(), &theirs)
        .await
        .expect("someone else's object under the name");
    let held = counted(&world, "later", (2, 1, 1)).await;
    assert_eq!(counts(&held).3, std::slice::from_ref(&b));
    clean_up(world, &["later"]).await;
}

#[tokio::test]
async fn selected_counts_the_namespaces_the_spec_reaches_while_the_source_is_missing() {
    let world = super::world::<ConfigMap>("cmir-selected-missing").await;
    let a = world.namespace("a", false, &[("env", "prod")]).await;
    world.namespace("b", false, &[("env", "prod")]).await;
    world.namespace("c", false, &[]).await;
    create(&world, "absent", "app").await;
    let missing = ready(&world, "absent", "SourceNotFound").await;
    assert_eq!(counts(&missing), (2, 0, 0, vec![]), "selected by the spec");
    assert_eq!(gauge(&world, "absent", "selected", 2.0).await, 2.0);
    assert_eq!(gauge(&world, "absent", "synced", 0.0).await, 0.0);
    let run = explained(&world, "absent");
    assert_eq!(run["clusterMirror"]["status"]["selected"], 2, "{run}");
    assert_eq!(run["clusterMirror"]["status"]["synced"], 0, "{run}");

    // Created, copied; deleted again: the copies stay, none counts as synced.
    world
        .objects()
        .create(&ConfigMap::with_data("app", &[("k", "v")], false))
        .await;
    cluster_copy_in_sync(&world, &a, "app", "absent").await;
    counted(&world, "absent", (2, 2, 0)).await;
    world.objects().delete("app").await;
    let gone = ready(&world, "absent", "SourceNotFound").await;
    assert_eq!(counts(&gone), (2, 0, 0, vec![]));
    assert_eq!(gauge(&world, "absent", "synced", 0.0).await, 0.0);
    clean_up(world, &["absent"]).await;
}

/// `explain clustermirror/NAME -o json` with the controller's flags.
fn explained(world: &World<ConfigMap>, name: &str) -> Value {
    let sources = format!("--cluster-mirror-source-namespaces={}", world.prefix);
    let subject = format!("clustermirror/{name}");
    crate::explain::explain(
        world.scene.control_plane.kubeconfig_path(),
        &[&subject, "-o", "json", &sources],
    )
    .json()
}
