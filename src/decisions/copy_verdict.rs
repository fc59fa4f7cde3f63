//! What becomes of a copy, whichever path asked for it: the prune loops'
//! verdict, and `explain`'s. A copy this install marked as its own is kept
//! while what asked for it (its source, or its ClusterMirror) still does;
//! else it goes, and the verdict says why. Pure: the prune loops read the
//! caches and carry it out.

pub mod cluster_mirror;
pub mod own;

pub use cluster_mirror::{PruneRules, Seen, Witnessed, copy_fate};
pub use own::{SourceRef, copy_verdict};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::api::DeletionPolicy;

/// What becomes of a copy: the prune loop's verdict on a source's own
/// copy ([`copy_verdict`]) and on a ClusterMirror's ([`copy_fate`]).
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
    /// A ClusterMirror's copy whose ClusterMirror was seen deleted:
    /// deleted (`Delete`) or released (`Orphan`) once the CRD is read live
    /// since (unless the read already said so: then
    /// `Witnessed::crd_live` is Some(true)).
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
    /// A ClusterMirror's copy its ClusterMirror, there, no longer asks for
    /// (another namespace, source, kind or name, or a name now reserved).
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
            Unwanted::NotAskedByClusterMirror => "no longer wanted by its ClusterMirror",
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
