use super::*;

/// A batch whose waiters are the names they wait for.
fn batch(waiting: &[(&str, Option<&str>)]) -> Batch<String> {
    let mut batch = Batch::default();
    for (name, version) in waiting {
        batch.add(name, *version, (*name).to_owned());
    }
    batch
}

#[test]
fn a_list_is_no_older_than_the_newest_version_any_waiter_cached() {
    let batch = batch(&[("a", Some("900")), ("b", Some("1200")), ("a", Some("1000"))]);
    assert_eq!(
        batch.plan(None),
        ReadPlan::List {
            not_older_than: Some("1200".into())
        }
    );
}

#[test]
fn a_waiter_without_a_comparable_version_asks_for_a_consistent_list() {
    let unversioned = batch(&[("a", Some("900")), ("b", None)]);
    assert_eq!(
        unversioned.plan(None),
        ReadPlan::List {
            not_older_than: None
        }
    );
    // The order of arrival does not matter.
    let opaque = batch(&[("a", Some("opaque")), ("a", Some("900"))]);
    assert_eq!(
        opaque.plan(None),
        ReadPlan::List {
            not_older_than: None
        }
    );
}

#[test]
fn a_namespace_holding_many_sources_more_than_are_waited_for_is_read_by_gets() {
    let two = batch(&[("a", Some("1")), ("b", Some("2"))]);
    let listable = 2 * SOURCES_LISTED_PER_WAITER;
    assert!(matches!(two.plan(Some(listable)), ReadPlan::List { .. }));
    assert_eq!(two.plan(Some(listable + 1)), ReadPlan::EachGet);
    // Never listed: listing once tells how many it holds.
    assert!(matches!(two.plan(None), ReadPlan::List { .. }));
}

#[test]
fn a_listed_source_answers_every_waiter_for_it_and_nobody_else() {
    let mut batch = batch(&[("a", Some("1")), ("a", Some("2")), ("b", Some("3"))]);
    let a = batch.take("a").map(|waiting| waiting.waiters);
    assert_eq!(a, Some(vec!["a".to_owned(), "a".to_owned()]));
    assert!(batch.take("a").is_none(), "answered once");
    assert!(batch.take("unwanted").is_none());
    let left: Vec<_> = batch.drain().map(|(name, _)| name).collect();
    assert_eq!(left, ["b"], "what the list did not hold is gone");
    assert!(batch.is_empty());
}

/// Pages as a LIST returns them: whatever the page size, every source
/// waited for is answered by the page that holds it, and the rest is gone.
#[test]
fn every_page_boundary_answers_alike() {
    let listed: Vec<String> = (0..7).map(|i| format!("s{i}")).collect();
    for page_size in 1..=8 {
        let mut batch = batch(&[
            ("s0", Some("1")),
            ("s3", Some("1")),
            ("s6", Some("1")),
            ("deleted", Some("1")),
        ]);
        let mut answered = Vec::new();
        for page in listed.chunks(page_size) {
            for name in page {
                if let Some(waiting) = batch.take(name) {
                    answered.extend(waiting.waiters);
                }
            }
        }
        let gone: Vec<_> = batch.drain().map(|(name, _)| name).collect();
        assert_eq!(answered, ["s0", "s3", "s6"], "page size {page_size}");
        assert_eq!(gone, ["deleted"], "page size {page_size}");
    }
}

#[test]
fn cancelled_waiters_leave_the_batch() {
    let mut batch = batch(&[("a", Some("1")), ("b", Some("2"))]);
    batch.retain(|waiter| waiter != "a");
    assert!(batch.take("a").is_none());
    batch.retain(|_| false);
    assert!(batch.is_empty());
}

#[test]
fn a_namespace_too_big_to_list_even_for_every_reconcile_is_read_at_once() {
    assert!(!may_list(Some(10_000), 16));
    assert!(may_list(Some(16 * SOURCES_LISTED_PER_WAITER), 16));
    assert!(may_list(None, 16), "never listed");
    assert!(may_list(Some(10_000), usize::MAX), "no bound on waiters");
}
