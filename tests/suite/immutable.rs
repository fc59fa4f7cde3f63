//! Immutable copies: a copy whose content must change is deleted (guarded
//! by its uid) and created afresh; never stuck, never a retry loop. For
//! every kind.

use crate::common;

use common::{Objects, Scene, TestKind};
use kube::ResourceExt;
use serde_json::json;

const RECREATE: &str = "operation=\"recreate\"";
const WRITES: &str = "configmap_mirror_companion_writes_total";

crate::for_each_kind!(
    an_immutable_companion_is_recreated_when_its_source_is_replaced,
    a_companion_frozen_by_hand_is_replaced_by_a_mutable_copy,
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
    objects.source("thaw", &[("v", "1")]).await;
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
