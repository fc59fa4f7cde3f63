//! The checksum of a copy of chosen keys: it covers what the copy holds,
//! bound to the source as any copy's is, so that a change of a key the
//! copy does not hold writes nothing.
//!
//! # Design
//!
//! A copy's checksum is computed from a hash of content ([`content_hash`]
//! today: SHA-256 of the canonical encoding of the whole content), by
//! [`MirroredKind::checksum`]: the hash itself for a ConfigMap, keyed and
//! bound to the source for a Secret. The caches keep that hash in place of
//! the content, and the resync compares a source's with its copies' in
//! memory. A copy of chosen keys cannot use it: the hash of part of a
//! content cannot be computed from the hash of the whole, and the caches
//! keep no values. So:
//!
//! - **Per-key digests.** Each key of a content has a digest: SHA-256 of
//!   its field's tag and its value ([`key_digest`]; the field as a
//!   ConfigMap holds it, see [`Field`]), so moving a key between `data`
//!   and `binaryData` changes it. A ClusterMirror source keeps its keys'
//!   names, fields and digests in its cached form beside its content hash
//!   (`cache_form`), as its cache cannot know which ClusterMirror shapes it
//!   (those caches hold only the few allowed source namespaces); a
//!   label-path source carrying `workshop.io/mirror-keys` keeps only the
//!   keys hash they give its own shape, and the keys it misses, so that no
//!   source grows with its number of keys.
//! - **The keys hash.** What a shaped copy holds is hashed from those
//!   digests ([`keys_hash`]): `keys-sha256:` and SHA-256 of the canonical
//!   encoding of the copy's type (a Secret copy's; none for a ConfigMap),
//!   then each key's name in the copy and its digest, in name order. So a
//!   rename, a key added or dropped, a change of a copied value or of the
//!   type changes it, and a change of an uncopied key does not. It replaces
//!   the content hash in [`MirroredKind::checksum`]: a ConfigMap copy's
//!   checksum is the keys hash itself (anyone may check it); a Secret
//!   copy's, and a ConfigMap holding a Secret's keys, is the HMAC of it
//!   under the install's key and the source's identity, written
//!   `keys-hmac-sha256:` (the keyed checksum stays keyed and bound).
//! - **Unshaped copies keep today's checksum.** A copy that holds every key
//!   of its source under its own name, in its source's kind and type (no
//!   shape, or one that leaves nothing out), takes the source's content
//!   hash as today ([`shaped_copy_hash`]), so an upgrade rewrites no copy.
//! - **The copy side.** A copy's cache keeps the hash of its own content
//!   ([`copy_content_hash`]): the keys hash of all its keys when its
//!   checksum annotation has a keys prefix (`contract::is_keys_checksum`),
//!   else its content hash as today. The prefix costs no memory and needs
//!   no key; a copy whose checksum or content was edited still compares
//!   unequal, and is healed.
//!
//! The same functions serve a full object (read when a write needs the
//! content) and a cached one: the write recomputes the checksum from the
//! fresh content, and it equals the one the cache gave.
//!
//! [`content_hash`]: MirroredKind::content_hash
//!
//! Pure.

use sha2::{Digest, Sha256};

use super::{
    KeyShape, Shaped, SourceKey,
    content::without_values,
    secret_type::{KeysBreakType, copy_type},
};
use crate::{
    contract::{
        CHECKSUM_ANNOTATION, KEYS_CHECKSUM_PREFIX, annotation, encode_map, is_keys_checksum,
    },
    kind::{Field, KeyValue, MirroredKind},
};

/// One key of a content by digest: its name, field and [`key_digest`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyDigest {
    pub field: Field,
    pub name: String,
    pub digest: String,
}

/// SHA-256 (hex) of a key's field tag, then its value. It never leaves
/// the process: only the [`keys_hash`] of a copy does.
pub fn key_digest(key: &KeyValue<'_>) -> String {
    let mut hasher = Sha256::new();
    hasher.update([key.field.tag()]);
    hasher.update(key.value);
    hex::encode(hasher.finalize())
}

/// Every key of `content` by digest, in key order.
pub fn key_digests<K: MirroredKind>(content: &K) -> Vec<KeyDigest> {
    let keys = content.content_keys().into_iter();
    keys.map(|key| KeyDigest {
        field: key.field,
        name: key.name.to_owned(),
        digest: key_digest(&key),
    })
    .collect()
}

/// The hash of a copy holding `keys` (name in the copy, digest), sorted by
/// name, and of type `copy_type` (a Secret copy's; None for a ConfigMap).
pub fn keys_hash<'a>(
    copy_type: Option<&str>,
    keys: impl ExactSizeIterator<Item = (&'a str, &'a str)>,
) -> String {
    let mut hasher = Sha256::new();
    if let Some(type_) = copy_type {
        encode_map(
            &mut hasher,
            b't',
            [(&b"type"[..], type_.as_bytes())].into_iter(),
        );
    }
    encode_map(
        &mut hasher,
        b'k',
        keys.map(|(name, digest)| (name.as_bytes(), digest.as_bytes())),
    );
    format!("{KEYS_CHECKSUM_PREFIX}{}", hex::encode(hasher.finalize()))
}

/// The hash a copy's cache keeps of the copy's own content, to compare it
/// with its source's: the keys hash of every key it holds when its checksum
/// says it holds chosen keys, else [`MirroredKind::content_hash`].
pub fn copy_content_hash<K: MirroredKind>(copy: &K) -> String {
    let keyed = annotation(copy.meta(), CHECKSUM_ANNOTATION).is_some_and(is_keys_checksum);
    if !keyed {
        return copy.content_hash();
    }
    let digests = key_digests(copy);
    let keys = digests.iter().map(|d| (d.name.as_str(), d.digest.as_str()));
    keys_hash(copy.content_type(), keys)
}

/// What a copy is besides its keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CopyForm<'a> {
    /// A Secret's keys published as a ConfigMap (`target.kind: ConfigMap`).
    pub as_configmap: bool,
    /// The type asked for a Secret copy in place of its source's
    /// (`target.type: Opaque`).
    pub copy_type: Option<&'a str>,
}

/// A copy decided from its source's digests: what it holds, its type (a
/// Secret copy's), and the hash its checksum is computed from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShapedHash {
    pub shaped: Shaped<()>,
    pub copy_type: Option<String>,
    pub hash: String,
}

/// What a resync compares of a copy of chosen keys, as a source's cached
/// form keeps it: the hash its checksum covers, and the exact keys named
/// that the source lacks (`KeyMissing`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopyKeys {
    pub hash: String,
    pub missing: Vec<String>,
}

impl From<ShapedHash> for CopyKeys {
    fn from(shaped: ShapedHash) -> CopyKeys {
        CopyKeys {
            hash: shaped.hash,
            missing: shaped.shaped.missing,
        }
    }
}

/// The copy of a source with content hash `source_hash`, type
/// `source_type` (a Secret's) and keys `digests`, under `shape` and
/// `form`: its checksum is [`MirroredKind::checksum`] of the hash (for a
/// Secret's keys as a ConfigMap, the Secret's). The source's own hash when
/// the copy is the source's content (today's checksum); else the keys
/// hash. An error when the copy would leave out a key its type requires.
pub fn shaped_copy_hash(
    source_hash: &str,
    source_type: Option<&str>,
    digests: &[KeyDigest],
    shape: &KeyShape,
    form: CopyForm<'_>,
) -> Result<ShapedHash, KeysBreakType> {
    let keys = digests.iter().map(|d| SourceKey {
        field: d.field,
        key: &d.name,
        value: d.digest.as_str(),
    });
    let shaped = shape.shape(keys);
    let copy_type = match (form.as_configmap, source_type) {
        (false, Some(source_type)) => Some(copy_type(source_type, form.copy_type, &shaped.copied)?),
        _ => None,
    };
    let as_is = !form.as_configmap && copy_type == source_type && shaped.holds_every_key_as_is();
    let hash = match as_is {
        true => source_hash.to_owned(),
        false => {
            let keys = shaped
                .copied
                .iter()
                .map(|key| (key.name.as_str(), key.value));
            keys_hash(copy_type, keys)
        }
    };
    Ok(ShapedHash {
        copy_type: copy_type.map(str::to_owned),
        shaped: without_values(shaped),
        hash,
    })
}

/// [`shaped_copy_hash`] of a full source, read from its content.
pub fn shaped_copy_hash_of<K: MirroredKind>(
    source: &K,
    shape: &KeyShape,
    form: CopyForm<'_>,
) -> Result<ShapedHash, KeysBreakType> {
    let digests = key_digests(source);
    let hash = source.content_hash();
    shaped_copy_hash(&hash, source.content_type(), &digests, shape, form)
}

#[cfg(test)]
mod tests;
