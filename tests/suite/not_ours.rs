//! Objects that look like ours but are not: a copy of a companion under
//! another name, the copies of another install, and a source on its way
//! out. (A fabricated mirror is in `mirroring`: it needs the cluster-wide
//! controller.) None is deleted, written or reported on where it
//! should not be.

use crate::common;

use std::time::Duration;

use common::{PATIENCE, Scene, mk_source};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::{
    ResourceExt,
    api::{ObjectMeta, Patch, PatchParams},
};
use serde_json::json;

/// How long something that must not happen is given to happen. The
/// controller acts on a change within milliseconds when it acts at all.
const WATCH_FOR: Duration = Duration::from_secs(5);

/// Fails if `name` disappears within [`WATCH_FOR`].
async fn stays(scene: &Scene<'_>, name: &str) {
    let end = std::time::Instant::now() + WATCH_FOR;
    while std::time::Instant::now() < end {
        assert!(scene.get(name).await.is_some(), "{name} was deleted");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A copy of `source`'s companion under `name`, metadata and all.
async fn copy_of_companion(scene: &Scene<'_>, source: &str, name: &str) -> ConfigMap {
    let companion = scene.companion_in_sync(source).await;
    let copy = ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: companion.metadata.labels.clone(),
            annotations: companion.metadata.annotations.clone(),
            owner_references: companion.metadata.owner_references.clone(),
            ..ObjectMeta::default()
        },
        data: companion.data.clone(),
        ..ConfigMap::default()
    };
    scene.create(&copy).await
}

#[tokio::test]
async fn a_copy_of_a_companion_under_another_name_is_never_pruned() {
    let scene = Scene::new("not-ours-backup").await;
    let _mirror = scene.start_controller(&[]).await;
    scene.create(&mk_source("colors", &[("a", "1")])).await;
    copy_of_companion(&scene, "colors", "colors-backup").await;
    stays(&scene, "colors-backup").await;
    // Even once its source is no longer managed.
    scene.unlabel("colors").await;
    scene.wait_gone("colors-synced").await;
    stays(&scene, "colors-backup").await;
}

#[tokio::test]
async fn two_installs_with_different_suffixes_leave_each_other_s_copies_alone() {
    let scene = Scene::new("not-ours-suffix").await;
    let synced = scene.start_controller(&[]).await;
    let copied = scene.start_controller(&["--suffix=-copy"]).await;
    scene.create(&mk_source("colors", &[("a", "1")])).await;
    scene.companion_in_sync("colors").await;
    testenv::wait_for("colors-copy", PATIENCE, || async {
        scene.get("colors-copy").await.map(|_| ())
    })
    .await
    .unwrap_or_else(|e| panic!("{e:#}"));
    stays(&scene, "colors-synced").await;
    stays(&scene, "colors-copy").await;
    assert_eq!(
        synced
            .metric(
                "configmap_mirror_companion_writes_total",
                "operation=\"delete\""
            )
            .await,
        0.0
    );
    assert_eq!(
        copied
            .metric(
                "configmap_mirror_companion_writes_total",
                "operation=\"delete\""
            )
            .await,
        0.0
    );
}

#[tokio::test]
async fn a_source_being_deleted_gets_no_new_companion() {
    let scene = Scene::new("not-ours-deleting").await;
    let _mirror = scene.start_controller(&[]).await;
    let mut source = mk_source("colors", &[("a", "1")]);
    source.metadata.finalizers = Some(vec!["workshop.io/test-hold".into()]);
    scene.create(&source).await;
    scene.companion_in_sync("colors").await;

    scene.delete("colors").await;
    let deleting = scene.get("colors").await.expect("held by its finalizer");
    assert!(deleting.metadata.deletion_timestamp.is_some());
    if scene.get("colors-synced").await.is_some() {
        scene.delete("colors-synced").await;
    }
    let end = std::time::Instant::now() + WATCH_FOR;
    while std::time::Instant::now() < end {
        assert!(
            scene.get("colors-synced").await.is_none(),
            "a companion was recreated for a source being deleted"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    scene
        .configmaps()
        .patch(
            "colors",
            &PatchParams::default(),
            &Patch::Merge(&json!({"metadata": {"finalizers": null}})),
        )
        .await
        .expect("release the finalizer");
    scene.wait_gone("colors").await;
}

/// An object at the companion's name that refers to the source without
/// being controlled by it (a plain owner reference, as any user may write)
/// is somebody else's: never adopted, never overwritten, warned about.
#[tokio::test]
async fn an_object_with_a_plain_owner_reference_to_the_source_is_not_adopted() {
    let scene = Scene::new("not-ours-plain-owner").await;
    let source = scene.create(&mk_source("colors", &[("a", "1")])).await;
    let theirs = ConfigMap {
        metadata: ObjectMeta {
            name: Some("colors-synced".into()),
            owner_references: Some(vec![OwnerReference {
                api_version: "v1".into(),
                kind: "ConfigMap".into(),
                name: "colors".into(),
                uid: source.uid().expect("a stored source has a uid"),
                controller: None,
                block_owner_deletion: None,
            }]),
            ..ObjectMeta::default()
        },
        data: Some([("theirs".to_owned(), "x".to_owned())].into()),
        ..ConfigMap::default()
    };
    let theirs = scene.create(&theirs).await;
    let _mirror = scene.start_controller(&["--slow-retry", "500ms"]).await;

    let event = scene.wait_event("colors", "CompanionNameTaken").await;
    assert_eq!(event.type_.as_deref(), Some("Warning"));
    let untouched = scene.get("colors-synced").await.expect("theirs stays");
    assert_eq!(untouched.resource_version(), theirs.resource_version());
    assert_eq!(untouched.data, theirs.data);
}
