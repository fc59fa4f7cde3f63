//! The objects the bench writes, and the writes themselves.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::Context;
use futures::{StreamExt, TryStreamExt, stream};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::api::events::v1::Event;
use kube::Api;
use kube::api::{DeleteParams, ListParams, ObjectMeta, Patch, PatchParams, PostParams};

use crate::params::DATA_KEYS;

/// The controller's default companion suffix; the bench runs it with defaults.
pub const SUFFIX: &str = "-synced";
const SOURCE_LABEL: (&str, &str) = ("workshop.io/managed", "true");
const ATTEMPTS: u32 = 5;

pub fn source_name(index: usize) -> String {
    format!("src-{index:06}")
}

pub fn companion_name(source: &str) -> String {
    configmap_mirror::contract::companion_name(source, SUFFIX)
}

pub fn source_of_companion(companion: &str) -> Option<&str> {
    companion.strip_suffix(SUFFIX).filter(|s| !s.is_empty())
}

/// `size` bytes over [`DATA_KEYS`] keys, different for every
/// (index, generation), so each patch really changes the content.
pub fn content(index: usize, generation: u32, size: usize) -> BTreeMap<String, String> {
    (0..DATA_KEYS)
        .map(|key| {
            let len = size / DATA_KEYS + usize::from(key < size % DATA_KEYS);
            // The distinguishing prefix is kept whole even when it is longer
            // than `len`: tiny sizes grow a little rather than collide.
            let mut value = format!("{index}.{generation}.{key}:");
            while value.len() < len {
                value.push(char::from(b'a' + (value.len() % 26) as u8));
            }
            (format!("file-{key}.conf"), value)
        })
        .collect()
}

/// The checksum the controller must write for this content, computed by the
/// controller's own library so the two can never disagree on the encoding.
pub fn checksum(data: &BTreeMap<String, String>) -> String {
    configmap_mirror::contract::checksum(Some(data), None)
}

/// An object of a kind the bench creates.
pub trait Object:
    kube::Resource<DynamicType = ()>
    + Clone
    + std::fmt::Debug
    + serde::Serialize
    + serde::de::DeserializeOwned
{
}

impl<K> Object for K where
    K: kube::Resource<DynamicType = ()>
        + Clone
        + std::fmt::Debug
        + serde::Serialize
        + serde::de::DeserializeOwned
{
}

/// A Secret of the same name, label and content as [`configmap`] makes.
pub fn secret(name: String, labeled: bool, data: BTreeMap<String, String>) -> Secret {
    let configmap = configmap(name, labeled, data);
    Secret {
        metadata: configmap.metadata,
        data: configmap.data.map(|data| {
            data.into_iter()
                .map(|(key, value)| (key, ByteString(value.into_bytes())))
                .collect()
        }),
        type_: Some("Opaque".into()),
        ..Secret::default()
    }
}

pub fn configmap(name: String, labeled: bool, data: BTreeMap<String, String>) -> ConfigMap {
    let labels =
        labeled.then(|| BTreeMap::from([(SOURCE_LABEL.0.to_owned(), SOURCE_LABEL.1.to_owned())]));
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name),
            labels,
            ..ObjectMeta::default()
        },
        data: Some(data),
        ..ConfigMap::default()
    }
}

/// Creates every object at `concurrency` in flight and returns how long
/// that took.
pub async fn create_all<K: Object>(
    api: &Api<K>,
    objects: impl Iterator<Item = K> + Send,
    concurrency: usize,
) -> anyhow::Result<Duration> {
    let started = Instant::now();
    stream::iter(objects)
        .map(|cm| create(api, cm))
        .buffer_unordered(concurrency)
        .try_collect::<()>()
        .await?;
    Ok(started.elapsed())
}

pub(crate) async fn create<K: Object>(api: &Api<K>, cm: K) -> anyhow::Result<()> {
    let name = cm.meta().name.clone().unwrap_or_default();
    let mut attempt = 1;
    loop {
        match api.create(&PostParams::default(), &cm).await {
            Ok(_) => return Ok(()),
            // Only a retry can find it: an earlier attempt's response was lost.
            Err(kube::Error::Api(s)) if s.is_already_exists() && attempt > 1 => return Ok(()),
            Err(e) if attempt < ATTEMPTS && transient(&e) => retry_pause(&mut attempt).await,
            Err(e) => {
                return Err(e).with_context(|| format!("creating {} {name}", K::kind(&())));
            }
        }
    }
}

/// Replaces all of a source's data with `data`.
pub async fn patch_data(
    api: &Api<ConfigMap>,
    name: &str,
    data: &BTreeMap<String, String>,
) -> anyhow::Result<()> {
    let patch = Patch::Merge(serde_json::json!({ "data": data }));
    let mut attempt = 1;
    loop {
        match api.patch(name, &PatchParams::default(), &patch).await {
            Ok(_) => return Ok(()),
            Err(e) if attempt < ATTEMPTS && transient(&e) => retry_pause(&mut attempt).await,
            Err(e) => return Err(e).with_context(|| format!("patching configmap {name}")),
        }
    }
}

/// Deletes the object with this uid; not retried, as a retry could delete a
/// successor.
pub async fn delete(api: &Api<ConfigMap>, name: &str, uid: &str) -> anyhow::Result<()> {
    let params = DeleteParams {
        preconditions: Some(kube::api::Preconditions {
            uid: Some(uid.to_owned()),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    api.delete(name, &params)
        .await
        .with_context(|| format!("deleting configmap {name}"))?;
    Ok(())
}

/// Events (events.k8s.io) in the namespace of `api`: the controller
/// reports every companion write as one, which is API write load too.
pub async fn count_events(client: kube::Client, namespace: &str) -> anyhow::Result<usize> {
    let api: Api<Event> = Api::namespaced(client, namespace);
    let mut count = 0;
    let mut params = ListParams::default().limit(5000);
    loop {
        let page = api
            .list_metadata(&params)
            .await
            .with_context(|| format!("listing events in {namespace}"))?;
        count += page.items.len();
        match page.metadata.continue_.filter(|token| !token.is_empty()) {
            Some(token) => params = params.continue_token(&token),
            None => return Ok(count),
        }
    }
}

/// Every namespace in the cluster, by a paged list of their names.
pub async fn count_namespaces(client: &kube::Client) -> anyhow::Result<usize> {
    let api: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    let mut count = 0;
    let mut params = ListParams::default().limit(5000);
    loop {
        let page = api
            .list_metadata(&params)
            .await
            .context("listing namespaces")?;
        count += page.items.len();
        match page.metadata.continue_.filter(|token| !token.is_empty()) {
            Some(token) => params = params.continue_token(&token),
            None => return Ok(count),
        }
    }
}

/// Worth another try: overload, a server error, or the connection.
fn transient(error: &kube::Error) -> bool {
    match error {
        kube::Error::Api(status) => status.code == 429 || status.code >= 500,
        kube::Error::HyperError(_) | kube::Error::Service(_) => true,
        _ => false,
    }
}

async fn retry_pause(attempt: &mut u32) {
    tokio::time::sleep(Duration::from_millis(100) * 2u32.pow(*attempt)).await;
    *attempt += 1;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_has_the_requested_size_over_four_keys() {
        let data = content(7, 0, 1026);
        assert_eq!(data.len(), DATA_KEYS);
        assert_eq!(data.values().map(String::len).sum::<usize>(), 1026);
    }

    #[test]
    fn every_generation_has_a_different_checksum() {
        let sums: std::collections::HashSet<String> = (0..3)
            .flat_map(|i| (0..3).map(move |g| checksum(&content(i, g, 16))))
            .collect();
        assert_eq!(sums.len(), 9);
    }

    #[test]
    fn companion_names_map_back_to_their_source() {
        let name = companion_name(&source_name(42));
        assert_eq!(name, "src-000042-synced");
        assert_eq!(source_of_companion(&name), Some("src-000042"));
        assert_eq!(source_of_companion("-synced"), None);
    }
}
