use futures::StreamExt;

use super::*;

/// What the loop was sent back so far.
fn sent_back(to_loop: &mut (impl Stream<Item = String> + Unpin)) -> Vec<String> {
    let mut sent = Vec::new();
    while let Some(Some(object)) = to_loop.next().now_or_never() {
        sent.push(object);
    }
    sent.sort();
    sent
}

use futures::FutureExt;

fn name(i: usize) -> String {
    format!("s{i}")
}

#[test]
fn one_namespace_holds_at_most_half_the_workers() {
    let shares = WorkerShares::new(16);
    let tenant: Vec<_> = (0..8).map(|i| shares.take("tenant", &name(i))).collect();
    assert!(tenant.iter().all(Option::is_some));
    assert!(
        shares.take("tenant", &name(8)).is_none(),
        "a ninth is refused"
    );
    let others: Vec<_> = (0..8).map(|i| shares.take("other", &name(i))).collect();
    assert!(others.iter().all(Option::is_some), "the other half is free");
}

#[test]
fn a_refused_object_is_sent_back_once_its_namespace_gives_a_worker_back() {
    let shares = WorkerShares::new(4);
    let mut to_loop = Box::pin(shares.unparked());
    let mut held: Vec<_> = (0..2).map(|i| shares.take("a", &name(i))).collect();
    assert!(shares.take("a", &name(2)).is_none());
    assert!(shares.take("a", &name(3)).is_none());
    assert!(shares.take("a", &name(2)).is_none(), "parked once");
    assert_eq!(sent_back(&mut to_loop), Vec::<String>::new(), "no spin");
    held.pop();
    let first = sent_back(&mut to_loop);
    assert_eq!(first.len(), 1, "one per worker given back: {first:?}");
    held.pop();
    let mut all = first;
    all.extend(sent_back(&mut to_loop));
    all.sort();
    assert_eq!(all, [name(2), name(3)], "none left behind");
    assert!(
        shares.lock().is_empty(),
        "a namespace holding nothing is forgotten"
    );
}

#[test]
fn a_loop_of_one_worker_lets_each_namespace_hold_it() {
    let shares = WorkerShares::new(1);
    let held = shares.take("a", &name(0));
    assert!(held.is_some());
    assert!(shares.take("a", &name(1)).is_none());
    let unbounded = WorkerShares::new(0);
    let many: Vec<_> = (0..100).map(|i| unbounded.take("a", &name(i))).collect();
    assert!(many.iter().all(Option::is_some));
}

#[test]
fn the_objects_sent_back_go_to_the_first_who_asks() {
    let shares = WorkerShares::<String>::new(2);
    let _loop = shares.unparked();
    let mut again = Box::pin(shares.unparked());
    assert_eq!(
        again.next().now_or_never(),
        Some(None),
        "nothing for a second"
    );
}
