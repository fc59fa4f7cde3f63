//! How much of a source's copies its next reconcile compares. Pure.
//!
//! A source that mirrors into 10,000 namespaces has 10,000 copies to
//! compare; doing so because one of them was deleted would make every heal
//! cost as much as the source's whole fan-out. A wakeup therefore says what
//! it is about ([`Reach`]): a copy's event or a namespace's change is about
//! one namespace, anything else (the source changed, a list completed, a
//! retry) about everything. Wakeups that wait together merge into one
//! [`Scope`], and a scope never narrows: once anything asks for
//! everything, the reconcile compares everything.
//!
//! A retry always compares everything, so a narrowed reconcile only ever
//! follows a reconcile that succeeded: what it leaves out was in place
//! then, and any change to it since wakes the source with its own reach.

use std::collections::BTreeSet;

/// What one wakeup of a source is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reach {
    /// Every copy of the source: the source itself changed, the caches were
    /// listed again, or a reconcile is retried.
    Everything,
    /// The source's copy in this namespace (its companion, when it is the
    /// source's own namespace).
    Namespace(String),
}

/// What a reconcile compares: the merge of the wakeups it serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    Everything,
    /// The companion, and the mirrors in these namespaces only.
    Namespaces(BTreeSet<String>),
}

impl Scope {
    /// The scope of a reconcile that no recorded wakeup explains (a retry,
    /// or a wakeup not made by a watch event): everything.
    pub fn unexplained() -> Scope {
        Scope::Everything
    }

    /// The scope of one wakeup.
    pub fn of(reach: Reach) -> Scope {
        match reach {
            Reach::Everything => Scope::Everything,
            Reach::Namespace(namespace) => Scope::Namespaces(BTreeSet::from([namespace])),
        }
    }

    /// This scope widened by one more wakeup.
    pub fn widen(&mut self, reach: Reach) {
        match (&mut *self, reach) {
            (Scope::Everything, _) => {}
            (Scope::Namespaces(_), Reach::Everything) => *self = Scope::Everything,
            (Scope::Namespaces(namespaces), Reach::Namespace(namespace)) => {
                namespaces.insert(namespace);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn in_namespace(name: &str) -> Reach {
        Reach::Namespace(name.to_owned())
    }

    #[test]
    fn wakeups_about_namespaces_add_up() {
        let mut scope = Scope::of(in_namespace("a"));
        scope.widen(in_namespace("b"));
        scope.widen(in_namespace("a"));
        assert_eq!(
            scope,
            Scope::Namespaces(BTreeSet::from(["a".to_owned(), "b".to_owned()]))
        );
    }

    #[test]
    fn one_wakeup_about_everything_makes_the_whole_scope() {
        let mut scope = Scope::of(in_namespace("a"));
        scope.widen(Reach::Everything);
        assert_eq!(scope, Scope::Everything);
        scope.widen(in_namespace("b"));
        assert_eq!(scope, Scope::Everything, "a scope never narrows");
    }

    #[test]
    fn a_reconcile_no_wakeup_explains_compares_everything() {
        assert_eq!(Scope::unexplained(), Scope::Everything);
        assert_eq!(Scope::of(Reach::Everything), Scope::Everything);
    }
}
