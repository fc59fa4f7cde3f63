//! Where a ClusterMirror's copies stood after its last reconcile that
//! compared them all, kept so that one woken by a few of its copies (a heal)
//! compares those alone and still reports the whole. Pure.
//!
//! At 10,000 selected namespaces, comparing every copy because one was
//! deleted would make each heal cost the whole fan-out. What the status
//! needs of the others is how many are selected and which are not in sync;
//! a copy changing does not change what is selected, and everything that
//! does (the spec, the source, a namespace, a list, a retry) compares all.
//!
//! Only a full comparison that found every copy in sync is built on: a
//! failure (a name someone else holds, a write refused) is looked at again
//! by the next wakeup of any kind, as nothing else may wake its namespace
//! (a name freed, a refusal lifted). A namespace leaving the selection
//! wakes every ClusterMirror that asked for it, which compares all.

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

/// The ClusterMirror (uid, generation) and the source (uid,
/// resourceVersion) a comparison was made from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MadeFrom {
    pub uid: String,
    pub generation: Option<i64>,
    pub source_uid: Option<String>,
    pub source_version: Option<String>,
}

impl Standing {
    /// Where the copies stand after a full comparison that found `tally`,
    /// if a narrower one may build on it: only when every copy was in sync.
    pub fn after_full(made_from: MadeFrom, tally: &Tally) -> Option<Standing> {
        if !tally.failures.is_empty() || tally.synced != tally.selected {
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
            uid: "cm1".into(),
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
        let full = tally(5, vec![]);
        let mut standing = Standing::after_full(made_from(1, "10"), &full).expect("all in sync");
        assert_eq!(standing.tally(), full);
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
        standing.compared("d", None);
        assert_eq!(standing.tally(), tally(5, vec![failure("a", false)]));
    }

    #[test]
    fn a_full_comparison_with_any_copy_out_of_sync_leaves_nothing_to_build_on() {
        for failures in [vec![failure("a", false)], vec![failure("c", true)]] {
            assert_eq!(
                Standing::after_full(made_from(1, "10"), &tally(3, failures)),
                None
            );
        }
        let suspended_like = Tally {
            selected: 3,
            synced: 2,
            failures: Vec::new(),
        };
        assert_eq!(
            Standing::after_full(made_from(1, "10"), &suspended_like),
            None
        );
    }

    #[test]
    fn it_holds_only_for_the_same_generation_and_source_version() {
        let standing =
            Standing::after_full(made_from(2, "10"), &tally(1, vec![])).expect("all in sync");
        assert!(standing.holds_for(&made_from(2, "10")));
        assert!(!standing.holds_for(&made_from(3, "10")));
        assert!(!standing.holds_for(&made_from(2, "11")));
        let other_source = MadeFrom {
            source_uid: Some("u2".into()),
            ..made_from(2, "10")
        };
        assert!(!standing.holds_for(&other_source));
        let recreated = MadeFrom {
            uid: "cm2".into(),
            ..made_from(2, "10")
        };
        assert!(
            !standing.holds_for(&recreated),
            "a ClusterMirror made again"
        );
    }
}
