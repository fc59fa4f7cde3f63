//! What each object's pending reconcile was asked for (a source's sync,
//! keyed by the source; a ClusterMirror's, keyed by its name): when first,
//! so that the reconcile serving it can measure how long its copies took to
//! follow (`configmap_mirror_heal_duration_seconds`): from the wakeup,
//! through the wait at the door and in kube-runtime's scheduler, to the end
//! of the reconcile; and which of its copies (`decisions::scope`). The
//! scheduler merges wakeups of one object that wait together into one
//! reconcile, which is timed from the earliest and compares what all of
//! them ask.

use std::{
    collections::HashMap,
    hash::Hash,
    sync::{Mutex, MutexGuard, PoisonError},
    time::Instant,
};

use crate::decisions::scope::{Reach, Scope};

/// The pending wakeups of the objects one loop reconciles, by `Key`.
pub struct PendingScopes<Key> {
    pending: Mutex<HashMap<Key, Pending>>,
}

/// What the wakeups waiting for one object's next reconcile ask.
struct Pending {
    /// The earliest of them; none for a retry, which no event asked for.
    since: Option<Instant>,
    scope: Scope,
}

/// What a starting reconcile serves.
#[derive(Debug, PartialEq)]
pub struct Served {
    pub woken_at: Option<Instant>,
    pub scope: Scope,
}

impl<Key> Default for PendingScopes<Key> {
    fn default() -> Self {
        PendingScopes {
            pending: Mutex::default(),
        }
    }
}

impl<Key: Hash + Eq + Clone> PendingScopes<Key> {
    /// The loop took a wakeup of `object` queued at `queued_at`, about
    /// `reach`.
    pub fn taken(&self, object: &Key, queued_at: Instant, reach: Reach) {
        self.lock()
            .entry(object.clone())
            .and_modify(|pending| {
                pending.since = Some(pending.since.map_or(queued_at, |s| s.min(queued_at)));
                pending.scope.widen(reach.clone());
            })
            .or_insert_with(|| Pending {
                since: Some(queued_at),
                scope: Scope::of(reach),
            });
    }

    /// A reconcile of `object` failed and will be retried: the retry
    /// compares everything, whatever else wakes it before then.
    pub fn retried(&self, object: &Key) {
        self.lock()
            .entry(object.clone())
            .and_modify(|pending| pending.scope.widen(Reach::Everything))
            .or_insert(Pending {
                since: None,
                scope: Scope::Everything,
            });
    }

    /// A reconcile of `object` starts: it serves every wakeup taken so
    /// far, and one taken while it runs waits for the next. One that no
    /// wakeup explains compares everything.
    pub fn reconcile_started(&self, object: &Key) -> Served {
        match self.lock().remove(object) {
            Some(pending) => Served {
                woken_at: pending.since,
                scope: pending.scope,
            },
            None => Served {
                woken_at: None,
                scope: Scope::unexplained(),
            },
        }
    }

    /// `object` left the cache before a reconcile could serve it.
    pub fn forget(&self, object: &Key) {
        self.lock().remove(object);
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<Key, Pending>> {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::runtime::reflector::ObjectRef;

    use std::collections::BTreeSet;

    use super::*;

    fn colors() -> ObjectRef<ConfigMap> {
        ObjectRef::new("colors").within("default")
    }

    fn in_namespace(name: &str) -> Reach {
        Reach::Namespace(name.to_owned())
    }

    #[test]
    fn a_reconcile_is_timed_from_the_earliest_wakeup_it_serves() {
        let woken = PendingScopes::<ObjectRef<ConfigMap>>::default();
        let first = Instant::now() - Duration::from_secs(5);
        woken.taken(&colors(), first, Reach::Everything);
        woken.taken(&colors(), first + Duration::from_secs(2), Reach::Everything);
        woken.taken(
            &ObjectRef::new("other").within("default"),
            first,
            Reach::Everything,
        );
        assert_eq!(woken.reconcile_started(&colors()).woken_at, Some(first));
        assert_eq!(woken.reconcile_started(&colors()).woken_at, None);
        assert_eq!(woken.len(), 1);
    }

    #[test]
    fn a_wakeup_taken_during_a_reconcile_is_served_by_the_next() {
        let woken = PendingScopes::<ObjectRef<ConfigMap>>::default();
        let first = Instant::now() - Duration::from_secs(5);
        woken.taken(&colors(), first, in_namespace("a"));
        assert_eq!(woken.reconcile_started(&colors()).woken_at, Some(first));
        let during = first + Duration::from_secs(1);
        woken.taken(&colors(), during, in_namespace("b"));
        assert_eq!(
            woken.reconcile_started(&colors()),
            Served {
                woken_at: Some(during),
                scope: Scope::Namespaces(BTreeSet::from(["b".to_owned()])),
            }
        );
    }

    #[test]
    fn an_object_gone_from_the_cache_is_forgotten() {
        let woken = PendingScopes::<ObjectRef<ConfigMap>>::default();
        woken.taken(&colors(), Instant::now(), Reach::Everything);
        woken.forget(&colors());
        assert_eq!(woken.len(), 0);
    }

    #[test]
    fn wakeups_about_copies_merge_into_the_namespaces_of_those_copies() {
        let woken = PendingScopes::<ObjectRef<ConfigMap>>::default();
        let now = Instant::now();
        woken.taken(&colors(), now, in_namespace("a"));
        woken.taken(&colors(), now, in_namespace("b"));
        assert_eq!(
            woken.reconcile_started(&colors()).scope,
            Scope::Namespaces(BTreeSet::from(["a".to_owned(), "b".to_owned()]))
        );
        woken.taken(&colors(), now, in_namespace("a"));
        woken.taken(&colors(), now, Reach::Everything);
        assert_eq!(woken.reconcile_started(&colors()).scope, Scope::Everything);
    }

    #[test]
    fn a_retry_compares_everything_even_when_a_copy_wakes_it_first() {
        let woken = PendingScopes::<ObjectRef<ConfigMap>>::default();
        woken.retried(&colors());
        woken.taken(&colors(), Instant::now(), in_namespace("a"));
        assert_eq!(woken.reconcile_started(&colors()).scope, Scope::Everything);
        woken.taken(&colors(), Instant::now(), in_namespace("a"));
        woken.retried(&colors());
        assert_eq!(woken.reconcile_started(&colors()).scope, Scope::Everything);
    }

    #[test]
    fn a_reconcile_without_a_wakeup_compares_everything() {
        let woken = PendingScopes::<ObjectRef<ConfigMap>>::default();
        assert_eq!(
            woken.reconcile_started(&colors()),
            Served {
                woken_at: None,
                scope: Scope::Everything
            }
        );
    }
}
