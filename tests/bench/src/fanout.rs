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
use crate::report::{Floor, Latency};
use crate::watched::{Apply, Watched};
use crate::workload;

const SOURCE: &str = "fan-out";
/// The plain ConfigMap the floor creates in each fan-out namespace.
const FLOOR_OBJECT: &str = "fan-out-floor";
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
    converge(client, profile, source_namespace, prefix, namespaces).await
}

/// The source's data at one version: every version is the same size, so
/// the floor's objects can be too.
pub(crate) fn source_data(version: u32) -> BTreeMap<String, String> {
    BTreeMap::from([("version".to_owned(), format!("v{version}"))])
}

/// The API's own speed for the writes a fan-out makes: one plain
/// ConfigMap, of the fan-out source's size, created in each of the
/// namespaces named `prefix` and a number, `concurrency` at a time. No
/// controller acts on them: they ask for nothing and are not managed.
/// They stay.
pub async fn floor(
    client: &Client,
    prefix: &str,
    namespaces: usize,
    concurrency: usize,
) -> anyhow::Result<Floor> {
    let plain = workload::configmap(FLOOR_OBJECT.to_owned(), false, source_data(0));
    write_floor(client, prefix, namespaces, concurrency, &plain)
        .await
        .context("creating the fan-out floor's ConfigMaps")
}

/// Creates `object` in each of the namespaces `prefix` and a number,
/// `concurrency` at once: how long that took.
async fn write_floor(
    client: &Client,
    prefix: &str,
    namespaces: usize,
    concurrency: usize,
    object: &ConfigMap,
) -> anyhow::Result<Floor> {
    let started = Instant::now();
    stream::iter(0..namespaces)
        .map(|i| {
            let api: Api<ConfigMap> = Api::namespaced(client.clone(), &format!("{prefix}{i}"));
            let object = object.clone();
            async move { workload::create(&api, object).await }
        })
        .buffer_unordered(concurrency.max(1))
        .try_collect::<()>()
        .await?;
    let seconds = started.elapsed().as_secs_f64();
    Ok(Floor {
        seconds,
        writes_per_second: namespaces as f64 / seconds,
    })
}

/// The floor again, of objects shaped as `copy` is (its labels and
/// annotations, as many and as long, under keys no controller reads, and
/// its data), one per namespace: what the API server takes to write the
/// copies themselves, so that what a controller adds to it can be told
/// from what the copies' own metadata costs.
pub async fn shaped_floor(
    client: &Client,
    prefix: &str,
    namespaces: usize,
    concurrency: usize,
    copy: &ConfigMap,
) -> anyhow::Result<Floor> {
    // As long as the key it stands for, under a prefix nobody watches.
    let renamed = |keys: &Option<BTreeMap<String, String>>| {
        let keys = keys.iter().flatten().enumerate();
        let renamed = keys.map(|(i, (key, value))| {
            let stand_in = format!(
                "shape.bench/{i:0>width$}",
                width = key.len().saturating_sub(12)
            );
            (stand_in, value.clone())
        });
        Some(renamed.collect::<BTreeMap<_, _>>())
    };
    let shaped = ConfigMap {
        metadata: ObjectMeta {
            name: Some(format!("{FLOOR_OBJECT}-shaped")),
            labels: renamed(&copy.metadata.labels),
            annotations: renamed(&copy.metadata.annotations),
            ..ObjectMeta::default()
        },
        data: copy.data.clone(),
        ..ConfigMap::default()
    };
    write_floor(client, prefix, namespaces, concurrency, &shaped)
        .await
        .context("creating the shaped floor's ConfigMaps")
}

/// One source in `source_namespace` asking for copies in the `namespaces`
/// namespaces named `prefix` and a number, which exist already: until every
/// copy is there, then one update until every copy shows it.
pub async fn converge(
    client: &Client,
    profile: Profile,
    source_namespace: &str,
    prefix: &str,
    namespaces: usize,
) -> anyhow::Result<FanOut> {
    let sources: Api<ConfigMap> = Api::namespaced(client.clone(), source_namespace);
    let copies = CopyWatch::of_fan_out(client.clone(), prefix).await?;

    let data = source_data(1);
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

    let data = source_data(2);
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
    let copies = (0..samples)
        .map(|i| CopyAt {
            namespace: format!("{prefix}{i}"),
            name: SOURCE.to_owned(),
        })
        .collect::<Vec<_>>();
    let watch = watcher::Config::default().fields(&format!("metadata.name={SOURCE}"));
    heal_copies(client, profile, watch, prefix, &copies).await
}

/// Where a copy is: a namespace and its name there.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CopyAt {
    pub namespace: String,
    pub name: String,
}

/// Deletes each of `copies` in turn, one at a time, and times each until a
/// new copy with the same data is observed by a watch of ConfigMaps with
/// `watch`'s selectors, kept to the namespaces that start with `prefix`.
pub async fn heal_copies(
    client: &Client,
    profile: Profile,
    watch: watcher::Config,
    prefix: &str,
    copies: &[CopyAt],
) -> anyhow::Result<CopyHeal> {
    let seen = CopyWatch::start(client.clone(), watch, prefix).await?;
    let mut taken = Vec::with_capacity(copies.len());
    for copy in copies {
        let tick = Instant::now();
        let Some(old) = seen.get(copy) else {
            bail!(
                "there is no copy {} in {} to delete",
                copy.name,
                copy.namespace
            );
        };
        let api: Api<ConfigMap> = Api::namespaced(client.clone(), &copy.namespace);
        let delete = DeleteParams {
            preconditions: Some(Preconditions {
                uid: Some(old.uid.clone()),
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        api.delete(&copy.name, &delete)
            .await
            .with_context(|| format!("deleting the copy {} in {}", copy.name, copy.namespace))?;
        let deleted = Instant::now();
        let patience = if taken.is_empty() {
            HEAL_PATIENCE
        } else {
            HEAL_TIMEOUT
        };
        let back = seen
            .0
            .wait_until("the copy to come back", patience, |seen| {
                seen.copies
                    .get(copy)
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
                return Err(error.context(format!(
                    "the copy {} in {} did not come back",
                    copy.name, copy.namespace
                )));
            }
        }
        tokio::time::sleep_until((tick + HEAL_PACE).into()).await;
    }
    Ok(CopyHeal {
        controller: profile.name().to_owned(),
        deleted: copies.len(),
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
    let labels = profile.consent_labels();
    create_labelled_namespaces(client, &labels, prefix, count, concurrency).await
}

/// Namespaces named `prefix` and a number, each carrying `labels`.
pub(crate) async fn create_labelled_namespaces(
    client: &Client,
    labels: &BTreeMap<String, String>,
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
                        labels: Some(labels.clone()),
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

/// A copy as last seen.
#[derive(Clone, Debug)]
struct SeenCopy {
    uid: String,
    /// Of its data, as the bench computes it for the source.
    checksum: String,
    /// When the watch first showed this uid with this data.
    since: Instant,
}

/// The copies in the namespaces under one prefix.
struct SeenCopies {
    prefix: String,
    copies: HashMap<CopyAt, SeenCopy>,
    /// How many of `copies` hold each checksum, kept as they change: a
    /// wait asks after every event, under the lock the watch needs for the
    /// next one, and a fan-out has ten thousand copies.
    by_checksum: HashMap<String, usize>,
}

impl SeenCopies {
    fn new(prefix: &str) -> SeenCopies {
        SeenCopies {
            prefix: prefix.to_owned(),
            copies: HashMap::new(),
            by_checksum: HashMap::new(),
        }
    }

    fn current(&self, checksum: &str) -> usize {
        self.by_checksum.get(checksum).copied().unwrap_or(0)
    }

    fn insert(&mut self, place: CopyAt, copy: SeenCopy) {
        *self.by_checksum.entry(copy.checksum.clone()).or_default() += 1;
        if let Some(old) = self.copies.insert(place, copy) {
            self.uncount(&old.checksum);
        }
    }

    fn remove(&mut self, place: &CopyAt) {
        if let Some(old) = self.copies.remove(place) {
            self.uncount(&old.checksum);
        }
    }

    fn uncount(&mut self, checksum: &str) {
        if let Some(count) = self.by_checksum.get_mut(checksum) {
            *count = count.saturating_sub(1);
        }
    }
}

impl Apply for SeenCopies {
    fn apply(&mut self, event: watcher::Event<ConfigMap>, at: Instant) {
        let at_copy = |cm: &ConfigMap| CopyAt {
            namespace: cm.namespace().unwrap_or_default(),
            name: cm.name_any(),
        };
        match event {
            watcher::Event::InitApply(cm) | watcher::Event::Apply(cm) => {
                let place = at_copy(&cm);
                if !place.namespace.starts_with(&self.prefix) {
                    return;
                }
                let copy = SeenCopy {
                    uid: cm.uid().unwrap_or_default(),
                    checksum: workload::checksum(&cm.data.clone().unwrap_or_default()),
                    since: at,
                };
                let unchanged = self
                    .copies
                    .get(&place)
                    .is_some_and(|old| old.uid == copy.uid && old.checksum == copy.checksum);
                if !unchanged {
                    self.insert(place, copy);
                }
            }
            watcher::Event::Delete(cm) => {
                self.remove(&at_copy(&cm));
            }
            watcher::Event::Init | watcher::Event::InitDone => {}
        }
    }
}

/// Copies, kept current by a watch.
pub(crate) struct CopyWatch(Watched<SeenCopies>);

impl CopyWatch {
    /// Watches the fan-out source's copies under `prefix`, and waits for
    /// the initial list.
    pub(crate) async fn of_fan_out(client: Client, prefix: &str) -> anyhow::Result<CopyWatch> {
        let config = watcher::Config::default().fields(&format!("metadata.name={SOURCE}"));
        CopyWatch::start(client, config, prefix).await
    }

    /// Watches the ConfigMaps `config` selects in the namespaces under
    /// `prefix`, and waits for the initial list.
    pub(crate) async fn start(
        client: Client,
        config: watcher::Config,
        prefix: &str,
    ) -> anyhow::Result<CopyWatch> {
        let copies = SeenCopies::new(prefix);
        let watched = Watched::start("copy watch", Api::all(client), config, copies).await?;
        Ok(CopyWatch(watched))
    }

    fn get(&self, copy: &CopyAt) -> Option<SeenCopy> {
        self.0.state().copies.get(copy).cloned()
    }

    /// How many copies hold the data whose checksum is given.
    pub(crate) fn current(&self, checksum: &str) -> usize {
        self.0.state().current(checksum)
    }

    /// Waits until `count` copies hold the data whose checksum is given.
    pub(crate) async fn wait_all(&self, count: usize, checksum: &str) -> anyhow::Result<()> {
        let all_current = self
            .0
            .wait_until("every copy", PATIENCE, |copies| {
                (copies.current(checksum) >= count).then_some(())
            })
            .await;
        all_current.with_context(|| {
            format!(
                "{} of {count} copies current",
                self.0.state().current(checksum)
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn copy(namespace: &str, uid: &str, version: u32) -> ConfigMap {
        let mut cm = workload::configmap(SOURCE.to_owned(), false, source_data(version));
        cm.metadata.namespace = Some(namespace.to_owned());
        cm.metadata.uid = Some(uid.to_owned());
        cm
    }

    #[test]
    fn copies_are_counted_by_their_data_as_they_change() {
        let (v1, v2) = (
            workload::checksum(&source_data(1)),
            workload::checksum(&source_data(2)),
        );
        let mut seen = SeenCopies::new("bench-fan10-");
        let t0 = Instant::now();
        seen.apply(watcher::Event::Apply(copy("bench-fan10-0", "a", 1)), t0);
        seen.apply(watcher::Event::Apply(copy("bench-fan10-1", "b", 1)), t0);
        seen.apply(watcher::Event::Apply(copy("bench-fan10-1", "b", 1)), t0);
        // Another fan-out's namespace whose name starts alike.
        seen.apply(watcher::Event::Apply(copy("bench-fan100-0", "c", 1)), t0);
        assert_eq!((seen.current(&v1), seen.current(&v2)), (2, 0));
        seen.apply(watcher::Event::Apply(copy("bench-fan10-0", "a", 2)), t0);
        assert_eq!((seen.current(&v1), seen.current(&v2)), (1, 1));
        seen.apply(watcher::Event::Delete(copy("bench-fan10-1", "b", 1)), t0);
        seen.apply(watcher::Event::Delete(copy("bench-fan10-9", "d", 1)), t0);
        assert_eq!((seen.current(&v1), seen.current(&v2)), (0, 1));
        let back = CopyAt {
            namespace: "bench-fan10-0".into(),
            name: SOURCE.into(),
        };
        assert_eq!(seen.copies[&back].uid, "a");
    }
}
