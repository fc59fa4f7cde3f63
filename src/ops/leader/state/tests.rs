use std::time::{Duration, Instant};

use super::*;

const T: Timings = Timings {
    renew_deadline: Duration::from_secs(10),
    retry_period: Duration::from_secs(2),
};

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

fn held(lead_at: Instant) -> Round {
    Round::Held { lead_at }
}

/// A replica that has just become leader at `at`.
fn leader(at: Instant) -> ElectionState {
    let step = ElectionState::default().step(&held(at), at, at, T);
    assert!(step.became_leader);
    step.state
}

#[test]
fn a_candidate_holding_the_lease_leads_only_once_the_previous_holder_must_have_stopped() {
    let t0 = Instant::now();
    let lead_at = t0 + secs(15);
    let first = ElectionState::default().step(&held(lead_at), t0, t0, T);
    assert!(!first.state.is_leading() && first.state.holding());
    assert_eq!(first.publish, None, "no write before lead_at");
    assert_eq!(first.waiting, Some(secs(15)));
    assert_eq!(first.next, Ok(T.retry_period));

    // A later round's lead_at never moves the first one.
    let almost = t0 + secs(14);
    let second = first.state.step(&held(t0 + secs(99)), almost, almost, T);
    assert!(!second.state.is_leading());
    assert_eq!(second.next, Ok(secs(1)), "sleeps no later than lead_at");

    let at = t0 + secs(15);
    let third = second.state.step(&held(t0 + secs(99)), at, at, T);
    assert!(third.became_leader && third.state.is_leading());
    assert_eq!(
        third.publish,
        Some(Term::Leading {
            until: Some(at + T.renew_deadline)
        })
    );
}

#[test]
fn the_deadline_runs_from_the_start_of_the_renewal_not_its_end() {
    let t0 = Instant::now();
    let state = leader(t0);
    let (started, ended) = (t0 + secs(2), t0 + secs(9));
    let step = state.step(&held(t0), started, ended, T);
    assert_eq!(
        step.publish,
        Some(Term::Leading {
            until: Some(started + T.renew_deadline)
        })
    );
    assert_eq!(step.state.budget(t0 + secs(4), T), secs(8));
}

#[test]
fn a_leader_whose_renewals_fail_keeps_its_term_until_the_deadline_then_stops() {
    let t0 = Instant::now();
    let state = leader(t0);
    let before = state.step(&Round::Failed(None), t0 + secs(2), t0 + secs(9), T);
    assert_eq!(before.publish, None, "the term stands until its end");
    assert!(before.state.is_leading());
    let after = before
        .state
        .step(&Round::Failed(None), t0 + secs(9), t0 + secs(10), T);
    assert_eq!(after.publish, Some(Term::Standby));
    assert_eq!(after.next, Err(LeaderError::Lost(T.renew_deadline)));
}

#[test]
fn a_leader_that_finds_another_holder_stops_at_once() {
    let t0 = Instant::now();
    let step = leader(t0).step(&Round::HeldBy("other".into()), t0, t0 + secs(1), T);
    assert_eq!(step.publish, Some(Term::Standby));
    assert_eq!(step.next, Err(LeaderError::Superseded("other".into())));
}

#[test]
fn a_round_of_a_leader_gets_only_the_time_its_term_has_left() {
    let t0 = Instant::now();
    let state = leader(t0);
    assert_eq!(state.budget(t0 + secs(7), T), secs(3));
    assert_eq!(state.budget(t0 + secs(12), T), Duration::ZERO);
    assert_eq!(ElectionState::default().budget(t0, T), T.renew_deadline);
}

#[test]
fn a_waiting_candidate_that_loses_the_lease_starts_over() {
    let t0 = Instant::now();
    let waiting = ElectionState::default()
        .step(&held(t0 + secs(15)), t0, t0, T)
        .state;
    let lost = waiting.step(&Round::HeldBy("other".into()), t0, t0 + secs(1), T);
    assert_eq!(lost.state, ElectionState::default());
    assert_eq!(lost.next, Ok(T.retry_period));

    let unrenewed = waiting.step(&Round::Failed(None), t0, t0 + secs(11), T);
    assert_eq!(unrenewed.state, ElectionState::default());
    assert_eq!(
        unrenewed.publish, None,
        "it never led, so it publishes nothing"
    );
}
