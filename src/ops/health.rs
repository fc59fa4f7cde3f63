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
/// How long the runtime the reconciles share may go without running before
/// the process counts as wedged. /healthz is answered on a thread of its
/// own, so it still answers then; no reconcile is meant to hold the
/// runtime for more than a fraction of a second (docs/operator/sizing.md).
pub const RUNTIME_STALL_LIMIT: Duration = Duration::from_secs(60);

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
    /// The kinds turned on that cannot start yet, with why.
    kinds_waiting: BTreeMap<&'static str, String>,
    /// When the runtime the reconciles share last ran its heartbeat.
    runtime_ran_at: Option<Instant>,
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

    /// Every watch declared or seen, with how long it has been failing at
    /// `now` (zero when it works).
    pub fn failing_for(&self, now: Instant) -> Vec<(&'static str, Duration)> {
        self.lock()
            .watches
            .iter()
            .map(|(name, watch)| {
                let failing = watch
                    .failing
                    .as_ref()
                    .map_or(Duration::ZERO, |f| now.saturating_duration_since(f.since));
                (*name, failing)
            })
            .collect()
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

    /// A kind turned on cannot start yet (`Some`, with why), or has started.
    pub fn kind_waiting(&self, kind: &'static str, reason: Option<&str>) {
        let kinds = &mut self.lock().kinds_waiting;
        match reason {
            Some(reason) => kinds.insert(kind, reason.to_owned()),
            None => kinds.remove(kind),
        };
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
        for (kind, reason) in &state.kinds_waiting {
            waiting.push(format!("{kind}: {reason}"));
        }
        if waiting.is_empty() {
            Ok(())
        } else {
            Err(waiting.join("; "))
        }
    }

    /// The runtime the reconciles share ran at `now`.
    pub fn runtime_ran(&self, now: Instant) {
        self.lock().runtime_ran_at = Some(now);
    }

    /// Ok with a note, or what is wedged.
    pub fn liveness(&self, now: Instant) -> Result<String, String> {
        let state = self.lock();
        if let Some(at) = state.runtime_ran_at {
            let stalled = now.saturating_duration_since(at);
            if stalled > RUNTIME_STALL_LIMIT {
                return Err(format!(
                    "the reconciles' runtime has not run for {stalled:.0?} (the limit is {RUNTIME_STALL_LIMIT:?})"
                ));
            }
        }
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
mod tests;
