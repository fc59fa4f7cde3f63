//! What becomes of a copy, whichever path asked for it: the prune loops'
//! verdict, and `explain`'s. A copy this install marked as its own is kept
//! while what asked for it (its source, or its ClusterMirror) still does;
//! else it goes, and the verdict says why. Pure: the prune loops read the
//! caches and carry it out.

pub mod cluster_mirror;
pub mod own;

pub use cluster_mirror::{PruneRules, Seen, Witnessed, copy_fate};
pub use own::SourceRef;

use std::borrow::Borrow;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::{
    api::DeletionPolicy,
    decisions::consent::{Consent, NamespaceFacts},
    decisions::copy_request::Asker,
    decisions::install::Install,
    decisions::request_key::RequestKey,
    kind::MirroredKind,
};

/// What a copy's verdict reads of the cluster, whoever asked for the copy:
/// lookups only. The prune loop answers from its caches, `explain` from
/// what it read.
pub trait CopyFacts<K: MirroredKind> {
    /// A managed source, as these facts hold it.
    type Source<'f>: Borrow<K>
    where
        Self: 'f;

    /// The source at `namespace/name`, if this install manages it.
    fn managed_source(&self, namespace: &str, name: &str) -> Option<Self::Source<'_>>;

    /// What consent reads of `namespace`; None when it is gone.
    fn namespace(&self, namespace: &str) -> Option<NamespaceFacts>;

    /// The copy at `namespace/name`, if any.
    fn copy_at(&self, namespace: &str, name: &str) -> Option<ObjectMeta>;
}

/// What a copy's verdict reads of a ClusterMirror: a reader of the
/// ClusterMirrors, or [`ClusterMirrorsNotRead`].
pub trait ClusterMirrorFacts {
    /// The verdict on `copy`, of the ClusterMirror or Mirror `key`:
    /// `fate`, given what is seen of it (its deletion, as bound to that
    /// copy) and the rules of its copies; Keep without a request of this
    /// install's to judge by (one namespace only, another install's
    /// class).
    fn cluster_mirror_fate(
        &self,
        copy: &ObjectMeta,
        key: &RequestKey,
        fate: impl FnOnce(&Seen<'_>, &PruneRules<'_>) -> CopyVerdict,
    ) -> CopyVerdict;
}

/// For a reader that reads no ClusterMirror (`explain` of a copy or a
/// source explains a ClusterMirror's copy with its ClusterMirror): a
/// ClusterMirror's copy is kept, as what is not known always is.
pub struct ClusterMirrorsNotRead;

impl ClusterMirrorFacts for ClusterMirrorsNotRead {
    fn cluster_mirror_fate(
        &self,
        _: &ObjectMeta,
        _: &RequestKey,
        _: impl FnOnce(&Seen<'_>, &PruneRules<'_>) -> CopyVerdict,
    ) -> CopyVerdict {
        CopyVerdict::Keep
    }
}

/// The verdict on `copy`, whoever asked for it: its asker, read from its
/// marks, is asked whether it still wants the copy there; if not, the copy
/// goes, for the reason given. `install` decides which copies are its own,
/// `consent` where a source's own mirrors may be; `facts` and
/// `cluster_mirrors` are what the reader knows of the cluster (its caller
/// says what it reads of ClusterMirrors: [`ClusterMirrorsNotRead`] for
/// nothing).
pub fn copy_verdict<K: MirroredKind>(
    copy: &ObjectMeta,
    install: &Install,
    consent: &Consent,
    facts: &impl CopyFacts<K>,
    cluster_mirrors: &impl ClusterMirrorFacts,
) -> CopyVerdict {
    let namespace = copy.namespace.as_deref().unwrap_or_default();
    match Asker::of_marks(copy) {
        Asker::ClusterMirror { .. } | Asker::Mirror { .. } => {
            let Some(key) = RequestKey::of_copy(copy) else {
                return CopyVerdict::Keep;
            };
            cluster_mirrors.cluster_mirror_fate(copy, &key, |seen, rules| {
                copy_fate(copy, facts.namespace(namespace).as_ref(), rules, seen)
            })
        }
        Asker::Companion | Asker::SourceMirrors => own::source_copy_verdict::<K, _>(
            copy,
            install,
            consent,
            |namespace, name| facts.managed_source(namespace, name),
            |namespace| facts.namespace(namespace),
            |namespace, name| facts.copy_at(namespace, name),
        ),
    }
}

/// What becomes of a copy: the prune loop's verdict ([`copy_verdict`]),
/// and `explain`'s.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CopyVerdict {
    Keep,
    /// Nothing wants it: deleted, for the reason given.
    Unwanted(Unwanted),
    /// A source's own copy written by a release that did not mark copies
    /// with their install, for a source this install does not manage: it
    /// goes only once that source is gone, which no install can want
    /// copies of, told as a marked copy of a source gone would be.
    UnwantedIfSourceGone(SourceRef, Unwanted),
    /// A ClusterMirror's copy whose ClusterMirror was seen deleted, or is
    /// absent and the copy records the CRD it was made under: deleted
    /// (`Delete`) or released (`Orphan`) once the API server, read since,
    /// says it was deleted by someone (unless a read already said so:
    /// then `Witnessed::crd_live` is Some(true)).
    ClusterMirrorDeleted(DeletionPolicy),
    /// A ClusterMirror's copy whose ClusterMirror is gone and nobody saw
    /// it go, or it went with its CRD: kept as it is, counted and told as
    /// an orphan.
    Orphaned,
}

/// Why nothing wants a copy: decided once, with the verdict, for the prune
/// loop to tell and `explain` to say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unwanted {
    /// A mirror bears a reserved name.
    ReservedName,
    /// A mirror under a name its source no longer gives its mirrors, now
    /// that its mirror under the new one is there.
    Renamed,
    /// A mirror its source (gone, no longer managed, or asking elsewhere)
    /// or its namespace (no longer consenting) no longer wants there.
    NotWantedHere,
    /// A companion of no managed source.
    SourceNotManaged,
    /// A ClusterMirror's or Mirror's copy its request, there, no longer
    /// asks for (another namespace, source, kind or name, or a name now
    /// reserved), or a Mirror's where its namespace withdrew consent.
    NotAskedByClusterMirror,
}

impl Unwanted {
    /// Why the copy goes, as the prune loop's log line and Event say.
    pub fn said(self) -> &'static str {
        match self {
            Unwanted::ReservedName => "its name is reserved",
            Unwanted::Renamed => "its source names its mirrors otherwise now",
            Unwanted::NotWantedHere => "no longer wanted in this namespace",
            Unwanted::SourceNotManaged => "source no longer managed",
            Unwanted::NotAskedByClusterMirror => {
                "no longer wanted by its ClusterMirror or Mirror, or in this namespace"
            }
        }
    }
}

/// Whether a mirror bears a reserved name: never mirrored, so never wanted,
/// also when the name became reserved after the mirror was written (a
/// mirror left there would go stale for good).
pub fn mirror_name_reserved(mirror: &ObjectMeta, reserved_names: &[String]) -> bool {
    mirror
        .name
        .as_deref()
        .is_some_and(|name| reserved_names.iter().any(|reserved| reserved == name))
}

#[cfg(test)]
mod tests;
