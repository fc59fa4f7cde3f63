//! The marks a ClusterMirror's copy bears for its ClusterMirror: the uid
//! it is bound to, what its deletion does and the CRD it was made under,
//! and their removal when the copy is released.

use std::collections::BTreeMap;

use k8s_openapi::{apimachinery::pkg::apis::meta::v1::ObjectMeta, jiff::Timestamp};

use crate::{
    api::DeletionPolicy,
    contract::{
        CONTROLLER_KEY_PREFIX, DELETION_POLICY_ANNOTATION, MANAGED_BY_LABEL,
        MIRROR_OF_UID_ANNOTATION, WRITTEN_UNDER_CRD_ANNOTATION, annotation,
    },
};

/// The uid of the ClusterMirror a copy is bound to: the part of its
/// `mirror-of-uid` after the source's (see [`Request::bound_uid`]).
///
/// [`Request::bound_uid`]: super::Request::bound_uid
pub fn bound_cluster_mirror_uid(copy: &ObjectMeta) -> Option<&str> {
    let (_, uid) = annotation(copy, MIRROR_OF_UID_ANNOTATION)?.split_once('.')?;
    (!uid.is_empty()).then_some(uid)
}

/// The CRD as read live (there, not being deleted): its uid and when it
/// was created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveCrd {
    pub uid: String,
    pub created: Option<Timestamp>,
}

impl LiveCrd {
    /// Whether an object made at `created` can have been made under this
    /// CRD: not before it (the same second is allowed, timestamps having
    /// whole seconds). Unknown times say no.
    pub fn may_hold(&self, created: Option<Timestamp>) -> bool {
        created
            .zip(self.created)
            .is_some_and(|(created, crd_created)| created >= crd_created)
    }
}

/// What a copy records of its ClusterMirror's end: what its deletion does
/// to the copy, and the CRD it was made under (proven by reads, not told
/// by timestamps: see `ClusterMirrors::made_under`). With it, a ClusterMirror
/// absent while that same CRD is live was deleted by someone, seen or not
/// (a CRD's deletion takes its objects first, and one made again has
/// another uid). A copy written before this mark, or while the CRD was
/// unknown, has none: its ClusterMirror's absence unseen leaves it an
/// orphan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeletionMark<'a> {
    pub policy: DeletionPolicy,
    pub crd_uid: &'a str,
}

impl<'a> DeletionMark<'a> {
    /// The mark of a ClusterMirror asking `policy`, proven made under the
    /// CRD `crd_uid` (None: not proven, and no mark).
    pub fn of(policy: DeletionPolicy, crd_uid: Option<&'a str>) -> Option<DeletionMark<'a>> {
        Some(DeletionMark {
            policy,
            crd_uid: crd_uid?,
        })
    }

    /// The mark `copy` bears; None when it bears none, or one unreadable.
    pub fn on(copy: &'a ObjectMeta) -> Option<DeletionMark<'a>> {
        let policy = DeletionPolicy::parse(annotation(copy, DELETION_POLICY_ANNOTATION)?)?;
        let crd_uid = annotation(copy, WRITTEN_UNDER_CRD_ANNOTATION)?;
        (!crd_uid.is_empty()).then_some(DeletionMark { policy, crd_uid })
    }

    /// Puts the mark in `annotations`.
    pub fn write(&self, annotations: &mut BTreeMap<String, String>) {
        annotations.insert(
            DELETION_POLICY_ANNOTATION.into(),
            self.policy.as_str().into(),
        );
        annotations.insert(WRITTEN_UNDER_CRD_ANNOTATION.into(), self.crd_uid.into());
    }
}

/// Releases a copy (deletionPolicy `Orphan`): removes every label and
/// annotation of the controller's (the managed-by label and every
/// `workshop.io/` key), so that neither this controller nor the admission
/// policy takes it for a copy any more. Its content, and the labels and
/// annotations its ClusterMirror set, stay.
pub fn release(copy: &mut ObjectMeta) {
    let ours = |key: &String| key == MANAGED_BY_LABEL || key.starts_with(CONTROLLER_KEY_PREFIX);
    for entries in [&mut copy.labels, &mut copy.annotations]
        .into_iter()
        .flatten()
    {
        entries.retain(|key, _| !ours(key));
    }
    // What the API server recorded of earlier writers is its own to keep.
    copy.managed_fields = None;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seconds: i64) -> Option<Timestamp> {
        Timestamp::from_second(seconds).ok()
    }

    #[test]
    fn a_crd_is_held_by_what_was_made_no_earlier() {
        let crd = LiveCrd {
            uid: "crd-1".into(),
            created: at(100),
        };
        assert!(crd.may_hold(at(100)), "the same second");
        assert!(!crd.may_hold(at(99)));
        assert!(!crd.may_hold(None));
        assert_eq!(DeletionMark::of(DeletionPolicy::Delete, None), None);
    }

    #[test]
    fn a_mark_reads_back_as_written_and_a_malformed_one_is_none() {
        let mark = DeletionMark {
            policy: DeletionPolicy::Delete,
            crd_uid: "crd-1",
        };
        let mut annotations = BTreeMap::new();
        mark.write(&mut annotations);
        let copy = ObjectMeta {
            annotations: Some(annotations.clone()),
            ..ObjectMeta::default()
        };
        assert_eq!(DeletionMark::on(&copy), Some(mark));
        for (key, value) in [
            (DELETION_POLICY_ANNOTATION, "delete"),
            (DELETION_POLICY_ANNOTATION, ""),
            (WRITTEN_UNDER_CRD_ANNOTATION, ""),
        ] {
            let mut bad = annotations.clone();
            bad.insert(key.into(), value.into());
            let copy = ObjectMeta {
                annotations: Some(bad),
                ..ObjectMeta::default()
            };
            assert_eq!(DeletionMark::on(&copy), None, "{key}={value:?}");
        }
        let mut released = copy.clone();
        release(&mut released);
        assert_eq!(DeletionMark::on(&released), None);
    }
}
