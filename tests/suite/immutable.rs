//! Immutable ConfigMaps: a companion whose content must change is deleted
//! (guarded by its uid) and created afresh; never stuck, never a retry loop.

use crate::common;

use common::{Scene, mk_source};
use kube::ResourceExt;
use serde_json::json;

const RECREATE: &str = "operation=\"recreate\"";
const WRITES: &str = "configmap_mirror_companion_writes_total";

#[tokio::test]
async fn an_immutable_companion_is_recreated_when_its_source_is_replaced() {
    let scene = Scene::new("immutable").await;
    let controller = scene.start_controller(&[]).await;
    let mut source = mk_source("frozen", &[("v", "1")]);
    source.immutable = Some(true);
    scene.create(&source).await;
    let first = scene.companion_in_sync("frozen").await;
    assert_eq!(first.immutable, Some(true));

    // An immutable source changes only by being replaced; the old companion
    // goes with the old source (garbage collector or prune, whichever is
    // first) and the new one is created with the new content.
    scene.delete("frozen").await;
    source.data = Some([("v".to_owned(), "2".to_owned())].into());
    scene.create(&source).await;
    let second = scene.companion_in_sync("frozen").await;
    assert_ne!(first.uid(), second.uid(), "recreated, not updated");
    assert_eq!(second.data.unwrap_or_default()["v"], "2");
    assert_eq!(second.immutable, Some(true));
    assert_eq!(
        controller
            .metric("controller_runtime_terminal_reconcile_errors_total", "")
            .await,
        0.0
    );
}

#[tokio::test]
async fn a_companion_frozen_by_hand_is_replaced_by_a_mutable_copy() {
    let scene = Scene::new("thawed").await;
    let controller = scene.start_controller(&[]).await;
    scene.create(&mk_source("thaw", &[("v", "1")])).await;
    let first = scene.companion_in_sync("thaw").await;

    scene
        .patch_json("thaw-synced", json!({"immutable": true}))
        .await;
    let second = scene.companion_in_sync("thaw").await;
    assert_ne!(second.immutable, Some(true));
    assert_ne!(first.uid(), second.uid());
    assert_eq!(controller.metric_reaching(WRITES, RECREATE, 1.0).await, 1.0);
    let errors = controller
        .metric("controller_runtime_reconcile_errors_total", "")
        .await;
    assert!(errors <= 2.0, "no retry loop: {errors} failed reconciles");
}
