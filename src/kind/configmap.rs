//! ConfigMaps: `data`, `binaryData` and `immutable` are the content.
//!
//! A ConfigMap copy's checksum is the plain SHA-256 of its content
//! (`contract::checksum`), the same for every source of that content: the
//! content is no secret, and anyone may check a copy against it.

use std::borrow::Cow;

use k8s_openapi::api::core::v1::ConfigMap;

use super::{MirroredKind, SourceId};
use crate::{api::SourceKind, contract::checksum};

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

    /// The content's own hash: no key, and no source.
    fn checksum<'h>(content_hash: &'h str, _: &SourceId<'_>, (): &()) -> Cow<'h, str> {
        Cow::Borrowed(content_hash)
    }

    fn content_of(source: &Self) -> Self {
        ConfigMap {
            data: source.data.clone(),
            binary_data: source.binary_data.clone(),
            immutable: source.immutable,
            ..ConfigMap::default()
        }
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

    fn is_immutable(&self) -> bool {
        self.immutable == Some(true)
    }
}
