use super::*;

const THRESHOLD: Duration = Duration::from_secs(5);

fn after(start: Instant, secs: u64) -> Instant {
    start + Duration::from_secs(secs)
}

#[test]
fn a_watch_refused_by_the_api_server_past_the_threshold_is_wedged() {
    let health = Health::new(THRESHOLD);
    let start = Instant::now();
    assert!(health.watch_failed("sources", "403".into(), ErrorSource::Refused, start));
    assert!(health.liveness(after(start, 1)).is_ok());
    let err = health.liveness(after(start, 6)).unwrap_err();
    assert!(err.contains("sources") && err.contains("403"), "{err}");
    assert_eq!(
        health.watch_ok("sources", after(start, 6)),
        Some(Duration::from_secs(6))
    );
    assert!(health.liveness(after(start, 6)).is_ok());
    assert_eq!(health.watch_ok("sources", after(start, 7)), None);
}

#[test]
fn an_unreachable_api_server_is_an_outage_not_a_wedge() {
    let health = Health::new(THRESHOLD);
    let start = Instant::now();
    health.watch_failed("sources", "refused".into(), ErrorSource::Link, start);
    health.probe_unanswered();
    let note = health.liveness(after(start, 60)).unwrap();
    assert!(note.contains("unreachable"), "{note}");
}

#[test]
fn an_overloaded_api_server_is_an_outage_however_long_and_whatever_the_probe_says() {
    let health = Health::new(THRESHOLD);
    let start = Instant::now();
    health.watch_failed("sources", "429".into(), ErrorSource::Unavailable, start);
    health.watch_failed("companions", "504".into(), ErrorSource::Unavailable, start);
    for secs in (5..120).step_by(5) {
        // Overload is no reason to retry before the backoff says so.
        assert!(!health.probe_answered(after(start, secs)));
        health.watch_failed(
            "sources",
            "429".into(),
            ErrorSource::Unavailable,
            after(start, secs),
        );
    }
    let note = health.liveness(after(start, 120)).unwrap();
    assert!(
        note.contains("overloaded") && note.contains("504"),
        "{note}"
    );
}

#[test]
fn statuses_of_overload_are_outages_and_the_others_refusals() {
    for code in [429, 500, 502, 503, 504] {
        assert_eq!(ErrorSource::of_status(code), ErrorSource::Unavailable);
    }
    for code in [400, 401, 403, 404, 410, 422] {
        assert_eq!(ErrorSource::of_status(code), ErrorSource::Refused);
    }
}

#[test]
fn lost_links_while_the_api_server_answers_probes_are_a_wedge() {
    let health = Health::new(THRESHOLD);
    let start = Instant::now();
    health.watch_failed("companions", "reset".into(), ErrorSource::Link, start);
    assert!(health.probe_answered(after(start, 20)));
    health.watch_failed(
        "companions",
        "reset".into(),
        ErrorSource::Link,
        after(start, 21),
    );
    assert!(health.liveness(after(start, 26)).is_err());
    // An answer that is no longer fresh says nothing about now.
    assert!(health.liveness(after(start, 40)).is_ok());
    // Nor does one from before the failure began.
    let health = Health::new(THRESHOLD);
    health.probe_answered(start);
    health.watch_failed(
        "companions",
        "reset".into(),
        ErrorSource::Link,
        after(start, 1),
    );
    assert!(health.liveness(after(start, 10)).is_ok());
}

#[test]
fn after_an_outage_the_threshold_runs_from_the_first_answer() {
    let health = Health::new(THRESHOLD);
    let start = Instant::now();
    health.watch_failed("sources", "refused".into(), ErrorSource::Link, start);
    for secs in [5, 10] {
        health.probe_unanswered();
        assert!(health.liveness(after(start, secs + 1)).is_ok());
    }
    // The link is back at 12 s; the watch waits out its backoff.
    assert!(health.probe_answered(after(start, 15)));
    assert!(!health.probe_answered(after(start, 18)));
    let note = health.liveness(after(start, 18)).unwrap();
    assert!(note.contains("answering again for 3s"), "{note}");
    assert!(health.liveness(after(start, 20)).is_ok());
    assert!(!health.probe_answered(after(start, 20)));
    let err = health.liveness(after(start, 21)).unwrap_err();
    assert!(
        err.contains("6s of them since the API server answered"),
        "{err}"
    );
}

#[test]
fn an_unanswered_probe_stops_the_clock_until_the_next_answer() {
    let health = Health::new(THRESHOLD);
    let start = Instant::now();
    health.watch_failed("sources", "reset".into(), ErrorSource::Link, start);
    assert!(health.probe_answered(after(start, 5)));
    health.probe_unanswered();
    assert!(health.liveness(after(start, 12)).is_ok());
    assert!(health.probe_answered(after(start, 15)));
    assert!(health.liveness(after(start, 20)).is_ok());
    assert!(health.liveness(after(start, 21)).is_err());
}

#[test]
fn an_overload_stops_the_clock_and_a_refusal_starts_it() {
    let health = Health::new(THRESHOLD);
    let start = Instant::now();
    health.watch_failed("sources", "403".into(), ErrorSource::Refused, start);
    health.watch_failed(
        "sources",
        "503".into(),
        ErrorSource::Unavailable,
        after(start, 4),
    );
    assert!(health.liveness(after(start, 8)).is_ok());
    health.watch_failed(
        "sources",
        "403".into(),
        ErrorSource::Refused,
        after(start, 10),
    );
    assert!(health.liveness(after(start, 15)).is_ok());
    assert!(health.liveness(after(start, 16)).is_err());
}

#[tokio::test]
async fn the_first_answer_wakes_the_watches_waiting_to_retry() {
    let health = Health::new(THRESHOLD);
    let start = Instant::now();
    health.watch_failed("sources", "reset".into(), ErrorSource::Link, start);
    let retry = health.retry_requested();
    assert!(health.probe_answered(after(start, 5)));
    tokio::time::timeout(Duration::from_secs(5), retry)
        .await
        .expect("woken");
    // Later answers wake no one.
    let retry = health.retry_requested();
    assert!(!health.probe_answered(after(start, 10)));
    let mut retry = std::pin::pin!(retry);
    assert!(futures::poll!(retry.as_mut()).is_pending());
}

#[test]
fn repeated_failures_keep_the_latest_error() {
    let health = Health::new(THRESHOLD);
    let start = Instant::now();
    health.watch_failed("companions", "refused".into(), ErrorSource::Link, start);
    assert!(!health.watch_failed(
        "companions",
        "forbidden".into(),
        ErrorSource::Refused,
        after(start, 4)
    ));
    // Failing since 0 s, answered since 4 s.
    assert!(health.liveness(after(start, 9)).is_ok());
    let err = health.liveness(after(start, 10)).unwrap_err();
    assert!(err.contains("forbidden") && err.contains("10s"), "{err}");
    assert!(health.any_failing());
}

#[test]
fn readiness_waits_for_every_cache_and_says_why() {
    let health = Health::new(THRESHOLD);
    health.register("sources");
    health.register("companions");
    health.cache_synced("sources");
    health.watch_failed(
        "companions",
        "forbidden: cannot list configmaps".into(),
        ErrorSource::Refused,
        Instant::now(),
    );
    let why = health.readiness().unwrap_err();
    assert!(
        why.contains("companions cache not synced: forbidden"),
        "{why}"
    );
    assert!(!why.contains("sources"), "{why}");
    health.cache_synced("companions");
    assert!(health.readiness().is_ok());
}

#[test]
fn a_refused_lease_makes_the_replica_unready_until_it_is_granted() {
    let health = Health::new(THRESHOLD);
    health.register("sources");
    health.cache_synced("sources");
    health.election_refused(Some("leases.coordination.k8s.io is forbidden"));
    let why = health.readiness().unwrap_err();
    assert!(
        why.contains("leader election") && why.contains("forbidden"),
        "{why}"
    );
    assert!(
        health.liveness(Instant::now()).is_ok(),
        "a restart cannot fix RBAC"
    );
    health.election_refused(None);
    assert!(health.readiness().is_ok());
}

#[test]
fn a_runtime_that_stops_running_is_wedged_past_the_limit_and_live_again_once_it_runs() {
    let start = Instant::now();
    let health = Health::new(Duration::from_secs(60));
    health.runtime_ran(start);
    let limit = RUNTIME_STALL_LIMIT.as_secs();
    assert!(health.liveness(after(start, limit)).is_ok());
    let wedged = health.liveness(after(start, limit + 1)).unwrap_err();
    assert!(wedged.contains("has not run for"), "{wedged}");
    health.runtime_ran(after(start, limit + 1));
    assert!(health.liveness(after(start, limit + 2)).is_ok());
}
