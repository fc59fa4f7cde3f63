//! What differs between the kinds of object the controller mirrors. Only
//! content differs: everything else (names, labels, annotations, owner
//! references, the checksum annotation, consent) is metadata, and is read
//! the same way for every kind. The controller is generic over this trait,
//! as kube-runtime's `Controller<K>` is over `Resource`.
//!
//! Pure: no I/O.

pub mod configmap;
pub mod secret;

use std::{borrow::Cow, fmt::Debug};

use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::serde::{Serialize, de::DeserializeOwned};
use kube::Resource;

use crate::{
    api::SourceKind,
    contract::{CHECKSUM_ANNOTATION, annotation},
};

/// What the checksum of content copied into an object of kind `K` is
/// computed under. It follows where the content came from, not the copy's
/// kind: a ConfigMap's content needs nothing (`()`), a Secret's is keyed
/// and bound to its Secret ([`secret::SecretDigestKey`]) whichever kind
/// its copy is. Only a ConfigMap copy may be checksummed with no key: no
/// unkeyed checksum of a Secret copy type-checks.
///
/// ```compile_fail
/// use configmap_mirror::kind::ChecksumKey;
/// use k8s_openapi::api::core::v1::Secret;
/// let unkeyed: Box<dyn ChecksumKey<Secret>> = Box::new(());
/// ```
pub trait ChecksumKey<K>: Send + Sync + 'static {
    /// The checksum of content whose hash is `content_hash`, copied from
    /// `source`.
    fn checksum<'h>(&self, content_hash: &'h str, source: &SourceId<'_>) -> Cow<'h, str>;
}

/// A key chosen at run time, for content of either origin.
impl<K, Key: ChecksumKey<K> + ?Sized> ChecksumKey<K> for Box<Key> {
    fn checksum<'h>(&self, content_hash: &'h str, source: &SourceId<'_>) -> Cow<'h, str> {
        (**self).checksum(content_hash, source)
    }
}

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
    /// What a checksum of this kind's own content needs besides the
    /// content and its source: nothing for a kind whose content may be
    /// confirmed from a copy's metadata, the install's key for one whose
    /// content must stay secret. It follows the content into a copy of
    /// another kind ([`ChecksumKey`]).
    type DigestKey: ChecksumKey<Self> + Clone;

    /// Where a running controller finds its current [`Self::DigestKey`]:
    /// nothing to look up for a kind without a key; for one with a key, a
    /// handle whose key may change, or be missing for a while.
    type KeyHandle: Clone + Send + Sync + 'static;
    /// What the install configures about which objects of this kind are
    /// never sources: nothing for ConfigMaps, more refused types for
    /// Secrets (`--refused-secret-types`).
    type SourceRules: Clone + Default + Send + Sync + 'static;

    /// Whether the content must never leave the object. Then nothing the
    /// API server says about a write of it (an admission policy may build
    /// its message from the content) is passed on beyond the name of who
    /// refused it.
    const CONFIDENTIAL: bool;

    /// The kind as a ClusterMirror's `spec.source.kind` names it.
    const SOURCE_KIND: SourceKind;

    /// The watches of this kind's sources and copies, as logs, metrics and
    /// `/readyz` name them.
    const SOURCES_WATCH: &'static str;
    const COPIES_WATCH: &'static str;

    /// The key `handle` holds now; None while there is none to use.
    fn current_key(handle: &Self::KeyHandle) -> Option<Self::DigestKey>;

    /// A digest of the content alone, which needs no key: what the caches
    /// keep in place of the content. The same content gives the same
    /// digest in every process. It never leaves the process: a copy
    /// records [`MirroredKind::checksum`], which may differ from it.
    fn content_hash(&self) -> String;

    /// How many bytes the content's values hold (keys and metadata aside):
    /// the most of what a read of it costs in memory, but for its keys
    /// (`decisions::cache_form::content_size::read_cost`).
    fn content_bytes(&self) -> u64 {
        self.content_keys()
            .iter()
            .map(|key| key.value.len() as u64)
            .sum()
    }

    /// The checksum a copy of this kind of `source`, whose content has
    /// `content_hash`, records in its checksum annotation, under the key
    /// of where that content came from.
    fn checksum<'h>(
        content_hash: &'h str,
        source: &SourceId<'_>,
        key: &dyn ChecksumKey<Self>,
    ) -> Cow<'h, str> {
        key.checksum(content_hash, source)
    }

    /// The checksum this object's own copies record: its content's, under
    /// its own identity.
    fn content_digest(&self, key: &Self::DigestKey) -> String {
        Self::checksum(&self.content_hash(), &SourceId::of(self.meta()), key).into_owned()
    }

    /// Why this object may never be a source, whatever its labels, if so,
    /// for what only its kind says (see `desired_copy::never_a_source`).
    fn source_refusal(&self, _rules: &Self::SourceRules) -> Option<String> {
        None
    }

    /// An object with `source`'s content, and no metadata.
    fn content_of(source: &Self) -> Self;

    /// Sets every content field as in `other`, metadata untouched.
    fn set_content(&mut self, other: &Self);

    /// Drops the content, keeping the fields a comparison reads besides
    /// the hash (such as immutability), for the slim cached forms.
    fn drop_content(&mut self);

    /// Whether the API server refuses changes of this object's content.
    fn is_immutable(&self) -> bool;

    /// The content's keys, each with its value and the field a ConfigMap
    /// holds it in, in key order: what a copy of chosen keys is shaped
    /// from, without copying any value.
    fn content_keys(&self) -> Vec<KeyValue<'_>>;

    /// The part of the content that is not keys and that a copy of chosen
    /// keys still holds: a Secret's type; None for a kind without one.
    fn content_type(&self) -> Option<&str> {
        None
    }

    /// An object holding exactly `keys` (under the names they carry) as
    /// content, with `source`'s other content (immutability, and a type
    /// unless `copy_type` names another), and no metadata. The values
    /// copied are the only ones cloned.
    fn content_from_keys<'a>(
        source: &Self,
        keys: impl Iterator<Item = KeyValue<'a>>,
        copy_type: Option<&str>,
    ) -> Self;

    /// Whether bringing `actual` to `desired` needs a delete and a create:
    /// the API server refuses the change in place. `actual_checksum` is the
    /// checksum of `actual`'s content as a copy of `desired`'s source.
    fn needs_recreate(actual: &Self, actual_checksum: &str, desired: &Self) -> bool {
        changes_immutable_content(actual, actual_checksum, desired)
    }
}

/// Whether `actual` is immutable and `desired` (a built copy, which records
/// its checksum in the checksum annotation) changes its content or makes it
/// mutable: the API server refuses both.
pub fn changes_immutable_content<K: MirroredKind>(
    actual: &K,
    actual_checksum: &str,
    desired: &K,
) -> bool {
    actual.is_immutable()
        && (Some(actual_checksum) != annotation(desired.meta(), CHECKSUM_ANNOTATION)
            || !desired.is_immutable())
}

/// Where a key's value is held, in the terms of a ConfigMap: `data` for
/// text, `binaryData` for bytes that are not UTF-8. A Secret holds every
/// value in `data`; its values are told apart the same way, so that a
/// Secret's key copied into a ConfigMap lands where a ConfigMap would hold
/// it, and its digest is the same on either side.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Field {
    Data,
    BinaryData,
}

impl Field {
    /// The field of a Secret's value once it is held by a ConfigMap.
    pub fn of_bytes(value: &[u8]) -> Field {
        match std::str::from_utf8(value) {
            Ok(_) => Field::Data,
            Err(_) => Field::BinaryData,
        }
    }

    /// One byte that tells the fields apart in a digest.
    pub fn tag(self) -> u8 {
        match self {
            Field::Data => b'd',
            Field::BinaryData => b'b',
        }
    }

    /// The field's name in a ConfigMap.
    pub fn as_str(self) -> &'static str {
        match self {
            Field::Data => "data",
            Field::BinaryData => "binaryData",
        }
    }
}

/// What one entry of a decoded object costs beyond its name's and its
/// value's bytes: a key of the content, or a label or an annotation, is an
/// entry of its map, and is named again in `managedFields` (`f:<key>: {}`),
/// which serde decodes into a map of its own. Measured (heaptrack, reads of
/// ConfigMaps of 60,000 empty keys): about 150 bytes; the rest leaves room
/// for a second field manager.
pub const DECODED_ENTRY_BYTES: u64 = 256;

/// What an entry named `name` holding `value_len` bytes costs decoded.
pub fn decoded_entry_cost(name: &str, value_len: usize) -> u64 {
    (name.len() as u64)
        .saturating_add(value_len as u64)
        .saturating_add(DECODED_ENTRY_BYTES)
}

/// What entries, each a name and its value's length, cost decoded: the
/// sum of their [`decoded_entry_cost`]s, saturating.
pub fn entries_cost<'a>(entries: impl IntoIterator<Item = (&'a str, usize)>) -> u64 {
    (entries.into_iter())
        .map(|(name, value_len)| decoded_entry_cost(name, value_len))
        .fold(0, u64::saturating_add)
}

/// One key of a content, borrowed: its field, its name and its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyValue<'a> {
    pub field: Field,
    pub name: &'a str,
    pub value: &'a [u8],
}

/// A source as a copy's checksum names it: a Secret copy's checksum covers
/// its source's identity besides the content, so that two sources of one
/// value have different checksums, and no copy's checksum says anything
/// about another source's content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SourceId<'a> {
    pub namespace: &'a str,
    pub name: &'a str,
    pub uid: &'a str,
}

impl<'a> SourceId<'a> {
    /// The identity of a stored object (an unset field reads as empty).
    pub fn of(meta: &'a ObjectMeta) -> SourceId<'a> {
        SourceId {
            namespace: meta.namespace.as_deref().unwrap_or_default(),
            name: meta.name.as_deref().unwrap_or_default(),
            uid: meta.uid.as_deref().unwrap_or_default(),
        }
    }
}
