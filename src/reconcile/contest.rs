//! Fights over a copy: someone else (another controller, an admission
//! mutator, a GitOps tool holding an older export, a person in a loop)
//! keeps undoing what the controller wrote.
//!
//! Every write the controller makes to a copy is recorded by the copy's
//! name (a recreated copy has a new uid; its name is what is fought over),
//! with a fingerprint of what the write made the copy. A write that makes
//! the copy what the previous write had already made it undoes someone
//! else's change: a restore, whatever form it takes (an update, a delete to
//! recreate a copy frozen by someone, a create of a copy deleted by
//! someone). A write after the source changed has a new fingerprint and is
//! no fight. More than [`CONTEST_LIMIT`] restores within [`CONTEST_WINDOW`]
//! make the copy contested: it is then restored only with the slow backoff,
//! and a Warning says so.

use std::{
    collections::{HashMap, VecDeque},
    hash::{DefaultHasher, Hash, Hasher},
    sync::{Mutex, MutexGuard, PoisonError},
    time::{Duration, Instant},
};

use crate::{
    contract::{CHECKSUM_ANNOTATION, MIRROR_OF_UID_ANNOTATION, annotation},
    kind::MirroredKind,
};

/// A copy restored this often within [`CONTEST_WINDOW`] is being fought
/// over: from then on it is restored with the slow backoff and a Warning.
pub const CONTEST_LIMIT: usize = 5;
pub const CONTEST_WINDOW: Duration = Duration::from_secs(60);

/// How a write changes a copy, as far as a fight is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteKind {
    Create,
    Replace,
    /// The first half of a recreate: the create that follows completes it
    /// and is no second restore.
    DeleteToRecreate,
}

/// What a write makes a copy: its content's checksum, whether it is
/// immutable, and the source it belongs to (by uid).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fingerprint(u64);

impl Fingerprint {
    pub fn of<K: MirroredKind>(copy: &K) -> Fingerprint {
        let meta = copy.meta();
        let owner = meta
            .owner_references
            .iter()
            .flatten()
            .find(|owner| owner.controller == Some(true))
            .map(|owner| owner.uid.as_str());
        let mut hasher = DefaultHasher::new();
        (
            annotation(meta, CHECKSUM_ANNOTATION),
            copy.is_immutable(),
            owner.or(annotation(meta, MIRROR_OF_UID_ANNOTATION)),
        )
            .hash(&mut hasher);
        Fingerprint(hasher.finish())
    }
}

#[derive(Debug)]
struct Written {
    fingerprint: Fingerprint,
    at: Instant,
    restores: VecDeque<Instant>,
    recreating: bool,
}

/// The recent writes of every copy written within the window.
#[derive(Debug, Default)]
pub struct Contests {
    copies: Mutex<Copies>,
}

#[derive(Debug, Default)]
struct Copies {
    by_name: HashMap<String, Written>,
    swept_at: Option<Instant>,
}

impl Contests {
    /// How often the copy `name` (`namespace/name`) was restored within the
    /// window at `now`, when that reaches [`CONTEST_LIMIT`] and a write of
    /// `fingerprint` would be one more restore: then it must not be made
    /// yet.
    pub fn contested(&self, name: &str, fingerprint: Fingerprint, now: Instant) -> Option<usize> {
        let copies = self.at(now);
        let written = copies.by_name.get(name)?;
        let restore = written.fingerprint == fingerprint && !written.recreating;
        let times = written
            .restores
            .iter()
            .filter(|t| now.saturating_duration_since(**t) <= CONTEST_WINDOW)
            .count();
        (restore && times >= CONTEST_LIMIT).then_some(times)
    }

    /// Records a write the API server applied. Only those count: a write
    /// refused as stale is no fight.
    pub fn wrote(&self, name: &str, fingerprint: Fingerprint, kind: WriteKind, now: Instant) {
        let mut copies = self.at(now);
        match copies.by_name.get_mut(name) {
            Some(written) => {
                let completes_recreate = written.recreating && kind == WriteKind::Create;
                if written.fingerprint == fingerprint && !completes_recreate {
                    written.restores.push_back(now);
                }
                written.fingerprint = fingerprint;
                written.at = now;
                written.recreating = kind == WriteKind::DeleteToRecreate;
            }
            None => {
                copies.by_name.insert(
                    name.to_owned(),
                    Written {
                        fingerprint,
                        at: now,
                        restores: VecDeque::new(),
                        recreating: kind == WriteKind::DeleteToRecreate,
                    },
                );
            }
        }
    }

    #[cfg(test)]
    fn remembered(&self) -> usize {
        self.lock().by_name.len()
    }

    /// The records at `now`: at most once a second, those of copies not
    /// written within the window are dropped, so the map follows the
    /// copies written lately, never every copy.
    fn at(&self, now: Instant) -> MutexGuard<'_, Copies> {
        let mut copies = self.lock();
        let due = copies
            .swept_at
            .is_none_or(|at| now.saturating_duration_since(at) >= Duration::from_secs(1));
        if due {
            copies.swept_at = Some(now);
            copies.by_name.retain(|_, written| {
                let fresh = |t: &Instant| now.saturating_duration_since(*t) <= CONTEST_WINDOW;
                while written.restores.front().is_some_and(|t| !fresh(t)) {
                    written.restores.pop_front();
                }
                fresh(&written.at) || !written.restores.is_empty()
            });
        }
        copies
    }

    fn lock(&self) -> MutexGuard<'_, Copies> {
        self.copies.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_fixtures::{mk_companion_of, mk_map, mk_source};
    use k8s_openapi::api::core::v1::ConfigMap;

    const NAME: &str = "ns/colors-synced";

    fn at(start: Instant, secs: u64) -> Instant {
        start + Duration::from_secs(secs)
    }

    fn companion(data: &str) -> ConfigMap {
        mk_companion_of(&mk_source("colors", &[("a", data)]))
    }

    /// Writes `fingerprint` as `kind` `times` times, one second apart, as
    /// long as the copy is not contested; returns how many were allowed.
    fn fight(
        contests: &Contests,
        fingerprint: Fingerprint,
        kinds: &[WriteKind],
        start: Instant,
    ) -> usize {
        let mut allowed = 0;
        for (i, kind) in kinds.iter().enumerate() {
            let now = at(start, i as u64);
            if contests.contested(NAME, fingerprint, now).is_some() {
                break;
            }
            contests.wrote(NAME, fingerprint, *kind, now);
            allowed += 1;
        }
        allowed
    }

    /// How many of ten writes of the companion holding `data`, each as
    /// `kind`, are allowed before it is contested.
    fn ten_writes(data: &str, kind: WriteKind) -> usize {
        let copy = Fingerprint::of(&companion(data));
        fight(&Contests::default(), copy, &[kind; 10], Instant::now())
    }

    #[test]
    fn writing_the_same_copy_again_and_again_is_a_fight() {
        assert_eq!(ten_writes("1", WriteKind::Replace), CONTEST_LIMIT + 1);
    }

    #[test]
    fn a_copy_deleted_over_and_over_is_a_fight_though_each_create_is_new() {
        assert_eq!(ten_writes("1", WriteKind::Create), CONTEST_LIMIT + 1);
    }

    #[test]
    fn a_copy_refrozen_over_and_over_is_a_fight_counted_once_per_recreate() {
        let contests = Contests::default();
        let copy = Fingerprint::of(&companion("1"));
        let start = Instant::now();
        contests.wrote(NAME, copy, WriteKind::Create, start);
        for round in 0..CONTEST_LIMIT {
            let now = at(start, round as u64 + 1);
            assert_eq!(contests.contested(NAME, copy, now), None, "round {round}");
            contests.wrote(NAME, copy, WriteKind::DeleteToRecreate, now);
            assert_eq!(
                contests.contested(NAME, copy, now),
                None,
                "the create completes it"
            );
            contests.wrote(NAME, copy, WriteKind::Create, now);
        }
        assert_eq!(
            contests.contested(NAME, copy, at(start, 10)),
            Some(CONTEST_LIMIT)
        );
    }

    #[test]
    fn following_the_source_is_no_fight_even_back_and_forth() {
        let contests = Contests::default();
        let start = Instant::now();
        for i in 0..20 {
            let copy = Fingerprint::of(&companion(if i % 2 == 0 { "1" } else { "2" }));
            assert_eq!(contests.contested(NAME, copy, at(start, i)), None);
            contests.wrote(NAME, copy, WriteKind::Replace, at(start, i));
        }
    }

    #[test]
    fn restoring_after_someone_brought_back_an_older_copy_counts() {
        // The older copy is consistent (its data under its own checksum):
        // it looks like a source change, but the controller already wrote
        // the newer fingerprint, so writing it again is a restore.
        assert_eq!(ten_writes("2", WriteKind::Replace), CONTEST_LIMIT + 1);
    }

    #[test]
    fn the_fingerprint_follows_content_immutability_and_owner() {
        let plain = companion("1");
        let mut frozen = plain.clone();
        frozen.immutable = Some(true);
        let mut other_owner = plain.clone();
        for owner in other_owner.metadata.owner_references.iter_mut().flatten() {
            owner.uid = "uid-2".into();
        }
        let mut relabeled = plain.clone();
        relabeled.metadata.labels = Some(mk_map(&[("x", "y")]));
        assert_ne!(Fingerprint::of(&plain), Fingerprint::of(&companion("2")));
        assert_ne!(Fingerprint::of(&plain), Fingerprint::of(&frozen));
        assert_ne!(Fingerprint::of(&plain), Fingerprint::of(&other_owner));
        assert_eq!(Fingerprint::of(&plain), Fingerprint::of(&relabeled));
    }

    #[test]
    fn records_age_out_of_the_window() {
        let contests = Contests::default();
        let copy = Fingerprint::of(&companion("1"));
        let start = Instant::now();
        fight(&contests, copy, &[WriteKind::Replace; 10], start);
        assert!(contests.contested(NAME, copy, at(start, 10)).is_some());
        let later = start + CONTEST_WINDOW * 2;
        assert_eq!(contests.contested(NAME, copy, later), None);
        assert_eq!(contests.remembered(), 0);
    }
}
