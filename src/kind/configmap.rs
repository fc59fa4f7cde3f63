//! ConfigMaps: `data`, `binaryData` and `immutable` are the content.
//!
//! A ConfigMap copy's checksum is the plain SHA-256 of its content
//! (`contract::checksum`), the same for every source of that content: the
//! content is no secret, and anyone may check a copy against it. The one
//! exception is a ConfigMap that publishes a Secret's keys (a
//! ClusterMirror's `target.kind: ConfigMap`): its content came from a
//! Secret, so its checksum is keyed and bound to that Secret as the
//! Secret's own copies' are: the key follows the content
//! ([`ChecksumKey`]).

use std::borrow::Cow;

use k8s_openapi::api::core::v1::ConfigMap;

use std::collections::BTreeMap;

use k8s_openapi::ByteString;

use super::{ChecksumKey, Field, KeyValue, MirroredKind, SourceId};
use crate::{api::SourceKind, contract::checksum};

/// A ConfigMap's content is checksummed with no key: the plain hash.
impl ChecksumKey<ConfigMap> for () {
    fn checksum<'h>(&self, content_hash: &'h str, _: &SourceId<'_>) -> Cow<'h, str> {
        Cow::Borrowed(content_hash)
    }
}

impl MirroredKind for ConfigMap {
    type DigestKey = ();
    type KeyHandle = ();
    type SourceRules = ();

    const CONFIDENTIAL: bool = false;
    const SOURCE_KIND: SourceKind = SourceKind::ConfigMap;

    // Named before Secrets existed; users and alerts know them so.
    const SOURCES_WATCH: &'static str = "sources";
    const COPIES_WATCH: &'static str = "companions";

    fn current_key((): &()) -> Option<()> {
        Some(())
    }

    fn content_hash(&self) -> String {
        checksum(self.data.as_ref(), self.binary_data.as_ref())
    }

    fn content_of(source: &Self) -> Self {
        ConfigMap {
            data: source.data.clone(),
            binary_data: source.binary_data.clone(),
            immutable: source.immutable,
            ..ConfigMap::default()
        }
    }

    fn content_keys(&self) -> Vec<KeyValue<'_>> {
        let text = self.data.iter().flatten().map(|(name, value)| KeyValue {
            field: Field::Data,
            name,
            value: value.as_bytes(),
        });
        let binary = self
            .binary_data
            .iter()
            .flatten()
            .map(|(name, value)| KeyValue {
                field: Field::BinaryData,
                name,
                value: &value.0,
            });
        let mut keys: Vec<KeyValue<'_>> = text.chain(binary).collect();
        keys.sort_by_key(|key| key.name);
        keys
    }

    fn content_from_keys<'a>(
        source: &Self,
        keys: impl Iterator<Item = KeyValue<'a>>,
        _: Option<&str>,
    ) -> Self {
        let mut copy = configmap_of_keys(keys);
        copy.immutable = source.immutable;
        copy
    }

    fn set_content(&mut self, other: &Self) {
        self.data = other.data.clone();
        self.binary_data = other.binary_data.clone();
        self.immutable = other.immutable;
    }

    fn drop_content(&mut self) {
        self.data = None;
        self.binary_data = None;
    }

    fn content_bytes(&self) -> u64 {
        let text = self.data.iter().flatten().map(|(_, value)| value.len());
        let binary = self
            .binary_data
            .iter()
            .flatten()
            .map(|(_, value)| value.0.len());
        text.chain(binary).map(|len| len as u64).sum()
    }

    fn is_immutable(&self) -> bool {
        self.immutable == Some(true)
    }
}

/// A ConfigMap holding `keys`, each in its field. A value said to be text
/// that is not UTF-8 (it cannot be, from a ConfigMap's `data` or from
/// [`Field::of_bytes`]) goes to `binaryData`, so that no byte is lost.
pub fn configmap_of_keys<'a>(keys: impl Iterator<Item = KeyValue<'a>>) -> ConfigMap {
    let mut data = BTreeMap::new();
    let mut binary_data = BTreeMap::new();
    for key in keys {
        match (key.field, std::str::from_utf8(key.value)) {
            (Field::Data, Ok(text)) => {
                data.insert(key.name.to_owned(), text.to_owned());
            }
            _ => {
                binary_data.insert(key.name.to_owned(), ByteString(key.value.to_vec()));
            }
        }
    }
    ConfigMap {
        data: (!data.is_empty()).then_some(data),
        binary_data: (!binary_data.is_empty()).then_some(binary_data),
        ..ConfigMap::default()
    }
}
