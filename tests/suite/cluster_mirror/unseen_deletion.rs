//! A ClusterMirror deleted while no replica of the controller runs (a
//! rollout, a failover, a GitOps prune meanwhile) still does what its
//! `deletionPolicy` says once the controller runs again: each copy records
//! the CRD its ClusterMirror was made under, and that CRD still live tells
//! a deletion by someone from one its CRD made. A CRD deleted and created
//! again meanwhile wipes nothing: its copies stay, orphans.

use super::*;
use configmap_mirror::contract::{
    DELETION_POLICY_ANNOTATION, MANAGED_BY_LABEL, MIRROR_OF_UID_ANNOTATION,
    WRITTEN_UNDER_CRD_ANNOTATION,
};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};

/// The uid of the ClusterMirror CRD as it is now.
async fn crd_uid(client: &Client) -> String {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd = crds.get(ClusterMirror::crd_name()).await.expect("the CRD");
    crd.metadata.uid.unwrap_or_default()
}

/// Waits until the copy in `namespace` records `policy` and the CRD
/// `crd`, and returns it.
async fn marked<K: TestKind>(
    world: &World<K>,
    namespace: &str,
    name: &str,
    policy: &str,
    crd: &str,
) -> K {
    let api = world.api(namespace);
    testenv::wait_for(
        &format!("{namespace}/{name} to record {policy} under the CRD {crd}"),
        PATIENCE,
        || async {
            let copy = api.get_opt(name).await.ok()??;
            let annotations = copy.annotations();
            let marked = annotations
                .get(DELETION_POLICY_ANNOTATION)
                .map(String::as_str)
                == Some(policy)
                && annotations
                    .get(WRITTEN_UNDER_CRD_ANNOTATION)
                    .map(String::as_str)
                    == Some(crd);
            marked.then_some(copy)
        },
    )
    .await
    .unwrap_or_else(|e| panic!("{e:#}\n{}", world.controller().log_text()))
}

/// Stops the controller, runs `meanwhile`, and starts it again.
pub(crate) async fn while_stopped<K: TestKind>(
    world: &mut World<K>,
    meanwhile: impl AsyncFnOnce(&Client),
) {
    world.stop();
    meanwhile(&world.scene.client).await;
    let sources = world.prefix.clone();
    world
        .start_with(&["--cluster-mirror-source-namespaces", &sources])
        .await;
}

async fn delete_cluster_mirror(client: &Client, name: &str) {
    cluster_mirrors(client)
        .delete(name, &DeleteParams::default())
        .await
        .expect("delete the ClusterMirror");
}

#[tokio::test]
async fn a_clustermirror_deleted_while_the_controller_is_down_removes_its_copies_once_it_runs() {
    let mut world = super::world::<ConfigMap>("cmir-unseen-delete").await;
    world
        .objects()
        .create(&ConfigMap::with_data("corp-ca", &[("ca", "one")], false))
        .await;
    let a = world.namespace("a", false, &[("env", "prod")]).await;
    let b = world.namespace("b", false, &[("env", "prod")]).await;
    create(&world, "gone", "corp-ca").await;
    let crd = crd_uid(&world.scene.client).await;
    for namespace in [&a, &b] {
        cluster_copy_in_sync(&world, namespace, "corp-ca", "gone").await;
        marked(&world, namespace, "corp-ca", "Delete", &crd).await;
    }

    while_stopped(&mut world, async |client| {
        delete_cluster_mirror(client, "gone").await
    })
    .await;
    world.objects_in(&a).wait_gone("corp-ca").await;
    world.objects_in(&b).wait_gone("corp-ca").await;
    let log = world.controller().log_text();
    assert!(
        log.contains(&format!(
            "deleted copy {a}/corp-ca (its ClusterMirror was deleted)"
        )),
        "{log}"
    );
    assert!(
        !log.contains("is gone and its deletion was not seen"),
        "{log}"
    );
    clean_up(world, &[]).await;
}

#[tokio::test]
async fn a_clustermirror_deleted_while_the_controller_is_down_with_orphan_releases_its_copies() {
    let mut world = super::world::<Secret>("cmir-unseen-orphan").await;
    world
        .objects()
        .create(&Secret::with_data("pull", &[("k", "v")], false))
        .await;
    let prod = world.namespace("a", false, &[("env", "prod")]).await;
    create(&world, "kept", "pull").await;
    cluster_copy_in_sync(&world, &prod, "pull", "kept").await;
    patch_spec(&world, "kept", json!({"deletionPolicy": "Orphan"})).await;
    let crd = crd_uid(&world.scene.client).await;
    // A policy changed is recorded on every copy (one write each).
    let before = marked(&world, &prod, "pull", "Orphan", &crd).await;

    while_stopped(&mut world, async |client| {
        delete_cluster_mirror(client, "kept").await
    })
    .await;
    let api = world.api(&prod);
    let released = testenv::wait_for("the copy released", PATIENCE, || async {
        let copy = api.get_opt("pull").await.ok()??;
        (!copy.labels().contains_key(MANAGED_BY_LABEL)).then_some(copy)
    })
    .await
    .unwrap_or_else(|e| panic!("{e:#}\n{}", world.controller().log_text()));
    assert_eq!(released.uid(), before.uid(), "left in place");
    assert!(released.same_content(&before), "with its content");
    let marks: Vec<&String> = (released.labels().keys())
        .chain(released.annotations().keys())
        .filter(|key| key.starts_with("workshop.io/"))
        .collect();
    assert!(marks.is_empty(), "still marked: {marks:?}");
    world
        .api(&prod)
        .delete("pull", &DeleteParams::default())
        .await
        .expect("delete the released copy");
    clean_up(world, &[]).await;
}

#[tokio::test]
async fn a_crd_deleted_and_created_again_while_the_controller_is_down_wipes_nothing() {
    let mut world = super::world::<ConfigMap>("cmir-unseen-crd").await;
    world
        .objects()
        .create(&ConfigMap::with_data("shared", &[("k", "v")], false))
        .await;
    let prod = world.namespace("a", false, &[("env", "prod")]).await;
    create(&world, "kept", "shared").await;
    cluster_copy_in_sync(&world, &prod, "shared", "kept").await;
    let old_crd = crd_uid(&world.scene.client).await;
    let before = marked(&world, &prod, "shared", "Delete", &old_crd).await;

    while_stopped(&mut world, async |client| {
        delete_crd(client).await;
        install_crd(client).await;
    })
    .await;
    assert_ne!(crd_uid(&world.scene.client).await, old_crd, "another CRD");
    // The prune of the copy has been made, and kept it.
    kept_as_orphans(world.controller(), &[&format!("{prod}/shared")]).await;
    let orphans = world
        .controller()
        .metric_reaching(
            "configmap_mirror_clustermirror_orphans",
            "clustermirror=\"kept\"",
            1.0,
        )
        .await;
    assert_eq!(orphans, 1.0, "{}", world.controller().log_text());
    let kept = world.api(&prod).get("shared").await.expect("the copy");
    assert_eq!(kept.uid(), before.uid());
    assert_eq!(
        kept.resource_version(),
        before.resource_version(),
        "never rewritten"
    );

    // Applied again, it adopts the copy, marked under the new CRD; deleted
    // then, it removes it.
    let again = create(&world, "kept", "shared").await;
    let new_crd = crd_uid(&world.scene.client).await;
    let adopted = marked(&world, &prod, "shared", "Delete", &new_crd).await;
    let bound = adopted.annotations().get(MIRROR_OF_UID_ANNOTATION).cloned();
    assert!(
        bound.is_some_and(|uid| uid.ends_with(&format!(".{}", again.uid().unwrap_or_default()))),
        "bound to the ClusterMirror applied again"
    );
    assert_eq!(adopted.uid(), before.uid(), "adopted in place");
    delete_cluster_mirror(&world.scene.client, "kept").await;
    world.objects_in(&prod).wait_gone("shared").await;
    clean_up(world, &[]).await;
}
