//! Secrets: `data`, `type` and `immutable` are the content. `stringData`
//! is write-only (the API server folds it into `data`), so it is never
//! copied or compared.
//!
//! A Secret's digest is keyed: a plain digest of a short password, in an
//! annotation anyone with metadata access can read (audit logs, dashboards,
//! `kubectl get -o yaml`), would let them confirm a guess offline. Keyed
//! with a random key only the controller's replicas read, it confirms
//! nothing to whoever lacks the key, and two installs never agree.

use std::fmt;

use hmac::{Hmac, Mac};
use k8s_openapi::api::core::v1::Secret;
use sha2::Sha256;

use super::{MirroredKind, changes_immutable_content};
use crate::contract::encode_map;

/// A type the API server gives no other object.
pub const SERVICE_ACCOUNT_TOKEN_TYPE: &str = "kubernetes.io/service-account-token";
/// What the API server stores when a Secret names no type.
const DEFAULT_TYPE: &str = "Opaque";
/// Marks a keyed digest apart from a ConfigMap's plain one.
pub const DIGEST_PREFIX: &str = "hmac-sha256:";

/// The install's key for Secret digests. Its bytes are never printed.
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

impl fmt::Debug for SecretDigestKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SecretDigestKey(..)")
    }
}

impl MirroredKind for Secret {
    type DigestKey = SecretDigestKey;

    const SOURCES_WATCH: &'static str = "secret-sources";
    const COPIES_WATCH: &'static str = "secret-copies";

    fn content_digest(&self, key: &SecretDigestKey) -> String {
        let mut mac = key.mac();
        let type_ = type_of(self);
        encode_map(
            &mut mac,
            b't',
            [(&b"type"[..], type_.as_bytes())].into_iter(),
        );
        let empty = Default::default();
        let data = self.data.as_ref().unwrap_or(&empty);
        encode_map(
            &mut mac,
            b'd',
            data.iter().map(|(k, v)| (k.as_bytes(), v.0.as_slice())),
        );
        format!(
            "{DIGEST_PREFIX}{}",
            hex::encode(mac.finalize().into_bytes())
        )
    }

    fn source_refusal(&self) -> Option<&'static str> {
        (type_of(self) == SERVICE_ACCOUNT_TOKEN_TYPE)
            .then_some("a service-account token: the token controller owns its content")
    }

    fn content_of(source: &Self) -> Self {
        Secret {
            data: source.data.clone(),
            type_: source.type_.clone(),
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

    fn is_immutable(&self) -> bool {
        self.immutable == Some(true)
    }

    /// The API server refuses a change of `type` in place, as it refuses
    /// any change of an immutable Secret's content.
    fn needs_recreate(actual: &Self, actual_digest: &str, desired: &Self) -> bool {
        type_of(actual) != type_of(desired)
            || changes_immutable_content(actual, actual_digest, desired)
    }
}

fn type_of(secret: &Secret) -> &str {
    secret.type_.as_deref().unwrap_or(DEFAULT_TYPE)
}

#[cfg(test)]
mod tests;
