//! The objects tests create.

use std::collections::BTreeMap;

use k8s_openapi::{
    ByteString, api::core::v1::ConfigMap, apimachinery::pkg::apis::meta::v1::ObjectMeta,
};

/// The label that makes a ConfigMap a source, as the controller is started
/// by default.
pub const SOURCE_LABEL: &str = "workshop.io/managed";

pub fn mk_source(name: &str, data: &[(&str, &str)]) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: Some(BTreeMap::from([(
                SOURCE_LABEL.to_owned(),
                "true".to_owned(),
            )])),
            ..ObjectMeta::default()
        },
        data: Some(
            data.iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        ),
        ..ConfigMap::default()
    }
}

pub fn mk_unmanaged(name: &str, data: &[(&str, &str)]) -> ConfigMap {
    let mut cm = mk_source(name, data);
    cm.metadata.labels = None;
    cm
}

pub fn with_binary(mut cm: ConfigMap, key: &str, bytes: &[u8]) -> ConfigMap {
    cm.binary_data
        .get_or_insert_with(BTreeMap::new)
        .insert(key.to_owned(), ByteString(bytes.to_vec()));
    cm
}
