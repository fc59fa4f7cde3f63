//! What differs between the kinds of object the controller mirrors. Only
//! content differs: everything else (names, labels, annotations, owner
//! references, the checksum annotation, consent) is metadata, and is read
//! the same way for every kind. The controller is generic over this trait,
//! as kube-runtime's `Controller<K>` is over `Resource`.
//!
//! Pure: no I/O.

pub mod configmap;

use std::fmt::Debug;

use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::serde::{Serialize, de::DeserializeOwned};
use kube::Resource;

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
    /// The digest of the content, as a copy's checksum annotation records
    /// it: the same content gives the same digest in every process.
    fn content_digest(&self) -> String;

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
        actual.is_immutable()
            && (actual_digest != desired.content_digest() || !desired.is_immutable())
    }
}
