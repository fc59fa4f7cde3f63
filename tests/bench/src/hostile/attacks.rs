//! The six attacks of the hostile tenant (issue 51), each as large as the
//! API server accepts. The tenant has no cluster rights: it only creates
//! and changes ConfigMaps in namespaces of its own, and the namespaces that
//! take its mirrors consent as any namespace owner may.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use futures::{StreamExt, TryStreamExt, stream};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{DeleteParams, ObjectMeta};
use kube::{Api, Client};
use serde::Serialize;

use super::HostileParams;
use super::watch::Watches;
use crate::controller::sum_of;
use crate::fanout;
use crate::profile::Profile;
use crate::workload;

const MANAGED: (&str, &str) = ("workshop.io/managed", "true");
const MIRROR_KEYS: &str = "workshop.io/mirror-keys";
const MIRROR_TO: &str = "workshop.io/mirror-to";
const WRITES: &str = "configmap_mirror_companion_writes_total";
/// Requests of a MiB each: few at once, as in the big-sources phase.
const BIG_CONCURRENCY: usize = 4;
const GONE_PATIENCE: Duration = Duration::from_secs(180);

/// What one attack did besides what the watches measured.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Outcome {
    pub what: String,
    /// Copies written (the controller's count) while the attack ran.
    pub copy_writes: f64,
    /// Until the copies it waited for were written, when it waits for any;
    /// None when they were not within its patience.
    pub copies_seconds: Option<f64>,
}

/// The world an attack runs in.
pub struct Scene<'a> {
    pub client: &'a Client,
    pub watches: &'a Watches,
    pub params: &'a HostileParams,
    pub attacker: String,
}

impl Scene<'_> {
    fn sources(&self) -> Api<ConfigMap> {
        Api::namespaced(self.client.clone(), &self.attacker)
    }

    /// The controller's count of copy writes; a stalled or restarting
    /// controller is asked again for up to half a minute, then NaN.
    async fn writes(&self) -> f64 {
        let started = Instant::now();
        loop {
            let count = self.writes_once().await;
            if !count.is_nan() || started.elapsed() > Duration::from_secs(30) {
                return count;
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }

    async fn writes_once(&self) -> f64 {
        let url = format!("{}/metrics", self.watches.base_url());
        let text = async {
            let http = reqwest::Client::builder().no_proxy().build()?;
            let response = http
                .get(&url)
                .timeout(Duration::from_secs(5))
                .send()
                .await?;
            response.text().await
        };
        text.await.map_or(f64::NAN, |text| sum_of(&text, WRITES))
    }

    /// Waits until the controller has written `count` more copies than
    /// `before`, for at most `patience`; the seconds since `started`, or
    /// None when it did not.
    async fn wait_writes(
        &self,
        before: f64,
        count: usize,
        started: Instant,
        patience: Duration,
    ) -> Option<f64> {
        // Unlabelled, the controller writes no copy of the attack's.
        if self.params.unlabelled {
            return None;
        }
        while started.elapsed() < patience {
            if since(before, self.writes().await) >= count as f64 {
                return Some(started.elapsed().as_secs_f64());
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        None
    }

    /// An attack's source, as `source` makes it; without the managed
    /// label when the attacks run unlabelled.
    fn source(
        &self,
        name: &str,
        data: BTreeMap<String, String>,
        annotations: &[(&str, String)],
    ) -> ConfigMap {
        let mut cm = source(name, data, annotations);
        if self.params.unlabelled {
            cm.metadata.labels = None;
        }
        cm
    }

    async fn hold(&self) {
        tokio::time::sleep(Duration::from_secs(self.params.attack_secs)).await;
    }

    fn patience(&self) -> Duration {
        Duration::from_secs(self.params.setup_secs)
    }
}

/// Copies written since a count of `before`, now `now`: a controller that
/// was started again meanwhile counts from zero, and its count alone is
/// then what is known (the process that exited wrote more).
fn since(before: f64, now: f64) -> f64 {
    if now < before { now } else { now - before }
}

pub fn source(
    name: &str,
    data: BTreeMap<String, String>,
    annotations: &[(&str, String)],
) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            labels: Some(BTreeMap::from([(MANAGED.0.into(), MANAGED.1.into())])),
            annotations: Some(
                annotations
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), v.clone()))
                    .collect(),
            ),
            ..ObjectMeta::default()
        },
        data: Some(data),
        ..ConfigMap::default()
    }
}

/// `count` empty keys, `k0` to `k{count-1}`.
fn empty_keys(count: usize) -> BTreeMap<String, String> {
    (0..count)
        .map(|i| (format!("k{i}"), String::new()))
        .collect()
}

/// One key `name` of `bytes` bytes, different for each `generation`.
fn big_value(bytes: usize, generation: usize) -> String {
    let mut value = format!("{generation}:");
    let fill = bytes.saturating_sub(value.len());
    value.extend((0..fill).map(|i| char::from(b'a' + (i % 26) as u8)));
    value
}

/// An exclusion glob of `len` characters, `*q*q*…*{i}*`, that no key
/// `k<number>` matches, but only after a matcher that backtracks has tried
/// every way of spreading the key over its stars.
pub fn exclusion_glob(i: usize, len: usize) -> String {
    let tail = format!("{i}*");
    let mut glob = String::from("*");
    while glob.len() + 2 + tail.len() <= len {
        glob.push_str("q*");
    }
    glob.push_str(&tail);
    glob
}

/// Attack 1: one source of many empty keys whose `mirror-keys` keeps `k0`
/// and excludes 99 long globs.
pub async fn globs(scene: &Scene<'_>) -> anyhow::Result<Outcome> {
    let p = scene.params;
    let mut keys = vec!["k0".to_owned()];
    keys.extend((1..=p.exclusions).map(|i| format!("!{}", exclusion_glob(i, p.glob_len))));
    let annotation = keys.join(",");
    let cm = scene.source(
        "globs",
        empty_keys(p.keys),
        &[(MIRROR_KEYS, annotation.clone())],
    );
    let before = scene.writes().await;
    workload::create(&scene.sources(), cm).await?;
    scene.hold().await;
    Ok(Outcome {
        what: format!(
            "1 source of {} empty keys, mirror-keys of k0 and {} exclusions of {} characters ({} bytes)",
            p.keys,
            p.exclusions,
            p.glob_len,
            annotation.len()
        ),
        copy_writes: since(before, scene.writes().await),
        copies_seconds: None,
    })
}

/// Attack 2: one key of ~1 MB, renamed into 99 more names: a copy far over
/// what the API server accepts.
pub async fn renames(scene: &Scene<'_>) -> anyhow::Result<Outcome> {
    let p = scene.params;
    let mut names = vec!["a".to_owned()];
    names.extend((1..=p.renames).map(|i| format!("a=b{i}")));
    let data = BTreeMap::from([("a".to_owned(), big_value(p.bytes, 0))]);
    let cm = scene.source("renames", data, &[(MIRROR_KEYS, names.join(","))]);
    let before = scene.writes().await;
    workload::create(&scene.sources(), cm).await?;
    scene.hold().await;
    Ok(Outcome {
        what: format!(
            "1 source of one key of {} bytes, mirror-keys a,a=b1,...,a=b{}",
            p.bytes, p.renames
        ),
        copy_writes: since(before, scene.writes().await),
        copies_seconds: None,
    })
}

/// Attack 3: sources of many keys carrying `mirror-keys`, every other one
/// malformed (an empty entry).
pub async fn keyed(scene: &Scene<'_>) -> anyhow::Result<Outcome> {
    let p = scene.params;
    let objects: Vec<ConfigMap> = (0..p.keyed_sources)
        .map(|i| {
            let keys = if i % 2 == 0 { "k0,,k1" } else { "k0" };
            scene.source(
                &format!("keyed-{i}"),
                empty_keys(p.keys),
                &[(MIRROR_KEYS, keys.to_owned())],
            )
        })
        .collect();
    let before = scene.writes().await;
    workload::create_all(&scene.sources(), objects.into_iter(), BIG_CONCURRENCY).await?;
    scene.hold().await;
    Ok(Outcome {
        what: format!(
            "{} sources of {} empty keys with mirror-keys, half of them malformed (k0,,k1), half k0",
            p.keyed_sources, p.keys
        ),
        copy_writes: since(before, scene.writes().await),
        copies_seconds: None,
    })
}

/// Attack 4: many sources of ~1 MB in one namespace, their companions
/// written; then a restart of the controller and a change of one source,
/// whose fresh read lists the namespace.
pub async fn crowded(scene: &Scene<'_>) -> anyhow::Result<Outcome> {
    let p = scene.params;
    let n = p.namespace_sources;
    let objects = (0..n).map(|i| {
        let data = BTreeMap::from([("a".to_owned(), big_value(p.bytes, i))]);
        scene.source(&format!("crowded-{i:03}"), data, &[])
    });
    let started = Instant::now();
    let before = scene.writes().await;
    workload::create_all(&scene.sources(), objects, BIG_CONCURRENCY).await?;
    let copies_seconds = scene
        .wait_writes(before, n, started, scene.patience())
        .await;
    let written = scene.writes().await - before;
    scene
        .watches
        .restart()
        .await
        .context("restarting the controller")?;
    let changed = BTreeMap::from([("a".to_owned(), big_value(p.bytes, n))]);
    workload::patch_data(&scene.sources(), "crowded-000", &changed).await?;
    scene.hold().await;
    Ok(Outcome {
        what: format!(
            "{n} sources of {} bytes in one namespace, companions written; the controller restarted; one source changed",
            p.bytes
        ),
        copy_writes: written + scene.writes().await,
        copies_seconds,
    })
}

/// Attack 5: sources of ~1 MB asking for a mirror in every namespace, and
/// namespaces that accept mirrors from anywhere; then a restart, a cold
/// start over all of it.
pub async fn wide(scene: &Scene<'_>, open_prefix: &str) -> anyhow::Result<Outcome> {
    let p = scene.params;
    let objects = (0..p.wide_sources).map(|i| {
        let data = BTreeMap::from([("a".to_owned(), big_value(p.bytes, i))]);
        scene.source(
            &format!("wide-{i:02}"),
            data,
            &[(MIRROR_TO, "*".to_owned())],
        )
    });
    let copies = p.wide_sources * (p.open_namespaces + 1);
    let started = Instant::now();
    let before = scene.writes().await;
    workload::create_all(&scene.sources(), objects, BIG_CONCURRENCY).await?;
    let copies_seconds = scene
        .wait_writes(before, copies, started, scene.patience())
        .await;
    let written = scene.writes().await - before;
    scene.hold().await;
    scene
        .watches
        .restart()
        .await
        .context("restarting the controller")?;
    scene.hold().await;
    Ok(Outcome {
        what: format!(
            "{} sources of {} bytes with mirror-to \"*\", {} namespaces {open_prefix}N accepting mirrors from anywhere; then a restart",
            p.wide_sources, p.bytes, p.open_namespaces
        ),
        copy_writes: written + scene.writes().await,
        copies_seconds,
    })
}

/// Attack 6, set up: sources each mirrored into every namespace named
/// `prefix` and a number, written. Not measured: the attack is the change.
pub async fn fan_setup(scene: &Scene<'_>, prefix: &str) -> anyhow::Result<Option<f64>> {
    let p = scene.params;
    fanout::create_namespaces(
        scene.client,
        Profile::ConfigMapMirror,
        prefix,
        p.fan_namespaces,
        p.concurrency,
    )
    .await?;
    let objects = (0..p.fan_sources).map(|i| {
        scene.source(
            &format!("fan-{i:02}"),
            fan_data(i, 0),
            &[(MIRROR_TO, format!("{prefix}*"))],
        )
    });
    let started = Instant::now();
    let before = scene.writes().await;
    workload::create_all(&scene.sources(), objects, p.concurrency).await?;
    let copies = p.fan_sources * (p.fan_namespaces + 1);
    Ok(scene
        .wait_writes(before, copies, started, scene.patience())
        .await)
}

fn fan_data(i: usize, generation: usize) -> BTreeMap<String, String> {
    BTreeMap::from([(
        "a".to_owned(),
        format!("{i}.{generation}:{}", "x".repeat(1000)),
    )])
}

/// Attack 6: every fan-out source changed at once.
pub async fn fan_change(scene: &Scene<'_>) -> anyhow::Result<Outcome> {
    let p = scene.params;
    let started = Instant::now();
    let before = scene.writes().await;
    let sources = scene.sources();
    stream::iter(0..p.fan_sources)
        .map(|i| {
            let sources = sources.clone();
            async move { workload::patch_data(&sources, &format!("fan-{i:02}"), &fan_data(i, 1)).await }
        })
        .buffer_unordered(p.fan_sources.max(1))
        .try_collect::<()>()
        .await?;
    let copies = p.fan_sources * (p.fan_namespaces + 1);
    let copies_seconds = scene
        .wait_writes(before, copies, started, scene.patience())
        .await;
    Ok(Outcome {
        what: format!(
            "{} sources, each mirrored into {} namespaces, changed at once",
            p.fan_sources, p.fan_namespaces
        ),
        copy_writes: since(before, scene.writes().await),
        copies_seconds,
    })
}

/// Deletes the attack's namespaces, and waits until they are gone, so
/// that the next attack's figures are its own.
pub async fn clean_up(client: &Client, namespaces: &[String]) {
    let api: Api<Namespace> = Api::all(client.clone());
    for name in namespaces {
        if let Err(e) = api.delete(name, &DeleteParams::default()).await {
            eprintln!("bench:   could not delete the namespace {name}: {e}");
        }
    }
    let started = Instant::now();
    for name in namespaces {
        while started.elapsed() < GONE_PATIENCE {
            match api.get_opt(name).await {
                Ok(None) => break,
                _ => tokio::time::sleep(Duration::from_millis(500)).await,
            }
        }
    }
    if started.elapsed() >= GONE_PATIENCE {
        eprintln!("bench:   the attack's namespaces were not all gone within {GONE_PATIENCE:?}");
    }
}
