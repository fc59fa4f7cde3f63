//! A ClusterMirror this version cannot read (written under an older or
//! newer CRD) is told as such, and hides no other one: neither from the
//! watch nor from the list of a controller starting.

use super::*;
use k8s_openapi::api::{core::v1::ConfigMap, events::v1::Event};
use kube::api::ListParams;

/// Lets the CRD's schema accept `kind` as a source kind and a list of
/// strings as `spec.target.publishAs`, as a newer CRD naming a kind and a field
/// this version does not know would; put back when the guard returned
/// drops.
async fn accept_newer_specs<K: TestKind>(world: &World<K>, kind: &str) -> NewerCrd {
    let spec = "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties";
    let newer = install_newer_crd(world, |crd| {
        let kinds = crd
            .pointer_mut(&format!("{spec}/source/properties/kind/enum"))
            .and_then(Value::as_array_mut)
            .expect("the source kinds of the CRD");
        kinds.push(json!(kind));
        let target = crd
            .pointer_mut(&format!("{spec}/target/properties"))
            .and_then(Value::as_object_mut)
            .expect("the target fields of the CRD");
        let names = json!({"type": "array", "items": {"type": "string"}});
        target.insert("publishAs".into(), names);
    })
    .await;
    // The CRD reads back changed a moment before the API server validates
    // and prunes by it: only a create it accepts, keeping the new field,
    // says it does.
    let mut probe = DynamicObject::new(&format!("{}-probe", world.prefix), &resource());
    probe.data = json!({"spec": {
        "source": {"kind": kind, "namespace": "default", "name": "probe"},
        "target": {"namespaceSelector": {}, "publishAs": ["k"]},
    }});
    let dry_run = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    let api = cluster_mirrors(&world.scene.client);
    testenv::wait_for(
        "the API server to accept the kind and field",
        PATIENCE,
        || async {
            let accepted = api.create(&dry_run, &probe).await.ok()?;
            accepted.data["spec"]["target"].get("publishAs").map(drop)
        },
    )
    .await
    .unwrap_or_else(|e| panic!("{e:#}"));
    newer
}

/// Waits until `at_least` InvalidSpec Warnings about the ClusterMirror
/// `name` were posted; returns how many there are.
async fn told_invalid<K: TestKind>(world: &World<K>, name: &str, at_least: usize) -> usize {
    let events: Api<Event> = Api::namespaced(world.scene.client.clone(), "default");
    testenv::wait_for(
        &format!("{at_least} InvalidSpec Warnings about {name}"),
        PATIENCE,
        || async {
            let listed = events.list(&ListParams::default()).await.ok()?;
            let told = listed
                .items
                .iter()
                .filter(|e| {
                    e.reason.as_deref() == Some("InvalidSpec")
                        && e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name)
                })
                .count();
            (told >= at_least).then_some(told)
        },
    )
    .await
    .unwrap_or_else(|e| panic!("{e:#}\n{}", world.controller().log_text()))
}

#[tokio::test]
async fn a_clustermirror_this_version_cannot_read_is_told_and_hides_no_other() {
    let mut world = super::world::<ConfigMap>("cmir-unreadable").await;
    world
        .objects()
        .create(&ConfigMap::with_data("colors", &[("k", "v")], false))
        .await;
    world
        .objects()
        .create(&ConfigMap::with_data("shapes", &[("k", "v")], false))
        .await;
    let prod = world.namespace("a", false, &[("env", "prod")]).await;
    let [newer, readable, narrowed] =
        ["newer", "readable", "narrowed"].map(|name| format!("{}-{name}", world.prefix));
    let mut newer_crd = accept_newer_specs(&world, "Job").await;
    newer_crd.made = vec![newer.clone(), readable.clone(), narrowed.clone()];
    let spec = |kind: &str| {
        json!({
            "source": {"kind": kind, "namespace": world.prefix, "name": "colors"},
            "target": {
                "namespaceSelector": {"matchLabels": {"env": "prod"}},
                "namespaces": [format!("{}-*", world.prefix)],
            },
        })
    };
    create(&world, &narrowed, "shapes").await;
    cluster_copy_in_sync(&world, &prod, "shapes", &narrowed).await;
    create_with(&world, &newer, spec("Job")).await;
    create_with(&world, &readable, spec("ConfigMap")).await;
    let refused = ready(&world, &newer, "InvalidSpec").await;
    let message = condition(&refused, "Ready").unwrap()["message"].to_string();
    assert!(message.contains("Job"), "{message}");
    cluster_copy_in_sync(&world, &prod, "colors", &readable).await;
    ready(&world, &readable, "Synced").await;
    // A field it does not know may ask for less than the spec without it:
    // not ignored, it makes the spec unreadable, its copy kept as it is.
    patch_spec(&world, &narrowed, json!({"target": {"publishAs": ["k"]}})).await;
    let refused = ready(&world, &narrowed, "InvalidSpec").await;
    let message = condition(&refused, "Ready").unwrap()["message"].to_string();
    assert!(message.contains("unknown field `publishAs`"), "{message}");
    let told = told_invalid(&world, &narrowed, 1).await;

    // A controller starting lists both: the readable one is still served.
    world.stop();
    world
        .objects()
        .set_data("colors", &[("k", Some("changed while stopped"))])
        .await;
    world
        .objects()
        .set_data("shapes", &[("k", Some("changed while stopped"))])
        .await;
    let sources = world.prefix.clone();
    world
        .start_with(&["--cluster-mirror-source-namespaces", &sources])
        .await;
    let copy = cluster_copy_in_sync(&world, &prod, "colors", &readable).await;
    assert_eq!(
        copy.data.unwrap_or_default()["k"],
        "changed while stopped",
        "{}",
        world.controller().log_text()
    );
    // The reconcile of the unreadable one after the start tells its Ready
    // condition again (a new process), after deciding what to write.
    told_invalid(&world, &narrowed, told + 1).await;
    let kept = world.api(&prod).get("shapes").await.unwrap();
    let by = kept.labels().get(CLUSTER_MIRROR_LABEL).cloned();
    let value = kept.data.unwrap_or_default().remove("k");
    assert_eq!(
        (by, value),
        (Some(narrowed), Some("v".to_owned())),
        "the copy of a ClusterMirror it cannot read is kept as it was"
    );
    drop(newer_crd);
    world.clean_up().await;
}
