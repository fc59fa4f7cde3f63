use std::pin::pin;

use futures::{FutureExt, poll};

use super::*;

const BUDGET: u32 = 1000;
const SHARE: u64 = BUDGET as u64 / 2;

fn budget() -> Arc<ByteBudget> {
    Arc::new(ByteBudget::new(BUDGET, 2, Gauge::default()))
}

#[tokio::test]
async fn one_namespace_holds_at_most_half_the_budget_and_another_still_has_room() {
    let budget = budget();
    let first = budget.hold("tenant", 300).now_or_never().expect("room");
    let mut second = pin!(budget.hold("tenant", 300));
    assert!(poll!(&mut second).is_pending(), "past the namespace's half");
    let other = budget.hold("other", SHARE).now_or_never();
    assert!(other.is_some(), "another namespace's copy is not held back");
    drop(first);
    assert!(
        poll!(&mut second).is_ready(),
        "room again once a write returns"
    );
}

#[tokio::test]
async fn the_whole_budget_is_shared_by_every_namespace() {
    let budget = budget();
    let a = budget.hold("a", SHARE).now_or_never().expect("a's half");
    let b = budget.hold("b", SHARE).now_or_never().expect("b's half");
    assert_eq!(budget.in_use.get(), i64::from(BUDGET));
    let mut c = pin!(budget.hold("c", 1));
    assert!(poll!(&mut c).is_pending(), "the budget is spent");
    drop(a);
    assert!(poll!(&mut c).is_ready());
    drop(b);
}

#[tokio::test]
async fn a_copy_larger_than_a_share_takes_the_share_alone() {
    let budget = budget();
    let big = budget.hold("a", 10 * u64::from(BUDGET)).now_or_never();
    let big = big.expect("never waits for more than there is");
    assert_eq!(budget.in_use.get(), SHARE as i64);
    let mut small = pin!(budget.hold("a", 1));
    assert!(poll!(&mut small).is_pending());
    assert!(budget.hold("b", SHARE).now_or_never().is_some());
    drop(big);
    assert!(poll!(&mut small).is_ready());
}

#[tokio::test]
async fn a_namespace_is_forgotten_once_nothing_of_it_is_held_or_waited_for() {
    let budget = budget();
    let held = budget.hold("a", SHARE).now_or_never().expect("room");
    {
        // A reconcile cancelled while it waits gives its place back.
        let mut waiting = pin!(budget.hold("a", 1));
        assert!(poll!(&mut waiting).is_pending());
    }
    assert_eq!(budget.lock().len(), 1);
    drop(held);
    assert!(budget.lock().is_empty());
    assert_eq!(budget.in_use.get(), 0);
    assert_eq!(budget.whole.available_permits(), BUDGET as usize);
}

#[tokio::test]
async fn holding_nothing_never_waits() {
    let budget = budget();
    let _all = budget.hold("a", SHARE).now_or_never().expect("room");
    assert!(budget.hold("a", 0).now_or_never().is_some());
}

#[test]
fn a_small_copy_counts_as_the_floor_and_a_large_one_as_itself() {
    assert_eq!(write_cost(0), WRITE_FLOOR_BYTES);
    assert_eq!(write_cost(10), WRITE_FLOOR_BYTES);
    assert_eq!(write_cost(1 << 20), 1 << 20);
}

#[test]
fn one_namespace_has_at_most_sixteen_writes_in_flight_and_all_together_128() {
    let share = u64::from(COPY_BUDGET_BYTES / NAMESPACE_SHARE);
    assert_eq!(share / write_cost(1), 16);
    assert_eq!(u64::from(COPY_BUDGET_BYTES) / write_cost(1), 128);
}

#[tokio::test]
async fn the_seventeenth_small_copy_of_one_namespace_waits_and_another_namespace_s_does_not() {
    let budget = Arc::new(ByteBudget::new(
        COPY_BUDGET_BYTES,
        NAMESPACE_SHARE,
        Gauge::default(),
    ));
    let mut held = Vec::new();
    for _ in 0..16 {
        let copy = budget.hold("tenant", write_cost(10)).now_or_never();
        held.push(copy.expect("within the namespace's share"));
    }
    let mut seventeenth = pin!(budget.hold("tenant", write_cost(10)));
    assert!(poll!(&mut seventeenth).is_pending());
    let other = budget.hold("other", write_cost(10)).now_or_never();
    assert!(other.is_some(), "another namespace's heal finds room");
    held.pop();
    assert!(poll!(&mut seventeenth).is_ready());
}
