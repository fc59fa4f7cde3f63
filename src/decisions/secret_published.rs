//! A Secret as the source of the ConfigMaps that publish its keys (a
//! ClusterMirror's `target.kind: ConfigMap`): a ConfigMap that holds only
//! what those copies are made from, so that from there they are decided
//! as any ConfigMap copy is, and nothing else of the Secret is held in an
//! object of a kind whose content is no secret.
//!
//! Pure.

use std::collections::BTreeSet;

use k8s_openapi::{
    api::core::v1::{ConfigMap, Secret},
    apimachinery::pkg::apis::meta::v1::ObjectMeta,
};

use crate::{
    decisions::cache_form::key_digests::{aside_keeping, source_digests},
    decisions::key_shape::{KeyShape, SourceKey, content::source_keys},
    kind::{KeyValue, configmap::configmap_of_keys},
};

/// How a Secret's content, with the keys a shape copies, becomes an object
/// of kind `K`: for a ConfigMap, [`secret_published`] (or, in `explain`,
/// [`secret_published_naming_the_rest`]).
pub type SecretAs<K> = fn(&Secret, &KeyShape) -> K;

/// `secret` (full, or cached with its keys' digests) as the ConfigMap that
/// publishes the keys `shape` copies: its identity and labels, and of its
/// content only those keys, under their own names, each in the field a
/// ConfigMap holds it in, immutable when it is; a cached one keeps only
/// those keys' digests. Its annotations and managed fields are left out
/// (a `last-applied-configuration` holds every value). Its other keys
/// are told apart only by name in `explain`
/// ([`secret_published_naming_the_rest`]).
pub fn secret_published(secret: &Secret, shape: &KeyShape) -> ConfigMap {
    let published = published_names(secret, shape);
    let copied = source_keys(secret)
        .filter(|key| published.contains(key.key))
        .map(|key| KeyValue {
            field: key.field,
            name: key.key,
            value: key.value,
        });
    let mut configmap = configmap_of_keys(copied);
    configmap.metadata = identity(&secret.metadata);
    configmap.metadata.self_link = aside_keeping(secret, |name| published.contains(name));
    configmap.immutable = secret.immutable;
    configmap
}

/// [`secret_published`], with the Secret's other keys there by name, their
/// values empty: what `explain` says of which keys are left out, and why.
pub fn secret_published_naming_the_rest(secret: &Secret, shape: &KeyShape) -> ConfigMap {
    let mut configmap = secret_published(secret, shape);
    let data = configmap.data.get_or_insert_with(Default::default);
    for key in source_keys(secret) {
        let taken = configmap
            .binary_data
            .as_ref()
            .is_some_and(|binary| binary.contains_key(key.key));
        if !taken {
            data.entry(key.key.to_owned()).or_default();
        }
    }
    configmap
}

/// The names, in the Secret, of the keys `shape` copies.
fn published_names(secret: &Secret, shape: &KeyShape) -> BTreeSet<String> {
    let Some((_, digests)) = source_digests(secret) else {
        return BTreeSet::new();
    };
    let keys = digests.iter().map(|d| SourceKey {
        field: d.field,
        key: d.name.as_str(),
        value: (),
    });
    (shape.shape(keys).copied.into_iter())
        .map(|key| key.renamed_from.unwrap_or(key.name))
        .collect()
}

/// What of a Secret's metadata its published form keeps: what names it,
/// versions it and decides whether it may be copied.
fn identity(meta: &ObjectMeta) -> ObjectMeta {
    ObjectMeta {
        name: meta.name.clone(),
        namespace: meta.namespace.clone(),
        uid: meta.uid.clone(),
        resource_version: meta.resource_version.clone(),
        generation: meta.generation,
        creation_timestamp: meta.creation_timestamp.clone(),
        deletion_timestamp: meta.deletion_timestamp.clone(),
        labels: meta.labels.clone(),
        ..ObjectMeta::default()
    }
}

#[cfg(test)]
mod tests;
