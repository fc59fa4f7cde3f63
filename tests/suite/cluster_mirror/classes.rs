//! One install per ClusterMirror, by class (`spec.className` against each
//! install's `--cluster-mirror-class`): two installs side by side each
//! serve their own, and nothing of the other's is written, whose write
//! it was read from the status's `managedFields`, the copies' install
//! marker and each install's metrics.

use super::*;
use configmap_mirror::contract::SOURCE_SELECTOR_ANNOTATION;
use k8s_openapi::api::{core::v1::ConfigMap, events::v1::Event};
use kube::api::ListParams;

use crate::common::ControllerProcess;

/// The second install's class, Lease and source selector.
const CLASS: &str = "platform";
const SECOND_SELECTOR: &str = "mirror-test.example/second=yes";
/// The World's own install: no class, the default selector and Lease.
const FIRST_SELECTOR: &str = "workshop.io/managed=true";

/// The field manager of an install whose Lease is `lease`: with neither a
/// Lease namespace nor $POD_NAMESPACE, the install's is `default`.
fn field_manager(lease: &str) -> String {
    format!("configmap-mirror/default/{lease}")
}

/// The second install's Lease name, and so its field manager's.
fn second_lease(world: &World<ConfigMap>) -> String {
    format!("{}-second", world.prefix)
}

/// A second cluster-wide install beside the World's, allowed the same
/// source namespace, with its own class (`class`), selector and Lease.
async fn second_install(world: &World<ConfigMap>, class: &str) -> ControllerProcess {
    let kubeconfig = world.scene.control_plane.kubeconfig_path().to_path_buf();
    let key = format!("{}/second-digest-key", world.prefix);
    let lease = second_lease(world);
    let args = [
        "--slow-retry",
        "1s",
        "--digest-key-secret",
        &key,
        "--selector",
        SECOND_SELECTOR,
        "--cluster-mirror-source-namespaces",
        &world.prefix,
        "--cluster-mirror-class",
        class,
        "--leader-election-id",
        &lease,
    ];
    ControllerProcess::start(world.scene.control_plane, &kubeconfig, "second", &args).await
}

/// The field managers of the ClusterMirror's status, sorted.
fn status_managers(object: &DynamicObject) -> Vec<String> {
    let mut managers: Vec<String> = object
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .filter(|entry| entry.subresource.as_deref() == Some("status"))
        .filter_map(|entry| entry.manager.clone())
        .collect();
    managers.sort();
    managers
}

/// When `manager` last wrote the ClusterMirror's status, if it ever did.
fn written_at(object: &DynamicObject, manager: &str) -> Option<String> {
    object
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .find(|e| {
            e.subresource.as_deref() == Some("status") && e.manager.as_deref() == Some(manager)
        })
        .map(|e| format!("{:?}", e.time))
}

/// Waits until the ClusterMirror's status was written by `manager` alone.
async fn status_written_by(world: &World<ConfigMap>, name: &str, manager: &str) -> DynamicObject {
    let api = cluster_mirrors(&world.scene.client);
    testenv::wait_for(
        &format!("{name}'s status written by {manager} alone"),
        PATIENCE,
        || async {
            let object = api.get_opt(name).await.ok()??;
            (status_managers(&object) == [manager]).then_some(object)
        },
    )
    .await
    .unwrap_or_else(|e| panic!("{e:#}\n{}", world.controller().log_text()))
}

/// The copy in `namespace` once the install with `selector` has written it.
async fn copy_marked(
    world: &World<ConfigMap>,
    namespace: &str,
    name: &str,
    selector: &str,
) -> ConfigMap {
    let copies = world.api(namespace);
    testenv::wait_for(
        &format!("{namespace}/{name} written by the install of {selector}"),
        PATIENCE,
        || async {
            let copy = copies.get_opt(name).await.ok()??;
            let marked = copy.annotations().get(SOURCE_SELECTOR_ANNOTATION);
            (marked.map(String::as_str) == Some(selector)).then_some(copy)
        },
    )
    .await
    .unwrap_or_else(|e| panic!("{e:#}"))
}

fn spec(world: &World<ConfigMap>, source: &str, class: Option<&str>) -> Value {
    let mut spec = json!({
        "source": {"kind": "ConfigMap", "namespace": world.prefix, "name": source},
        "target": {
            "namespaceSelector": {"matchLabels": {"env": "prod"}},
            "namespaces": [format!("{}-*", world.prefix)],
        },
    });
    if let Some(class) = class {
        spec["className"] = json!(class);
    }
    spec
}

/// The ClusterMirrors `plain` (no class, of the source `colors`) and
/// `classy` (of the second install's class, of `shapes`), each served by its
/// own install in `prod`: its status is that install's write alone, its copy
/// carries that install's marker, and each install's metrics name its own
/// ClusterMirrors only. Returns `plain`'s copy.
async fn each_served_by_its_own(
    world: &World<ConfigMap>,
    second: &ControllerProcess,
    prod: &str,
) -> ConfigMap {
    for source in ["colors", "shapes"] {
        world
            .objects()
            .create(&ConfigMap::with_data(source, &[("k", "v")], false))
            .await;
    }
    create_with(world, "plain", spec(world, "colors", None)).await;
    create_with(world, "classy", spec(world, "shapes", Some(CLASS))).await;
    ready(world, "plain", "Synced").await;
    ready(world, "classy", "Synced").await;
    status_written_by(world, "plain", &field_manager("configmap-mirror")).await;
    status_written_by(world, "classy", &field_manager(&second_lease(world))).await;
    let plain_copy = copy_marked(world, prod, "colors", FIRST_SELECTOR).await;
    copy_marked(world, prod, "shapes", SECOND_SELECTOR).await;
    cluster_copy_in_sync(world, prod, "colors", "plain").await;
    cluster_copy_in_sync(world, prod, "shapes", "classy").await;
    let series = "configmap_mirror_clustermirror_targets";
    let first_metrics = world.controller().get("/metrics").await.unwrap().1;
    let second_metrics = second.get("/metrics").await.unwrap().1;
    assert!(first_metrics.contains(&format!("{series}{{clustermirror=\"plain\"")));
    assert!(
        !first_metrics.contains("clustermirror=\"classy\""),
        "{first_metrics}"
    );
    assert!(second_metrics.contains(&format!("{series}{{clustermirror=\"classy\"")));
    assert!(
        !second_metrics.contains("clustermirror=\"plain\""),
        "{second_metrics}"
    );
    plain_copy
}

/// explain reads as the install it is told of, and says which.
fn explain_says_which_install_serves_classy(world: &World<ConfigMap>) {
    let run = super::explain::explain_as_admin(world, &["clustermirror/classy", "-o", "json"]);
    let json = run.json();
    assert_eq!(
        crate::explain::verdict(&json, "clustermirror", ""),
        "other-class"
    );
    assert_eq!(json["clusterMirror"]["class"], "");
    assert_eq!(json["clusterMirror"]["className"], CLASS);
    let (class, selector) = (
        format!("--cluster-mirror-class={CLASS}"),
        format!("--selector={SECOND_SELECTOR}"),
    );
    let as_second = ["clustermirror/classy", class.as_str(), selector.as_str()];
    let run = super::explain::explain_as_admin(world, &as_second);
    assert_eq!(run.code, Some(0), "{}", run.stdout);
    assert!(
        run.stdout
            .contains(r#"Read as the install of class "platform""#),
        "{}",
        run.stdout
    );
}

/// Changes `plain`'s class to the second install's, and waits until the
/// second wrote its status for the new spec; returns it.
async fn hand_plain_over(world: &World<ConfigMap>, second: &ControllerProcess) -> DynamicObject {
    patch_spec(world, "plain", json!({"className": CLASS})).await;
    let api = cluster_mirrors(&world.scene.client);
    let second_manager = field_manager(&second_lease(world));
    testenv::wait_for(
        "plain's status written by the second install",
        PATIENCE,
        || async {
            let object = api.get_opt("plain").await.ok()??;
            let observed = object.data["status"]["observedGeneration"].as_i64();
            let current = observed.is_some() && observed == object.metadata.generation;
            (current && written_at(&object, &second_manager).is_some()).then_some(object)
        },
    )
    .await
    .unwrap_or_else(|e| panic!("{e:#}\n{}", second.log_text()))
}

/// The ClusterMirrorClassConflict Warnings on the ClusterMirrors `names`,
/// by the name of the ClusterMirror each is about.
async fn conflicts_told(world: &World<ConfigMap>, names: &[&str]) -> Vec<String> {
    let events: Api<Event> = Api::namespaced(world.scene.client.clone(), "default");
    let listed = events.list(&ListParams::default()).await.expect("events");
    listed
        .items
        .iter()
        .filter(|e| e.reason.as_deref() == Some("ClusterMirrorClassConflict"))
        .filter_map(|e| e.regarding.as_ref()?.name.clone())
        .filter(|name| names.contains(&name.as_str()))
        .collect()
}

#[tokio::test]
async fn each_clustermirror_is_served_by_the_install_of_its_class_alone_and_handed_over_whole() {
    let world = super::world::<ConfigMap>("cmir-classes").await;
    let second = second_install(&world, CLASS).await;
    let first_manager = field_manager("configmap-mirror");
    let second_manager = field_manager(&second_lease(&world));
    let prod = world.namespace("a", false, &[("env", "prod")]).await;
    let plain_copy = each_served_by_its_own(&world, &second, &prod).await;
    explain_says_which_install_serves_classy(&world);
    // Nothing flaps: once each install has followed every status write so
    // far, a second look finds the same statuses, by the same hands.
    caught_up(&world, None).await;
    caught_up(&world, Some(CLASS)).await;
    let api = cluster_mirrors(&world.scene.client);
    for (name, manager) in [("plain", &first_manager), ("classy", &second_manager)] {
        let object = api.get(name).await.expect("the ClusterMirror");
        assert_eq!(status_managers(&object), [manager.as_str()], "{name}");
        assert_eq!(condition(&object, "Ready").unwrap()["reason"], "Synced");
    }

    // Its class changed, `plain` is the second install's: it takes the same
    // copy over in place (its marker rewritten) and writes the status; the
    // first writes nothing more (its entry keeps the time of its last
    // write, and the fields it shares with the second's), and forgets it.
    let before = api.get("plain").await.expect("plain");
    let first_wrote = written_at(&before, &first_manager);
    assert!(first_wrote.is_some());
    let handed = hand_plain_over(&world, &second).await;
    let taken_over = copy_marked(&world, &prod, "colors", SECOND_SELECTOR).await;
    assert_eq!(
        taken_over.uid(),
        plain_copy.uid(),
        "the same object, not a new one"
    );
    assert_eq!(condition(&handed, "Ready").unwrap()["reason"], "Synced");
    let first_now = written_at(&handed, &first_manager);
    assert!(
        first_now.is_none() || first_now == first_wrote,
        "the first wrote it"
    );
    let first_metrics = world.controller().get("/metrics").await.unwrap().1;
    assert!(
        !first_metrics.contains("clustermirror=\"plain\""),
        "{first_metrics}"
    );
    caught_up(&world, None).await;
    caught_up(&world, Some(CLASS)).await;
    let still = api.get("plain").await.expect("plain");
    assert_eq!(
        still.resource_version(),
        handed.resource_version(),
        "its status was written again"
    );
    let copy = world.api(&prod).get("colors").await.expect("the copy");
    assert_eq!(copy.uid(), plain_copy.uid());
    assert_eq!(
        copy.annotations()
            .get(SOURCE_SELECTOR_ANNOTATION)
            .map(String::as_str),
        Some(SECOND_SELECTOR),
        "the first install wrote it back"
    );
    // A hand-over is no conflict: neither install warned of one.
    let conflicts = conflicts_told(&world, &["plain", "classy"]).await;
    assert!(conflicts.is_empty(), "{conflicts:?}");

    // Deleted, its copies go with the install that now serves it.
    for name in ["plain", "classy"] {
        api.delete(name, &DeleteParams::default())
            .await
            .expect("delete");
    }
    world.objects_in(&prod).wait_gone("colors").await;
    world.objects_in(&prod).wait_gone("shapes").await;
    assert!(second.stop().success());
    clean_up(world, &[]).await;
}

mod conflicts;
