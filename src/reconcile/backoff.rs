//! Per-object retry bookkeeping.
//!
//! kube-runtime requeues whatever `error_policy` returns but keeps no memory
//! of earlier failures, so the failure count of each object (for exponential
//! backoff) and the last condition reported on it (so that a Warning Event is
//! emitted once per distinct condition, not once per retry) live here.

use std::{
    collections::HashMap,
    sync::{Mutex, PoisonError},
    time::Duration,
};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use prometheus_client::metrics::gauge::Gauge;
use rand::Rng;

use crate::{api::SourceKind, ops::metrics::Loop, reconcile::error::Retry};

/// First delay and cap of the exponential backoff of each kind of retry.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RetryPolicy {
    pub(crate) soon: (Duration, Duration),
    pub(crate) slowly: (Duration, Duration),
}

impl RetryPolicy {
    /// Transient errors retry from 200 ms; conditions that need a person
    /// from `slow_start`, both doubling up to their caps.
    pub(crate) fn new(slow_start: Duration) -> Self {
        RetryPolicy {
            soon: (Duration::from_millis(200), Duration::from_secs(120)),
            slowly: (slow_start, slow_start.max(Duration::from_secs(300))),
        }
    }

    pub(crate) fn bounds(&self, retry: Retry) -> Option<(Duration, Duration)> {
        match retry {
            Retry::Soon => Some(self.soon),
            Retry::Slowly => Some(self.slowly),
            Retry::OnChange => None,
        }
    }
}

/// One object's failures in one loop. By uid: a source deleted and
/// recreated under the same name starts with no backoff and gets its
/// Warning, and the entry of an object that is gone can be found and
/// dropped. And by whose loop it is (`Of`): every loop shares one map, and
/// a sweep of one kind's cache must drop only that kind's entries.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct BackoffKey {
    which: Loop,
    of: Of,
    uid: String,
}

/// Whose objects a loop reconciles: one mirrored kind's, or the
/// ClusterMirrors'.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Of {
    Kind(SourceKind),
    ClusterMirrors,
}

impl BackoffKey {
    pub(crate) fn which(&self) -> Loop {
        self.which
    }

    pub(crate) fn new(which: Loop, of: Of, meta: &ObjectMeta) -> Self {
        // Every stored object has a uid; the name is a stand-in only.
        let uid = meta.uid.clone().unwrap_or_else(|| {
            format!(
                "{}/{}",
                meta.namespace.as_deref().unwrap_or_default(),
                meta.name.as_deref().unwrap_or_default()
            )
        });
        BackoffKey { which, of, uid }
    }
}

#[derive(Debug, Default)]
struct Failures {
    attempts: u32,
    condition: Option<String>,
}

/// The failures of every object that is failing now. An entry goes when
/// its object succeeds, or is deleted, or is no longer in the cache after
/// a list: the map never outgrows the objects that exist.
#[derive(Debug, Default)]
pub(crate) struct Backoffs {
    failures: Mutex<HashMap<BackoffKey, Failures>>,
    /// Mirrors the map's size for /metrics.
    failing: Gauge,
}

impl Backoffs {
    pub(crate) fn new(failing: Gauge) -> Self {
        Backoffs {
            failures: Mutex::default(),
            failing,
        }
    }

    /// The delay before `key` is retried after failing with `retry`, or
    /// None when only a change of the object should retry it.
    pub(crate) fn delay_for(
        &self,
        key: &BackoffKey,
        retry: Retry,
        policy: &RetryPolicy,
    ) -> Option<Duration> {
        let (first, cap) = policy.bounds(retry)?;
        Some(self.next_delay(key, first, cap))
    }

    /// Records one more failure of `key` and returns how long to wait
    /// before the next attempt.
    pub(crate) fn next_delay(&self, key: &BackoffKey, first: Duration, cap: Duration) -> Duration {
        let attempts = self.with(key, |f| {
            f.attempts = f.attempts.saturating_add(1);
            f.attempts
        });
        jittered(
            exponential(first, cap, attempts),
            rand::rng().random_range(0.8..1.2),
        )
    }

    /// Records the condition `key` fails with; true when it differs from the
    /// last one recorded, i.e. when it is worth telling people about.
    pub(crate) fn is_new_condition(&self, key: &BackoffKey, condition: &str) -> bool {
        self.with(key, |f| {
            let new = f.condition.as_deref() != Some(condition);
            f.condition = Some(condition.to_owned());
            new
        })
    }

    /// Forgets `key`'s failures after a success.
    pub(crate) fn clear(&self, key: &BackoffKey) {
        self.update(|failures| {
            failures.remove(key);
        });
    }

    /// Forgets the failures of the object with this uid: it was deleted.
    pub(crate) fn forget(&self, uid: &str) {
        self.update(|failures| failures.retain(|key, _| key.uid != uid));
    }

    /// Keeps, of `which` loop's entries of `of`'s objects, only those
    /// whose uid is `live`: after a list, whatever is not in the cache is
    /// gone. Other kinds' entries are not this cache's to judge.
    pub(crate) fn retain(&self, which: Loop, of: Of, live: impl Fn(&str) -> bool) {
        self.update(|failures| {
            failures.retain(|key, _| key.which != which || key.of != of || live(&key.uid))
        });
    }

    fn with<T>(&self, key: &BackoffKey, f: impl FnOnce(&mut Failures) -> T) -> T {
        self.update(|failures| f(failures.entry(key.clone()).or_default()))
    }

    fn update<T>(&self, f: impl FnOnce(&mut HashMap<BackoffKey, Failures>) -> T) -> T {
        let mut failures = self.lock();
        let result = f(&mut failures);
        self.failing
            .set(i64::try_from(failures.len()).unwrap_or(i64::MAX));
        result
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<BackoffKey, Failures>> {
        // The map stays consistent even if a holder panicked mid-update.
        self.failures.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// `first * 2^(attempt-1)`, capped.
pub(crate) fn exponential(first: Duration, cap: Duration, attempt: u32) -> Duration {
    let factor = 2u32.saturating_pow(attempt.saturating_sub(1));
    first.saturating_mul(factor).min(cap)
}

fn jittered(delay: Duration, factor: f64) -> Duration {
    delay.mul_f64(factor)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONFIGMAPS: Of = Of::Kind(SourceKind::ConfigMap);

    fn key(uid: &str) -> BackoffKey {
        BackoffKey {
            which: Loop::sync,
            of: CONFIGMAPS,
            uid: uid.into(),
        }
    }

    const FIRST: Duration = Duration::from_millis(200);
    const CAP: Duration = Duration::from_secs(120);

    #[test]
    fn delays_double_from_the_first_and_stop_at_the_cap() {
        assert_eq!(exponential(FIRST, CAP, 1), FIRST);
        assert_eq!(exponential(FIRST, CAP, 2), FIRST * 2);
        assert_eq!(exponential(FIRST, CAP, 4), FIRST * 8);
        assert_eq!(exponential(FIRST, CAP, 30), CAP);
        assert_eq!(exponential(FIRST, CAP, u32::MAX), CAP);
    }

    #[test]
    fn each_object_backs_off_on_its_own_and_resets_on_success() {
        let backoffs = Backoffs::default();
        let first_a = backoffs.next_delay(&key("a"), FIRST, CAP);
        let second_a = backoffs.next_delay(&key("a"), FIRST, CAP);
        let first_b = backoffs.next_delay(&key("b"), FIRST, CAP);
        assert!(first_a < FIRST.mul_f64(1.2) && first_b < FIRST.mul_f64(1.2));
        assert!(second_a >= (FIRST * 2).mul_f64(0.8));
        backoffs.clear(&key("a"));
        assert!(backoffs.next_delay(&key("a"), FIRST, CAP) < FIRST.mul_f64(1.2));
    }

    #[test]
    fn conditions_that_need_a_person_retry_slowly_and_changes_only_on_change() {
        let backoffs = Backoffs::default();
        let policy = RetryPolicy::new(Duration::from_secs(30));
        let slow = backoffs
            .delay_for(&key("a"), Retry::Slowly, &policy)
            .unwrap();
        assert!(slow >= Duration::from_secs(24));
        assert_eq!(
            backoffs.delay_for(&key("b"), Retry::OnChange, &policy),
            None
        );
        let soon = backoffs.delay_for(&key("c"), Retry::Soon, &policy).unwrap();
        assert!(soon < Duration::from_secs(1));
    }

    #[test]
    fn a_condition_is_new_only_when_it_changes() {
        let backoffs = Backoffs::default();
        assert!(backoffs.is_new_condition(&key("a"), "name_taken"));
        assert!(!backoffs.is_new_condition(&key("a"), "name_taken"));
        assert!(backoffs.is_new_condition(&key("a"), "rejected: too big"));
        backoffs.clear(&key("a"));
        assert!(backoffs.is_new_condition(&key("a"), "rejected: too big"));
        assert_eq!(backoffs.failing.get(), 1);
    }

    #[test]
    fn entries_of_objects_that_are_gone_are_dropped() {
        let gauge = Gauge::default();
        let backoffs = Backoffs::new(gauge.clone());
        backoffs.is_new_condition(&key("a"), "name_too_long");
        backoffs.is_new_condition(&key("b"), "name_too_long");
        let prune_a = BackoffKey {
            which: Loop::prune,
            of: CONFIGMAPS,
            uid: "a".into(),
        };
        backoffs.is_new_condition(&prune_a, "forbidden");
        assert_eq!(gauge.get(), 3);
        backoffs.forget("a");
        assert_eq!(gauge.get(), 1);
        backoffs.retain(Loop::sync, CONFIGMAPS, |uid| uid != "b");
        assert_eq!(backoffs.failing.get(), 0);
        assert_eq!(gauge.get(), 0);
    }

    #[test]
    fn a_sweep_of_one_kind_keeps_what_was_told_of_another_kind_s_objects() {
        let backoffs = Backoffs::default();
        let secret = BackoffKey {
            which: Loop::sync,
            of: Of::Kind(SourceKind::Secret),
            uid: "s".into(),
        };
        let cluster_mirror = BackoffKey {
            which: Loop::sync,
            of: Of::ClusterMirrors,
            uid: "c".into(),
        };
        let refused = "never_a_source: it is never copied";
        assert!(backoffs.is_new_condition(&secret, refused));
        assert!(backoffs.is_new_condition(&cluster_mirror, refused));
        // The ConfigMaps' cache, listed again, holds neither uid.
        backoffs.retain(Loop::sync, CONFIGMAPS, |_| false);
        assert!(
            !backoffs.is_new_condition(&secret, refused),
            "told once, not again after another kind's sweep"
        );
        assert!(!backoffs.is_new_condition(&cluster_mirror, refused));
        backoffs.retain(Loop::sync, Of::Kind(SourceKind::Secret), |_| false);
        assert!(
            backoffs.is_new_condition(&secret, refused),
            "its own sweep drops it"
        );
    }
}
