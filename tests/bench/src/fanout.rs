//! Fan-out: one source copied into many namespaces. How long until every
//! namespace has its copy, how long one update takes to reach them all, and
//! how quickly a deleted copy comes back, observed by a watch of the
//! bench's own on the copies.
//!
//! The controller is driven through its [`Profile`], and a copy counts as
//! current when its data is the source's: the same test for any controller.

use std::{
    collections::{BTreeMap, HashMap},
    time::{Duration, Instant},
};

use anyhow::{Context as _, bail};
use futures::{StreamExt, TryStreamExt, stream};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::{
    Api, Client, ResourceExt,
    api::{DeleteParams, ObjectMeta, Patch, PatchParams, PostParams, Preconditions},
    runtime::watcher,
};
use serde::Serialize;

use crate::profile::Profile;
use crate::report::Latency;
use crate::watched::{Apply, Watched};
use crate::workload;

const SOURCE: &str = "fan-out";
/// The namespaces of the full run's fan-out; a sweep gives each size its
/// own prefix, so that one size's copies never count for another.
pub const PREFIX: &str = "bench-fan-";
const PATIENCE: Duration = Duration::from_secs(1800);
/// How long a deleted copy gets to come back before the controller is
/// taken not to heal copies at all.
pub const HEAL_PATIENCE: Duration = Duration::from_secs(30);
/// Once one copy has come back, every other one must, within this.
const HEAL_TIMEOUT: Duration = Duration::from_secs(60);
const HEAL_PACE: Duration = Duration::from_millis(50);

#[derive(Clone, Debug, Serialize)]
pub struct FanOut {
    pub controller: String,
    pub namespaces: usize,
    /// From the source's creation to the last of its copies observed.
    pub converge_seconds: f64,
    /// From one update of the source to the last copy showing it.
    pub propagate_seconds: f64,
}

/// Deleted copies and how soon each came back.
#[derive(Clone, Debug, Serialize)]
pub struct CopyHeal {
    pub controller: String,
    pub deleted: usize,
    /// None when the first deleted copy was not back within
    /// [`HEAL_PATIENCE`]: the controller does not heal copies.
    pub latency: Option<Latency>,
}

/// Creates `namespaces` namespaces named `prefix` and a number, ready to
/// receive copies, then one source in `source_namespace` that asks for all
/// of them. The copies stay, for [`heal`].
pub async fn run(
    client: &Client,
    profile: Profile,
    source_namespace: &str,
    prefix: &str,
    namespaces: usize,
    concurrency: usize,
) -> anyhow::Result<FanOut> {
    create_namespaces(client, profile, prefix, namespaces, concurrency).await?;
    let sources: Api<ConfigMap> = Api::namespaced(client.clone(), source_namespace);
    let copies = CopyWatch::start(client.clone(), prefix).await?;

    let data = BTreeMap::from([("version".to_owned(), "v1".to_owned())]);
    let mut source = ConfigMap {
        metadata: ObjectMeta {
            name: Some(SOURCE.into()),
            ..ObjectMeta::default()
        },
        data: Some(data.clone()),
        ..ConfigMap::default()
    };
    profile.ask_for_copies(&mut source, prefix);
    let started = Instant::now();
    sources
        .create(&PostParams::default(), &source)
        .await
        .context("creating the fan-out source")?;
    copies
        .wait_all(namespaces, &workload::checksum(&data))
        .await?;
    let converge_seconds = started.elapsed().as_secs_f64();

    let data = BTreeMap::from([("version".to_owned(), "v2".to_owned())]);
    let patch = serde_json::json!({ "data": data });
    let started = Instant::now();
    sources
        .patch(SOURCE, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .context("updating the fan-out source")?;
    copies
        .wait_all(namespaces, &workload::checksum(&data))
        .await?;
    let propagate_seconds = started.elapsed().as_secs_f64();
    Ok(FanOut {
        controller: profile.name().to_owned(),
        namespaces,
        converge_seconds,
        propagate_seconds,
    })
}

/// Deletes the copies in the first `samples` namespaces of a finished
/// [`run`], one at a time, and times each until a new copy with the
/// source's data is observed.
pub async fn heal(
    client: &Client,
    profile: Profile,
    prefix: &str,
    samples: usize,
) -> anyhow::Result<CopyHeal> {
    let copies = CopyWatch::start(client.clone(), prefix).await?;
    let mut taken = Vec::with_capacity(samples);
    for i in 0..samples {
        let tick = Instant::now();
        let namespace = format!("{prefix}{i}");
        let Some(old) = copies.get(&namespace) else {
            bail!("there is no copy in {namespace} to delete");
        };
        let api: Api<ConfigMap> = Api::namespaced(client.clone(), &namespace);
        let delete = DeleteParams {
            preconditions: Some(Preconditions {
                uid: Some(old.uid.clone()),
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        api.delete(SOURCE, &delete)
            .await
            .with_context(|| format!("deleting the copy in {namespace}"))?;
        let deleted = Instant::now();
        let patience = if taken.is_empty() {
            HEAL_PATIENCE
        } else {
            HEAL_TIMEOUT
        };
        let back = copies
            .0
            .wait_until("the copy to come back", patience, |copies| {
                copies
                    .by_namespace
                    .get(&namespace)
                    .filter(|c| c.uid != old.uid && c.checksum == old.checksum)
                    .map(|c| c.since)
            })
            .await;
        match back {
            Ok(back) => taken.push(back.saturating_duration_since(deleted)),
            Err(_) if taken.is_empty() => {
                return Ok(CopyHeal {
                    controller: profile.name().to_owned(),
                    deleted: 1,
                    latency: None,
                });
            }
            Err(error) => {
                return Err(error.context(format!("the copy in {namespace} did not come back")));
            }
        }
        tokio::time::sleep_until((tick + HEAL_PACE).into()).await;
    }
    Ok(CopyHeal {
        controller: profile.name().to_owned(),
        deleted: samples,
        latency: Some(Latency::of(taken)),
    })
}

/// Namespaces named `prefix` and a number, labelled as `profile` needs to
/// put copies there.
pub(crate) async fn create_namespaces(
    client: &Client,
    profile: Profile,
    prefix: &str,
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
                        name: Some(format!("{prefix}{i}")),
                        labels: Some(profile.consent_labels()),
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

/// A copy of the fan-out source as last seen in one namespace.
#[derive(Clone, Debug)]
struct SeenCopy {
    uid: String,
    /// Of its data, as the bench computes it for the source.
    checksum: String,
    /// When the watch first showed this uid with this data.
    since: Instant,
}

/// The copies of the fan-out source in the namespaces under one prefix,
/// by namespace.
struct SeenCopies {
    prefix: String,
    by_namespace: HashMap<String, SeenCopy>,
}

impl Apply for SeenCopies {
    fn apply(&mut self, event: watcher::Event<ConfigMap>, at: Instant) {
        match event {
            watcher::Event::InitApply(cm) | watcher::Event::Apply(cm) => {
                let namespace = cm.namespace().unwrap_or_default();
                if !namespace.starts_with(&self.prefix) {
                    return;
                }
                let copy = SeenCopy {
                    uid: cm.uid().unwrap_or_default(),
                    checksum: workload::checksum(&cm.data.clone().unwrap_or_default()),
                    since: at,
                };
                let unchanged = self
                    .by_namespace
                    .get(&namespace)
                    .is_some_and(|old| old.uid == copy.uid && old.checksum == copy.checksum);
                if !unchanged {
                    self.by_namespace.insert(namespace, copy);
                }
            }
            watcher::Event::Delete(cm) => {
                self.by_namespace
                    .remove(&cm.namespace().unwrap_or_default());
            }
            watcher::Event::Init | watcher::Event::InitDone => {}
        }
    }
}

/// The copies of the fan-out source, kept current by a watch.
struct CopyWatch(Watched<SeenCopies>);

impl CopyWatch {
    /// Starts the watch and waits for its initial list.
    async fn start(client: Client, prefix: &str) -> anyhow::Result<CopyWatch> {
        let config = watcher::Config::default().fields(&format!("metadata.name={SOURCE}"));
        let copies = SeenCopies {
            prefix: prefix.to_owned(),
            by_namespace: HashMap::new(),
        };
        let watched = Watched::start("copy watch", Api::all(client), config, copies).await?;
        Ok(CopyWatch(watched))
    }

    fn get(&self, namespace: &str) -> Option<SeenCopy> {
        self.0.state().by_namespace.get(namespace).cloned()
    }

    /// Waits until `count` copies hold the data whose checksum is given.
    async fn wait_all(&self, count: usize, checksum: &str) -> anyhow::Result<()> {
        let current = |copies: &SeenCopies| {
            copies
                .by_namespace
                .values()
                .filter(|c| c.checksum == checksum)
                .count()
        };
        let all_current = self
            .0
            .wait_until("every copy", PATIENCE, |copies| {
                (current(copies) >= count).then_some(())
            })
            .await;
        all_current
            .with_context(|| format!("{} of {count} copies current", current(&self.0.state())))
    }
}
