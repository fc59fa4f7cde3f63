//! What differs between the kinds of object the controller mirrors. Only
//! content differs: everything else (names, labels, annotations, owner
//! references, the checksum annotation, consent) is metadata, and is read
//! the same way for every kind. The controller is generic over this trait,
//! as kube-runtime's `Controller<K>` is over `Resource`.
//!
//! Pure: no I/O.

pub mod configmap;
pub mod secret;

use std::fmt::Debug;

use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::serde::{Serialize, de::DeserializeOwned};
use kube::Resource;

use crate::contract::{CHECKSUM_ANNOTATION, annotation};

/// A kind of namespaced object whose content can be copied.
pub trait MirroredKind:
    Resource<DynamicType = (), Scope = NamespaceResourceScope>
    + Clone
    + Debug
    + Default
    + PartialEq
    + Serialize
    + DeserializeOwned
    + Send
    + Sync
    + 'static
{
    /// What the digest needs besides the content: nothing for a kind whose
    /// content may be confirmed from a copy's metadata, the install's key
    /// for one whose content must stay secret.
    type DigestKey: Clone + Send + Sync + 'static;

    /// What the install configures about which objects of this kind are
    /// never sources: nothing for ConfigMaps, more refused types for
    /// Secrets (`--refused-secret-types`).
    type SourceRules: Clone + Default + Send + Sync + 'static;

    /// Whether the content must never leave the object. Then nothing the
    /// API server says about a write of it (an admission policy may build
    /// its message from the content) is passed on beyond the name of who
    /// refused it.
    const CONFIDENTIAL: bool;

    /// The watches of this kind's sources and copies, as logs, metrics and
    /// `/readyz` name them.
    const SOURCES_WATCH: &'static str;
    const COPIES_WATCH: &'static str;

    /// The digest of the content, as a copy's checksum annotation records
    /// it: the same content and key give the same digest in every process.
    fn content_digest(&self, key: &Self::DigestKey) -> String;

    /// Why this object may never be a source, whatever its labels, if so,
    /// for what only its kind says (see `desired::never_a_source`).
    fn source_refusal(&self, _rules: &Self::SourceRules) -> Option<String> {
        None
    }

    /// An object with `source`'s content, and no metadata.
    fn content_of(source: &Self) -> Self;

    /// Sets every content field as in `other`, metadata untouched.
    fn set_content(&mut self, other: &Self);

    /// Drops the content, keeping the fields a comparison reads besides
    /// the digest (such as immutability), for the slim cached forms.
    fn drop_content(&mut self);

    /// Whether the API server refuses changes of this object's content.
    fn is_immutable(&self) -> bool;

    /// Whether bringing `actual` (whose content has `actual_digest`) to
    /// `desired` needs a delete and a create: the API server refuses the
    /// change in place.
    fn needs_recreate(actual: &Self, actual_digest: &str, desired: &Self) -> bool {
        changes_immutable_content(actual, actual_digest, desired)
    }
}

/// Whether `actual` is immutable and `desired` (a built copy, which records
/// its digest in the checksum annotation) changes its content or makes it
/// mutable: the API server refuses both.
pub fn changes_immutable_content<K: MirroredKind>(
    actual: &K,
    actual_digest: &str,
    desired: &K,
) -> bool {
    actual.is_immutable()
        && (Some(actual_digest) != annotation(desired.meta(), CHECKSUM_ANNOTATION)
            || !desired.is_immutable())
}
