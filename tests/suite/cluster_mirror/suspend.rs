//! A suspended ClusterMirror writes and deletes nothing, whatever its spec
//! becomes: another source kind, source name, target name or selector.

use super::*;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};

/// Every object called `name`, of either kind, in `namespace`, as (kind,
/// uid, resourceVersion).
async fn objects_named(world: &World<Secret>, namespace: &str, name: &str) -> Vec<String> {
    let secrets: Api<Secret> = Api::namespaced(world.scene.client.clone(), namespace);
    let configmaps: Api<ConfigMap> = Api::namespaced(world.scene.client.clone(), namespace);
    let mut found = Vec::new();
    if let Some(secret) = secrets.get_opt(name).await.expect("get") {
        found.push(format!(
            "Secret {:?} {:?}",
            secret.uid(),
            secret.resource_version()
        ));
    }
    if let Some(configmap) = configmaps.get_opt(name).await.expect("get") {
        found.push(format!(
            "ConfigMap {:?} {:?}",
            configmap.uid(),
            configmap.resource_version()
        ));
    }
    found
}

#[tokio::test]
async fn a_suspended_clustermirror_writes_and_deletes_nothing_whatever_its_spec_becomes() {
    let world = super::world::<Secret>("cmir-suspend-spec").await;
    world
        .objects()
        .create(&Secret::with_data("s0", &[("a", "1")], false))
        .await;
    world
        .objects()
        .create(&Secret::with_data("s1", &[("b", "2")], false))
        .await;
    // The same name as a ConfigMap: the kind changed, there is a source.
    let configmaps: Api<ConfigMap> = Api::namespaced(world.scene.client.clone(), &world.prefix);
    configmaps
        .create(
            &PostParams::default(),
            &ConfigMap::with_data("s0", &[("c", "3")], false),
        )
        .await
        .expect("a ConfigMap s0");
    let prod = world.namespace("a", false, &[("env", "prod")]).await;
    let stage = world.namespace("b", false, &[("env", "stage")]).await;
    create(&world, "rp-s", "s0").await;
    cluster_copy_in_sync(&world, &prod, "s0", "rp-s").await;
    ready(&world, "rp-s", "Synced").await;
    patch_spec(&world, "rp-s", json!({"suspend": true})).await;
    ready(&world, "rp-s", "Suspended").await;
    let names = ["s0", "s1", "renamed"];
    let mut cluster = Vec::new();
    for namespace in [&prod, &stage] {
        for name in names {
            cluster.push(objects_named(&world, namespace, name).await);
        }
    }

    let changes = [
        ("source.kind", json!({"source": {"kind": "ConfigMap"}})),
        ("source.name", json!({"source": {"name": "s1"}})),
        ("target.name", json!({"target": {"name": "renamed"}})),
        (
            "target.namespaceSelector",
            json!({"target": {"namespaceSelector": {"matchLabels": {"env": "stage"}}}}),
        ),
        ("source.kind back", json!({"source": {"kind": "Secret"}})),
    ];
    for (field, change) in changes {
        patch_spec(&world, "rp-s", change).await;
        // The reconcile of the new spec compared, and wrote nothing, before
        // it wrote the status for it.
        observed(&world, "rp-s").await;
        let mut now = Vec::new();
        for namespace in [&prod, &stage] {
            for name in names {
                now.push(objects_named(&world, namespace, name).await);
            }
        }
        assert_eq!(
            now,
            cluster,
            "suspended, {field} changed: something was written or deleted\n{}",
            world.controller().log_text()
        );
    }
    configmaps
        .delete("s0", &DeleteParams::default())
        .await
        .expect("delete the ConfigMap s0");
    clean_up(world, &["rp-s"]).await;
}
