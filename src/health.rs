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
//! The process is wedged when a watch has been failing for longer than the
//! threshold *while the API server answers*: its last error was a refusal,
//! or the API server answered a probe during the failure. A watch whose
//! last error was a 429 or a 5xx is never wedged. A restart can fix a
//! wedge; it cannot fix an outage (it would only add load, and every
//! replica would end in crash-loop back-off), so liveness stays OK through
//! one.
//!
//! Ready means every cache has completed its initial list once. The caches
//! keep serving what they hold during an outage, so readiness stays. Until
//! then /readyz names each cache still waiting and its last error.

use std::{
    collections::BTreeMap,
    sync::{Mutex, PoisonError},
    time::{Duration, Instant},
};

/// How recent an answer to a probe must be to show the API server answers.
pub const PROBE_FRESHNESS: Duration = Duration::from_secs(15);

#[derive(Debug)]
pub struct Health {
    threshold: Duration,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    watches: BTreeMap<&'static str, Watch>,
    api_answered_at: Option<Instant>,
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

impl Health {
    pub fn new(threshold: Duration) -> Self {
        Health {
            threshold,
            state: Mutex::default(),
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
        let entry = state.watches.entry(watch).or_default();
        match &mut entry.failing {
            Some(failure) => {
                failure.last_error = error;
                failure.source = source;
                false
            }
            None => {
                entry.failing = Some(Failure {
                    since: now,
                    last_error: error,
                    source,
                });
                true
            }
        }
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

    /// The API server answered a call at `now`.
    pub fn api_answered(&self, now: Instant) {
        self.lock().api_answered_at = Some(now);
    }

    pub fn cache_synced(&self, watch: &'static str) {
        self.lock().watches.entry(watch).or_default().synced = true;
    }

    /// Ok, or which caches have not completed their first list, and why.
    pub fn readiness(&self) -> Result<(), String> {
        let state = self.lock();
        let waiting: Vec<String> = state
            .watches
            .iter()
            .filter(|(_, w)| !w.synced)
            .map(|(name, w)| match &w.failing {
                Some(failure) => format!("{name} cache not synced: {}", failure.last_error),
                None => format!("{name} cache not synced yet"),
            })
            .collect();
        if waiting.is_empty() {
            Ok(())
        } else {
            Err(waiting.join("; "))
        }
    }

    /// Ok with a note, or what is wedged.
    pub fn liveness(&self, now: Instant) -> Result<String, String> {
        let state = self.lock();
        let answered_since = |since: Instant| {
            state.api_answered_at.is_some_and(|at| {
                at >= since && now.saturating_duration_since(at) <= PROBE_FRESHNESS
            })
        };
        let mut wedged = Vec::new();
        let mut unreachable = Vec::new();
        for (name, watch) in &state.watches {
            let Some(failure) = &watch.failing else {
                continue;
            };
            let failing_for = now.saturating_duration_since(failure.since);
            if failing_for <= self.threshold {
                continue;
            }
            let line = format!(
                "{name} watch failing for {:.0?}: {}",
                failing_for, failure.last_error
            );
            let wedge = match failure.source {
                ErrorSource::Unavailable => false,
                ErrorSource::Refused => true,
                ErrorSource::Link => answered_since(failure.since),
            };
            if wedge {
                wedged.push(line);
            } else {
                unreachable.push(line);
            }
        }
        if !wedged.is_empty() {
            return Err(format!("the API server answers but {}", wedged.join("; ")));
        }
        if unreachable.is_empty() {
            Ok("ok".into())
        } else {
            Ok(format!(
                "ok: the API server is unreachable or overloaded, which a restart cannot fix ({})",
                unreachable.join("; ")
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
            health.api_answered(after(start, secs));
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
        health.api_answered(after(start, 20));
        assert!(health.liveness(after(start, 21)).is_err());
        // An answer that is no longer fresh says nothing about now.
        assert!(health.liveness(after(start, 40)).is_ok());
        // Nor does one from before the failure began.
        let health = Health::new(THRESHOLD);
        health.api_answered(start);
        health.watch_failed(
            "companions",
            "reset".into(),
            ErrorSource::Link,
            after(start, 1),
        );
        assert!(health.liveness(after(start, 10)).is_ok());
    }

    #[test]
    fn repeated_failures_count_from_the_first_and_keep_the_latest_error() {
        let health = Health::new(THRESHOLD);
        let start = Instant::now();
        health.watch_failed("companions", "refused".into(), ErrorSource::Link, start);
        assert!(!health.watch_failed(
            "companions",
            "forbidden".into(),
            ErrorSource::Refused,
            after(start, 4)
        ));
        let err = health.liveness(after(start, 6)).unwrap_err();
        assert!(err.contains("forbidden"), "{err}");
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
}
