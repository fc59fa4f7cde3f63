//! ClusterMirror fan-out: one ClusterMirror that selects N labelled
//! namespaces, timed against the API floor of N writes and against the
//! label path's fan-out into the same namespaces, in the same run: until
//! every copy exists, one update of the source until every copy shows it,
//! how often the ClusterMirror's status was written meanwhile, copy heals,
//! and the memory each selected namespace costs.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use configmap_mirror::api::{
    ClusterMirror, ClusterMirrorSpec, ClusterMirrorStatus, DeletionPolicy, SourceKind, SourceRef,
    Target,
};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::runtime::watcher;
use kube::{
    Api, Client,
    api::{DeleteParams, ObjectMeta, Patch, PatchParams, PostParams},
};
use serde::Serialize;

use crate::controller::Controller;
use crate::fanout::{self, CopyAt, CopyHeal, CopyWatch, FanOut};
use crate::profile::Profile;
use crate::report::Floor;
use crate::status_writes::{StatusWatch, StatusWrites};
use crate::workload;

/// The ClusterMirror's name, and its source's, which the copies take.
pub const NAME: &str = "bench-cluster-fan-out";
/// The selected namespaces' prefix; no other namespace starts with it.
pub const PREFIX: &str = "bench-cmir-";
/// The label the ClusterMirror selects by.
pub const SELECTED_BY: (&str, &str) = ("env", "prod");
/// Where the ClusterMirror's source lives: the namespace the controller is
/// started with as its one allowed source namespace.
pub const SOURCE_NAMESPACE: &str = "bench-cluster-mirror-source";
/// Once every copy is current, status writes still arriving within this are
/// counted as the phase's.
const QUIET: Duration = Duration::from_secs(2);
const STATUS_PATIENCE: Duration = Duration::from_secs(300);

#[derive(Clone, Debug, Serialize)]
pub struct ClusterFanOut {
    pub namespaces: usize,
    /// One plain ConfigMap of the source's size per namespace, by the
    /// bench, at the label fan-out floor's concurrency.
    pub floor: Floor,
    /// The label path's fan-out into the same namespaces, just before.
    pub label: FanOut,
    pub label_converge_ratio_to_floor: f64,
    pub label_propagate_ratio_to_floor: f64,
    /// RSS growth over the label fan-out, divided by the namespaces.
    pub label_memory_per_namespace_bytes: f64,
    /// From the ClusterMirror's creation to the first copy observed: how
    /// long before the controller starts writing.
    pub first_copy_seconds: f64,
    /// From the ClusterMirror's creation to the last copy observed.
    pub converge_seconds: f64,
    pub converge_ratio_to_floor: f64,
    /// From one update of the source to the last copy showing it.
    pub propagate_seconds: f64,
    pub propagate_ratio_to_floor: f64,
    pub converge_status_writes: StatusWrites,
    pub update_status_writes: StatusWrites,
    /// RSS growth from before the ClusterMirror to its last copy,
    /// divided by the namespaces.
    pub memory_per_namespace_bytes: f64,
    /// Copies holding the source's current data, counted by the bench at
    /// the end.
    pub copies_present: usize,
    /// The ClusterMirror's status at the end.
    pub selected: i32,
    pub synced: i32,
    pub failed: i32,
    /// Copies deleted one at a time after the update.
    pub heal: CopyHeal,
}

/// What a run of this phase needs.
pub struct Setup<'a> {
    pub client: &'a Client,
    pub namespaces: usize,
    pub concurrency: usize,
    pub heal_samples: usize,
}

/// The labels of every selected namespace: the label path's consent too,
/// so that both fan-outs go into the same namespaces.
pub fn namespace_labels() -> BTreeMap<String, String> {
    let mut labels = Profile::ConfigMapMirror.consent_labels();
    labels.insert(SELECTED_BY.0.to_owned(), SELECTED_BY.1.to_owned());
    labels
}

/// Runs the phase against `running`, which was started with
/// [`SOURCE_NAMESPACE`] as its allowed source namespace, the CRD installed
/// and the namespace created.
pub async fn run(setup: &Setup<'_>, running: &mut Controller) -> anyhow::Result<ClusterFanOut> {
    let Setup {
        client,
        namespaces,
        concurrency,
        heal_samples,
    } = *setup;
    eprintln!("bench: creating {namespaces} namespaces labelled env=prod");
    let labels = namespace_labels();
    fanout::create_labelled_namespaces(client, &labels, PREFIX, namespaces, concurrency).await?;
    eprintln!("bench: API floor, {namespaces} writes");
    let floor = fanout::floor(client, PREFIX, namespaces, concurrency).await?;

    // Long before the ClusterMirror, as a platform team's source is: a
    // ClusterMirror created right behind its source waits for the source
    // to reach the controller, which is not what the fan-out measures.
    let sources: Api<ConfigMap> = Api::namespaced(client.clone(), SOURCE_NAMESPACE);
    let first = fanout::source_data(1);
    let source = workload::configmap(NAME.to_owned(), false, first.clone());
    sources
        .create(&PostParams::default(), &source)
        .await
        .context("creating the ClusterMirror's source")?;

    eprintln!("bench: label fan-out into the same {namespaces} namespaces");
    let label_namespace = testenv::fresh_namespace(client, "bench-label-source").await?;
    let rss_before = running.memory()?.rss_bytes;
    let label = fanout::converge(
        client,
        Profile::ConfigMapMirror,
        &label_namespace,
        PREFIX,
        namespaces,
    )
    .await?;
    running.ensure_running()?;
    let label_memory = per_namespace(rss_before, running.memory()?.rss_bytes, namespaces);

    eprintln!("bench: one ClusterMirror selecting the {namespaces} namespaces");
    let copies_config = watcher::Config::default().fields(&format!("metadata.name={NAME}"));
    let copies = CopyWatch::start(client.clone(), copies_config.clone(), PREFIX).await?;
    let api: Api<ClusterMirror> = Api::all(client.clone());
    let status = StatusWatch::start(api.clone(), NAME).await?;

    let rss_before = running.memory()?.rss_bytes;
    let started = Instant::now();
    api.create(&PostParams::default(), &cluster_mirror(NAME))
        .await
        .context("creating the ClusterMirror")?;
    copies.wait_all(1, &workload::checksum(&first)).await?;
    let first_copy_seconds = started.elapsed().as_secs_f64();
    copies
        .wait_all(namespaces, &workload::checksum(&first))
        .await?;
    let converge_seconds = started.elapsed().as_secs_f64();
    running.ensure_running()?;
    let memory_per_namespace_bytes =
        per_namespace(rss_before, running.memory()?.rss_bytes, namespaces);
    let converge_status_writes = settled_writes(&status, started, namespaces).await?;

    eprintln!("bench: updating the ClusterMirror's source");
    let second = fanout::source_data(2);
    let started = Instant::now();
    sources
        .patch(
            NAME,
            &PatchParams::default(),
            &Patch::Merge(&serde_json::json!({ "data": second })),
        )
        .await
        .context("updating the ClusterMirror's source")?;
    copies
        .wait_all(namespaces, &workload::checksum(&second))
        .await?;
    let propagate_seconds = started.elapsed().as_secs_f64();
    let update_status_writes = settled_writes(&status, started, namespaces).await?;
    let copies_present = copies.current(&workload::checksum(&second));
    let last = status.last().unwrap_or_default();
    drop(copies);

    let samples = heal_samples.min(namespaces);
    eprintln!("bench: deleting {samples} of the ClusterMirror's copies");
    let heal_at = (0..samples)
        .map(|i| CopyAt {
            namespace: format!("{PREFIX}{i}"),
            name: NAME.to_owned(),
        })
        .collect::<Vec<_>>();
    let heal = fanout::heal_copies(
        client,
        Profile::ConfigMapMirror,
        copies_config,
        PREFIX,
        &heal_at,
    )
    .await?;
    running.ensure_running()?;
    Ok(ClusterFanOut {
        namespaces,
        label_converge_ratio_to_floor: label.converge_seconds / floor.seconds,
        label_propagate_ratio_to_floor: label.propagate_seconds / floor.seconds,
        label,
        label_memory_per_namespace_bytes: label_memory,
        first_copy_seconds,
        converge_seconds,
        converge_ratio_to_floor: converge_seconds / floor.seconds,
        propagate_seconds,
        propagate_ratio_to_floor: propagate_seconds / floor.seconds,
        floor,
        converge_status_writes,
        update_status_writes,
        memory_per_namespace_bytes,
        copies_present,
        selected: last.selected,
        synced: last.synced,
        failed: last.failed,
        heal,
    })
}

/// Creates a ClusterMirror that selects no namespace, waits until the
/// controller has written its status, and deletes it. A ClusterMirror
/// created within a second or two of the CRD's install was often first
/// acted on 2 s late; this keeps that start-up wait out of the figures.
pub async fn probe(client: &Client) -> anyhow::Result<()> {
    const PROBE: &str = "bench-probe";
    let api: Api<ClusterMirror> = Api::all(client.clone());
    let mut probe = cluster_mirror(PROBE);
    probe.spec.target.namespace_selector.match_labels = Some(BTreeMap::from([(
        "bench-probe".to_owned(),
        "none".to_owned(),
    )]));
    api.create(&PostParams::default(), &probe)
        .await
        .context("creating the probe ClusterMirror")?;
    testenv::wait_for(
        "the probe ClusterMirror's status",
        STATUS_PATIENCE,
        || async { api.get_opt(PROBE).await.ok()??.status.map(drop) },
    )
    .await?;
    api.delete(PROBE, &DeleteParams::default())
        .await
        .context("deleting the probe ClusterMirror")?;
    Ok(())
}

/// The ClusterMirror `name`: the source in [`SOURCE_NAMESPACE`] into every
/// namespace labelled [`SELECTED_BY`].
fn cluster_mirror(name: &str) -> ClusterMirror {
    let spec = ClusterMirrorSpec {
        class_name: None,
        source: SourceRef {
            kind: SourceKind::ConfigMap,
            namespace: SOURCE_NAMESPACE.to_owned(),
            name: NAME.to_owned(),
        },
        target: Target {
            name: None,
            namespace_selector: LabelSelector {
                match_labels: Some(BTreeMap::from([(
                    SELECTED_BY.0.to_owned(),
                    SELECTED_BY.1.to_owned(),
                )])),
                match_expressions: None,
            },
            namespaces: Vec::new(),
            labels: BTreeMap::new(),
            annotations: BTreeMap::new(),
            keys: Vec::new(),
            exclude_keys: Vec::new(),
            kind: None,
            type_: None,
        },
        suspend: false,
        deletion_policy: DeletionPolicy::Delete,
    };
    ClusterMirror {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            ..ObjectMeta::default()
        },
        spec,
        status: None,
    }
}

/// Waits until the status reports every namespace synced and no status
/// write has come for [`QUIET`], then counts the writes since `started`.
async fn settled_writes(
    status: &StatusWatch,
    started: Instant,
    namespaces: usize,
) -> anyhow::Result<StatusWrites> {
    let all = i32::try_from(namespaces).unwrap_or(i32::MAX);
    status
        .wait_settled(STATUS_PATIENCE, QUIET, |s: &ClusterMirrorStatus| {
            s.selected == all && s.synced == all
        })
        .await
        .context("the ClusterMirror's status to report every copy synced")?;
    Ok(status.writes_since(started))
}

fn per_namespace(before: u64, after: u64, namespaces: usize) -> f64 {
    (after as f64 - before as f64) / namespaces.max(1) as f64
}
