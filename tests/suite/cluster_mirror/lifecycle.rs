//! A ClusterMirror's copies follow its selection, its source and their own
//! edits; deleting or narrowing it removes them; deleting the CRD does not,
//! nor its coming back: then they are orphans, until applied again.

use super::*;
use configmap_mirror::contract::MIRROR_OF_UID_ANNOTATION;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};

async fn selection_source_and_heals<K: TestKind>(tag: &str) {
    let world = super::world::<K>(tag).await;
    world
        .objects()
        .create(&K::with_data("corp-ca", &[("ca", "one")], false))
        .await;
    let prod_a = world.namespace("a", false, &[("env", "prod")]).await;
    let plain = world.namespace("b", false, &[]).await;
    let prod_c = world.namespace("c", false, &[("env", "prod")]).await;
    create(&world, "ca", "corp-ca").await;

    cluster_copy_in_sync(&world, &prod_a, "corp-ca", "ca").await;
    cluster_copy_in_sync(&world, &prod_c, "corp-ca", "ca").await;
    let synced = ready(&world, "ca", "Synced").await;
    assert_eq!(synced.data["status"]["selected"], 2);
    assert_eq!(synced.data["status"]["synced"], 2);
    assert!(
        world
            .api(&plain)
            .get_opt("corp-ca")
            .await
            .unwrap()
            .is_none(),
        "no consent asked, but not selected"
    );
    assert!(
        world
            .api(&world.prefix)
            .get_opt("corp-ca")
            .await
            .unwrap()
            .is_some(),
        "the source itself"
    );

    // Selection in and out, at once.
    world.label_namespace(&plain, "env", Some("prod")).await;
    cluster_copy_in_sync(&world, &plain, "corp-ca", "ca").await;
    world.label_namespace(&prod_a, "env", None).await;
    world.objects_in(&prod_a).wait_gone("corp-ca").await;

    // The source changes: every copy follows.
    world
        .objects()
        .set_data("corp-ca", &[("ca", Some("two"))])
        .await;
    let copy = cluster_copy_in_sync(&world, &prod_c, "corp-ca", "ca").await;
    assert_eq!(copy.value("ca").as_deref(), Some("two"));

    // A copy edited or deleted heals.
    world
        .api(&prod_c)
        .patch(
            "corp-ca",
            &PatchParams::default(),
            &Patch::Merge(&K::data_patch(&[("ca", Some("forged"))])),
        )
        .await
        .expect("edit a copy");
    let healed = cluster_copy_in_sync(&world, &prod_c, "corp-ca", "ca").await;
    assert_eq!(healed.value("ca").as_deref(), Some("two"));
    world
        .api(&plain)
        .delete("corp-ca", &DeleteParams::default())
        .await
        .expect("delete a copy");
    cluster_copy_in_sync(&world, &plain, "corp-ca", "ca").await;

    // Narrowed to one namespace, then deleted: its copies go.
    patch_spec(
        &world,
        "ca",
        json!({"target": {"namespaces": [prod_c.clone()]}}),
    )
    .await;
    world.objects_in(&plain).wait_gone("corp-ca").await;
    cluster_copy_in_sync(&world, &prod_c, "corp-ca", "ca").await;
    cluster_mirrors(&world.scene.client)
        .delete("ca", &DeleteParams::default())
        .await
        .expect("delete the ClusterMirror");
    world.objects_in(&prod_c).wait_gone("corp-ca").await;
    assert!(
        world
            .api(&world.prefix)
            .get_opt("corp-ca")
            .await
            .unwrap()
            .is_some(),
        "the source stays"
    );
    clean_up(world, &[]).await;
}

#[tokio::test]
async fn configmap_copies_follow_selection_source_and_heal() {
    selection_source_and_heals::<ConfigMap>("cmir-cm").await;
}

#[tokio::test]
async fn secret_copies_follow_selection_source_and_heal() {
    selection_source_and_heals::<Secret>("cmir-secret").await;
}

async fn crd_deleted_removes_no_copy<K: TestKind>(tag: &str) {
    let mut world = super::world::<K>(tag).await;
    world
        .objects()
        .create(&K::with_data("shared", &[("k", "v")], false))
        .await;
    let prod = world.namespace("a", false, &[("env", "prod")]).await;
    create(&world, "kept", "shared").await;
    let written = cluster_copy_in_sync(&world, &prod, "shared", "kept").await;
    ready(&world, "kept", "Synced").await;

    delete_crd(&world.scene.client).await;
    let crd_gone = world
        .controller()
        .metric_reaching("configmap_mirror_clustermirror_crd_present", "", 0.0)
        .await;
    assert_eq!(crd_gone, 0.0);
    // The ClusterMirror went with its CRD: the prune of its copy that this
    // woke kept it.
    kept_as_orphans(world.controller(), &[&format!("{prod}/shared")]).await;
    let kept = cluster_copy_in_sync(&world, &prod, "shared", "kept").await;
    assert_eq!(kept.uid(), written.uid());
    assert_eq!(kept.resource_version(), written.resource_version());
    assert!(
        world
            .controller()
            .log_text()
            .contains("ClusterMirror CRD is missing or being deleted")
    );
    // explain, too, reads no ClusterMirror while the CRD is missing, and
    // says its copy stays.
    let run = super::explain::explain_as_admin(&world, &["clustermirror/kept", "-o", "json"]);
    assert_eq!(run.code, Some(1));
    let own = crate::explain::row(&run.json(), "clustermirror", "");
    assert_eq!(own["verdict"], "not-found");
    let detail = own["detail"].as_str().unwrap_or_default();
    assert!(detail.contains("CRD is not installed"), "{detail}");
    let copy = format!("{prod}/shared");
    let kind = crate::explain::kind_flag::<K>();
    let run = super::explain::explain_as_admin(&world, &[&copy, "--kind", kind, "-o", "json"]);
    let kept = crate::explain::verdict(&run.json(), "clustermirror-copy", &prod);
    assert_eq!(kept, "no-source");

    // Restarted without the CRD: still nothing removed, and the label path runs.
    world.stop();
    let sources = world.prefix.clone();
    world
        .start_with(&["--cluster-mirror-source-namespaces", &sources])
        .await;
    let labelled = world
        .mirrored("labelled", &[("workshop.io/mirror-to", &prod)])
        .await;
    let _ = labelled;
    world
        .label_namespace(&prod, K::CONSENT_LABEL, Some("true"))
        .await;
    world.mirror_in_sync(&prod, "labelled").await;
    cluster_copy_in_sync(&world, &prod, "shared", "kept").await;

    // With the CRD back, and no ClusterMirror: the copy stays, an orphan,
    // counted and explained.
    let before = cluster_copy_in_sync(&world, &prod, "shared", "kept").await;
    install_crd(&world.scene.client).await;
    let orphans = world
        .controller()
        .metric_reaching(
            "configmap_mirror_clustermirror_orphans",
            "clustermirror=\"kept\"",
            1.0,
        )
        .await;
    assert_eq!(orphans, 1.0, "{}", world.controller().log_text());
    kept_as_orphans(world.controller(), &[&format!("{prod}/shared")]).await;
    let kept = cluster_copy_in_sync(&world, &prod, "shared", "kept").await;
    assert_eq!(kept.uid(), before.uid());
    assert_eq!(kept.resource_version(), before.resource_version());
    let run = super::explain::explain_as_admin(&world, &[&copy, "--kind", kind, "-o", "json"]);
    let orphaned = crate::explain::verdict(&run.json(), "clustermirror-copy", &prod);
    assert_eq!(orphaned, "orphaned");

    // Applied again, it adopts the copy; deleted then, it removes it.
    let again = create(&world, "kept", "shared").await;
    let bound = format!(".{}", again.uid().unwrap_or_default());
    testenv::wait_for("the copy adopted", PATIENCE, || async {
        let copy = world.api(&prod).get_opt("shared").await.ok()??;
        let uid = copy.annotations().get(MIRROR_OF_UID_ANNOTATION)?;
        uid.ends_with(&bound).then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{e:#}\n{}", world.controller().log_text()));
    let adopted = world.api(&prod).get("shared").await.expect("the copy");
    assert_eq!(adopted.uid(), before.uid(), "adopted in place");
    cluster_mirrors(&world.scene.client)
        .delete("kept", &DeleteParams::default())
        .await
        .expect("delete the ClusterMirror");
    world.objects_in(&prod).wait_gone("shared").await;
    clean_up(world, &[]).await;
}

#[tokio::test]
async fn deleting_the_crd_removes_no_configmap_copy() {
    crd_deleted_removes_no_copy::<ConfigMap>("cmir-crd-cm").await;
}

#[tokio::test]
async fn deleting_the_crd_removes_no_secret_copy() {
    crd_deleted_removes_no_copy::<Secret>("cmir-crd-secret").await;
}

#[tokio::test]
async fn an_idle_clustermirror_s_status_stays_still_and_suspend_writes_nothing() {
    let world = super::world::<ConfigMap>("cmir-idle").await;
    world
        .objects()
        .create(&ConfigMap::with_data("cfg", &[("k", "v")], false))
        .await;
    let prod = world.namespace("a", false, &[("env", "prod")]).await;
    create(&world, "idle", "cfg").await;
    cluster_copy_in_sync(&world, &prod, "cfg", "idle").await;
    let synced = ready(&world, "idle", "Synced").await;
    // Followed: its own status write, its copy's events, and what they woke.
    caught_up(&world, None).await;
    let later = cluster_mirrors(&world.scene.client)
        .get("idle")
        .await
        .expect("get");
    assert_eq!(
        later.resource_version(),
        synced.resource_version(),
        "nothing changed, nothing written"
    );

    patch_spec(&world, "idle", json!({"suspend": true})).await;
    let suspended = observed(&world, "idle").await;
    assert_eq!(
        condition(&suspended, "Ready").unwrap()["reason"],
        "Suspended"
    );
    // After each change, the reconcile that saw it counts what it found in
    // the status it writes after deciding to write nothing.
    world
        .objects()
        .set_data("cfg", &[("k", Some("changed"))])
        .await;
    counted(&world, "idle", (1, 0, 0)).await;
    let second = world.namespace("b", false, &[("env", "prod")]).await;
    counted(&world, "idle", (2, 0, 0)).await;
    world.label_namespace(&prod, "env", None).await;
    counted(&world, "idle", (1, 0, 0)).await;
    assert!(
        world.api(&second).get_opt("cfg").await.unwrap().is_none(),
        "suspended: nothing written"
    );
    let kept = world
        .api(&prod)
        .get_opt("cfg")
        .await
        .unwrap()
        .expect("suspended: nothing deleted");
    assert_eq!(kept.value("k").as_deref(), Some("v"));
    let suspended = ready(&world, "idle", "Suspended").await;
    assert_eq!(suspended.data["status"]["selected"], 1);
    assert_eq!(suspended.data["status"]["synced"], 0);

    patch_spec(&world, "idle", json!({"suspend": false})).await;
    cluster_copy_in_sync(&world, &second, "cfg", "idle").await;
    world.objects_in(&prod).wait_gone("cfg").await;
    clean_up(world, &["idle"]).await;
}
