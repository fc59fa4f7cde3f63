//! Input the controller cannot mirror: a Warning Event and a log line, slow
//! retries, no hot loop, and nothing that is not ours is touched. For every
//! kind; the admission policy and RBAC tests stay ConfigMap-only, since
//! their manifests name the resource and Secrets' own RBAC is tested in
//! `secrets` and `deploy`.

use crate::common;

use std::time::Duration;

use common::{ControllerProcess, Objects, Scene, TestKind, mk_source};
use kube::ResourceExt;

crate::for_each_kind!(
    a_foreign_object_at_the_companion_name_is_never_touched_and_warned_about_once,
    a_name_too_long_is_reported_once_and_never_retried,
    retry_state_of_deleted_sources_is_dropped,
);

const ERRORS: &str = "controller_runtime_reconcile_errors_total";
const TERMINAL: &str = "controller_runtime_terminal_reconcile_errors_total";

/// Waits until the controller has failed at least `count` times.
async fn failures_reach(controller: &ControllerProcess, count: f64) {
    testenv::wait_for(
        &format!("{count} failed reconciles"),
        common::PATIENCE,
        || async { (controller.metric(ERRORS, "").await >= count).then_some(()) },
    )
    .await
    .unwrap_or_else(|e| panic!("{e:#}"));
}

async fn a_foreign_object_at_the_companion_name_is_never_touched_and_warned_about_once<
    K: TestKind,
>() {
    let scene = Scene::new("collision").await;
    let objects = Objects::<K>::of(&scene);
    let blocker = objects
        .create(&K::with_data("colors-synced", &[("theirs", "x")], false))
        .await;
    let controller = objects.start_controller(&["--slow-retry", "500ms"]).await;
    objects.source("colors", &[("a", "1")], &[]).await;

    let event = scene.wait_event("colors", "CompanionNameTaken").await;
    assert_eq!(event.type_.as_deref(), Some("Warning"));
    // Several retries later there is still one event, never repeated.
    failures_reach(&controller, 3.0).await;
    let events = scene.events("colors", "CompanionNameTaken").await;
    assert_eq!(events.len(), 1);
    assert!(
        events[0].series.is_none(),
        "the warning was repeated: {:?}",
        events[0].series
    );
    let untouched = objects
        .get("colors-synced")
        .await
        .expect("the blocker stays");
    assert_eq!(untouched.resource_version(), blocker.resource_version());
    assert!(
        controller
            .log_text()
            .contains("already exists and is not controlled by this source")
    );

    // Once the blocker is gone, the source heals by itself.
    objects.delete("colors-synced").await;
    objects.companion_in_sync("colors").await;
}

async fn a_name_too_long_is_reported_once_and_never_retried<K: TestKind>() {
    let scene = Scene::new("too-long").await;
    let objects = Objects::<K>::of(&scene);
    let controller = objects.start_controller(&["--slow-retry", "500ms"]).await;
    let long_name = "l".repeat(250);
    objects.source(&long_name, &[("a", "1")], &[]).await;
    scene.wait_event(&long_name, "CompanionNameTooLong").await;

    // The rest of the namespace is served meanwhile.
    objects.source("fine", &[("a", "1")], &[]).await;
    objects.companion_in_sync("fine").await;
    assert_eq!(
        controller.metric(ERRORS, "").await,
        1.0,
        "a too-long name is not retried"
    );
    assert_eq!(controller.metric(TERMINAL, "").await, 1.0);
    assert!(controller.log_text().contains("over the limit of 253"));
}

#[tokio::test]
async fn content_the_api_server_refuses_is_warned_about_with_its_message() {
    let scene = Scene::new("refused").await;
    let policy = format!("refuse-{}", scene.namespace);
    common::kubectl_apply(
        &scene,
        &common::refusing_configmap(&policy, &scene.namespace, "refused-synced"),
    );
    common::policy_enforced(&scene.configmaps().api, "refused-synced").await;
    let controller = scene
        .configmaps()
        .start_controller(&["--slow-retry", "500ms"])
        .await;
    scene
        .configmaps()
        .source_in_sync("fine", &[("a", "1")])
        .await;

    scene
        .configmaps()
        .create(&mk_source("refused", &[("a", "1")]))
        .await;
    let event = scene.wait_event("refused", "CompanionRejected").await;
    let note = event.note.unwrap_or_default();
    assert!(
        note.contains(&format!("refused by policy {policy}")),
        "{note}"
    );
    failures_reach(&controller, 3.0).await;
    assert_eq!(scene.events("refused", "CompanionRejected").await.len(), 1);
    assert!(scene.configmaps().get("refused-synced").await.is_none());

    // The source keeps being retried, slowly, and heals when allowed.
    common::delete_policy(&scene, &policy);
    testenv::wait_for(
        "the refused companion once allowed",
        Duration::from_secs(60),
        || async { scene.configmaps().get("refused-synced").await.map(|_| ()) },
    )
    .await
    .unwrap_or_else(|e| panic!("{e:#}"));
}

#[tokio::test]
async fn an_rbac_denial_is_warned_about_and_heals_once_granted() {
    let scene = Scene::new("rbac-denied").await;
    let no_create = ["get", "list", "watch", "update", "delete"];
    common::kubectl_apply(
        &scene,
        &common::service_account(&scene.namespace, "controller"),
    );
    common::kubectl_apply(
        &scene,
        &common::role_for(&scene.namespace, "controller", "no-create", &no_create),
    );
    let kubeconfig = scene.token_kubeconfig("controller").await;
    let args = [
        "--namespace",
        scene.namespace.as_str(),
        "--slow-retry",
        "500ms",
    ];
    let controller =
        ControllerProcess::start(scene.control_plane, &kubeconfig, &scene.namespace, &args).await;

    scene
        .configmaps()
        .create(&mk_source("colors", &[("a", "1")]))
        .await;
    let event = scene.wait_event("colors", "CompanionForbidden").await;
    assert!(event.note.unwrap_or_default().contains("forbidden"));
    failures_reach(&controller, 3.0).await;
    assert_eq!(controller.get("/healthz").await.expect("healthz").0, 200);

    common::kubectl_apply(
        &scene,
        &common::role_for(&scene.namespace, "controller", "create", &["create"]),
    );
    scene.configmaps().companion_in_sync("colors").await;
}

/// A tenant looping "create a source whose companion name is too long,
/// delete it" must not grow the controller: each failing source's retry
/// state goes with it, and a source recreated under a name that failed
/// before starts afresh, with its Warning.
async fn retry_state_of_deleted_sources_is_dropped<K: TestKind>() {
    const CYCLES: usize = 300;
    const FAILING: &str = "configmap_mirror_failing_objects";
    let scene = Scene::new("churn").await;
    let objects = Objects::<K>::of(&scene);
    let controller = objects.start_controller(&[]).await;
    let name = |i: usize| format!("{}{i:04}", "c".repeat(246));

    for i in 0..CYCLES {
        objects.source(&name(i), &[("a", "1")], &[]).await;
        failures_reach(&controller, (i + 1) as f64).await;
        objects.delete(&name(i)).await;
    }
    testenv::wait_for("the retry state to be empty", common::PATIENCE, || async {
        (controller.metric(FAILING, "").await == 0.0).then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{e:#}"));

    // The same name again: a fresh failure, reported again.
    objects.source(&name(0), &[("a", "1")], &[]).await;
    testenv::wait_for("one failing object", common::PATIENCE, || async {
        (controller.metric(FAILING, "").await == 1.0).then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{e:#}"));
    testenv::wait_for(
        "a second Warning for the recreated source",
        common::PATIENCE,
        || async {
            (scene.events(&name(0), "CompanionNameTooLong").await.len() >= 2
                || scene
                    .events(&name(0), "CompanionNameTooLong")
                    .await
                    .iter()
                    .any(|e| e.series.is_some()))
            .then_some(())
        },
    )
    .await
    .unwrap_or_else(|e| panic!("{e:#}"));
}
