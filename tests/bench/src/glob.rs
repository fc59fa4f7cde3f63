//! A new namespace and the sources that were waiting for it: many sources
//! ask for mirrors in every namespace that matches one glob, none exists
//! yet; then namespaces that match are created one at a time, with
//! consent, and each is timed until every source's mirror is in it.
//!
//! A mirror counts once its data and its checksum annotation are both its
//! source's, as a watch of the bench's own sees them.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use configmap_mirror::contract::{CHECKSUM_ANNOTATION, copy_selector};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{ObjectMeta, PostParams};
use kube::runtime::watcher;
use kube::{Api, Client, ResourceExt};
use serde::Serialize;

use crate::controller::Controller;
use crate::profile::Profile;
use crate::report::Latency;
use crate::watched::{Apply, Watched};
use crate::workload;

/// The namespaces the sources' glob names: none exists before the phase.
pub const PREFIX: &str = "bench-newns-";
/// How long the sources get to have their companions, and each new
/// namespace to have every mirror.
const PATIENCE: Duration = Duration::from_secs(600);
/// One namespace is created at most this often.
const PACE: Duration = Duration::from_millis(100);

#[derive(Clone, Debug, Serialize)]
pub struct NewNamespaces {
    pub controller: String,
    /// Sources whose `workshop.io/mirror-to` is `bench-newns-*`.
    pub sources: usize,
    /// From the first source created until every one had its companion:
    /// the controller has seen them all before the first namespace comes.
    pub sources_settled_seconds: f64,
    /// Namespaces in the cluster just before the first new one.
    pub namespaces_present: usize,
    /// One sample per new namespace: from just before its create call was
    /// sent until the last of the sources' mirrors was observed in it.
    pub latency: Latency,
    /// The controller's CPU over all the new namespaces.
    pub controller_cpu_seconds: f64,
}

/// Creates `sources` sources in a namespace of their own, each asking for a
/// mirror in every namespace that matches `bench-newns-*`, waits until each
/// has its companion, then creates `samples` such namespaces one at a
/// time and times each until all the mirrors are in it.
pub async fn run(
    client: &Client,
    running: &mut Controller,
    sources: usize,
    samples: usize,
    data_size: usize,
    concurrency: usize,
) -> anyhow::Result<NewNamespaces> {
    let profile = Profile::ConfigMapMirror;
    let source_namespace = testenv::fresh_namespace(client, "bench-glob-source").await?;
    let objects: Vec<ConfigMap> = (0..sources)
        .map(|i| {
            let mut source =
                workload::configmap(source_name(i), false, workload::content(i, 0, data_size));
            profile.ask_for_copies(&mut source, PREFIX);
            source
        })
        .collect();
    let checksums: HashMap<String, String> = objects
        .iter()
        .map(|cm| {
            let data = cm.data.clone().unwrap_or_default();
            (cm.name_any(), workload::checksum(&data))
        })
        .collect();

    let companions = checksums
        .iter()
        .map(|(name, checksum)| (workload::companion_name(name), checksum.clone()))
        .collect();
    let in_source_namespace =
        watcher::Config::default().fields(&format!("metadata.namespace={source_namespace}"));
    let settled =
        Arrivals::watch(client, in_source_namespace, &source_namespace, companions).await?;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), &source_namespace);
    let started = Instant::now();
    workload::create_all(&api, objects.into_iter(), concurrency).await?;
    let last = wait_for(
        &settled,
        &source_namespace,
        sources,
        "every glob source's companion",
    )
    .await?;
    drop(settled);
    let sources_settled_seconds = last.saturating_duration_since(started).as_secs_f64();
    running.ensure_running()?;

    let namespaces_present = workload::count_namespaces(client).await?;
    let ours = watcher::Config::default().labels(&copy_selector());
    let mirrors = Arrivals::watch(client, ours, PREFIX, checksums).await?;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let cpu_before = running.cpu_seconds()?;
    let mut taken = Vec::with_capacity(samples);
    for i in 0..samples {
        let name = format!("{PREFIX}{i}");
        let namespace = Namespace {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                labels: Some(profile.consent_labels()),
                ..ObjectMeta::default()
            },
            ..Namespace::default()
        };
        let sent = Instant::now();
        namespaces
            .create(&PostParams::default(), &namespace)
            .await
            .with_context(|| format!("creating namespace {name}"))?;
        let last = wait_for(
            &mirrors,
            &name,
            sources,
            "every mirror in the new namespace",
        )
        .await?;
        taken.push(last.saturating_duration_since(sent));
        running.ensure_running()?;
        tokio::time::sleep_until((sent + PACE).into()).await;
    }
    Ok(NewNamespaces {
        controller: profile.name().to_owned(),
        sources,
        sources_settled_seconds,
        namespaces_present,
        latency: Latency::of(taken),
        controller_cpu_seconds: running.cpu_seconds()? - cpu_before,
    })
}

fn source_name(index: usize) -> String {
    format!("glob-{index:04}")
}

/// The ConfigMaps of expected names in the namespaces under one prefix:
/// how many in each namespace carry their expected checksum, in their data
/// and in their annotation, and when the last of them began to.
struct Arrivals {
    prefix: String,
    /// Name → the checksum it must carry.
    expected: HashMap<String, String>,
    /// (namespace, name) → whether it carries it now.
    carries: HashMap<(String, String), bool>,
    /// Namespace → how many carry it, and when the last one began to.
    by_namespace: HashMap<String, (usize, Option<Instant>)>,
}

impl Arrivals {
    fn new(prefix: &str, expected: HashMap<String, String>) -> Arrivals {
        Arrivals {
            prefix: prefix.to_owned(),
            expected,
            carries: HashMap::new(),
            by_namespace: HashMap::new(),
        }
    }

    fn matching(&self, namespace: &str) -> usize {
        self.by_namespace.get(namespace).map_or(0, |(n, _)| *n)
    }

    fn set(&mut self, namespace: String, name: String, carries: bool, at: Instant) {
        let carried = self.carries.insert((namespace.clone(), name), carries) == Some(true);
        let entry = self.by_namespace.entry(namespace).or_insert((0, None));
        match (carried, carries) {
            (false, true) => *entry = (entry.0 + 1, Some(at)),
            (true, false) => entry.0 -= 1,
            _ => {}
        }
    }

    /// Starts a watch of the ConfigMaps `config` selects, kept to the
    /// namespaces under `prefix`, and waits for its first list.
    async fn watch(
        client: &Client,
        config: watcher::Config,
        prefix: &str,
        expected: HashMap<String, String>,
    ) -> anyhow::Result<Watched<Arrivals>> {
        let arrivals = Arrivals::new(prefix, expected);
        Watched::start("arrival watch", Api::all(client.clone()), config, arrivals).await
    }
}

impl Apply for Arrivals {
    fn apply(&mut self, event: watcher::Event<ConfigMap>, at: Instant) {
        let (cm, present) = match event {
            watcher::Event::InitApply(cm) | watcher::Event::Apply(cm) => (cm, true),
            watcher::Event::Delete(cm) => (cm, false),
            watcher::Event::Init | watcher::Event::InitDone => return,
        };
        let namespace = cm.namespace().unwrap_or_default();
        let name = cm.name_any();
        if !namespace.starts_with(&self.prefix) {
            return;
        }
        let Some(expected) = self.expected.get(&name) else {
            return;
        };
        let carries = present
            && cm.annotations().get(CHECKSUM_ANNOTATION) == Some(expected)
            && workload::checksum(&cm.data.clone().unwrap_or_default()) == *expected;
        self.set(namespace, name, carries, at);
    }
}

/// Waits until `count` of the expected names carry their checksum in
/// `namespace`; returns when the last of them began to.
async fn wait_for(
    arrivals: &Watched<Arrivals>,
    namespace: &str,
    count: usize,
    what: &str,
) -> anyhow::Result<Instant> {
    let all_in = arrivals
        .wait_until(what, PATIENCE, |arrivals| {
            let (matching, last) = arrivals.by_namespace.get(namespace)?;
            (*matching >= count).then(|| last.unwrap_or_else(Instant::now))
        })
        .await;
    all_in.with_context(|| {
        format!(
            "{} of {count} in {namespace}",
            arrivals.state().matching(namespace)
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn copy(namespace: &str, name: &str, data: &str, annotated: &str) -> ConfigMap {
        let mut cm = workload::configmap(
            name.to_owned(),
            false,
            [("k".to_owned(), data.to_owned())].into(),
        );
        cm.metadata.namespace = Some(namespace.to_owned());
        cm.annotations_mut()
            .insert(CHECKSUM_ANNOTATION.to_owned(), annotated.to_owned());
        cm
    }

    #[test]
    fn a_namespace_counts_copies_whose_data_and_annotation_are_the_sources() {
        let right = workload::checksum(&[("k".to_owned(), "v".to_owned())].into());
        let expected = HashMap::from([
            ("a".to_owned(), right.clone()),
            ("b".to_owned(), right.clone()),
        ]);
        let mut arrivals = Arrivals::new(PREFIX, expected);
        let ns = format!("{PREFIX}0");
        let t0 = Instant::now();
        let t1 = t0 + Duration::from_millis(5);
        // The annotation alone is not enough, nor the data alone.
        arrivals.apply(watcher::Event::Apply(copy(&ns, "a", "old", &right)), t0);
        arrivals.apply(watcher::Event::Apply(copy(&ns, "b", "v", "stale")), t0);
        assert_eq!(arrivals.matching(&ns), 0);
        arrivals.apply(watcher::Event::Apply(copy(&ns, "a", "v", &right)), t0);
        arrivals.apply(watcher::Event::Apply(copy(&ns, "a", "v", &right)), t1);
        assert_eq!(arrivals.by_namespace[&ns], (1, Some(t0)));
        // Not an expected name, and not under the prefix.
        arrivals.apply(watcher::Event::Apply(copy(&ns, "c", "v", &right)), t1);
        arrivals.apply(
            watcher::Event::Apply(copy("elsewhere", "b", "v", &right)),
            t1,
        );
        assert_eq!(arrivals.matching(&ns), 1);
        assert_eq!(arrivals.matching("elsewhere"), 0);
        arrivals.apply(watcher::Event::Apply(copy(&ns, "b", "v", &right)), t1);
        assert_eq!(arrivals.by_namespace[&ns], (2, Some(t1)));
        arrivals.apply(watcher::Event::Delete(copy(&ns, "a", "v", &right)), t1);
        assert_eq!(arrivals.matching(&ns), 1);
    }
}
