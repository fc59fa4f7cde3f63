//! The ClusterMirror deletions this process saw happen, by uid, and the
//! names whose orphans it has told about.
//!
//! A deletion is remembered with the uid of the CRD that was live when it
//! was seen. It removes copies only once a read of the CRD made after it
//! finds that same CRD live: a CRD deleted (or deleted and created again)
//! meanwhile took the ClusterMirror with it, and its copies stay, as
//! orphans. That answer, once read, is kept: the CRD coming back later
//! never turns such a deletion into a reason to remove anything.
//!
//! The CRD watch and the ClusterMirror watch are two streams: when a CRD is
//! replaced quickly, the CRD watch may already report the new CRD when the
//! old ClusterMirrors' deletions arrive. So a deletion counts only for a
//! ClusterMirror created no earlier than the live CRD: the API server's
//! own timestamps, whatever order the watches deliver them in.

use std::{
    collections::{HashMap, HashSet},
    sync::{Arc, Mutex, MutexGuard, PoisonError},
};

use k8s_openapi::jiff::Timestamp;

use crate::{
    api::DeletionPolicy, decisions::cluster_mirror::LiveCrd, decisions::copy_verdict::Witnessed,
    decisions::request_key::RequestKey,
};

/// One deletion seen.
#[derive(Debug, Clone)]
struct Deletion {
    key: RequestKey,
    policy: DeletionPolicy,
    /// The CRD live when it was seen, by uid; None if none was known.
    crd_uid: Option<String>,
    /// When the ClusterMirror was created.
    created: Option<Timestamp>,
    /// Whether it was proven made under `crd_uid` (by reads, see
    /// `ClusterMirrors::prove_made_under`): then that uid alone tells.
    proven: bool,
    /// What the CRD read since says (see [`Witnessed::crd_live`]).
    crd_live: Option<bool>,
}

#[derive(Clone, Default)]
pub struct Deletions {
    /// By the ClusterMirror's uid.
    seen: Arc<Mutex<HashMap<String, Deletion>>>,
    /// The ClusterMirror names whose orphans were told about, until a
    /// ClusterMirror of the name appears again.
    told: Arc<Mutex<HashSet<RequestKey>>>,
    /// The ClusterMirrors read absent that nobody saw go, by name and
    /// uid: the CRD live when read.
    absent: Arc<Mutex<HashMap<NameAndUid, Option<String>>>>,
}

type NameAndUid = (RequestKey, String);

/// How many ClusterMirrors read absent are remembered at most (a few
/// hundred bytes each).
const MAX_ABSENT: usize = 4096;

impl Deletions {
    /// The ClusterMirror `name` (`uid`, made at `created`) was seen
    /// deleted, asking `policy`, while the CRD `crd_uid` was live, or
    /// (`proven`) having been proven made under it.
    pub fn record(
        &self,
        key: &RequestKey,
        uid: &str,
        policy: DeletionPolicy,
        (crd_uid, proven): (Option<String>, bool),
        created: Option<Timestamp>,
    ) {
        let deletion = Deletion {
            key: key.clone(),
            policy,
            crd_uid,
            created,
            proven,
            crd_live: None,
        };
        lock(&self.seen).insert(uid.to_owned(), deletion);
    }

    /// The ClusterMirror `name` (`uid`) was read absent though nobody saw
    /// it go, and the CRD read after that was `live` (its uid; None: none
    /// live). Kept apart from the deletions seen, and by name and uid both,
    /// as copies claim them: what one copy's claim found answers only
    /// copies making the same claim, each by the CRD its own mark names.
    pub fn found_absent(&self, key: &RequestKey, uid: &str, live: Option<String>) {
        let mut absent = lock(&self.absent);
        // Each entry costs two reads to find again: past the bound (copies
        // forged in their thousands), all are forgotten at once.
        if absent.len() >= MAX_ABSENT {
            absent.clear();
        }
        absent.insert((key.clone(), uid.to_owned()), live);
    }

    /// What was read when the ClusterMirror `name` (`uid`) was found
    /// absent: the CRD then live, if any; None if it was not read.
    pub fn absent_under(&self, key: &RequestKey, uid: &str) -> Option<Option<String>> {
        lock(&self.absent)
            .get(&(key.clone(), uid.to_owned()))
            .cloned()
    }

    /// The deletion of the ClusterMirror `name` whose uid is `uid`, if seen.
    pub fn of(&self, key: &RequestKey, uid: &str) -> Option<Witnessed> {
        let seen = lock(&self.seen);
        let deletion = seen.get(uid).filter(|d| d.key == *key)?;
        Some(Witnessed {
            policy: deletion.policy,
            crd_live: deletion.crd_live,
        })
    }

    /// Whether the deletion of `uid` was made by someone while its CRD was
    /// live, given `live`, the CRD read live since (None: missing or being
    /// deleted); the first answer stays. False for a deletion not seen.
    pub fn settle(&self, uid: &str, live: Option<&LiveCrd>) -> bool {
        let mut seen = lock(&self.seen);
        let Some(deletion) = seen.get_mut(uid) else {
            return false;
        };
        *deletion.crd_live.get_or_insert_with(|| {
            live.is_some_and(|live| {
                deletion.crd_uid.as_deref() == Some(live.uid.as_str())
                    && (deletion.proven || live.may_hold(deletion.created))
            })
        })
    }

    /// Whether the orphans of `name` are to be told about now: once, until
    /// a ClusterMirror of that name appears again.
    pub fn first_orphaned(&self, key: &RequestKey) -> bool {
        lock(&self.told).insert(key.clone())
    }

    /// A ClusterMirror called `key` is there.
    pub fn appeared(&self, key: &RequestKey) {
        lock(&self.told).remove(key);
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(name: &str) -> RequestKey {
        RequestKey::cluster_mirror(name)
    }

    fn at(seconds: i64) -> Option<Timestamp> {
        Timestamp::from_second(seconds).ok()
    }

    fn crd(uid: &str, created: i64) -> LiveCrd {
        LiveCrd {
            uid: uid.into(),
            created: at(created),
        }
    }

    #[test]
    fn a_deletion_removes_copies_only_if_the_same_crd_was_live_after_it() {
        let deletions = Deletions::default();
        let delete = DeletionPolicy::Delete;
        deletions.record(
            &k("ca"),
            "u1",
            delete,
            (Some("crd-1".into()), false),
            at(200),
        );
        assert_eq!(deletions.of(&k("other"), "u1"), None, "bound by name too");
        assert_eq!(deletions.of(&k("ca"), "u2"), None, "and by uid");
        assert_eq!(
            deletions.of(&k("ca"), "u1").map(|w| w.crd_live),
            Some(None),
            "not read yet"
        );
        assert!(
            !deletions.settle("u1", Some(&crd("crd-2", 300))),
            "a CRD deleted and created again"
        );
        assert!(
            !deletions.settle("u1", Some(&crd("crd-1", 100))),
            "the first answer stays"
        );
        assert_eq!(
            deletions.of(&k("ca"), "u1").and_then(|w| w.crd_live),
            Some(false)
        );

        deletions.record(
            &k("ca"),
            "u3",
            DeletionPolicy::Orphan,
            (Some("crd-1".into()), false),
            at(200),
        );
        assert!(deletions.settle("u3", Some(&crd("crd-1", 100))));
        assert!(deletions.settle("u3", None), "the first answer stays");
        deletions.record(&k("db"), "u4", delete, (None, false), at(200));
        assert!(!deletions.settle("u4", None), "no CRD known: kept");
        assert!(
            !deletions.settle("u5", Some(&crd("crd-1", 100))),
            "never seen"
        );
    }

    #[test]
    fn an_absence_read_answers_only_the_same_claim_and_never_a_deletion_seen() {
        let deletions = Deletions::default();
        assert_eq!(deletions.absent_under(&k("ca"), "u1"), None);
        deletions.found_absent(&k("ca"), "u1", Some("crd-1".into()));
        assert_eq!(
            deletions.absent_under(&k("ca"), "u1"),
            Some(Some("crd-1".into()))
        );
        // A claim of another name (a forged copy's, say) answers nothing of
        // the ClusterMirror `ca`, and is no deletion seen.
        deletions.found_absent(&k("zzz"), "u2", Some("crd-1".into()));
        assert_eq!(deletions.absent_under(&k("ca"), "u2"), None);
        assert_eq!(deletions.of(&k("zzz"), "u2"), None);
        assert_eq!(deletions.of(&k("ca"), "u2"), None);
        for i in 0..MAX_ABSENT {
            deletions.found_absent(&k("n"), &format!("u{i}"), None);
        }
        assert!(lock(&deletions.absent).len() <= MAX_ABSENT, "bounded");
    }

    #[test]
    fn a_crd_replaced_before_the_old_deletions_arrive_removes_no_copy() {
        let deletions = Deletions::default();
        // The CRD watch already reports the new CRD (made at 300) when the
        // deletion of a ClusterMirror made under the old one (at 200)
        // arrives: the uids agree, the times do not.
        let replaced = crd("crd-2", 300);
        deletions.record(
            &k("ca"),
            "u1",
            DeletionPolicy::Delete,
            (Some("crd-2".into()), false),
            at(200),
        );
        assert!(!deletions.settle("u1", Some(&replaced)));
        // One made under the new CRD, the same second included, is deleted.
        deletions.record(
            &k("ca"),
            "u2",
            DeletionPolicy::Delete,
            (Some("crd-2".into()), false),
            at(300),
        );
        assert!(deletions.settle("u2", Some(&replaced)));
        deletions.record(
            &k("db"),
            "u3",
            DeletionPolicy::Delete,
            (Some("crd-2".into()), false),
            None,
        );
        assert!(!deletions.settle("u3", Some(&replaced)), "no time: kept");
        // Proven made under the CRD (by reads), its uid alone tells: the
        // same second or not, and a CRD made again has another uid.
        let proven = (Some("crd-2".into()), true);
        deletions.record(
            &k("ca"),
            "u4",
            DeletionPolicy::Delete,
            proven.clone(),
            at(200),
        );
        assert!(deletions.settle("u4", Some(&replaced)));
        deletions.record(&k("ca"), "u5", DeletionPolicy::Delete, proven, at(300));
        assert!(!deletions.settle("u5", Some(&crd("crd-3", 300))));
    }

    #[test]
    fn orphans_are_told_once_per_name_until_it_appears_again() {
        let deletions = Deletions::default();
        assert!(deletions.first_orphaned(&k("ca")));
        assert!(!deletions.first_orphaned(&k("ca")));
        assert!(deletions.first_orphaned(&k("db")));
        deletions.appeared(&k("ca"));
        assert!(deletions.first_orphaned(&k("ca")));
    }
}
