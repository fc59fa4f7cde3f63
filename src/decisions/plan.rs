//! The comparison: given the desired copy and what the cache holds, which
//! single write (if any) brings the cluster to the desired state.
//! Pure, like `desired`; the reconcilers carry out what it decides.

pub mod compare;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::{
    contract::mirror_of,
    decisions::cache_form::CachedCopy,
    decisions::ownership::{Ownership, mirror_ownership, outranked_mirror, ownership},
    kind::{ChecksumKey, MirroredKind, SourceId},
};

pub use compare::Difference;
use compare::{difference, merge_onto, needs_recreate};

/// The one write a copy (companion or mirror) of a source needs.
#[derive(Debug, Clone, PartialEq)]
pub enum Write<K> {
    /// The companion is as it should be.
    Nothing,
    /// There is no companion: create this one.
    Create(K),
    /// The companion differs: replace it with this (same resourceVersion).
    Replace { copy: K, why: Difference },
    /// An immutable copy must change content: delete it (guarded by its
    /// uid and resourceVersion), then create it afresh.
    DeleteToRecreate { copy: K, seen: SeenVersion },
}

impl<K> Write<K> {
    /// Whether the copy already holds and carries what it should: nothing
    /// to write, or only its deletion mark (which a suspended
    /// ClusterMirror, writing nothing, leaves as it is).
    pub fn in_sync(&self) -> bool {
        matches!(
            self,
            Write::Nothing
                | Write::Replace {
                    why: Difference::DeletionUnmarked,
                    ..
                }
        )
    }
}

/// The exact object a delete was decided on. Sent as the delete's
/// preconditions: neither another object under the same name nor this one
/// changed since (its owner reference or labels edited, making it someone
/// else's) is ever deleted on what the cache said of it before.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SeenVersion {
    pub uid: String,
    pub resource_version: String,
}

impl SeenVersion {
    /// The version of a stored object (which has both).
    pub fn of(meta: &ObjectMeta) -> Option<SeenVersion> {
        Some(SeenVersion {
            uid: meta.uid.clone()?,
            resource_version: meta.resource_version.clone()?,
        })
    }
}

/// The companion's name is held by an object that is not ours.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NameTaken;

/// What the source's reconcile must write, from the desired companion and
/// the object currently at its name. `key` is the one `desired`'s checksum
/// was computed under.
pub fn plan<K: MirroredKind>(
    desired: K,
    actual: Option<&CachedCopy<K>>,
    source: &ObjectMeta,
    source_keys: &[String],
    key: &dyn ChecksumKey<K>,
) -> Result<Write<K>, NameTaken> {
    let Some(actual) = actual else {
        return Ok(Write::Create(desired));
    };
    let source_id = SourceId::of(source);
    let is_mirror = mirror_of(desired.meta()).is_some();
    let owner = match is_mirror {
        true => mirror_ownership(actual, source, desired.meta()),
        false => ownership(actual, &source_id, key),
    };
    let taken_over = is_mirror && outranked_mirror(actual.object().meta(), desired.meta());
    if owner == Ownership::Foreign {
        return Err(NameTaken);
    }
    if needs_recreate(actual, &desired, &source_id, key) {
        // A cached copy is stored, so has both; an empty one would only
        // fail the precondition.
        let seen = SeenVersion::of(actual.object().meta()).unwrap_or_default();
        return Ok(Write::DeleteToRecreate {
            copy: desired,
            seen,
        });
    }
    match difference(actual, &desired, &source_id, source_keys, key) {
        Difference::None => Ok(Write::Nothing),
        why => Ok(Write::Replace {
            copy: merge_onto(actual, &desired, source_keys),
            why: if taken_over {
                Difference::TakenOver
            } else {
                why
            },
        }),
    }
}

#[cfg(test)]
mod tests;
