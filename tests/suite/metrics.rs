//! /metrics moves by the right amounts, under controller-runtime's names,
//! and no series names an object.

use crate::common;

use common::{Scene, mk_source};
use serde_json::json;

const WRITES: &str = "configmap_mirror_companion_writes_total";

#[tokio::test]
async fn counters_follow_a_scenario_and_carry_no_object_names() {
    let scene = Scene::new("metrics").await;
    let controller = scene.configmaps().start_controller(&[]).await;

    scene
        .configmaps()
        .source_in_sync("colors", &[("a", "1")])
        .await;
    assert_eq!(
        controller
            .metric_reaching(WRITES, "operation=\"create\"", 1.0)
            .await,
        1.0
    );

    scene
        .configmaps()
        .patch("colors", json!({"data": {"a": "2"}}))
        .await;
    scene.configmaps().companion_in_sync("colors").await;
    assert_eq!(
        controller
            .metric_reaching(WRITES, "operation=\"update\"", 1.0)
            .await,
        1.0
    );

    scene.configmaps().delete("colors-synced").await;
    scene.configmaps().companion_in_sync("colors").await;
    assert_eq!(
        controller
            .metric_reaching(WRITES, "operation=\"create\"", 2.0)
            .await,
        2.0
    );

    let long_name = "m".repeat(250);
    scene.configmaps().create(&mk_source(&long_name, &[])).await;
    scene.wait_event(&long_name, "CompanionNameTooLong").await;
    testenv::wait_for("the error to be counted", common::PATIENCE, || async {
        (controller
            .metric("controller_runtime_terminal_reconcile_errors_total", "")
            .await
            == 1.0)
            .then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{e:#}"));
    assert_eq!(
        controller
            .metric("controller_runtime_reconcile_errors_total", "")
            .await,
        1.0
    );
    assert_eq!(
        controller
            .metric("controller_runtime_reconcile_total", "result=\"error\"")
            .await,
        1.0
    );
    assert!(
        controller
            .metric("controller_runtime_reconcile_total", "result=\"success\"")
            .await
            >= 3.0
    );
    assert_eq!(
        controller
            .metric("configmap_mirror_managed_sources", "kind=\"ConfigMap\"")
            .await,
        2.0
    );
    assert_eq!(
        controller.metric("leader_election_master_status", "").await,
        1.0
    );

    let (_, text) = controller.get("/metrics").await.expect("scrape");
    for needle in ["colors", long_name.as_str(), scene.namespace.as_str()] {
        assert!(!text.contains(needle), "a series names {needle}");
    }
    for name in [
        "controller_runtime_reconcile_time_seconds_bucket",
        "controller_runtime_max_concurrent_reconciles",
        "controller_runtime_active_workers",
        "workqueue_depth",
        "workqueue_adds_total",
        "workqueue_retries_total",
    ] {
        assert!(text.contains(&format!("{name}{{")), "missing {name}");
    }
}

/// The standard process series dashboards plot, read from the controller
/// process itself: its start time is its own, its memory and descriptors
/// are there.
#[tokio::test]
async fn the_process_series_describe_the_controller_process() {
    let scene = Scene::new("metrics-process").await;
    let controller = scene.configmaps().start_controller(&[]).await;
    let started = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("the clock is past the epoch")
        .as_secs_f64();
    // A process this young may have used less than one clock tick of CPU:
    // its series must be there, at any value.
    let (_, text) = controller.get("/metrics").await.expect("scrape /metrics");
    assert!(
        text.lines()
            .any(|line| line.starts_with("process_cpu_seconds_total ")),
        "no process_cpu_seconds_total in:\n{text}"
    );
    for name in [
        "process_resident_memory_bytes",
        "process_virtual_memory_bytes",
        "process_open_fds",
        "process_max_fds",
    ] {
        let value = controller.metric(name, "").await;
        assert!(value > 0.0, "{name} is {value}");
    }
    let start_time = controller.metric("process_start_time_seconds", "").await;
    // The controller was started by this test, a moment before `started`.
    assert!(
        (started - 120.0..=started).contains(&start_time),
        "process_start_time_seconds {start_time} is not this controller's start ({started})"
    );
    let resident = controller.metric("process_resident_memory_bytes", "").await;
    let virtual_size = controller.metric("process_virtual_memory_bytes", "").await;
    assert!(resident <= virtual_size, "{resident} > {virtual_size}");
}

/// Every wakeup the sync loop takes is timed once in the queue, every
/// reconcile once as work, and each successful sync a wakeup woke once as
/// a heal; nothing runs once the cluster is quiet.
#[tokio::test]
async fn the_queue_timings_count_every_wakeup_taken_and_every_reconcile() {
    let scene = Scene::new("metrics-queue").await;
    let controller = scene.configmaps().start_controller(&[]).await;
    scene
        .configmaps()
        .source_in_sync("colors", &[("a", "1")])
        .await;
    scene.configmaps().delete("colors-synced").await;
    scene.configmaps().companion_in_sync("colors").await;

    let settled = testenv::wait_for("the metrics to settle", common::PATIENCE, || async {
        let (_, text) = controller.get("/metrics").await.ok()?;
        let depth = common::sum_metric(&text, "workqueue_depth", "");
        let running = common::sum_metric(&text, "controller_runtime_active_workers", "");
        (depth == 0.0 && running == 0.0).then_some(text)
    })
    .await
    .unwrap_or_else(|e| panic!("{e:#}"));
    let metric = |name| common::sum_metric(&settled, name, "");
    let adds = metric("workqueue_adds_total");
    assert!(adds >= 2.0, "{adds} wakeups");
    assert_eq!(metric("workqueue_queue_duration_seconds_count"), adds);
    assert_eq!(
        metric("workqueue_work_duration_seconds_count"),
        metric("controller_runtime_reconcile_total")
    );
    assert_eq!(metric("workqueue_unfinished_work_seconds"), 0.0);
    assert_eq!(metric("workqueue_longest_running_processor_seconds"), 0.0);
    // Heal latency is one histogram: a sample per successful sync reconcile
    // a wakeup woke (the create and the heal at least), none for the rest.
    let heals = metric("configmap_mirror_heal_duration_seconds_count");
    let synced = common::sum_metric(
        &settled,
        "controller_runtime_reconcile_total",
        "loop=\"sync\",result=\"success\"",
    );
    assert!(
        (2.0..=synced).contains(&heals),
        "{heals} heals timed for {synced} successful syncs"
    );
}
