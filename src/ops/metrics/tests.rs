use std::time::Duration;

use super::*;

#[test]
fn metrics_render_under_controller_runtime_names() {
    let metrics = Metrics::new(16, "configmap-mirror");
    metrics
        .reconcile_started(Loop::sync)
        .finish(Outcome::success);
    metrics.reconcile_failed(Loop::prune, true);
    metrics.restore_held_back();
    metrics.copy_written(Operation::Create);
    metrics.resynced(Loop::sync, 3, 1);
    let text = metrics.render();
    for expected in [
        "controller_runtime_reconcile_total{controller=\"configmap-mirror\",loop=\"sync\",result=\"success\"} 1",
        "controller_runtime_reconcile_total{controller=\"configmap-mirror\",loop=\"prune\",result=\"error\"} 0",
        "controller_runtime_reconcile_errors_total{controller=\"configmap-mirror\",loop=\"prune\"} 1",
        "controller_runtime_reconcile_errors_total{controller=\"configmap-mirror\",loop=\"sync\"} 0",
        "controller_runtime_terminal_reconcile_errors_total{controller=\"configmap-mirror\",loop=\"prune\"} 1",
        "controller_runtime_max_concurrent_reconciles{controller=\"configmap-mirror\"} 16",
        "controller_runtime_active_workers{controller=\"configmap-mirror\"} 0",
        "controller_runtime_reconcile_time_seconds_count{controller=\"configmap-mirror\"} 1",
        "workqueue_adds_total{name=\"configmap-mirror\"} 0",
        "workqueue_retries_total{name=\"configmap-mirror\"} 1",
        "workqueue_work_duration_seconds_count{name=\"configmap-mirror\"} 1",
        "workqueue_queue_duration_seconds_count{name=\"configmap-mirror\"} 0",
        "workqueue_unfinished_work_seconds{name=\"configmap-mirror\"} 0",
        "workqueue_longest_running_processor_seconds{name=\"configmap-mirror\"} 0",
        "leader_election_master_status{name=\"configmap-mirror\"} 0",
        "configmap_mirror_companion_writes_total{operation=\"create\"} 1",
        "configmap_mirror_contested_restores_total 1",
        "configmap_mirror_resync_objects_total{loop=\"sync\",result=\"queued\"} 1",
        "configmap_mirror_resync_objects_total{loop=\"sync\",result=\"in_sync\"} 2",
    ] {
        assert!(text.contains(expected), "missing {expected} in:\n{text}");
    }
}

/// Every operation is labeled as dashboards and alerts query it.
#[test]
fn copy_writes_are_labeled_by_operation_in_lower_case() {
    let metrics = Metrics::new(16, "configmap-mirror");
    for operation in [
        Operation::Create,
        Operation::Update,
        Operation::Delete,
        Operation::Recreate,
    ] {
        metrics.copy_written(operation);
    }
    let text = metrics.render();
    for operation in ["create", "update", "delete", "recreate"] {
        let series =
            format!("configmap_mirror_companion_writes_total{{operation=\"{operation}\"}} 1");
        assert!(text.contains(&series), "missing {series} in:\n{text}");
    }
}

/// Heal latency is one histogram, from the wakeup to the end of the
/// reconcile it woke: a heal that waited 3 s at the door counts at least
/// 3 s, the wait and the reconcile in one sample.
#[test]
fn heal_latency_is_one_histogram_from_the_wakeup_to_the_synced_copies() {
    let metrics = Metrics::new(16, "configmap-mirror");
    let queued_at = Instant::now() - Duration::from_secs(3);
    metrics.trigger_queued();
    metrics.trigger_taken(queued_at);
    metrics.synced_since(queued_at);
    let text = metrics.render();
    assert!(
        text.contains("# TYPE configmap_mirror_heal_duration_seconds histogram"),
        "{text}"
    );
    let sample = |name: &str| {
        text.lines()
            .find_map(|line| line.strip_prefix(&format!("{name} ")))
            .and_then(|value| value.parse::<f64>().ok())
            .unwrap_or_else(|| panic!("no {name} in:\n{text}"))
    };
    assert_eq!(sample("configmap_mirror_heal_duration_seconds_count"), 1.0);
    let sum = sample("configmap_mirror_heal_duration_seconds_sum");
    assert!(sum >= 3.0, "{sum}");
    // Not in the buckets below the wait at the door.
    assert!(
        text.contains("configmap_mirror_heal_duration_seconds_bucket{le=\"2.048\"} 0"),
        "{text}"
    );
}
