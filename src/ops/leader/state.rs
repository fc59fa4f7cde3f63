//! What the election loop knows between rounds, and the pure step from one
//! round's outcome to the next state: the safety rules live here, where
//! they are unit-tested on their own, and the loop only does the I/O.

use std::time::{Duration, Instant};

use super::{LeaderError, protocol::Round, term::Term};

/// The loop's timings.
#[derive(Debug, Clone, Copy)]
pub struct Timings {
    pub renew_deadline: Duration,
    pub retry_period: Duration,
}

/// The loop's state between rounds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ElectionState {
    leading: bool,
    /// While holding the Lease: the end of the renew deadline, counted from
    /// the start of the last round that held it.
    valid_until: Option<Instant>,
    /// As a candidate holding the Lease: when leading may begin.
    pending_lead_at: Option<Instant>,
}

/// What the loop does after a round.
#[derive(Debug, PartialEq)]
pub struct Step {
    pub state: ElectionState,
    /// A term to publish.
    pub publish: Option<Term>,
    pub became_leader: bool,
    /// Holding the Lease but not leading yet: how long until it may.
    pub waiting: Option<Duration>,
    /// How long to sleep before the next round, or why to stop.
    pub next: Result<Duration, LeaderError>,
}

impl ElectionState {
    #[cfg(test)]
    fn is_leading(&self) -> bool {
        self.leading
    }

    /// Whether the next round is made by a holder of the Lease (a leader,
    /// or a candidate waiting to lead), which must stop at another holder.
    pub fn holding(&self) -> bool {
        self.leading || self.pending_lead_at.is_some()
    }

    /// How long a round started at `started` may take: a leader only has
    /// until its deadline, a candidate the renew deadline.
    pub fn budget(&self, started: Instant, timings: Timings) -> Duration {
        match (self.leading, self.valid_until) {
            (true, Some(until)) => until.saturating_duration_since(started),
            _ => timings.renew_deadline,
        }
    }

    /// The state after `round`, which started at `started` and ended at
    /// `now`.
    pub fn step(self, round: &Round, started: Instant, now: Instant, t: Timings) -> Step {
        let mut state = self;
        let mut publish = None;
        let mut became_leader = false;
        let mut waiting = None;
        match round {
            Round::Held { lead_at } => {
                // Counted from the round's start: the renewal may have been
                // written at any moment of it.
                state.valid_until = Some(started + t.renew_deadline);
                if !state.leading {
                    let lead_at = *state.pending_lead_at.get_or_insert(*lead_at);
                    if now >= lead_at {
                        state.leading = true;
                        state.pending_lead_at = None;
                        became_leader = true;
                    } else {
                        waiting = Some(lead_at - now);
                    }
                }
                if state.leading {
                    publish = Some(Term::Leading {
                        until: state.valid_until,
                    });
                }
            }
            Round::HeldBy(holder) if state.leading => {
                return stop(state, LeaderError::Superseded(holder.clone()));
            }
            Round::HeldBy(_) => {
                state.pending_lead_at = None;
                state.valid_until = None;
            }
            Round::Failed(_) => {
                if state.valid_until.is_some_and(|until| now >= until) {
                    if state.leading {
                        return stop(state, LeaderError::Lost(t.renew_deadline));
                    }
                    state.pending_lead_at = None;
                    state.valid_until = None;
                }
            }
        }
        let sleep = match state.pending_lead_at {
            Some(lead_at) => t.retry_period.min(lead_at.saturating_duration_since(now)),
            None => t.retry_period,
        };
        Step {
            state,
            publish,
            became_leader,
            waiting,
            next: Ok(sleep),
        }
    }
}

/// Leadership ends: standby at once, then stop.
fn stop(state: ElectionState, why: LeaderError) -> Step {
    Step {
        state: ElectionState {
            leading: false,
            ..state
        },
        publish: Some(Term::Standby),
        became_leader: false,
        waiting: None,
        next: Err(why),
    }
}

#[cfg(test)]
mod tests;
