//! A ClusterMirror this version cannot read (written under an older or
//! newer CRD) is told as such, and hides no other one: neither from the
//! watch nor from the list of a controller starting.

use super::*;
use k8s_openapi::api::core::v1::ConfigMap;

/// Lets the CRD's schema accept `kind` as a source kind, as a newer CRD
/// naming a kind this version does not know would.
async fn accept_source_kind(client: &Client, kind: &str) {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let mut crd = serde_json::to_value(crds.get(ClusterMirror::crd_name()).await.unwrap()).unwrap();
    let schema = "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/source";
    let kinds = crd
        .pointer_mut(&format!("{schema}/properties/kind/enum"))
        .and_then(Value::as_array_mut)
        .expect("the source kinds of the CRD");
    kinds.push(json!(kind));
    let crd: CustomResourceDefinition = serde_json::from_value(crd).unwrap();
    crds.replace(ClusterMirror::crd_name(), &PostParams::default(), &crd)
        .await
        .expect("replace the CRD");
    // The CRD reads back changed a moment before the API server validates
    // by it: only a create it accepts says it does.
    let mut probe = DynamicObject::new("accepts-a-newer-kind", &resource());
    probe.data = json!({"spec": {
        "source": {"kind": kind, "namespace": "default", "name": "probe"},
        "target": {"namespaceSelector": {}},
    }});
    let dry_run = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    let api = cluster_mirrors(client);
    testenv::wait_for("the API server to accept the kind", PATIENCE, || async {
        api.create(&dry_run, &probe).await.ok().map(drop)
    })
    .await
    .unwrap_or_else(|e| panic!("{e:#}"));
}

/// Puts back the CRD this version ships.
async fn restore_crd(client: &Client) {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let mut crd = crds.get(ClusterMirror::crd_name()).await.unwrap();
    crd.spec = ClusterMirror::crd().spec;
    crds.replace(ClusterMirror::crd_name(), &PostParams::default(), &crd)
        .await
        .expect("put the CRD back");
}

#[tokio::test]
async fn a_clustermirror_this_version_cannot_read_is_told_and_hides_no_other() {
    let mut world = super::world::<ConfigMap>("cmir-unreadable").await;
    world
        .objects()
        .create(&ConfigMap::with_data("colors", &[("k", "v")], false))
        .await;
    let prod = world.namespace("a", false, &[("env", "prod")]).await;
    accept_source_kind(&world.scene.client, "Job").await;
    let spec = |kind: &str| {
        json!({
            "source": {"kind": kind, "namespace": world.prefix, "name": "colors"},
            "target": {
                "namespaceSelector": {"matchLabels": {"env": "prod"}},
                "namespaces": [format!("{}-*", world.prefix)],
            },
        })
    };
    create_with(&world, "newer", spec("Job")).await;
    create_with(&world, "readable", spec("ConfigMap")).await;
    let refused = ready(&world, "newer", "InvalidSpec").await;
    let message = condition(&refused, "Ready").unwrap()["message"].to_string();
    assert!(message.contains("Job"), "{message}");
    copy_in_sync(&world, &prod, "colors", "readable").await;
    ready(&world, "readable", "Synced").await;

    // A controller starting lists both: the readable one is still served.
    world.stop();
    world
        .objects()
        .set_data("colors", &[("k", Some("changed while stopped"))])
        .await;
    let sources = world.prefix.clone();
    world
        .start_with(&["--cluster-mirror-source-namespaces", &sources])
        .await;
    let copy = copy_in_sync(&world, &prod, "colors", "readable").await;
    assert_eq!(
        copy.data.unwrap_or_default()["k"],
        "changed while stopped",
        "{}",
        world.controller().log_text()
    );
    let api = cluster_mirrors(&world.scene.client);
    let _ = api.delete("newer", &DeleteParams::default()).await;
    restore_crd(&world.scene.client).await;
    clean_up(world, &["readable"]).await;
}
