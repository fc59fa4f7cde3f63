//! Hand edits and deletions of a companion are undone, also those made
//! while the controller was not running. For every kind, but for the
//! field only ConfigMaps have (binaryData).

use crate::common;

use common::{Objects, Scene, TestKind, mk_source, with_binary};
use configmap_mirror::contract::{CHECKSUM_ANNOTATION, MANAGED_BY_LABEL};
use configmap_mirror::reconcile::contest::CONTEST_LIMIT;
use kube::ResourceExt;
use serde_json::json;

crate::for_each_kind!(
    a_deleted_companion_is_recreated_and_evented,
    hand_edits_of_every_owned_field_are_restored,
    labels_and_annotations_added_by_others_are_left_alone,
    concurrent_edits_of_the_companion_converge_without_a_loop,
    changes_made_while_the_controller_was_down_are_converged_at_start,
    a_companion_rewritten_over_and_over_is_restored_slowly_with_a_warning,
    a_companion_unlabeled_over_and_over_is_restored_slowly_with_a_warning,
    a_companion_refrozen_over_and_over_is_restored_slowly_with_a_warning,
    a_companion_deleted_over_and_over_is_restored_slowly_with_a_warning,
    an_older_consistent_copy_brought_back_over_and_over_is_a_fight,
);

async fn a_deleted_companion_is_recreated_and_evented<K: TestKind>() {
    let scene = Scene::new("heal-delete").await;
    let objects = Objects::<K>::of(&scene);
    let _mirror = objects.start_controller(&[]).await;
    objects.source("colors", &[("a", "1")], &[]).await;
    let first = objects.companion_in_sync("colors").await;

    objects.delete("colors-synced").await;
    let second = objects.companion_in_sync("colors").await;
    assert_ne!(first.uid(), second.uid(), "it is a new object");
}

async fn hand_edits_of_every_owned_field_are_restored<K: TestKind>() {
    let scene = Scene::new("heal-edit").await;
    let objects = Objects::<K>::of(&scene);
    let controller = objects.start_controller(&[]).await;
    let edits = [
        K::data_patch(&[("a", Some("tampered"))]),
        K::data_patch(&[("added-by-hand", Some("x"))]),
        json!({"metadata": {"annotations": {CHECKSUM_ANNOTATION: "forged"}}}),
        json!({"metadata": {"ownerReferences": null}}),
        json!({"metadata": {"labels": {MANAGED_BY_LABEL: null}}}),
        json!({"metadata": {"labels": {common::SOURCE_LABEL: "true"}}}),
    ];
    // One source per edit: restores of one copy beyond the contest limit
    // within a minute would be answered with the slow backoff.
    for (i, edit) in edits.iter().enumerate() {
        let name = format!("colors-{i}");
        objects.source(&name, &[("a", "1")], &[]).await;
        objects.companion_in_sync(&name).await;
        let before = controller.writes().await;
        objects.patch(&format!("{name}-synced"), edit.clone()).await;
        objects.companion_in_sync(&name).await;
        assert!(
            controller.writes_reaching(before + 1.0).await > before,
            "no restoring write after {edit}"
        );
    }
    // The label edit made a companion a source for a moment; no chain stays.
    for i in 0..edits.len() {
        objects
            .wait_gone(&format!("colors-{i}-synced-synced"))
            .await;
    }
}

/// binaryData is a ConfigMap's own field.
#[tokio::test]
async fn a_hand_edit_of_binary_data_is_restored() {
    let scene = Scene::new("heal-edit-binary").await;
    let controller = scene.configmaps().start_controller(&[]).await;
    let source = with_binary(mk_source("colors", &[("a", "1")]), "bin", &[1, 2, 3]);
    scene.configmaps().create(&source).await;
    scene.configmaps().companion_in_sync("colors").await;
    let before = controller.writes().await;
    scene
        .configmaps()
        .patch("colors-synced", json!({"binaryData": {"bin": "AAAA"}}))
        .await;
    scene.configmaps().companion_in_sync("colors").await;
    assert!(controller.writes_reaching(before + 1.0).await > before);
}

async fn labels_and_annotations_added_by_others_are_left_alone<K: TestKind>() {
    let scene = Scene::new("heal-foreign-meta").await;
    let objects = Objects::<K>::of(&scene);
    let controller = objects.start_controller(&[]).await;
    objects.source("colors", &[("a", "1")], &[]).await;
    objects.companion_in_sync("colors").await;
    let writes = controller.writes().await;

    let patched = objects
        .patch(
            "colors-synced",
            json!({"metadata": {"labels": {"team": "blue"}, "annotations": {"note": "ok"}}}),
        )
        .await;
    // A later source change still converges, keeping the additions.
    objects.set_data("colors", &[("a", Some("2"))]).await;
    let companion = objects.companion_in_sync("colors").await;
    assert_eq!(
        companion.labels().get("team").map(String::as_str),
        Some("blue")
    );
    assert_eq!(
        companion.annotations().get("note").map(String::as_str),
        Some("ok")
    );
    assert_ne!(companion.resource_version(), patched.resource_version());
    assert_eq!(
        controller.writes_reaching(writes + 1.0).await,
        writes + 1.0,
        "one write: the source change"
    );
}

async fn concurrent_edits_of_the_companion_converge_without_a_loop<K: TestKind>() {
    let scene = Scene::new("heal-conflict").await;
    let objects = Objects::<K>::of(&scene);
    // On two threads, so watches and reconciles really run side by side.
    let controller = objects.start_controller(&["--worker-threads", "2"]).await;
    objects.source("colors", &[("a", "1")], &[]).await;
    objects.companion_in_sync("colors").await;

    // No more edits than the contest limit: more restores than that within
    // a minute is a fight, answered with the slow backoff (tested below),
    // and how many restores a burst costs depends on the machine's speed.
    for round in 0..CONTEST_LIMIT {
        objects
            .set_data("colors-synced", &[("a", Some(&format!("edit-{round}")))])
            .await;
    }
    let settled = objects.companion_in_sync("colors").await;
    assert_eq!(settled.value("a").as_deref(), Some("1"));
    // Settled: once later events have been handled, it is unchanged. (The
    // companion's resourceVersion is read from the API server; a loop would
    // keep moving it.)
    objects.source("marker", &[], &[]).await;
    objects.companion_in_sync("marker").await;
    let again = objects.get("colors-synced").await.expect("companion");
    assert_eq!(again.resource_version(), settled.resource_version());
    // At most one restore per edit, plus the two creates.
    assert!(controller.writes().await <= (CONTEST_LIMIT + 2) as f64);
}

async fn changes_made_while_the_controller_was_down_are_converged_at_start<K: TestKind>() {
    let scene = Scene::new("heal-down").await;
    let objects = Objects::<K>::of(&scene);
    let controller = objects.start_controller(&[]).await;
    for name in ["patched", "lost", "edited", "unlabeled", "untouched"] {
        objects.source(name, &[("a", "1")], &[]).await;
        objects.companion_in_sync(name).await;
    }
    assert!(controller.stop().success(), "SIGTERM exits 0");

    objects.set_data("patched", &[("a", Some("2"))]).await;
    objects.delete("lost-synced").await;
    objects
        .set_data("edited-synced", &[("a", Some("tampered"))])
        .await;
    objects.unlabel("unlabeled").await;
    let untouched = objects.get("untouched-synced").await.expect("companion");

    // No watch event reaches the new process for any of these: only the
    // comparison after its first lists can find them.
    let restarted = objects.start_controller(&[]).await;
    for name in ["patched", "lost", "edited"] {
        objects.companion_in_sync(name).await;
    }
    objects.wait_gone("unlabeled-synced").await;
    assert_eq!(restarted.writes_reaching(4.0).await, 4.0, "one write each");
    assert!(
        restarted
            .metric(
                "configmap_mirror_resync_objects_total",
                "loop=\"sync\",result=\"queued\""
            )
            .await
            >= 3.0
    );
    let still = objects.get("untouched-synced").await.expect("companion");
    assert_eq!(still.resource_version(), untouched.resource_version());
}

/// Someone else keeps rewriting a companion (another controller, an
/// admission mutator): after a few restores within a minute the controller
/// stops fighting at once, says so with a Warning, and backs off slowly.
async fn a_companion_rewritten_over_and_over_is_restored_slowly_with_a_warning<K: TestKind>() {
    fought::<K>(
        "heal-contested",
        async |objects| {
            objects
                .set_data("colors-synced", &[("a", Some("theirs"))])
                .await;
        },
        |held| held.is_some_and(|copy| copy.value("a").as_deref() == Some("theirs")),
    )
    .await;
}

/// The same fight, fought by taking the copy out of the controller's sight:
/// removing the managed-by label looks to the copies' watch like a delete,
/// and must not wipe the count of restores.
async fn a_companion_unlabeled_over_and_over_is_restored_slowly_with_a_warning<K: TestKind>() {
    fought::<K>(
        "heal-contested-label",
        async |objects| {
            objects
                .patch(
                    "colors-synced",
                    json!({"metadata": {"labels": {MANAGED_BY_LABEL: null}}}),
                )
                .await;
        },
        |held| held.is_some_and(|copy| !copy.labels().contains_key(MANAGED_BY_LABEL)),
    )
    .await;
}

/// Each way of undoing a copy over and over ends the same: after
/// `CONTEST_LIMIT` restores the controller stops fighting at once, says so
/// with a Warning, and leaves the copy as the other party made it, for
/// now. `undo` makes the other party's change; `undone` tells whether the
/// copy is as the other party left it.
async fn fought<K: TestKind>(
    tag: &str,
    undo: impl AsyncFn(&Objects<'_, K>),
    undone: impl Fn(Option<&K>) -> bool,
) {
    let scene = Scene::new(tag).await;
    let objects = Objects::<K>::of(&scene);
    let controller = objects.start_controller(&[]).await;
    objects.source("colors", &[("a", "1")], &[]).await;
    objects.companion_in_sync("colors").await;
    for _ in 0..CONTEST_LIMIT {
        undo(&objects).await;
        objects.companion_in_sync("colors").await;
    }
    undo(&objects).await;
    scene.wait_event("colors", "CopyContested").await;
    let held = objects.get("colors-synced").await;
    assert!(
        undone(held.as_ref()),
        "restored at once despite the fight: {:?}",
        held.as_ref().map(|copy| copy.meta())
    );
    // /metrics counts the restores held back, for an alert.
    let held_back = controller
        .metric_reaching("configmap_mirror_contested_restores_total", "", 1.0)
        .await;
    assert!(held_back >= 1.0, "{held_back} restores held back");
}

/// Frozen by hand (or by an admission policy on create), each time
/// answered with a delete and a create: a new uid every round.
async fn a_companion_refrozen_over_and_over_is_restored_slowly_with_a_warning<K: TestKind>() {
    fought::<K>(
        "heal-contested-frozen",
        async |objects| {
            objects
                .patch("colors-synced", json!({"immutable": true}))
                .await;
        },
        |held| held.is_some_and(|copy| copy.is_immutable()),
    )
    .await;
}

async fn a_companion_deleted_over_and_over_is_restored_slowly_with_a_warning<K: TestKind>() {
    fought::<K>(
        "heal-contested-deleted",
        async |objects| objects.delete("colors-synced").await,
        |held| held.is_none(),
    )
    .await;
}

/// A GitOps tool or a backup brings back an older copy that is consistent
/// in itself (older data under that data's checksum): it looks like a copy
/// whose source has moved on since, yet the controller had already
/// written the newer content, so writing it again is a restore.
async fn an_older_consistent_copy_brought_back_over_and_over_is_a_fight<K: TestKind>() {
    let scene = Scene::new("heal-contested-older").await;
    let objects = Objects::<K>::of(&scene);
    let _controller = objects.start_controller(&[]).await;
    objects.source("colors", &[("a", "1")], &[]).await;
    let older = objects.companion_in_sync("colors").await;
    objects.set_data("colors", &[("a", Some("2"))]).await;
    objects.companion_in_sync("colors").await;
    let older_json = serde_json::to_value(&older).expect("the copy as JSON");
    let bring_back = json!({
        "data": older_json["data"],
        "metadata": {"annotations": {
            CHECKSUM_ANNOTATION: older.annotations().get(CHECKSUM_ANNOTATION),
        }},
    });
    for _ in 0..CONTEST_LIMIT {
        objects.patch("colors-synced", bring_back.clone()).await;
        objects.companion_in_sync("colors").await;
    }
    objects.patch("colors-synced", bring_back).await;
    scene.wait_event("colors", "CopyContested").await;
    let held = objects.get("colors-synced").await.expect("the companion");
    assert_eq!(
        held.value("a"),
        older.value("a"),
        "restored at once despite the fight"
    );
}
