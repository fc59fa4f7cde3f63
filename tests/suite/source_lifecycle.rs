//! A source's life, and its companion following it: labeled, changed,
//! unlabeled, deleted, recreated. For every kind.

use crate::common;

use common::{Objects, Scene, TestKind, mk_source, with_binary};
use configmap_mirror::contract::CHECKSUM_ANNOTATION;
use kube::ResourceExt;
use serde_json::json;

crate::for_each_kind!(
    a_source_created_labeled_gets_an_exact_companion_and_a_normal_event,
    labeling_an_existing_object_creates_its_companion,
    a_changed_source_is_followed_by_its_companion_and_checksum,
    deleting_the_source_lets_the_garbage_collector_remove_the_companion,
    removing_the_label_deletes_the_companion_and_nothing_else,
    a_label_value_other_than_true_counts_as_unlabeled,
    a_source_recreated_under_the_same_name_owns_the_companion_with_its_new_uid,
    a_source_named_like_a_companion_is_ordinary_and_grows_no_chain,
);

async fn a_source_created_labeled_gets_an_exact_companion_and_a_normal_event<K: TestKind>() {
    let scene = Scene::new("created").await;
    let objects = Objects::<K>::of(&scene);
    let _mirror = objects.start_controller(&[]).await;
    objects
        .source("colors", &[("a", "1"), ("b", "2")], &[])
        .await;

    let companion = objects.companion_in_sync("colors").await;
    assert!(companion.annotations().get("note").is_none());
    assert_eq!(companion.owner_references()[0].block_owner_deletion, None);
    scene.wait_event("colors", "CompanionCreated").await;
}

/// binaryData is a ConfigMap's own.
#[tokio::test]
async fn binary_data_is_copied_exactly() {
    let scene = Scene::new("created-binary").await;
    let _mirror = scene.configmaps().start_controller(&[]).await;
    let source = with_binary(
        mk_source("colors", &[("a", "1")]),
        "blob",
        &[0, 159, 255, 10],
    );
    scene.configmaps().create(&source).await;
    let companion = scene.configmaps().companion_in_sync("colors").await;
    assert_eq!(
        companion.binary_data.unwrap_or_default()["blob"].0,
        [0, 159, 255, 10]
    );
}

async fn labeling_an_existing_object_creates_its_companion<K: TestKind>() {
    let scene = Scene::new("labeled").await;
    let objects = Objects::<K>::of(&scene);
    let _mirror = objects.start_controller(&[]).await;
    objects
        .create(&K::with_data("plain", &[("k", "v")], false))
        .await;
    assert!(objects.get("plain-synced").await.is_none());

    objects
        .patch(
            "plain",
            json!({"metadata": {"labels": {common::SOURCE_LABEL: "true"}}}),
        )
        .await;
    objects.companion_in_sync("plain").await;
}

async fn a_changed_source_is_followed_by_its_companion_and_checksum<K: TestKind>() {
    let scene = Scene::new("changed").await;
    let objects = Objects::<K>::of(&scene);
    let _mirror = objects.start_controller(&[]).await;
    objects.source("colors", &[("a", "1")], &[]).await;
    let before = objects.companion_in_sync("colors").await;

    objects
        .set_data("colors", &[("a", Some("2")), ("new", Some("key"))])
        .await;
    let after = objects.companion_in_sync("colors").await;
    assert_ne!(
        before.annotations().get(CHECKSUM_ANNOTATION),
        after.annotations().get(CHECKSUM_ANNOTATION)
    );
    assert_eq!(after.value("new").as_deref(), Some("key"));
}

async fn deleting_the_source_lets_the_garbage_collector_remove_the_companion<K: TestKind>() {
    let scene = Scene::new("gc").await;
    let objects = Objects::<K>::of(&scene);
    let controller = objects.start_controller(&[]).await;
    objects.source("colors", &[("a", "1")], &[]).await;
    objects.companion_in_sync("colors").await;
    // Without the controller, only the garbage collector can remove it.
    assert!(controller.stop().success());

    objects.delete("colors").await;
    testenv::wait_for(
        "the companion to be garbage-collected",
        std::time::Duration::from_secs(15),
        || async { objects.get("colors-synced").await.is_none().then_some(()) },
    )
    .await
    .unwrap_or_else(|e| panic!("{e:#}"));
}

async fn removing_the_label_deletes_the_companion_and_nothing_else<K: TestKind>() {
    let scene = Scene::new("unlabeled").await;
    let objects = Objects::<K>::of(&scene);
    let _mirror = objects.start_controller(&[]).await;
    objects.source("colors", &[("a", "1")], &[]).await;
    objects.source("keep", &[("a", "1")], &[]).await;
    objects.companion_in_sync("colors").await;
    let kept = objects.companion_in_sync("keep").await;

    objects.unlabel("colors").await;
    objects.wait_gone("colors-synced").await;
    assert!(
        objects.get("colors").await.is_some(),
        "the source itself stays"
    );
    let still_kept = objects
        .get("keep-synced")
        .await
        .expect("other companion stays");
    assert_eq!(still_kept.resource_version(), kept.resource_version());
    scene.wait_event("colors", "CompanionDeleted").await;
}

async fn a_label_value_other_than_true_counts_as_unlabeled<K: TestKind>() {
    let scene = Scene::new("relabeled").await;
    let objects = Objects::<K>::of(&scene);
    let _mirror = objects.start_controller(&[]).await;
    objects.source("colors", &[("a", "1")], &[]).await;
    objects.companion_in_sync("colors").await;

    objects
        .patch(
            "colors",
            json!({"metadata": {"labels": {common::SOURCE_LABEL: "false"}}}),
        )
        .await;
    objects.wait_gone("colors-synced").await;
}

async fn a_source_recreated_under_the_same_name_owns_the_companion_with_its_new_uid<K: TestKind>() {
    let scene = Scene::new("recreated").await;
    let objects = Objects::<K>::of(&scene);
    let _mirror = objects.start_controller(&[]).await;
    let first = objects.source("colors", &[("a", "old")], &[]).await;
    objects.companion_in_sync("colors").await;

    objects.delete("colors").await;
    let second = objects.source("colors", &[("a", "new")], &[]).await;
    assert_ne!(first.uid(), second.uid());
    let companion = objects.companion_in_sync("colors").await;
    assert_eq!(
        companion.owner_references()[0].uid,
        second.uid().unwrap_or_default()
    );
    assert_eq!(companion.value("a").as_deref(), Some("new"));
}

async fn a_source_named_like_a_companion_is_ordinary_and_grows_no_chain<K: TestKind>() {
    let scene = Scene::new("suffixed").await;
    let objects = Objects::<K>::of(&scene);
    let controller = objects.start_controller(&[]).await;
    objects.source("x-synced", &[("a", "1")], &[]).await;
    objects.companion_in_sync("x-synced").await;

    // Once converged the controller keeps writing nothing: no third link.
    let writes = controller.writes_reaching(1.0).await;
    objects.source("marker", &[], &[]).await;
    objects.companion_in_sync("marker").await;
    assert_eq!(controller.writes_reaching(writes + 1.0).await, writes + 1.0);
    assert!(objects.get("x-synced-synced-synced").await.is_none());
}
