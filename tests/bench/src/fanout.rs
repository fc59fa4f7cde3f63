//! Fan-out: one source mirrored into many namespaces. How long until every
//! namespace has its mirror, and how long one update takes to reach them all,
//! observed by a watch of the bench's own on the mirrors.

use std::{
    collections::{BTreeMap, HashMap},
    time::{Duration, Instant},
};

use anyhow::{Context as _, bail};
use configmap_mirror::contract::{CHECKSUM_ANNOTATION, content_checksum, copy_selector};
use futures::{StreamExt, TryStreamExt, stream};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::{
    Api, Client, ResourceExt,
    api::{ObjectMeta, Patch, PatchParams, PostParams},
    runtime::{WatchStreamExt, watcher},
};
use serde::Serialize;

const SOURCE: &str = "fan-out";
const PREFIX: &str = "bench-fan-";
const PATIENCE: Duration = Duration::from_secs(600);

#[derive(Clone, Debug, Serialize)]
pub struct FanOut {
    pub namespaces: usize,
    /// From the source's creation to the last of its mirrors observed.
    pub converge_seconds: f64,
    /// From one update of the source to the last mirror showing it.
    pub propagate_seconds: f64,
}

/// Creates `namespaces` consenting namespaces, then one source in
/// `source_namespace` that asks for all of them.
pub async fn run(
    client: &Client,
    source_namespace: &str,
    namespaces: usize,
    concurrency: usize,
) -> anyhow::Result<FanOut> {
    create_namespaces(client, namespaces, concurrency).await?;
    let sources: Api<ConfigMap> = Api::namespaced(client.clone(), source_namespace);
    let mirrors = watch_mirrors(client.clone());
    let mut mirrors = std::pin::pin!(mirrors);

    let source = mk_source("v1");
    let started = Instant::now();
    let created = sources
        .create(&PostParams::default(), &source)
        .await
        .context("creating the fan-out source")?;
    let mut seen: HashMap<String, String> = HashMap::new();
    wait_all(
        &mut mirrors,
        &mut seen,
        namespaces,
        &content_checksum(&created),
    )
    .await?;
    let converge_seconds = started.elapsed().as_secs_f64();

    let patch = serde_json::json!({"data": {"version": "v2"}});
    let started = Instant::now();
    let patched = sources
        .patch(SOURCE, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .context("updating the fan-out source")?;
    wait_all(
        &mut mirrors,
        &mut seen,
        namespaces,
        &content_checksum(&patched),
    )
    .await?;
    let propagate_seconds = started.elapsed().as_secs_f64();
    Ok(FanOut {
        namespaces,
        converge_seconds,
        propagate_seconds,
    })
}

fn mk_source(version: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(SOURCE.into()),
            labels: Some(BTreeMap::from([(
                "workshop.io/managed".into(),
                "true".into(),
            )])),
            annotations: Some(BTreeMap::from([(
                "workshop.io/mirror-to".into(),
                format!("{PREFIX}*"),
            )])),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([("version".into(), version.into())])),
        ..ConfigMap::default()
    }
}

async fn create_namespaces(
    client: &Client,
    count: usize,
    concurrency: usize,
) -> anyhow::Result<()> {
    let api: Api<Namespace> = Api::all(client.clone());
    stream::iter(0..count)
        .map(|i| {
            let api = api.clone();
            async move {
                let namespace = Namespace {
                    metadata: ObjectMeta {
                        name: Some(format!("{PREFIX}{i}")),
                        labels: Some(BTreeMap::from([(
                            "workshop.io/accept-mirrors".into(),
                            "true".into(),
                        )])),
                        ..ObjectMeta::default()
                    },
                    ..Namespace::default()
                };
                api.create(&PostParams::default(), &namespace)
                    .await
                    .map(drop)
            }
        })
        .buffer_unordered(concurrency.max(1))
        .try_collect::<Vec<()>>()
        .await
        .context("creating the fan-out namespaces")?;
    Ok(())
}

/// Mirrors of the fan-out source as they change: (namespace, checksum).
fn watch_mirrors(client: Client) -> impl futures::Stream<Item = anyhow::Result<(String, String)>> {
    let api: Api<ConfigMap> = Api::all(client);
    let config = watcher::Config::default().labels(&copy_selector());
    watcher(api, config)
        .default_backoff()
        .applied_objects()
        .map_err(anyhow::Error::from)
        .try_filter_map(|cm| async move {
            let namespace = cm.namespace().unwrap_or_default();
            let relevant = cm.name_any() == SOURCE && namespace.starts_with(PREFIX);
            let checksum = cm
                .annotations()
                .get(CHECKSUM_ANNOTATION)
                .cloned()
                .unwrap_or_default();
            Ok(relevant.then_some((namespace, checksum)))
        })
}

async fn wait_all(
    mirrors: &mut (impl futures::Stream<Item = anyhow::Result<(String, String)>> + Unpin),
    seen: &mut HashMap<String, String>,
    count: usize,
    checksum: &str,
) -> anyhow::Result<()> {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while seen.values().filter(|sum| *sum == checksum).count() < count {
        match tokio::time::timeout_at(deadline, mirrors.next()).await {
            Ok(Some(Ok((namespace, sum)))) => {
                seen.insert(namespace, sum);
            }
            Ok(Some(Err(error))) => eprintln!("bench: mirror watch failed, retrying: {error}"),
            Ok(None) => bail!("the mirror watch ended"),
            Err(_) => bail!("timed out after {PATIENCE:?} waiting for {count} mirrors"),
        }
    }
    Ok(())
}
