//! Hand edits and deletions of a companion are undone, also those made
//! while the controller was not running.

use crate::common;

use common::{Scene, mk_source, with_binary};
use configmap_mirror::contract::{CHECKSUM_ANNOTATION, MANAGED_BY_LABEL};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::{
    ResourceExt,
    api::{Patch, PatchParams},
};
use serde_json::json;

#[tokio::test]
async fn a_deleted_companion_is_recreated_and_evented() {
    let scene = Scene::new("heal-delete").await;
    let _mirror = scene.start_controller(&[]).await;
    scene.create(&mk_source("colors", &[("a", "1")])).await;
    let first = scene.companion_in_sync("colors").await;

    scene.delete("colors-synced").await;
    let second = scene.companion_in_sync("colors").await;
    assert_ne!(first.uid(), second.uid(), "it is a new object");
}

#[tokio::test]
async fn hand_edits_of_every_owned_field_are_restored() {
    let scene = Scene::new("heal-edit").await;
    let controller = scene.start_controller(&[]).await;
    let edits = [
        json!({"data": {"a": "tampered"}}),
        json!({"data": {"added-by-hand": "x"}}),
        json!({"binaryData": {"bin": "AAAA"}}),
        json!({"metadata": {"annotations": {CHECKSUM_ANNOTATION: "forged"}}}),
        json!({"metadata": {"ownerReferences": null}}),
        json!({"metadata": {"labels": {MANAGED_BY_LABEL: null}}}),
        json!({"metadata": {"labels": {common::SOURCE_LABEL: "true"}}}),
    ];
    // One source per edit: restores of one copy beyond the contest limit
    // within a minute would be answered with the slow backoff.
    for (i, edit) in edits.iter().enumerate() {
        let name = format!("colors-{i}");
        let source = with_binary(mk_source(&name, &[("a", "1")]), "bin", &[1, 2, 3]);
        scene.create(&source).await;
        scene.companion_in_sync(&name).await;
        let before = controller.writes().await;
        scene
            .patch_json(&format!("{name}-synced"), edit.clone())
            .await;
        scene.companion_in_sync(&name).await;
        assert!(
            controller.writes_reaching(before + 1.0).await > before,
            "no restoring write after {edit}"
        );
    }
    // The label edit made a companion a source for a moment; no chain stays.
    for i in 0..edits.len() {
        scene.wait_gone(&format!("colors-{i}-synced-synced")).await;
    }
}

#[tokio::test]
async fn labels_and_annotations_added_by_others_are_left_alone() {
    let scene = Scene::new("heal-foreign-meta").await;
    let controller = scene.start_controller(&[]).await;
    scene.create(&mk_source("colors", &[("a", "1")])).await;
    scene.companion_in_sync("colors").await;
    let writes = controller.writes().await;

    let patched = scene
        .patch_json(
            "colors-synced",
            json!({"metadata": {"labels": {"team": "blue"}, "annotations": {"note": "ok"}}}),
        )
        .await;
    // A later source change still converges, keeping the additions.
    scene
        .patch_json("colors", json!({"data": {"a": "2"}}))
        .await;
    let companion = scene.companion_in_sync("colors").await;
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

#[tokio::test]
async fn concurrent_edits_of_the_companion_converge_without_a_loop() {
    let scene = Scene::new("heal-conflict").await;
    // On two threads, so watches and reconciles really run side by side.
    let controller = scene.start_controller(&["--worker-threads", "2"]).await;
    scene.create(&mk_source("colors", &[("a", "1")])).await;
    scene.companion_in_sync("colors").await;

    let api = scene.configmaps();
    // No more edits than the contest limit: more restores than that within
    // a minute is a fight, answered with the slow backoff (tested below),
    // and how many restores a burst costs depends on the machine's speed.
    let rounds = configmap_mirror::reconcile::contest::CONTEST_LIMIT;
    for round in 0..rounds {
        let patch = json!({"data": {"a": format!("edit-{round}")}});
        api.patch(
            "colors-synced",
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await
        .expect("edit companion");
    }
    let settled = scene.companion_in_sync("colors").await;
    assert_eq!(settled.data.clone().unwrap_or_default()["a"], "1");
    // Settled: once later events have been handled, it is unchanged. (The
    // companion's resourceVersion is read from the API server; a loop would
    // keep moving it.)
    scene.create(&mk_source("marker", &[])).await;
    scene.companion_in_sync("marker").await;
    let again = scene.get("colors-synced").await.expect("companion");
    assert_eq!(again.resource_version(), settled.resource_version());
    // At most one restore per edit, plus the two creates.
    assert!(controller.writes().await <= (rounds + 2) as f64);
}

#[tokio::test]
async fn changes_made_while_the_controller_was_down_are_converged_at_start() {
    let scene = Scene::new("heal-down").await;
    let controller = scene.start_controller(&[]).await;
    for name in ["patched", "lost", "edited", "unlabeled", "untouched"] {
        scene.create(&mk_source(name, &[("a", "1")])).await;
        scene.companion_in_sync(name).await;
    }
    assert!(controller.stop().success(), "SIGTERM exits 0");

    scene
        .patch_json("patched", json!({"data": {"a": "2"}}))
        .await;
    scene.delete("lost-synced").await;
    scene
        .patch_json("edited-synced", json!({"data": {"a": "tampered"}}))
        .await;
    scene.unlabel("unlabeled").await;
    let untouched = scene.get("untouched-synced").await.expect("companion");

    // No watch event reaches the new process for any of these: only the
    // comparison after its first lists can find them.
    let restarted = scene.start_controller(&[]).await;
    for name in ["patched", "lost", "edited"] {
        scene.companion_in_sync(name).await;
    }
    scene.wait_gone("unlabeled-synced").await;
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
    let still = scene.get("untouched-synced").await.expect("companion");
    assert_eq!(still.resource_version(), untouched.resource_version());
}

/// Someone else keeps rewriting a companion (another controller, an
/// admission mutator): after a few restores within a minute the controller
/// stops fighting at once, says so with a Warning, and backs off slowly.
#[tokio::test]
async fn a_companion_rewritten_over_and_over_is_restored_slowly_with_a_warning() {
    let scene = Scene::new("heal-contested").await;
    let mirror = scene.start_controller(&[]).await;
    scene.create(&mk_source("colors", &[("a", "1")])).await;
    scene.companion_in_sync("colors").await;
    for i in 0..configmap_mirror::reconcile::contest::CONTEST_LIMIT {
        scene
            .patch_json(
                "colors-synced",
                serde_json::json!({"data": {"a": format!("theirs-{i}")}}),
            )
            .await;
        scene.companion_in_sync("colors").await;
    }
    scene
        .patch_json(
            "colors-synced",
            serde_json::json!({"data": {"a": "theirs-again"}}),
        )
        .await;
    scene.wait_event("colors", "CopyContested").await;
    let held = scene.get("colors-synced").await.expect("the companion");
    assert_eq!(
        held.data.and_then(|d| d.get("a").cloned()).as_deref(),
        Some("theirs-again"),
        "restored at once despite the fight"
    );
    // /metrics counts the restores held back, for an alert.
    let held_back = mirror
        .metric_reaching("configmap_mirror_contested_restores_total", "", 1.0)
        .await;
    assert!(held_back >= 1.0, "{held_back} restores held back");
}

/// The same fight, fought by taking the copy out of the controller's sight:
/// removing the managed-by label looks to the copies' watch like a delete,
/// and must not wipe the count of restores.
#[tokio::test]
async fn a_companion_unlabeled_over_and_over_is_restored_slowly_with_a_warning() {
    let scene = Scene::new("heal-contested-label").await;
    let _controller = scene.start_controller(&[]).await;
    scene.create(&mk_source("colors", &[("a", "1")])).await;
    scene.companion_in_sync("colors").await;
    let unlabel = serde_json::json!({"metadata": {"labels": {MANAGED_BY_LABEL: null}}});
    for _ in 0..configmap_mirror::reconcile::contest::CONTEST_LIMIT {
        scene.patch_json("colors-synced", unlabel.clone()).await;
        scene.companion_in_sync("colors").await;
    }
    scene.patch_json("colors-synced", unlabel).await;
    scene.wait_event("colors", "CopyContested").await;
    let held = scene.get("colors-synced").await.expect("the companion");
    assert!(
        !held.labels().contains_key(MANAGED_BY_LABEL),
        "restored at once despite the fight"
    );
}

/// Each way of undoing a copy over and over ends the same: after
/// `CONTEST_LIMIT` restores the controller stops fighting at once, says so
/// with a Warning, and leaves the copy as the other party made it, for
/// now. `undo` makes the other party's change; `undone` tells whether the
/// copy is as the other party left it.
async fn fought(
    tag: &str,
    undo: impl AsyncFn(&Scene<'_>),
    undone: impl Fn(Option<&ConfigMap>) -> bool,
) {
    let scene = Scene::new(tag).await;
    let _controller = scene.start_controller(&[]).await;
    scene.create(&mk_source("colors", &[("a", "1")])).await;
    scene.companion_in_sync("colors").await;
    for _ in 0..configmap_mirror::reconcile::contest::CONTEST_LIMIT {
        undo(&scene).await;
        scene.companion_in_sync("colors").await;
    }
    undo(&scene).await;
    scene.wait_event("colors", "CopyContested").await;
    let held = scene.get("colors-synced").await;
    assert!(
        undone(held.as_ref()),
        "restored at once despite the fight: {held:?}"
    );
}

/// Frozen by hand (or by an admission policy on create), each time
/// answered with a delete and a create: a new uid every round.
#[tokio::test]
async fn a_companion_refrozen_over_and_over_is_restored_slowly_with_a_warning() {
    fought(
        "heal-contested-frozen",
        async |scene| {
            scene
                .patch_json("colors-synced", json!({"immutable": true}))
                .await;
        },
        |held| held.is_some_and(|copy| copy.immutable == Some(true)),
    )
    .await;
}

#[tokio::test]
async fn a_companion_deleted_over_and_over_is_restored_slowly_with_a_warning() {
    fought(
        "heal-contested-deleted",
        async |scene| scene.delete("colors-synced").await,
        |held| held.is_none(),
    )
    .await;
}

/// A GitOps tool or a backup brings back an older copy that is consistent
/// in itself (older data under that data's checksum): it looks like a copy
/// whose source has moved on since, yet the controller had already
/// written the newer content, so writing it again is a restore.
#[tokio::test]
async fn an_older_consistent_copy_brought_back_over_and_over_is_a_fight() {
    let scene = Scene::new("heal-contested-older").await;
    let _controller = scene.start_controller(&[]).await;
    scene.create(&mk_source("colors", &[("a", "1")])).await;
    let older = scene.companion_in_sync("colors").await;
    scene
        .patch_json("colors", json!({"data": {"a": "2"}}))
        .await;
    scene.companion_in_sync("colors").await;
    let bring_back = json!({
        "data": older.data,
        "metadata": {"annotations": {
            CHECKSUM_ANNOTATION: older.annotations().get(CHECKSUM_ANNOTATION),
        }},
    });
    for _ in 0..configmap_mirror::reconcile::contest::CONTEST_LIMIT {
        scene.patch_json("colors-synced", bring_back.clone()).await;
        scene.companion_in_sync("colors").await;
    }
    scene.patch_json("colors-synced", bring_back).await;
    scene.wait_event("colors", "CopyContested").await;
    let held = scene.get("colors-synced").await.expect("the companion");
    assert_eq!(held.data, older.data, "restored at once despite the fight");
}
