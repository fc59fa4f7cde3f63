//! ConfigMaps: `data`, `binaryData` and `immutable` are the content.

use k8s_openapi::api::core::v1::ConfigMap;

use super::MirroredKind;
use crate::contract::content_checksum;

impl MirroredKind for ConfigMap {
    type DigestKey = ();

    // Named before Secrets existed; users and alerts know them so.
    const SOURCES_WATCH: &'static str = "sources";
    const COPIES_WATCH: &'static str = "companions";

    fn content_digest(&self, (): &()) -> String {
        content_checksum(self)
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
