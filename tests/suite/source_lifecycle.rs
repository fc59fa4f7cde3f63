//! A source's life, and its companion following it: labeled, changed,
//! unlabeled, deleted, recreated.

use crate::common;

use common::{Scene, is_exact_companion, mk_source, with_binary};
use configmap_mirror::contract::content_checksum;
use kube::ResourceExt;
use serde_json::json;

#[tokio::test]
async fn a_source_created_labeled_gets_an_exact_companion_and_a_normal_event() {
    let scene = Scene::new("created").await;
    let _mirror = scene.start_controller(&[]).await;
    let source = with_binary(
        mk_source("colors", &[("a", "1"), ("b", "2")]),
        "blob",
        &[0, 159, 255, 10],
    );
    scene.create(&source).await;

    let companion = scene.companion_in_sync("colors").await;
    let source = scene.get("colors").await.expect("source exists");
    assert!(is_exact_companion(&companion, &source));
    assert!(companion.annotations().get("note").is_none());
    assert_eq!(companion.owner_references()[0].block_owner_deletion, None);
    scene.wait_event("colors", "CompanionCreated").await;
}

#[tokio::test]
async fn labeling_an_existing_configmap_creates_its_companion() {
    let scene = Scene::new("labeled").await;
    let _mirror = scene.start_controller(&[]).await;
    scene
        .create(&common::mk_unmanaged("plain", &[("k", "v")]))
        .await;
    assert!(scene.get("plain-synced").await.is_none());

    scene
        .patch_json(
            "plain",
            json!({"metadata": {"labels": {common::SOURCE_LABEL: "true"}}}),
        )
        .await;
    scene.companion_in_sync("plain").await;
}

#[tokio::test]
async fn a_changed_source_is_followed_by_its_companion_and_checksum() {
    let scene = Scene::new("changed").await;
    let _mirror = scene.start_controller(&[]).await;
    scene.create(&mk_source("colors", &[("a", "1")])).await;
    let before = scene.companion_in_sync("colors").await;

    let changed = scene
        .patch_json("colors", json!({"data": {"a": "2", "new": "key"}}))
        .await;
    let after = scene.companion_in_sync("colors").await;
    assert_ne!(
        before
            .annotations()
            .get(configmap_mirror::contract::CHECKSUM_ANNOTATION),
        after
            .annotations()
            .get(configmap_mirror::contract::CHECKSUM_ANNOTATION)
    );
    assert_eq!(
        after.annotations()[configmap_mirror::contract::CHECKSUM_ANNOTATION],
        content_checksum(&changed)
    );
}

#[tokio::test]
async fn deleting_the_source_lets_the_garbage_collector_remove_the_companion() {
    let scene = Scene::new("gc").await;
    let controller = scene.start_controller(&[]).await;
    scene.create(&mk_source("colors", &[("a", "1")])).await;
    scene.companion_in_sync("colors").await;
    // Without the controller, only the garbage collector can remove it.
    assert!(controller.stop().success());

    scene.delete("colors").await;
    testenv::wait_for(
        "the companion to be garbage-collected",
        std::time::Duration::from_secs(15),
        || async { scene.get("colors-synced").await.is_none().then_some(()) },
    )
    .await
    .unwrap_or_else(|e| panic!("{e:#}"));
}

#[tokio::test]
async fn removing_the_label_deletes_the_companion_and_nothing_else() {
    let scene = Scene::new("unlabeled").await;
    let _mirror = scene.start_controller(&[]).await;
    scene.create(&mk_source("colors", &[("a", "1")])).await;
    scene.create(&mk_source("keep", &[("a", "1")])).await;
    scene.companion_in_sync("colors").await;
    let kept = scene.companion_in_sync("keep").await;

    scene.unlabel("colors").await;
    scene.wait_gone("colors-synced").await;
    assert!(
        scene.get("colors").await.is_some(),
        "the source itself stays"
    );
    let still_kept = scene
        .get("keep-synced")
        .await
        .expect("other companion stays");
    assert_eq!(still_kept.resource_version(), kept.resource_version());
    scene.wait_event("colors", "CompanionDeleted").await;
}

#[tokio::test]
async fn a_label_value_other_than_true_counts_as_unlabeled() {
    let scene = Scene::new("relabeled").await;
    let _mirror = scene.start_controller(&[]).await;
    scene.create(&mk_source("colors", &[("a", "1")])).await;
    scene.companion_in_sync("colors").await;

    scene
        .patch_json(
            "colors",
            json!({"metadata": {"labels": {common::SOURCE_LABEL: "false"}}}),
        )
        .await;
    scene.wait_gone("colors-synced").await;
}

#[tokio::test]
async fn a_source_recreated_under_the_same_name_owns_the_companion_with_its_new_uid() {
    let scene = Scene::new("recreated").await;
    let _mirror = scene.start_controller(&[]).await;
    let first = scene.create(&mk_source("colors", &[("a", "old")])).await;
    scene.companion_in_sync("colors").await;

    scene.delete("colors").await;
    let second = scene.create(&mk_source("colors", &[("a", "new")])).await;
    assert_ne!(first.uid(), second.uid());
    let companion = scene.companion_in_sync("colors").await;
    assert_eq!(
        companion.owner_references()[0].uid,
        second.uid().unwrap_or_default()
    );
    assert_eq!(companion.data.unwrap_or_default()["a"], "new");
}

#[tokio::test]
async fn a_source_named_like_a_companion_is_ordinary_and_grows_no_chain() {
    let scene = Scene::new("suffixed").await;
    let controller = scene.start_controller(&[]).await;
    scene.create(&mk_source("x-synced", &[("a", "1")])).await;
    scene.companion_in_sync("x-synced").await;

    // Once converged the controller keeps writing nothing: no third link.
    let writes = controller.writes_reaching(1.0).await;
    scene.create(&mk_source("marker", &[])).await;
    scene.companion_in_sync("marker").await;
    assert_eq!(controller.writes_reaching(writes + 1.0).await, writes + 1.0);
    assert!(scene.get("x-synced-synced-synced").await.is_none());
}
