use super::*;

/// A batch whose waiters are the names they wait for.
fn batch(waiting: &[(&str, Option<&str>)]) -> Batch<String> {
    let mut batch = Batch::default();
    for (name, version) in waiting {
        batch.add(name, *version, (*name).to_owned());
    }
    batch
}

/// A namespace of `count` sources of `each` bytes.
fn namespace(count: usize, each: u64) -> NamespaceSources {
    NamespaceSources {
        count,
        bytes: count as u64 * each,
    }
}

/// How `batch` is read from a namespace of two small sources.
fn plan_small<W>(batch: &Batch<W>) -> ReadPlan {
    batch.plan(namespace(2, 1), |_| 1, PAGE_BYTES)
}

#[test]
fn a_list_is_no_older_than_the_newest_version_any_waiter_cached() {
    let batch = batch(&[("a", Some("900")), ("b", Some("1200")), ("a", Some("1000"))]);
    assert_eq!(
        plan_small(&batch),
        ReadPlan::List {
            not_older_than: Some("1200".into()),
            page_size: MOST_PER_PAGE,
        }
    );
}

#[test]
fn a_waiter_without_a_comparable_version_asks_for_a_consistent_list() {
    let unversioned = batch(&[("a", Some("900")), ("b", None)]);
    assert_eq!(
        plan_small(&unversioned),
        ReadPlan::List {
            not_older_than: None,
            page_size: MOST_PER_PAGE,
        }
    );
    // The order of arrival does not matter.
    let opaque = batch(&[("a", Some("opaque")), ("a", Some("900"))]);
    assert_eq!(
        plan_small(&opaque),
        ReadPlan::List {
            not_older_than: None,
            page_size: MOST_PER_PAGE,
        }
    );
}

#[test]
fn a_namespace_holding_many_sources_more_than_are_waited_for_is_read_by_gets() {
    let two = batch(&[("a", Some("1")), ("b", Some("2"))]);
    let listable = 2 * SOURCES_LISTED_PER_WAITER;
    let plan = |count| two.plan(namespace(count, 1), |_| 1, PAGE_BYTES);
    assert!(matches!(plan(listable), ReadPlan::List { .. }));
    assert_eq!(plan(listable + 1), ReadPlan::EachGet);
}

/// The attack this answers: 100 sources of 1 MB in one namespace, one of
/// them changed. A LIST would hold 99 MB that no write needs.
#[test]
fn a_namespace_whose_other_sources_hold_more_than_the_bound_is_read_by_gets() {
    const MB: u64 = 1_000_000;
    let one = batch(&[("s0", Some("1"))]);
    let plan = |held| one.plan(held, |_| MB, PAGE_BYTES);
    assert_eq!(plan(namespace(100, MB)), ReadPlan::EachGet);
    // Two big sources beside the one waited for are already too many.
    assert_eq!(plan(namespace(3, MB)), ReadPlan::EachGet);
    // One beside it, or any number of small ones, may be listed.
    assert!(matches!(plan(namespace(2, MB)), ReadPlan::List { .. }));
    let small_others = NamespaceSources {
        count: 8,
        bytes: MB + 7 * 1_000,
    };
    assert!(matches!(plan(small_others), ReadPlan::List { .. }));
}

/// Every source waited for is written anyway: what bounds a LIST is what
/// else it holds, not the sum.
#[test]
fn big_sources_all_waited_for_are_listed_in_pages_of_a_few() {
    const MIB: u64 = 1 << 20;
    let names: Vec<String> = (0..10).map(|i| format!("s{i}")).collect();
    let waiting: Vec<(&str, Option<&str>)> =
        names.iter().map(|n| (n.as_str(), Some("1"))).collect();
    let all = batch(&waiting);
    assert_eq!(
        all.plan(namespace(10, MIB), |_| MIB, PAGE_BYTES),
        ReadPlan::List {
            not_older_than: Some("1".into()),
            page_size: 4,
        }
    );
}

#[test]
fn a_page_holds_about_its_bytes_by_the_mean_source_and_at_least_one() {
    assert_eq!(page_size(namespace(0, 0), PAGE_BYTES), MOST_PER_PAGE);
    assert_eq!(page_size(namespace(3, 0), PAGE_BYTES), MOST_PER_PAGE);
    assert_eq!(page_size(namespace(10_000, 100), PAGE_BYTES), MOST_PER_PAGE);
    assert_eq!(page_size(namespace(6, 1), 2), 2);
    assert_eq!(page_size(namespace(2, 10 * PAGE_BYTES), PAGE_BYTES), 1);
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
    assert!(!may_list(10_000, 16));
    assert!(may_list(16 * SOURCES_LISTED_PER_WAITER, 16));
    assert!(may_list(0, 16), "an empty namespace");
    assert!(may_list(10_000, usize::MAX), "no bound on waiters");
}
