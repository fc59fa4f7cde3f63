//! A tenant's Mirror at scale: one Mirror into N namespaces that consent
//! by their labels, timed against the API floor of N writes in the same
//! run, until every copy exists and then until one update of its source
//! shows in every copy; then M Mirrors more, each naming one namespace
//! that does not exist, so that nothing is mirrored, for what each Mirror
//! costs the controller in memory.

use std::time::{Duration, Instant};

use anyhow::Context as _;
use configmap_mirror::api::mirror::Mirror;
use futures::{StreamExt, TryStreamExt, stream};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::{
    Api, Client, CustomResourceExt, Resource,
    api::{ApiResource, DynamicObject, ListParams, Patch, PatchParams, PostParams},
};
use serde::Serialize;
use serde_json::json;

use crate::controller::Controller;
use crate::fanout::{self, CopyWatch, FanOut};
use crate::only;
use crate::profile::Profile;
use crate::report::Floor;
use crate::workload;

/// The consenting namespaces' prefix; no other namespace starts with it.
pub const PREFIX: &str = "bench-mir-";
/// The tenant's namespace: the Mirrors and their source.
const TENANT: &str = "bench-mirror-tenant";
/// The Mirror into every consenting namespace.
const FAN_OUT: &str = "fan-out";
/// The namespace the memory phase's Mirrors name: it never exists.
const NOWHERE: &str = "bench-mirror-nowhere";
const PATIENCE: Duration = Duration::from_secs(1800);

#[derive(Clone, Debug, Serialize)]
pub struct MirrorFanOut {
    pub namespaces: usize,
    pub floor: Floor,
    /// The Mirror into every consenting namespace.
    pub fan_out: FanOut,
    pub converge_ratio_to_floor: f64,
    pub propagate_ratio_to_floor: f64,
    /// Mirrors created after it, each into a namespace that does not exist.
    pub mirrors: usize,
    /// From the first of them created to the last one's status written.
    pub mirrors_reported_seconds: f64,
    /// RSS growth over them, divided by them.
    pub memory_per_mirror_bytes: f64,
    /// The controller's CPU time while the floor was written (it watches
    /// those ConfigMaps too), and while the Mirror's copies were written
    /// and updated: on a machine of few CPUs, the controller's share of
    /// them is taken from the API server's.
    pub controller_cpu_seconds_floor: f64,
    pub controller_cpu_seconds_fan_out: f64,
    /// The floor of objects shaped as the copies, written after them.
    pub shaped_floor: Floor,
    pub converge_ratio_to_shaped_floor: f64,
}

/// Installs the Mirror CRD and waits until it serves.
pub async fn install_crd(client: &Client) -> anyhow::Result<()> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.create(&PostParams::default(), &Mirror::crd())
        .await
        .context("installing the Mirror CRD")?;
    let mirrors = mirrors_in(client, "default");
    testenv::wait_for("the Mirror CRD to serve", PATIENCE, || async {
        mirrors.list(&ListParams::default()).await.ok().map(drop)
    })
    .await
}

/// Runs the phase against `running`, started after [`install_crd`].
pub async fn run(
    client: &Client,
    running: &mut Controller,
    namespaces: usize,
    mirrors: usize,
    concurrency: usize,
) -> anyhow::Result<MirrorFanOut> {
    eprintln!("bench: creating {namespaces} consenting namespaces");
    let consenting = Profile::ConfigMapMirror.consent_labels();
    fanout::create_labelled_namespaces(client, &consenting, PREFIX, namespaces, concurrency)
        .await?;
    only::create_namespace(client, TENANT).await?;
    eprintln!("bench: API floor, {namespaces} writes");
    let cpu = || crate::procstat::cpu_seconds(running.pid());
    let before_floor = cpu()?;
    let floor = fanout::floor(client, PREFIX, namespaces, concurrency).await?;
    let controller_cpu_seconds_floor = cpu()? - before_floor;

    eprintln!("bench: one Mirror into the {namespaces} namespaces");
    let before_fan_out = cpu()?;
    let fan_out = converge(client, namespaces).await?;
    let controller_cpu_seconds_fan_out = cpu()? - before_fan_out;
    eprintln!("bench: the floor again, of objects shaped as the copies");
    let copy = Api::<ConfigMap>::namespaced(client.clone(), &format!("{PREFIX}0"))
        .get(FAN_OUT)
        .await
        .context("reading a copy to imitate")?;
    let shaped_floor = fanout::shaped_floor(client, PREFIX, namespaces, concurrency, &copy).await?;

    running.wait_quiet(0.0, PATIENCE).await?;
    let rss_before = running.memory()?.rss_bytes;
    eprintln!("bench: {mirrors} Mirrors into a namespace that does not exist");
    let started = Instant::now();
    stream::iter(0..mirrors)
        .map(|i| {
            create(
                client,
                format!("bench-{i}"),
                json!({"namespaces": [NOWHERE]}),
            )
        })
        .buffer_unordered(concurrency.max(1))
        .try_collect::<()>()
        .await?;
    let api = mirrors_in(client, TENANT);
    testenv::wait_for("every Mirror's status", PATIENCE, || async {
        let listed = api.list(&ListParams::default()).await.ok()?;
        let reported = (listed.items.iter())
            .filter(|m| {
                let observed = m.data["status"]["observedGeneration"].as_i64();
                observed.is_some() && observed == m.metadata.generation
            })
            .count();
        (reported > mirrors).then_some(())
    })
    .await?;
    let mirrors_reported_seconds = started.elapsed().as_secs_f64();
    running.wait_quiet(0.0, PATIENCE).await?;
    let rss_after = running.memory()?.rss_bytes;
    let converge_ratio_to_shaped_floor = fan_out.converge_seconds / shaped_floor.seconds;
    Ok(MirrorFanOut {
        converge_ratio_to_shaped_floor,
        namespaces,
        converge_ratio_to_floor: fan_out.converge_seconds / floor.seconds,
        propagate_ratio_to_floor: fan_out.propagate_seconds / floor.seconds,
        floor,
        fan_out,
        mirrors,
        mirrors_reported_seconds,
        memory_per_mirror_bytes: rss_after.saturating_sub(rss_before) as f64 / mirrors as f64,
        controller_cpu_seconds_floor,
        controller_cpu_seconds_fan_out,
        shaped_floor,
    })
}

/// The source, then the Mirror into every namespace under [`PREFIX`]:
/// until every copy is there, then one update until every copy shows it.
async fn converge(client: &Client, namespaces: usize) -> anyhow::Result<FanOut> {
    let copies = CopyWatch::of_fan_out(client.clone(), PREFIX).await?;
    let sources: Api<ConfigMap> = Api::namespaced(client.clone(), TENANT);
    let data = fanout::source_data(1);
    let source = workload::configmap(FAN_OUT.to_owned(), false, data.clone());
    sources
        .create(&PostParams::default(), &source)
        .await
        .context("creating the Mirror's source")?;
    let started = Instant::now();
    create(
        client,
        FAN_OUT.to_owned(),
        json!({"namespaces": [format!("{PREFIX}*")]}),
    )
    .await?;
    copies
        .wait_all(namespaces, &workload::checksum(&data))
        .await?;
    let converge_seconds = started.elapsed().as_secs_f64();

    let data = fanout::source_data(2);
    let started = Instant::now();
    sources
        .patch(
            FAN_OUT,
            &PatchParams::default(),
            &Patch::Merge(&json!({"data": data})),
        )
        .await
        .context("updating the Mirror's source")?;
    copies
        .wait_all(namespaces, &workload::checksum(&data))
        .await?;
    Ok(FanOut {
        controller: "configmap-mirror Mirror".to_owned(),
        namespaces,
        converge_seconds,
        propagate_seconds: started.elapsed().as_secs_f64(),
    })
}

fn mirrors_in(client: &Client, namespace: &str) -> Api<DynamicObject> {
    let resource = ApiResource::erase::<Mirror>(&());
    Api::namespaced_with(client.clone(), namespace, &resource)
}

/// The Mirror `name` in the tenant's namespace of the source [`FAN_OUT`],
/// into `target`.
async fn create(client: &Client, name: String, target: serde_json::Value) -> anyhow::Result<()> {
    let mut object = DynamicObject::new(&name, &ApiResource::erase::<Mirror>(&()));
    object.data = json!({"spec": {
        "source": {"kind": "ConfigMap", "name": FAN_OUT},
        "target": target,
    }});
    object.types = Some(kube::api::TypeMeta {
        api_version: Mirror::api_version(&()).into_owned(),
        kind: Mirror::kind(&()).into_owned(),
    });
    mirrors_in(client, TENANT)
        .create(&PostParams::default(), &object)
        .await
        .with_context(|| format!("creating the Mirror {name}"))?;
    Ok(())
}
