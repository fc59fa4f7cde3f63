//! MirrorGrants at scale: N namespaces that consent by nothing but one
//! grant each. What the grants cost the controller in memory with nothing
//! mirrored yet; one source asking for them all by glob, timed against the
//! API floor of N writes in the same run; then every grant deleted, until
//! every mirror it alone let in is gone.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use configmap_mirror::api::mirror_grant::MirrorGrant;
use futures::{StreamExt, TryStreamExt, stream};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::{
    Api, Client, CustomResourceExt, Resource,
    api::{ApiResource, DeleteParams, DynamicObject, ListParams, PostParams},
};
use serde::Serialize;
use serde_json::json;

use crate::controller::Controller;
use crate::fanout::{self, FanOut};
use crate::only;
use crate::profile::Profile;
use crate::report::Floor;
use crate::workload;

/// The granting namespaces' prefix; no other namespace starts with it.
pub const PREFIX: &str = "bench-grant-";
/// Where the sources live.
const HOME: &str = "bench-grants-home";
/// Granted last: the probe's mirror there says the controller followed
/// every grant before it, which one ordered watch delivers.
const MARKER: &str = "bench-grants-marker";
const PROBE: &str = "grants-probe";
const PATIENCE: Duration = Duration::from_secs(600);

#[derive(Clone, Debug, Serialize)]
pub struct GrantFanOut {
    pub namespaces: usize,
    /// From the first grant created to the marker's mirror: every grant
    /// followed.
    pub grants_followed_seconds: f64,
    /// RSS growth over the grants, with nothing mirrored, divided by them.
    pub memory_per_grant_bytes: f64,
    pub floor: Floor,
    /// One source into every granting namespace.
    pub fan_out: FanOut,
    pub converge_ratio_to_floor: f64,
    /// From the first grant deleted to the last mirror gone.
    pub withdraw_seconds: f64,
}

/// Installs the MirrorGrant CRD and waits until it serves.
pub async fn install_crd(client: &Client) -> anyhow::Result<()> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.create(&PostParams::default(), &MirrorGrant::crd())
        .await
        .context("installing the MirrorGrant CRD")?;
    let grants = grants_in(client, "default");
    testenv::wait_for("the MirrorGrant CRD to serve", PATIENCE, || async {
        grants.list(&ListParams::default()).await.ok().map(drop)
    })
    .await
}

/// Runs the phase against `running`, started after [`install_crd`].
pub async fn run(
    client: &Client,
    running: &mut Controller,
    namespaces: usize,
    concurrency: usize,
) -> anyhow::Result<GrantFanOut> {
    eprintln!("bench: creating {namespaces} namespaces without consent labels");
    let plain = BTreeMap::new();
    fanout::create_labelled_namespaces(client, &plain, PREFIX, namespaces, concurrency).await?;
    for name in [HOME, MARKER] {
        only::create_namespace(client, name).await?;
    }
    let mut probe = workload::configmap(PROBE.to_owned(), true, fanout::source_data(0));
    Profile::ConfigMapMirror.ask_for_copies(&mut probe, MARKER);
    let sources: Api<ConfigMap> = Api::namespaced(client.clone(), HOME);
    sources.create(&PostParams::default(), &probe).await?;
    eprintln!("bench: API floor, {namespaces} writes");
    let floor = fanout::floor(client, PREFIX, namespaces, concurrency).await?;
    running.wait_quiet(0.0, PATIENCE).await?;
    let rss_before = running.memory()?.rss_bytes;

    eprintln!("bench: {namespaces} grants, then the marker's");
    let started = Instant::now();
    let each = (0..namespaces).map(|i| format!("{PREFIX}{i}"));
    for_each(each.clone(), concurrency, |ns| grant(client, ns)).await?;
    grant(client, MARKER.to_owned()).await?;
    let marker: Api<ConfigMap> = Api::namespaced(client.clone(), MARKER);
    testenv::wait_for("the marker's mirror", PATIENCE, || async {
        marker.get_opt(PROBE).await.ok()?.map(drop)
    })
    .await?;
    let grants_followed_seconds = started.elapsed().as_secs_f64();
    let rss_after = running.memory()?.rss_bytes;

    eprintln!("bench: one source into the {namespaces} granting namespaces");
    let fan_out =
        fanout::converge(client, Profile::ConfigMapMirror, HOME, PREFIX, namespaces).await?;

    eprintln!("bench: every grant deleted");
    let started = Instant::now();
    for_each(each, concurrency, |ns| revoke(client, ns)).await?;
    let mirrors: Api<ConfigMap> = Api::all(client.clone());
    let of_fan_out = ListParams::default().labels("app.kubernetes.io/managed-by=configmap-mirror");
    testenv::wait_for("every granted mirror to go", PATIENCE, || async {
        let listed = mirrors.list_metadata(&of_fan_out).await.ok()?;
        let left = (listed.items.iter())
            .filter(|m| {
                m.metadata
                    .namespace
                    .as_deref()
                    .is_some_and(|ns| ns.starts_with(PREFIX))
            })
            .count();
        (left == 0).then_some(())
    })
    .await?;
    let withdraw_seconds = started.elapsed().as_secs_f64();
    Ok(GrantFanOut {
        namespaces,
        grants_followed_seconds,
        memory_per_grant_bytes: rss_after.saturating_sub(rss_before) as f64 / namespaces as f64,
        converge_ratio_to_floor: fan_out.converge_seconds / floor.seconds,
        floor,
        fan_out,
        withdraw_seconds,
    })
}

async fn for_each<F, Fut>(
    namespaces: impl Iterator<Item = String>,
    concurrency: usize,
    act: F,
) -> anyhow::Result<()>
where
    F: Fn(String) -> Fut,
    Fut: Future<Output = anyhow::Result<()>>,
{
    stream::iter(namespaces)
        .map(act)
        .buffer_unordered(concurrency.max(1))
        .try_collect()
        .await
}

fn grants_in(client: &Client, namespace: &str) -> Api<DynamicObject> {
    let resource = ApiResource::erase::<MirrorGrant>(&());
    Api::namespaced_with(client.clone(), namespace, &resource)
}

/// A grant in `namespace` letting ConfigMaps in from the sources' namespace.
async fn grant(client: &Client, namespace: String) -> anyhow::Result<()> {
    let mut object = DynamicObject::new("bench", &ApiResource::erase::<MirrorGrant>(&()));
    object.data = json!({"spec": {"from": [{"namespace": HOME, "kinds": ["ConfigMap"]}]}});
    object.types = Some(kube::api::TypeMeta {
        api_version: MirrorGrant::api_version(&()).into_owned(),
        kind: MirrorGrant::kind(&()).into_owned(),
    });
    grants_in(client, &namespace)
        .create(&PostParams::default(), &object)
        .await
        .with_context(|| format!("granting in {namespace}"))?;
    Ok(())
}

async fn revoke(client: &Client, namespace: String) -> anyhow::Result<()> {
    grants_in(client, &namespace)
        .delete("bench", &DeleteParams::default())
        .await
        .with_context(|| format!("revoking in {namespace}"))?;
    Ok(())
}
