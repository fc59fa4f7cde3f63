//! What /healthz and /readyz report.
//!
//! Live means "not wedged". A watch is failing from its first error until
//! the API server accepts a watch again or the watch delivers an event,
//! whichever comes first; a watch that has reconnected on a quiet cluster
//! is healthy although it delivers nothing.
//!
//! Each error of a watch says something about the API server
//! ([`ErrorSource`]): a refusal of its own (403, 410, 422...) shows that it
//! answers; 429 or a 5xx shows that it is overloaded or cannot reach etcd,
//! an outage; a lost link (connection refused, reset or timed out) says
//! nothing, and a probe of the API server (`api_probe`) tells.
//!
//! The process is wedged when a watch keeps failing while the API server
//! answers, for longer than the threshold counted from the API server's
//! first answer during the failure: the watch's own refusal, or an answered
//! probe. A probe left unanswered stops that clock, and the next answer
//! starts it again. A watch whose last error was a 429 or a 5xx is never
//! wedged, nor is one when the latest answer is older than
//! [`PROBE_FRESHNESS`]. A restart can fix a wedge; it cannot fix an outage
//! (it would only add load, and every replica would end in crash-loop
//! back-off), so liveness stays OK through one. And when the API server
//! first answers again, the watches waiting out a backoff retry at once
//! rather than up to 30 s later.
//!
//! Ready means every cache has completed its initial list once. The caches
//! keep serving what they hold during an outage, so readiness stays. Until
//! then /readyz names each cache still waiting and its last error.

use std::{
    collections::BTreeMap,
    sync::{Mutex, PoisonError},
    time::{Duration, Instant},
};

use tokio::sync::{Notify, futures::Notified};

/// How recent an answer must be to show the API server answers.
pub const PROBE_FRESHNESS: Duration = Duration::from_secs(15);

#[derive(Debug)]
pub struct Health {
    threshold: Duration,
    state: Mutex<State>,
    /// Wakes the watches waiting out a backoff when the API server answers
    /// again.
    retry: Notify,
}

#[derive(Debug, Default)]
struct State {
    watches: BTreeMap<&'static str, Watch>,
    /// When the API server last answered: a probe, or a watch's refusal.
    api_answered_at: Option<Instant>,
    /// Why the API server refuses this replica's Lease requests, if it does.
    election_refused: Option<String>,
}

#[derive(Debug, Default)]
struct Watch {
    synced: bool,
    failing: Option<Failure>,
}

#[derive(Debug)]
struct Failure {
    since: Instant,
    last_error: String,
    source: ErrorSource,
    /// When the API server began answering during this failure; `None`
    /// until it does, and again once a probe goes unanswered or the watch
    /// meets an overload.
    answered_since: Option<Instant>,
}

/// What a watch error says about the API server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorSource {
    /// The API server answered, refusing or failing the request on its own
    /// terms (a 4xx other than 429, an error event): it serves requests.
    Refused,
    /// The API server is overloaded or cannot serve the request's storage
    /// (429, 5xx): an outage.
    Unavailable,
    /// No answer: the connection was refused, reset or timed out.
    Link,
}

impl ErrorSource {
    /// What an error status of the API server says.
    pub fn of_status(code: u16) -> ErrorSource {
        if code == 429 || code >= 500 {
            ErrorSource::Unavailable
        } else {
            ErrorSource::Refused
        }
    }
}

impl Failure {
    /// How long the API server has answered during this failure, if it
    /// does.
    fn answering_for(&self, now: Instant) -> Option<Duration> {
        self.answered_since
            .map(|since| now.saturating_duration_since(since))
    }
}

impl Health {
    pub fn new(threshold: Duration) -> Self {
        Health {
            threshold,
            state: Mutex::default(),
            retry: Notify::new(),
        }
    }

    /// Declares a watch whose cache readiness waits for.
    pub fn register(&self, watch: &'static str) {
        self.lock().watches.entry(watch).or_default();
    }

    /// A watch failed at `now`. True when this error starts a new streak.
    pub fn watch_failed(
        &self,
        watch: &'static str,
        error: String,
        source: ErrorSource,
        now: Instant,
    ) -> bool {
        let mut state = self.lock();
        if source == ErrorSource::Refused {
            state.api_answered_at = Some(now);
        }
        let entry = state.watches.entry(watch).or_default();
        let new_streak = entry.failing.is_none();
        let failure = entry.failing.get_or_insert_with(|| Failure {
            since: now,
            last_error: String::new(),
            source,
            answered_since: None,
        });
        failure.last_error = error;
        failure.source = source;
        match source {
            ErrorSource::Refused => {
                failure.answered_since.get_or_insert(now);
            }
            ErrorSource::Unavailable => failure.answered_since = None,
            // Whether the API server answers meanwhile is the probe's to say.
            ErrorSource::Link => {}
        }
        new_streak
    }

    /// The watch works again (accepted by the API server, or it delivered
    /// an event). Returns how long it had been failing, if it was.
    pub fn watch_ok(&self, watch: &'static str, now: Instant) -> Option<Duration> {
        let mut state = self.lock();
        let failure = state.watches.entry(watch).or_default().failing.take()?;
        Some(now.saturating_duration_since(failure.since))
    }

    /// Whether any watch is failing now.
    pub fn any_failing(&self) -> bool {
        self.lock().watches.values().any(|w| w.failing.is_some())
    }

    /// The API server answered a probe at `now`. When that is its first
    /// answer during a watch's failure, the failing watches waiting out a
    /// backoff retry at once, and this returns true.
    pub fn probe_answered(&self, now: Instant) -> bool {
        let mut state = self.lock();
        state.api_answered_at = Some(now);
        let mut first_answer = false;
        for failure in state
            .watches
            .values_mut()
            .filter_map(|w| w.failing.as_mut())
        {
            // An overloaded API server gets no retries before their time.
            if failure.answered_since.is_none() && failure.source != ErrorSource::Unavailable {
                failure.answered_since = Some(now);
                first_answer = true;
            }
        }
        drop(state);
        if first_answer {
            self.retry.notify_waiters();
        }
        first_answer
    }

    /// The API server did not answer a probe (no answer in time, 429, 5xx):
    /// every failing watch's clock stops until the next answer.
    pub fn probe_unanswered(&self) {
        let mut state = self.lock();
        for failure in state
            .watches
            .values_mut()
            .filter_map(|w| w.failing.as_mut())
        {
            failure.answered_since = None;
        }
    }

    /// Completes when the failing watches should retry at once rather than
    /// wait out their backoff: at the API server's first answer during a
    /// failure. Only a request made after this was called completes it.
    pub fn retry_requested(&self) -> Notified<'_> {
        self.retry.notified()
    }

    pub fn cache_synced(&self, watch: &'static str) {
        self.lock().watches.entry(watch).or_default().synced = true;
    }

    /// The API server refuses this replica's Lease requests (`Some`, with
    /// why), or no longer does.
    pub fn election_refused(&self, reason: Option<&str>) {
        self.lock().election_refused = reason.map(str::to_owned);
    }

    /// Ok, or which caches have not completed their first list, and why,
    /// and why leader election cannot proceed. Not ready while the Lease is
    /// refused: such a replica can never lead, and may be the only one.
    pub fn readiness(&self) -> Result<(), String> {
        let state = self.lock();
        let mut waiting: Vec<String> = state
            .watches
            .iter()
            .filter(|(_, w)| !w.synced)
            .map(|(name, w)| match &w.failing {
                Some(failure) => format!("{name} cache not synced: {}", failure.last_error),
                None => format!("{name} cache not synced yet"),
            })
            .collect();
        if let Some(reason) = &state.election_refused {
            waiting.push(format!("leader election: the Lease is refused: {reason}"));
        }
        if waiting.is_empty() {
            Ok(())
        } else {
            Err(waiting.join("; "))
        }
    }

    /// Ok with a note, or what is wedged.
    pub fn liveness(&self, now: Instant) -> Result<String, String> {
        let state = self.lock();
        let answers_now = state
            .api_answered_at
            .is_some_and(|at| now.saturating_duration_since(at) <= PROBE_FRESHNESS);
        let mut wedged = Vec::new();
        let mut outage = Vec::new();
        for (name, watch) in &state.watches {
            let Some(failure) = &watch.failing else {
                continue;
            };
            let failing_for = now.saturating_duration_since(failure.since);
            if failing_for <= self.threshold {
                continue;
            }
            let (error, answering_for) = (&failure.last_error, failure.answering_for(now));
            match (failure.source, answering_for.filter(|_| answers_now)) {
                (ErrorSource::Unavailable, _) => outage.push(format!(
                    "{name} watch failing for {failing_for:.0?}, the API server overloaded or without its storage: {error}"
                )),
                (_, None) => outage.push(format!(
                    "{name} watch failing for {failing_for:.0?}, the API server unreachable: {error}"
                )),
                (_, Some(answering)) if answering > self.threshold => wedged.push(format!(
                    "{name} watch failing for {failing_for:.0?}, {answering:.0?} of them since the API server answered: {error}"
                )),
                (_, Some(answering)) => outage.push(format!(
                    "{name} watch failing for {failing_for:.0?}, the API server answering again for {answering:.0?}: {error}"
                )),
            }
        }
        if !wedged.is_empty() {
            return Err(format!("the API server answers but {}", wedged.join("; ")));
        }
        if outage.is_empty() {
            Ok("ok".into())
        } else {
            Ok(format!(
                "ok: no watch is wedged, and a restart cannot end an outage ({})",
                outage.join("; ")
            ))
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
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
}
