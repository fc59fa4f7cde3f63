//! A token bucket, for the Normal Events: on a cold start with thousands of
//! sources, one Event per companion written would double the controller's
//! load on the API server. Warnings are never limited (they are already
//! reported once per condition).

use std::time::Instant;

#[derive(Debug)]
pub struct TokenBucket {
    per_second: f64,
    burst: f64,
    tokens: f64,
    refilled_at: Instant,
}

impl TokenBucket {
    pub fn new(per_second: f64, burst: u32, now: Instant) -> Self {
        let burst = f64::from(burst);
        TokenBucket {
            per_second,
            burst,
            tokens: burst,
            refilled_at: now,
        }
    }

    /// Takes a token if one is left at `now`.
    pub fn try_take(&mut self, now: Instant) -> bool {
        let elapsed = now.saturating_duration_since(self.refilled_at);
        self.tokens = (self.tokens + elapsed.as_secs_f64() * self.per_second).min(self.burst);
        self.refilled_at = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// Normal Events allowed at once, and per second after that.
pub const NORMAL_EVENT_BURST: u32 = 100;
pub const NORMAL_EVENTS_PER_SECOND: f64 = 10.0;

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_burst_passes_then_the_rate_holds() {
        let start = Instant::now();
        let mut bucket = TokenBucket::new(10.0, 3, start);
        assert!((0..3).all(|_| bucket.try_take(start)));
        assert!(!bucket.try_take(start));
        assert!(bucket.try_take(start + Duration::from_millis(100)));
        assert!(!bucket.try_take(start + Duration::from_millis(150)));
        let much_later = start + Duration::from_secs(60);
        assert_eq!(
            (0..10).filter(|_| bucket.try_take(much_later)).count(),
            3,
            "never more than the burst"
        );
    }
}
