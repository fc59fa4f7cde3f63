//! Immutable copies: a copy whose content must change is deleted (guarded
//! by its uid) and created afresh; never stuck, never a retry loop. For
//! every kind.

use crate::common;

use common::{Objects, PATIENCE, Scene, TestKind};
use kube::ResourceExt;
use serde_json::json;
use testenv::wait_for;

const RECREATE: &str = "operation=\"recreate\"";
const WRITES: &str = "configmap_mirror_companion_writes_total";

crate::for_each_kind!(
    an_immutable_companion_is_recreated_when_its_source_is_replaced,
    a_companion_frozen_by_hand_is_replaced_by_a_mutable_copy,
    a_recreate_creates_the_copy_in_the_reconcile_that_deleted_it,
);

async fn an_immutable_companion_is_recreated_when_its_source_is_replaced<K: TestKind>() {
    let scene = Scene::new("immutable").await;
    let objects = Objects::<K>::of(&scene);
    let controller = objects.start_controller(&[]).await;
    let source = Objects::<K>::immutable(K::with_data("frozen", &[("v", "1")], true));
    objects.create(&source).await;
    let first = objects.companion_in_sync("frozen").await;
    assert!(first.is_immutable());

    // An immutable source changes only by being replaced; the old companion
    // goes with the old source (garbage collector or prune, whichever is
    // first) and the new one is created with the new content.
    objects.delete("frozen").await;
    let replaced = Objects::<K>::immutable(K::with_data("frozen", &[("v", "2")], true));
    objects.create(&replaced).await;
    let second = objects.companion_in_sync("frozen").await;
    assert_ne!(first.uid(), second.uid(), "recreated, not updated");
    assert_eq!(second.value("v").as_deref(), Some("2"));
    assert!(second.is_immutable());
    assert_eq!(
        controller
            .metric("controller_runtime_terminal_reconcile_errors_total", "")
            .await,
        0.0
    );
}

async fn a_companion_frozen_by_hand_is_replaced_by_a_mutable_copy<K: TestKind>() {
    let scene = Scene::new("thawed").await;
    let objects = Objects::<K>::of(&scene);
    let controller = objects.start_controller(&[]).await;
    objects.source("thaw", &[("v", "1")], &[]).await;
    let first = objects.companion_in_sync("thaw").await;

    objects
        .patch("thaw-synced", json!({"immutable": true}))
        .await;
    let second = objects.companion_in_sync("thaw").await;
    assert!(!second.is_immutable());
    assert_ne!(first.uid(), second.uid());
    assert_eq!(controller.metric_reaching(WRITES, RECREATE, 1.0).await, 1.0);
    let errors = controller
        .metric("controller_runtime_reconcile_errors_total", "")
        .await;
    assert!(errors <= 2.0, "no retry loop: {errors} failed reconciles");
}

/// The delete's watch event is not what completes a recreate: it can reach
/// a reconcile of the source that is already running, or a replica no
/// longer allowed to write, and then nothing wakes the source again until
/// it changes. So the reconcile that deletes the copy creates it too.
async fn a_recreate_creates_the_copy_in_the_reconcile_that_deleted_it<K: TestKind>() {
    let scene = Scene::new("recreate-at-once").await;
    let objects = Objects::<K>::of(&scene);
    let controller = objects.start_controller(&[]).await;
    objects.source("thaw", &[("v", "1")], &[]).await;
    objects.companion_in_sync("thaw").await;

    objects
        .patch("thaw-synced", json!({"immutable": true}))
        .await;
    let companion = format!("companion {}/thaw-synced", scene.namespace);
    let deleted = format!("deleted immutable {companion} to recreate it");
    let created = format!("created {companion}");
    let (deleted_by, created_by) = wait_for("the recreate to be logged", PATIENCE, || async {
        let log = controller.log_text();
        let mut after_delete = log.lines().skip_while(|line| !line.contains(&deleted));
        let deleted_by = reconcile_id(after_delete.next()?)?;
        let created_by = reconcile_id(after_delete.find(|line| line.contains(&created))?)?;
        Some((deleted_by, created_by))
    })
    .await
    .unwrap_or_else(|e| panic!("{e:#}\n{}", controller.log_text()));
    assert_eq!(
        deleted_by, created_by,
        "the create came from another reconcile than the delete"
    );
    assert!(!objects.companion_in_sync("thaw").await.is_immutable());
}

/// The `reconcile_id` of the reconcile span a log line was written in.
fn reconcile_id(line: &str) -> Option<u64> {
    let (_, after) = line.split_once("reconcile_id=")?;
    let digits: String = after.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}
