//! Where a ClusterMirror's copies stood after its last reconcile that
//! compared them all, kept so that one woken by a few of its copies (a heal)
//! compares those alone and still reports the whole. Pure.
//!
//! At 10,000 selected namespaces, comparing every copy because one was
//! deleted would make each heal cost the whole fan-out. What the status
//! needs of the others is how many are selected and which are not in sync;
//! a copy changing does not change what is selected, and everything that
//! does (the spec, the source, a namespace, a list, a retry) compares all.

use std::collections::BTreeMap;

use super::status::{Failure, Tally};

/// What the last full comparison found, for the request and source it was
/// made from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Standing {
    made_from: MadeFrom,
    selected: usize,
    failures: BTreeMap<String, Failure>,
}

/// The ClusterMirror's generation and the source's uid and resourceVersion
/// a comparison was made from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MadeFrom {
    pub generation: Option<i64>,
    pub source_uid: Option<String>,
    pub source_version: Option<String>,
}

impl Standing {
    /// Where the copies stand after a full comparison that found `tally`,
    /// if a narrower one may build on it: not while a failure waits for a
    /// retry, which compares everything again.
    pub fn after_full(made_from: MadeFrom, tally: &Tally) -> Option<Standing> {
        if tally.failures.iter().any(|failure| failure.retried) {
            return None;
        }
        Some(Standing {
            made_from,
            selected: tally.selected,
            failures: tally
                .failures
                .iter()
                .map(|failure| (failure.namespace.clone(), failure.clone()))
                .collect(),
        })
    }

    /// Whether a reconcile of the request and source `now` may build on it.
    pub fn holds_for(&self, now: &MadeFrom) -> bool {
        self.made_from == *now
    }

    /// The copy in `namespace`, selected before and still, was compared
    /// again: in sync (None) or failing.
    pub fn compared(&mut self, namespace: &str, failure: Option<Failure>) {
        match failure {
            Some(failure) => self.failures.insert(namespace.to_owned(), failure),
            None => self.failures.remove(namespace),
        };
    }

    /// The whole, as a full comparison would count it now.
    pub fn tally(&self) -> Tally {
        Tally {
            selected: self.selected,
            synced: self.selected.saturating_sub(self.failures.len()),
            failures: self.failures.values().cloned().collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn made_from(generation: i64, version: &str) -> MadeFrom {
        MadeFrom {
            generation: Some(generation),
            source_uid: Some("u1".into()),
            source_version: Some(version.into()),
        }
    }

    fn failure(namespace: &str, retried: bool) -> Failure {
        Failure {
            namespace: namespace.into(),
            reason: "NameTaken",
            message: format!("{namespace} is taken"),
            retried,
        }
    }

    fn tally(selected: usize, failures: Vec<Failure>) -> Tally {
        Tally {
            selected,
            synced: selected - failures.len(),
            failures,
        }
    }

    #[test]
    fn a_heal_and_a_new_failure_are_counted_into_the_whole() {
        let full = tally(5, vec![failure("b", false)]);
        let mut standing =
            Standing::after_full(made_from(1, "10"), &full).expect("no retry pending");
        assert_eq!(standing.tally(), full);
        standing.compared("b", None);
        assert_eq!(standing.tally(), tally(5, vec![]));
        standing.compared("d", Some(failure("d", false)));
        standing.compared("a", Some(failure("a", false)));
        let now = standing.tally();
        assert_eq!((now.selected, now.synced), (5, 3));
        let namespaces: Vec<&str> = now.failures.iter().map(|f| f.namespace.as_str()).collect();
        assert_eq!(
            namespaces,
            ["a", "d"],
            "sorted by namespace, as a full count"
        );
    }

    #[test]
    fn a_failure_waiting_for_its_retry_leaves_nothing_to_build_on() {
        let full = tally(3, vec![failure("a", false), failure("c", true)]);
        assert_eq!(Standing::after_full(made_from(1, "10"), &full), None);
    }

    #[test]
    fn it_holds_only_for_the_same_generation_and_source_version() {
        let standing =
            Standing::after_full(made_from(2, "10"), &tally(1, vec![])).expect("no retry pending");
        assert!(standing.holds_for(&made_from(2, "10")));
        assert!(!standing.holds_for(&made_from(3, "10")));
        assert!(!standing.holds_for(&made_from(2, "11")));
        let other_source = MadeFrom {
            source_uid: Some("u2".into()),
            ..made_from(2, "10")
        };
        assert!(!standing.holds_for(&other_source));
    }
}
