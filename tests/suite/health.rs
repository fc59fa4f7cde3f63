//! /readyz follows the caches' initial sync; /healthz fails when a watch
//! has been failing for longer than the threshold, and recovers.

use crate::common;

use common::{ControllerProcess, Scene};

async fn status_of(controller: &ControllerProcess, path: &str) -> u16 {
    controller
        .get(path)
        .await
        .map(|(status, _)| status)
        .unwrap_or(0)
}

async fn wait_status(controller: &ControllerProcess, path: &str, status: u16) {
    testenv::wait_for(
        &format!("{path} to answer {status}"),
        common::PATIENCE,
        || async { (status_of(controller, path).await == status).then_some(()) },
    )
    .await
    .unwrap_or_else(|e| panic!("{e:#}"));
}

#[tokio::test]
async fn readiness_waits_for_the_caches_and_liveness_catches_a_failing_watch() {
    let scene = Scene::new("health").await;
    // A ServiceAccount without any role: listing is forbidden.
    common::kubectl_apply(
        &scene,
        &common::service_account(&scene.namespace, "controller"),
    );
    let kubeconfig = scene.token_kubeconfig("controller").await;
    let args = [
        "--namespace",
        scene.namespace.as_str(),
        "--watch-failure-threshold",
        "2s",
    ];
    let controller =
        ControllerProcess::start_unready(scene.control_plane, &kubeconfig, &scene.namespace, &args)
            .await;

    // Listing is forbidden: the caches cannot sync, the watches keep failing.
    assert_eq!(status_of(&controller, "/readyz").await, 503);
    wait_status(&controller, "/healthz", 503).await;
    let (_, why) = controller.get("/healthz").await.expect("healthz");
    assert!(why.contains("watch failing"), "{why}");
    assert_eq!(status_of(&controller, "/readyz").await, 503);
    // /metrics shows it too, for an alert: the seconds each watch has been
    // failing.
    const FAILING: &str = "configmap_mirror_watch_failing_seconds";
    let failing = controller.metric(FAILING, "watch=\"sources\"").await;
    assert!(failing >= 2.0, "{FAILING} sources: {failing}");

    let verbs = ["get", "list", "watch", "create", "update", "delete"];
    common::kubectl_apply(
        &scene,
        &common::role_for(&scene.namespace, "controller", "controller", &verbs),
    );
    wait_status(&controller, "/readyz", 200).await;
    wait_status(&controller, "/healthz", 200).await;
    scene
        .create(&common::mk_source("colors", &[("a", "1")]))
        .await;
    scene.companion_in_sync("colors").await;
    assert_eq!(controller.metric(FAILING, "").await, 0.0);
}
