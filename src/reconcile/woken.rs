//! When each source's pending sync was first asked for, so that the
//! reconcile serving it can measure how long its copies took to follow
//! (`configmap_mirror_heal_duration_seconds`): from the wakeup, through the
//! wait at the door and in kube-runtime's scheduler, to the end of the
//! reconcile. The scheduler merges wakeups of one object that wait
//! together into one reconcile, which is timed from the earliest.

use std::{
    collections::HashMap,
    sync::{Mutex, MutexGuard, PoisonError},
    time::Instant,
};

use kube::runtime::reflector::ObjectRef;

use crate::kind::MirroredKind;

pub struct Woken<K: MirroredKind> {
    since: Mutex<HashMap<ObjectRef<K>, Instant>>,
}

impl<K: MirroredKind> Default for Woken<K> {
    fn default() -> Self {
        Woken {
            since: Mutex::default(),
        }
    }
}

impl<K: MirroredKind> Woken<K> {
    /// The sync loop took a wakeup of `object` queued at `queued_at`.
    pub fn taken(&self, object: &ObjectRef<K>, queued_at: Instant) {
        self.lock()
            .entry(object.clone())
            .and_modify(|earliest| *earliest = (*earliest).min(queued_at))
            .or_insert(queued_at);
    }

    /// A reconcile of `object` starts: it serves every wakeup taken so
    /// far, and one taken while it runs waits for the next.
    pub fn reconcile_started(&self, object: &ObjectRef<K>) -> Option<Instant> {
        self.lock().remove(object)
    }

    /// `object` left the cache before a reconcile could serve it.
    pub fn forget(&self, object: &ObjectRef<K>) {
        self.lock().remove(object);
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<ObjectRef<K>, Instant>> {
        self.since.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use k8s_openapi::api::core::v1::ConfigMap;

    use super::*;

    fn colors() -> ObjectRef<ConfigMap> {
        ObjectRef::new("colors").within("default")
    }

    #[test]
    fn a_reconcile_is_timed_from_the_earliest_wakeup_it_serves() {
        let woken = Woken::<ConfigMap>::default();
        let first = Instant::now() - Duration::from_secs(5);
        woken.taken(&colors(), first);
        woken.taken(&colors(), first + Duration::from_secs(2));
        woken.taken(&ObjectRef::new("other").within("default"), first);
        assert_eq!(woken.reconcile_started(&colors()), Some(first));
        assert_eq!(woken.reconcile_started(&colors()), None);
        assert_eq!(woken.len(), 1);
    }

    #[test]
    fn a_wakeup_taken_during_a_reconcile_is_served_by_the_next() {
        let woken = Woken::<ConfigMap>::default();
        let first = Instant::now() - Duration::from_secs(5);
        woken.taken(&colors(), first);
        assert_eq!(woken.reconcile_started(&colors()), Some(first));
        let during = first + Duration::from_secs(1);
        woken.taken(&colors(), during);
        assert_eq!(woken.reconcile_started(&colors()), Some(during));
    }

    #[test]
    fn an_object_gone_from_the_cache_is_forgotten() {
        let woken = Woken::<ConfigMap>::default();
        woken.taken(&colors(), Instant::now());
        woken.forget(&colors());
        assert_eq!(woken.len(), 0);
    }
}
