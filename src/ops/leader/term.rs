//! The term of this replica: whether, and until when, it may write. The
//! election loop publishes it; everything that writes reads it.

use std::time::Instant;

use tokio::sync::watch;

/// Whether, and until when, this replica may write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Term {
    Standby,
    /// Leading; `until` is the end of the renew deadline, None without
    /// leader election.
    Leading {
        until: Option<Instant>,
    },
}

impl Term {
    pub fn allows_writes_at(self, now: Instant) -> bool {
        match self {
            Term::Standby => false,
            Term::Leading { until } => until.is_none_or(|until| now < until),
        }
    }
}

/// A read-only view of this replica's term, shared by everything that
/// writes.
#[derive(Clone)]
pub struct Leadership(watch::Receiver<Term>);

impl Leadership {
    /// Without leader election: always leading. Returns the sender too,
    /// which must be kept alive as long as the view is used.
    pub fn new(elected: bool) -> (watch::Sender<Term>, Leadership) {
        let first = match elected {
            true => Term::Standby,
            false => Term::Leading { until: None },
        };
        let (tx, rx) = watch::channel(first);
        (tx, Leadership(rx))
    }

    /// Whether a write may be sent now.
    pub fn is_leading(&self) -> bool {
        self.0.borrow().allows_writes_at(Instant::now())
    }

    /// Completes when this replica first leads; false if it never will.
    pub async fn became_leader(&self) -> bool {
        let mut term = self.0.clone();
        term.wait_for(|term| matches!(term, Term::Leading { .. }))
            .await
            .is_ok()
    }

    /// Completes at the next change of term; false once no more can come.
    pub async fn changed(&mut self) -> bool {
        self.0.changed().await.is_ok()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_term_allows_writes_only_before_its_deadline() {
        let now = Instant::now();
        let term = Term::Leading {
            until: Some(now + Duration::from_secs(1)),
        };
        assert!(term.allows_writes_at(now));
        assert!(!term.allows_writes_at(now + Duration::from_secs(1)));
        assert!(Term::Leading { until: None }.allows_writes_at(now));
        assert!(!Term::Standby.allows_writes_at(now));
    }
}
