//! The bench's one clock: a watch on the companions.
//!
//! Every timing in the report ends at the moment this watch delivered the
//! event that showed the awaited state, and every count of companion writes
//! comes from here too. So the figures need nothing from the controller and
//! include the same watch latency any real consumer of a companion sees.

use std::collections::{HashMap, HashSet};
use std::sync::MutexGuard;
use std::time::{Duration, Instant};

use anyhow::bail;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::runtime::watcher;
use kube::{Api, ResourceExt};

use configmap_mirror::contract::{CHECKSUM_ANNOTATION, copy_selector};

use crate::watched::{Apply, Watched};
use crate::workload::source_of_companion;

/// How often a long wait reports its progress on stderr.
const PROGRESS_EVERY: Duration = Duration::from_secs(10);

/// A companion as last seen.
#[derive(Clone, Debug)]
pub struct Companion {
    pub uid: String,
    pub resource_version: String,
    pub checksum: Option<String>,
    /// When the watch first showed this uid with this checksum: the moment
    /// a heal or an update became visible.
    pub since: Instant,
}

/// What the watch has shown so far.
#[derive(Default)]
pub struct State {
    companions: HashMap<String, Companion>,
    /// Source name → the checksum its companion must carry.
    expected: HashMap<String, String>,
    /// Names whose companion carries the expected checksum: kept
    /// incrementally, as recounting 10,000 entries per event would make the
    /// observer the bottleneck.
    matching: HashSet<String>,
    /// When the last companion started to match.
    last_match: Option<Instant>,
    /// Creates, resourceVersion changes and deletes seen.
    writes: u64,
    /// Names listed since the last (re)list began, to find deletions the
    /// watch missed while it was down.
    relisting: Option<HashSet<String>>,
}

impl State {
    pub fn companion(&self, name: &str) -> Option<&Companion> {
        self.companions.get(name)
    }

    pub fn matching(&self) -> usize {
        self.matching.len()
    }

    pub fn writes(&self) -> u64 {
        self.writes
    }

    fn applied(&mut self, cm: &ConfigMap, now: Instant) {
        let name = cm.name_any();
        let uid = cm.uid().unwrap_or_default();
        let resource_version = cm.resource_version().unwrap_or_default();
        let checksum = cm.annotations().get(CHECKSUM_ANNOTATION).cloned();
        if let Some(seen) = &mut self.relisting {
            seen.insert(name.clone());
        }
        let since = match self.companions.get(&name) {
            Some(old) if old.resource_version == resource_version => return,
            Some(old) if old.uid == uid && old.checksum == checksum => old.since,
            _ => now,
        };
        self.writes += 1;
        self.companions.insert(
            name.clone(),
            Companion {
                uid,
                resource_version,
                checksum,
                since,
            },
        );
        self.rematch(&name, now);
    }

    fn delete(&mut self, name: &str, now: Instant) {
        if self.companions.remove(name).is_some() {
            self.writes += 1;
            self.rematch(name, now);
        }
    }

    /// Forgets companions a completed re-list no longer contains.
    fn relisted(&mut self, now: Instant) {
        if let Some(seen) = self.relisting.take() {
            let gone: Vec<String> = self
                .companions
                .keys()
                .filter(|name| !seen.contains(*name))
                .cloned()
                .collect();
            for name in gone {
                self.delete(&name, now);
            }
        }
    }

    fn rematch(&mut self, companion: &str, now: Instant) {
        let matches = self.companions.get(companion).is_some_and(|c| {
            let expected = source_of_companion(companion).and_then(|s| self.expected.get(s));
            expected.is_some() && c.checksum.as_ref() == expected
        });
        if matches {
            if self.matching.insert(companion.to_owned()) {
                self.last_match = Some(now);
            }
        } else {
            self.matching.remove(companion);
        }
    }
}

/// The running watch; stops when dropped.
pub struct Observer(Watched<State>);

impl Apply for State {
    fn apply(&mut self, event: watcher::Event<ConfigMap>, at: Instant) {
        match event {
            watcher::Event::Init => self.relisting = Some(HashSet::new()),
            watcher::Event::InitApply(cm) | watcher::Event::Apply(cm) => self.applied(&cm, at),
            watcher::Event::Delete(cm) => self.delete(&cm.name_any(), at),
            watcher::Event::InitDone => self.relisted(at),
        }
    }
}

impl Observer {
    /// Starts watching the companions `api` can see and waits for the
    /// initial list, so that no later change can be missed.
    pub async fn start(api: Api<ConfigMap>) -> anyhow::Result<Observer> {
        // Companions are listed from the watch cache, and the one big list
        // (after a restart of the watch) should not be chopped into pages.
        let config = watcher::Config::default()
            .labels(&copy_selector())
            .any_semantic()
            .page_size(50_000);
        Ok(Observer(
            Watched::start("companion watch", api, config, State::default()).await?,
        ))
    }

    pub fn state(&self) -> MutexGuard<'_, State> {
        self.0.state()
    }

    /// Records which checksum each source's companion must show from now on.
    pub fn expect<'a>(&self, checksums: impl IntoIterator<Item = (&'a str, &'a str)>) {
        let mut state = self.state();
        let now = Instant::now();
        for (source, checksum) in checksums {
            state
                .expected
                .insert(source.to_owned(), checksum.to_owned());
            let companion = configmap_mirror::contract::companion_name(source, "-synced");
            state.rematch(&companion, now);
        }
    }

    /// Waits until `ready` returns a value for the observed state, for at
    /// most `timeout`; the error names `what`.
    pub async fn wait_until<T>(
        &self,
        what: &str,
        timeout: Duration,
        ready: impl FnMut(&State) -> Option<T>,
    ) -> anyhow::Result<T> {
        self.0.wait_until(what, timeout, ready).await
    }

    /// Waits until `count` companions carry their source's expected
    /// checksum and returns when the last of them started to, printing
    /// progress meanwhile as this may take minutes.
    pub async fn wait_matching(
        &self,
        what: &str,
        count: usize,
        timeout: Duration,
    ) -> anyhow::Result<Instant> {
        let started = Instant::now();
        let deadline = started + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let step = left.min(PROGRESS_EVERY);
            let done = self
                .wait_until(what, step, |s| {
                    (s.matching() >= count).then(|| s.last_match.unwrap_or_else(Instant::now))
                })
                .await;
            match done {
                Ok(at) => return Ok(at),
                Err(_) if !left.is_zero() && step < left => eprintln!(
                    "bench:   {what}: {}/{count} after {:.0}s",
                    self.state().matching(),
                    started.elapsed().as_secs_f64()
                ),
                Err(_) => bail!(
                    "timed out after {timeout:?} waiting for {what}: {}/{count} companions match",
                    self.state().matching()
                ),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    use super::*;

    fn companion(name: &str, uid: &str, rv: &str, checksum: &str) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.into()),
                uid: Some(uid.into()),
                resource_version: Some(rv.into()),
                annotations: Some([(CHECKSUM_ANNOTATION.into(), checksum.into())].into()),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        }
    }

    fn expect(state: &mut State, source: &str, checksum: &str, now: Instant) {
        state.expected.insert(source.into(), checksum.into());
        state.rematch(&format!("{source}-synced"), now);
    }

    #[test]
    fn a_relist_of_unchanged_companions_counts_no_writes() {
        let mut state = State::default();
        let t0 = Instant::now();
        state.applied(&companion("a-synced", "u1", "1", "x"), t0);
        state.relisting = Some(HashSet::new());
        state.applied(&companion("a-synced", "u1", "1", "x"), t0);
        state.relisted(t0);
        assert_eq!(state.writes(), 1);
        assert!(state.companion("a-synced").is_some());
    }

    #[test]
    fn a_companion_missing_from_a_relist_counts_as_deleted() {
        let mut state = State::default();
        let t0 = Instant::now();
        state.applied(&companion("a-synced", "u1", "1", "x"), t0);
        state.relisting = Some(HashSet::new());
        state.relisted(t0);
        assert_eq!(state.writes(), 2);
        assert!(state.companion("a-synced").is_none());
    }

    #[test]
    fn matching_follows_both_the_companion_and_the_expectation() {
        let mut state = State::default();
        let t0 = Instant::now();
        expect(&mut state, "a", "x", t0);
        assert_eq!(state.matching(), 0);
        state.applied(&companion("a-synced", "u1", "1", "x"), t0);
        assert_eq!(state.matching(), 1);
        expect(&mut state, "a", "y", t0);
        assert_eq!(state.matching(), 0);
        let t1 = t0 + Duration::from_millis(5);
        state.applied(&companion("a-synced", "u1", "2", "y"), t1);
        assert_eq!(state.matching(), 1);
        assert_eq!(state.last_match, Some(t1));
        assert_eq!(state.companion("a-synced").unwrap().since, t1);
    }

    #[test]
    fn a_write_that_keeps_uid_and_checksum_keeps_the_first_sighting() {
        let mut state = State::default();
        let t0 = Instant::now();
        state.applied(&companion("a-synced", "u1", "1", "x"), t0);
        let t1 = t0 + Duration::from_millis(5);
        state.applied(&companion("a-synced", "u1", "2", "x"), t1);
        assert_eq!(state.writes(), 2);
        assert_eq!(state.companion("a-synced").unwrap().since, t0);
        state.applied(&companion("a-synced", "u2", "3", "x"), t1);
        assert_eq!(state.companion("a-synced").unwrap().since, t1);
    }
}
