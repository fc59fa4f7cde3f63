//! The verdict on a copy a ClusterMirror wrote.
//!
//! A copy goes only for a deletion made by someone: its ClusterMirror's
//! watch reported it deleted (bound by uid: the deletion of one
//! ClusterMirror is never taken for another's of the same name), or it is
//! absent and the copy records the CRD it was made under (a deletion
//! nobody saw, while no leader ran); or the ClusterMirror, still there, no
//! longer asks for it. Either deletion counts only once the API server,
//! read since, shows that same CRD live: one deleted or made again took
//! the ClusterMirror with it. A ClusterMirror absent with nothing to tell
//! (a copy written before the mark, or after its CRD came back) leaves its
//! copies as orphans: kept as they are, never rewritten, never deleted,
//! until a ClusterMirror of that name adopts them or the operator removes
//! them.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::{CopyVerdict, Unwanted, mirror_name_reserved};
use crate::{
    api::{DeletionPolicy, SourceKind},
    contract::written_under,
    decisions::cluster_mirror::{DeletionMark, Origin, Request},
    decisions::consent::NamespaceRefusal,
    decisions::consent::{Consent, NamespaceFacts},
    decisions::install::Install,
};

/// A ClusterMirror's deletion as the controller saw it happen (a delete
/// event of its watch), or found it when its copy's mark let it tell
/// (settled then).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Witnessed {
    /// Its `spec.deletionPolicy`, as the deleted object said.
    pub policy: DeletionPolicy,
    /// Whether the CRD, read after the deletion was seen, was the same
    /// one and live (not being deleted): only then was the ClusterMirror
    /// deleted by someone, rather than with its CRD. None until read.
    pub crd_live: Option<bool>,
}

/// What of the install's settings a copy's fate depends on, besides its
/// ClusterMirror: whose copies are whose, and where none may be.
#[derive(Debug, Clone, Copy)]
pub struct PruneRules<'a> {
    /// The kind of the copy.
    pub kind: SourceKind,
    /// The install: its source selector marks its copies, and its
    /// reserved names are never written.
    pub install: &'a Install,
    /// The namespaces no ClusterMirror writes into.
    pub consent: &'a Consent,
}

/// What the controller knows of a copy's ClusterMirror.
#[derive(Debug, Clone, Copy, Default)]
pub struct Seen<'a> {
    /// The ClusterMirror cache has completed a list: before, no absence
    /// means anything.
    pub listed: bool,
    /// An object of the copy's ClusterMirror name is cached, readable or not.
    pub exists: bool,
    /// Its request, when its spec reads.
    pub request: Option<&'a Request>,
    /// The deletion of the ClusterMirror the copy is bound to (by uid),
    /// when the controller saw it.
    pub deletion: Option<Witnessed>,
}

/// The prune loop's verdict on `copy`, which a ClusterMirror wrote (its
/// label names it), in `namespace` (None: gone, and the copy with it).
/// Nothing is decided for a copy another install wrote.
pub fn copy_fate(
    copy: &ObjectMeta,
    namespace: Option<&NamespaceFacts>,
    rules: &PruneRules<'_>,
    seen: &Seen<'_>,
) -> CopyVerdict {
    let Some(namespace) = namespace else {
        return CopyVerdict::Keep;
    };
    if !seen.listed || !written_under(copy, &rules.install.selector) {
        return CopyVerdict::Keep;
    }
    match (seen.request, seen.deletion) {
        (Some(request), _) => asked(copy, namespace, request, rules),
        (None, _) if seen.exists => CopyVerdict::Keep,
        (None, Some(witnessed)) if witnessed.crd_live != Some(false) => {
            CopyVerdict::ClusterMirrorDeleted(witnessed.policy)
        }
        (None, Some(_)) => CopyVerdict::Orphaned,
        // Nobody saw it go: its copy says whether that can be told.
        (None, None) => match DeletionMark::on(copy) {
            Some(mark) => CopyVerdict::ClusterMirrorDeleted(mark.policy),
            None => CopyVerdict::Orphaned,
        },
    }
}

/// The fate of a copy whose ClusterMirror or Mirror is there: a suspended
/// one deletes nothing, whatever its spec says now, but a Mirror's copy
/// where its namespace no longer consents (consent comes first: the
/// namespace's owner takes it back, suspended or not); else the copy goes
/// unless the spec asks for it, at a name that is not reserved.
fn asked(
    copy: &ObjectMeta,
    namespace: &NamespaceFacts,
    request: &Request,
    rules: &PruneRules<'_>,
) -> CopyVerdict {
    if request.suspend {
        // Consent alone, not the spec: a suspended Mirror whose spec no
        // longer asks for the namespace deletes nothing there.
        let consent_withdrawn = request.origin != Origin::ClusterMirror
            && matches!(
                rules.consent.admission(&request.source_namespace, namespace),
                Err(refusal) if refusal != NamespaceRefusal::GrantsNotKnown
            );
        return match consent_withdrawn {
            true => CopyVerdict::Unwanted(Unwanted::NotAskedByClusterMirror),
            false => CopyVerdict::Keep,
        };
    }
    let reserved = mirror_name_reserved(copy, &rules.install.reserved_names);
    match request.copy_kind() == rules.kind
        && !reserved
        && request.wants(copy, namespace, rules.consent)
    {
        true => CopyVerdict::Keep,
        false => CopyVerdict::Unwanted(Unwanted::NotAskedByClusterMirror),
    }
}
