//! Secrets: `data`, `type` and `immutable` are the content. `stringData`
//! is write-only (the API server folds it into `data`), so it is never
//! copied or compared.
//!
//! A Secret copy's checksum is keyed: a plain digest of a short password,
//! in an annotation anyone with metadata access can read (audit logs,
//! dashboards, `kubectl get -o yaml`), would let them confirm a guess
//! offline. Keyed with a random key only the controller's replicas read, it
//! confirms nothing to whoever lacks the key, and two installs never agree.
//!
//! It is bound to its source too: the HMAC covers the source's namespace,
//! name and uid besides the content. So two sources of one value have
//! different checksums, and a copy's checksum, compared with the copy's
//! content under the source the copy claims, says nothing about any other
//! source: a tenant who puts another copy's checksum and a guess onto a
//! copy of their own learns nothing from what the controller does with it.
//!
//! The caches keep [`Secret::content_hash`] (a SHA-256 of the content, no
//! key) in place of the content, so that they need no key: a change of key
//! changes the checksums, not what is cached, and copies are pruned while
//! no key is known. That hash never leaves the process.

use std::{borrow::Cow, collections::BTreeMap, fmt, sync::Arc};

use hmac::{Hmac, Mac};
use k8s_openapi::{ByteString, api::core::v1::Secret};
use sha2::{Digest, Sha256};
use tokio::sync::watch;

use super::{ChecksumKey, Field, KeyValue, MirroredKind, SourceId, changes_immutable_content};
use crate::{
    api::SourceKind,
    contract::{KEYED_KEYS_CHECKSUM_PREFIX, KEYS_CHECKSUM_PREFIX, encode_map},
};

/// A type the API server gives no other object.
pub const SERVICE_ACCOUNT_TOKEN_TYPE: &str = "kubernetes.io/service-account-token";
/// The types never copied, whatever the flags, and why: other programs
/// trust a Secret of these types by its type, name or labels, so a copy
/// made at a tenant's request would be a credential or a record they
/// believe.
pub const REFUSED_TYPES: [(&str, &str); 3] = [
    (
        SERVICE_ACCOUNT_TOKEN_TYPE,
        "a service-account token: the token controller owns its content",
    ),
    (
        "bootstrap.kubernetes.io/token",
        "a bootstrap token: the API server takes it for a credential by its type and name",
    ),
    (
        "helm.sh/release.v1",
        "a Helm release record: Helm trusts it by its type, name and labels",
    ),
];
/// What the API server stores when a Secret names no type.
const DEFAULT_TYPE: &str = "Opaque";
/// Marks a keyed checksum apart from a ConfigMap's plain one.
pub const DIGEST_PREFIX: &str = "hmac-sha256:";

/// The install's key for Secret checksums. Its bytes are never printed.
#[derive(Clone, PartialEq, Eq)]
pub struct SecretDigestKey([u8; SecretDigestKey::LEN]);

impl SecretDigestKey {
    pub const LEN: usize = 32;

    pub fn from_bytes(bytes: &[u8]) -> Option<SecretDigestKey> {
        Some(SecretDigestKey(bytes.try_into().ok()?))
    }

    pub fn bytes(&self) -> &[u8] {
        &self.0
    }

    fn mac(&self) -> Hmac<Sha256> {
        // HMAC pads a key shorter than the hash's block to the block with
        // zeros, so this is HMAC-SHA256 under the 32-byte key, built through
        // the constructor that cannot fail.
        let mut block = [0u8; 64];
        block[..Self::LEN].copy_from_slice(&self.0);
        <Hmac<Sha256> as Mac>::new(&block.into())
    }
}

/// A Secret's content is checksummed under the install's key, bound to
/// its Secret, whichever kind its copy is.
impl<K> ChecksumKey<K> for SecretDigestKey {
    /// `hmac-sha256:` and the HMAC-SHA256 under the install's key of the
    /// source Secret's identity, then the content's hash, in the canonical
    /// encoding of the content's own maps.
    fn checksum<'h>(&self, content_hash: &'h str, source: &SourceId<'_>) -> Cow<'h, str> {
        let mut mac = self.mac();
        encode_map(
            &mut mac,
            b's',
            [
                (&b"namespace"[..], source.namespace.as_bytes()),
                (&b"name"[..], source.name.as_bytes()),
                (&b"uid"[..], source.uid.as_bytes()),
            ]
            .into_iter(),
        );
        encode_map(
            &mut mac,
            b'c',
            [(&b"sha256"[..], content_hash.as_bytes())].into_iter(),
        );
        // A copy of chosen keys says so in its checksum, so that its cache
        // hashes it by key (see `decisions::key_shape::checksum`).
        let prefix = match content_hash.starts_with(KEYS_CHECKSUM_PREFIX) {
            true => KEYED_KEYS_CHECKSUM_PREFIX,
            false => DIGEST_PREFIX,
        };
        Cow::Owned(format!(
            "{prefix}{}",
            hex::encode(mac.finalize().into_bytes())
        ))
    }
}

impl fmt::Debug for SecretDigestKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SecretDigestKey(..)")
    }
}

/// The install's current key, shared by every reconcile and by the watch
/// of the key's Secret, which replaces it when that Secret changes. Empty
/// while no usable key is known: Secret copies are then not written (but
/// still pruned).
#[derive(Clone, Default)]
pub struct SharedDigestKey(Arc<watch::Sender<Option<SecretDigestKey>>>);

impl SharedDigestKey {
    pub fn current(&self) -> Option<SecretDigestKey> {
        self.0.borrow().clone()
    }

    /// Holds `key` from now on. True when that is a change.
    pub fn set(&self, key: Option<SecretDigestKey>) -> bool {
        self.0.send_if_modified(|held| {
            let changed = *held != key;
            *held = key;
            changed
        })
    }

    /// Sees every change from now on.
    pub fn changes(&self) -> watch::Receiver<Option<SecretDigestKey>> {
        self.0.subscribe()
    }
}

impl fmt::Debug for SharedDigestKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SharedDigestKey(..)")
    }
}

/// The Secrets an install refuses as sources besides [`REFUSED_TYPES`]:
/// the types `--refused-secret-types` adds, and its own Secrets.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SecretSourceRules {
    refused_types: Vec<String>,
    /// Where the install keeps Secrets of its own, as (namespace, name):
    /// its digest key.
    own: Vec<(String, String)>,
}

impl SecretSourceRules {
    /// The configured types; empty entries stand for none.
    pub fn new(types: &[String]) -> SecretSourceRules {
        SecretSourceRules {
            refused_types: types
                .iter()
                .map(|type_| type_.trim().to_owned())
                .filter(|type_| !type_.is_empty())
                .collect(),
            own: Vec::new(),
        }
    }

    /// These rules, refusing also the install's own Secret at `place`
    /// (namespace, name), such as its digest key.
    pub fn with_own_secret(mut self, place: (String, String)) -> SecretSourceRules {
        self.own.push(place);
        self
    }
}

impl MirroredKind for Secret {
    type DigestKey = SecretDigestKey;
    type KeyHandle = SharedDigestKey;
    type SourceRules = SecretSourceRules;

    const CONFIDENTIAL: bool = true;
    const SOURCE_KIND: SourceKind = SourceKind::Secret;

    const SOURCES_WATCH: &'static str = "secret-sources";
    const COPIES_WATCH: &'static str = "secret-copies";

    fn current_key(handle: &SharedDigestKey) -> Option<SecretDigestKey> {
        handle.current()
    }

    /// SHA-256 (hex) of the canonical encoding of the type, then `data`.
    fn content_hash(&self) -> String {
        let mut hasher = Sha256::new();
        let type_ = type_of(self);
        encode_map(
            &mut hasher,
            b't',
            [(&b"type"[..], type_.as_bytes())].into_iter(),
        );
        let empty = Default::default();
        let data = self.data.as_ref().unwrap_or(&empty);
        encode_map(
            &mut hasher,
            b'd',
            data.iter().map(|(k, v)| (k.as_bytes(), v.0.as_slice())),
        );
        hex::encode(hasher.finalize())
    }

    fn source_refusal(&self, rules: &SecretSourceRules) -> Option<String> {
        let place = (
            self.metadata.namespace.as_deref(),
            self.metadata.name.as_deref(),
        );
        let own = |(namespace, name): &(String, String)| {
            place == (Some(namespace.as_str()), Some(name.as_str()))
        };
        if rules.own.iter().any(own) {
            return Some(
                "it is this install's digest key (the key of its Secret copies' checksums): \
                 what the install keeps for itself is never copied"
                    .into(),
            );
        }
        let type_ = type_of(self);
        if let Some((_, why)) = REFUSED_TYPES.iter().find(|(t, _)| *t == type_) {
            return Some(format!("its type is {type_} ({why})"));
        }
        rules
            .refused_types
            .iter()
            .any(|t| t == type_)
            .then(|| format!("its type is {type_}, which --refused-secret-types lists"))
    }

    fn content_of(source: &Self) -> Self {
        Secret {
            data: source.data.clone(),
            type_: source.type_.clone(),
            immutable: source.immutable,
            ..Secret::default()
        }
    }

    /// Each value's field is where a ConfigMap would hold it.
    fn content_keys(&self) -> Vec<KeyValue<'_>> {
        let data = self.data.iter().flatten();
        data.map(|(name, value)| KeyValue {
            field: Field::of_bytes(&value.0),
            name,
            value: &value.0,
        })
        .collect()
    }

    fn content_type(&self) -> Option<&str> {
        Some(type_of(self))
    }

    fn content_from_keys<'a>(
        source: &Self,
        keys: impl Iterator<Item = KeyValue<'a>>,
        copy_type: Option<&str>,
    ) -> Self {
        let data: BTreeMap<String, ByteString> = keys
            .map(|key| (key.name.to_owned(), ByteString(key.value.to_vec())))
            .collect();
        Secret {
            data: (!data.is_empty()).then_some(data),
            type_: copy_type
                .map(str::to_owned)
                .or_else(|| source.type_.clone()),
            immutable: source.immutable,
            ..Secret::default()
        }
    }

    fn set_content(&mut self, other: &Self) {
        self.data = other.data.clone();
        self.string_data = None;
        self.type_ = other.type_.clone();
        self.immutable = other.immutable;
    }

    fn drop_content(&mut self) {
        self.data = None;
        self.string_data = None;
    }

    fn content_bytes(&self) -> u64 {
        let data = self.data.iter().flatten().map(|(_, value)| value.0.len());
        let text = self
            .string_data
            .iter()
            .flatten()
            .map(|(_, value)| value.len());
        data.chain(text).map(|len| len as u64).sum()
    }

    fn is_immutable(&self) -> bool {
        self.immutable == Some(true)
    }

    /// The API server refuses a change of `type` in place, as it refuses
    /// any change of an immutable Secret's content.
    fn needs_recreate(actual: &Self, actual_checksum: &str, desired: &Self) -> bool {
        type_of(actual) != type_of(desired)
            || changes_immutable_content(actual, actual_checksum, desired)
    }
}

fn type_of(secret: &Secret) -> &str {
    secret.type_.as_deref().unwrap_or(DEFAULT_TYPE)
}

#[cfg(test)]
mod tests;
