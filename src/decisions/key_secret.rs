//! Whether the Secret at the digest key's name holds a key this controller
//! may use (see `cluster::digest_key`).
//!
//! The key decides every Secret copy's checksum, so whoever chooses it can
//! confirm guesses of copied values. A Secret that looks like one of this
//! controller's copies may have been made by it on a tenant's request (a
//! mirror of the tenant's Secret of that name), or planted to pass for
//! one: it is refused, as is one whose key has the wrong length. A refused
//! Secret is never changed or deleted here: it is not this controller's;
//! a person fixes or deletes it, and a deleted one is replaced by a new
//! key.
//!
//! Pure, like `desired`.

use std::fmt;

use k8s_openapi::api::core::v1::Secret;

use crate::{
    contract::{
        MANAGED_BY_LABEL, MANAGER_NAME, MIRROR_OF_ANNOTATION, annotation, is_managed_by_us,
    },
    kind::secret::SecretDigestKey,
};

/// Where in the Secret the key is.
pub const KEY_ENTRY: &str = "key";

/// Why a Secret at the key's name is not used. Names no content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// It carries the managed-by label of this controller's copies.
    LooksLikeACopy,
    /// It names a source, as a mirror does.
    LooksLikeAMirror,
    /// Its `key` entry is missing, or not exactly 32 bytes.
    NoKey,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::LooksLikeACopy => write!(
                f,
                "it carries the label {MANAGED_BY_LABEL}={MANAGER_NAME}, as this controller's copies do"
            ),
            Refusal::LooksLikeAMirror => {
                write!(
                    f,
                    "it carries the annotation {MIRROR_OF_ANNOTATION}, as mirrors do"
                )
            }
            Refusal::NoKey => write!(
                f,
                "it holds no entry {KEY_ENTRY:?} of exactly {} bytes",
                SecretDigestKey::LEN
            ),
        }
    }
}

/// The key `secret` holds, or why it is not used.
pub fn key_in(secret: &Secret) -> Result<SecretDigestKey, Refusal> {
    if is_managed_by_us(&secret.metadata) {
        return Err(Refusal::LooksLikeACopy);
    }
    if annotation(&secret.metadata, MIRROR_OF_ANNOTATION).is_some() {
        return Err(Refusal::LooksLikeAMirror);
    }
    secret
        .data
        .as_ref()
        .and_then(|data| data.get(KEY_ENTRY))
        .and_then(|key| SecretDigestKey::from_bytes(&key.0))
        .ok_or(Refusal::NoKey)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use k8s_openapi::{ByteString, apimachinery::pkg::apis::meta::v1::ObjectMeta};

    use super::*;

    fn key_secret(key: &[u8]) -> Secret {
        Secret {
            metadata: ObjectMeta {
                name: Some("configmap-mirror-digest-key".into()),
                ..ObjectMeta::default()
            },
            data: Some(BTreeMap::from([(
                KEY_ENTRY.to_owned(),
                ByteString(key.to_vec()),
            )])),
            ..Secret::default()
        }
    }

    #[test]
    fn a_32_byte_key_is_used() {
        let key = key_in(&key_secret(&[7; 32])).unwrap();
        assert_eq!(key, SecretDigestKey::from_bytes(&[7; 32]).unwrap());
    }

    #[test]
    fn a_key_of_another_length_or_none_is_refused() {
        for len in [0, 16, 31, 33, 64] {
            assert_eq!(key_in(&key_secret(&vec![7; len])), Err(Refusal::NoKey));
        }
        let mut no_entry = key_secret(&[7; 32]);
        no_entry.data = Some(BTreeMap::from([(
            "other".to_owned(),
            ByteString(vec![7; 32]),
        )]));
        assert_eq!(key_in(&no_entry), Err(Refusal::NoKey));
        no_entry.data = None;
        assert_eq!(key_in(&no_entry), Err(Refusal::NoKey));
    }

    #[test]
    fn a_secret_that_looks_like_a_copy_or_a_mirror_is_refused_whatever_it_holds() {
        let mut copy = key_secret(&[7; 32]);
        copy.metadata.labels = Some(BTreeMap::from([(
            MANAGED_BY_LABEL.to_owned(),
            MANAGER_NAME.to_owned(),
        )]));
        assert_eq!(key_in(&copy), Err(Refusal::LooksLikeACopy));

        let mut mirror = key_secret(&[7; 32]);
        mirror.metadata.annotations = Some(BTreeMap::from([(
            MIRROR_OF_ANNOTATION.to_owned(),
            "tenant/configmap-mirror-digest-key".to_owned(),
        )]));
        assert_eq!(key_in(&mirror), Err(Refusal::LooksLikeAMirror));
    }

    #[test]
    fn a_refusal_says_why_and_never_what_the_key_is() {
        let secret = key_secret(&[0x41; 31]);
        let told = key_in(&secret).unwrap_err().to_string();
        assert!(told.contains("32 bytes"), "{told}");
        assert!(!told.contains(&"A".repeat(31)));
        assert!(!told.contains(&hex::encode([0x41; 31])));
    }
}
