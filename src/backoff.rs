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

use rand::Rng;

use crate::error::Retry;

/// First delay and cap of the exponential backoff of each kind of retry.
#[derive(Debug, Clone, Copy)]
pub struct RetryPolicy {
    pub soon: (Duration, Duration),
    pub slowly: (Duration, Duration),
}

impl RetryPolicy {
    /// Transient errors retry from 200 ms; conditions that need a person
    /// from `slow_start`, both doubling up to their caps.
    pub fn new(slow_start: Duration) -> Self {
        RetryPolicy {
            soon: (Duration::from_millis(200), Duration::from_secs(120)),
            slowly: (slow_start, slow_start.max(Duration::from_secs(300))),
        }
    }

    pub fn bounds(&self, retry: Retry) -> Option<(Duration, Duration)> {
        match retry {
            Retry::Soon => Some(self.soon),
            Retry::Slowly => Some(self.slowly),
            Retry::OnChange => None,
        }
    }
}

/// Identifies an object across reconciles: `namespace/name`.
pub type ObjectKey = String;

#[derive(Debug, Default)]
struct Failures {
    attempts: u32,
    condition: Option<String>,
}

#[derive(Debug, Default)]
pub struct Backoffs {
    failures: Mutex<HashMap<ObjectKey, Failures>>,
}

impl Backoffs {
    /// The delay before `key` is retried after failing with `retry`, or
    /// None when only a change of the object should retry it.
    pub fn delay_for(&self, key: &str, retry: Retry, policy: &RetryPolicy) -> Option<Duration> {
        let (first, cap) = policy.bounds(retry)?;
        Some(self.next_delay(key, first, cap))
    }

    /// Records one more failure of `key` and returns how long to wait
    /// before the next attempt.
    pub fn next_delay(&self, key: &str, first: Duration, cap: Duration) -> Duration {
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
    pub fn is_new_condition(&self, key: &str, condition: &str) -> bool {
        self.with(key, |f| {
            let new = f.condition.as_deref() != Some(condition);
            f.condition = Some(condition.to_owned());
            new
        })
    }

    /// Forgets `key`'s failures after a success.
    pub fn clear(&self, key: &str) {
        self.lock().remove(key);
    }

    /// How many objects are currently failing.
    pub fn failing(&self) -> usize {
        self.lock().len()
    }

    fn with<T>(&self, key: &str, f: impl FnOnce(&mut Failures) -> T) -> T {
        let mut failures = self.lock();
        f(failures.entry(key.to_owned()).or_default())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<ObjectKey, Failures>> {
        // The map stays consistent even if a holder panicked mid-update.
        self.failures.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// `first * 2^(attempt-1)`, capped.
pub fn exponential(first: Duration, cap: Duration, attempt: u32) -> Duration {
    let factor = 2u32.saturating_pow(attempt.saturating_sub(1));
    first.saturating_mul(factor).min(cap)
}

fn jittered(delay: Duration, factor: f64) -> Duration {
    delay.mul_f64(factor)
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let first_a = backoffs.next_delay("ns/a", FIRST, CAP);
        let second_a = backoffs.next_delay("ns/a", FIRST, CAP);
        let first_b = backoffs.next_delay("ns/b", FIRST, CAP);
        assert!(first_a < FIRST.mul_f64(1.2) && first_b < FIRST.mul_f64(1.2));
        assert!(second_a >= (FIRST * 2).mul_f64(0.8));
        backoffs.clear("ns/a");
        assert!(backoffs.next_delay("ns/a", FIRST, CAP) < FIRST.mul_f64(1.2));
    }

    #[test]
    fn conditions_that_need_a_person_retry_slowly_and_changes_only_on_change() {
        let backoffs = Backoffs::default();
        let policy = RetryPolicy::new(Duration::from_secs(30));
        let slow = backoffs.delay_for("ns/a", Retry::Slowly, &policy).unwrap();
        assert!(slow >= Duration::from_secs(24));
        assert_eq!(backoffs.delay_for("ns/b", Retry::OnChange, &policy), None);
        let soon = backoffs.delay_for("ns/c", Retry::Soon, &policy).unwrap();
        assert!(soon < Duration::from_secs(1));
    }

    #[test]
    fn a_condition_is_new_only_when_it_changes() {
        let backoffs = Backoffs::default();
        assert!(backoffs.is_new_condition("ns/a", "name_taken"));
        assert!(!backoffs.is_new_condition("ns/a", "name_taken"));
        assert!(backoffs.is_new_condition("ns/a", "rejected: too big"));
        backoffs.clear("ns/a");
        assert!(backoffs.is_new_condition("ns/a", "rejected: too big"));
        assert_eq!(backoffs.failing(), 1);
    }
}
