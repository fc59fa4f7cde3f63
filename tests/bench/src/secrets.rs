//! Secrets: the same number of sources as the ConfigMap phases, with the
//! same content, as Secrets mirrored by the same controller (run with
//! `--kinds=configmaps,secrets` throughout), and then unmanaged Secrets,
//! which a controller that asks the API server for labeled Secrets only
//! never receives: they must cost it nothing.

use std::time::{Duration, Instant};

use anyhow::bail;
use k8s_openapi::api::core::v1::Secret;
use kube::{Api, api::ListParams};
use serde::Serialize;

use crate::controller::Controller;
use crate::params::Params;
use crate::procstat::Memory;
use crate::workload;

/// What the controller counts of the copies it writes, all kinds together.
const WRITES: &str = "configmap_mirror_companion_writes_total";
const POLL: Duration = Duration::from_millis(200);
/// How long the controller gets to notice the unmanaged Secrets, were it
/// to receive them.
const UNMANAGED_SETTLE: Duration = Duration::from_secs(5);

#[derive(Clone, Debug, Serialize)]
pub struct SecretFigures {
    pub sources: usize,
    /// From the first create until every copy was written.
    pub converge_seconds: f64,
    pub before: Memory,
    pub after_sources: Memory,
    /// RSS growth per managed Secret, bytes.
    pub bytes_per_source: f64,
    pub unmanaged: usize,
    pub after_unmanaged: Memory,
    pub unmanaged_rss_delta_bytes: i64,
    /// Copy writes while the unmanaged Secrets were created: must be 0.
    pub writes_during_unmanaged: f64,
}

pub async fn run(
    managed: &Api<Secret>,
    unmanaged: &Api<Secret>,
    controller: &mut Controller,
    params: &Params,
) -> anyhow::Result<SecretFigures> {
    let n = params.sources;
    let before = controller.memory()?;
    let writes_before = controller.metric_sum(WRITES).await?;
    let started = Instant::now();
    let sources = (0..n).map(|i| {
        workload::secret(
            workload::source_name(i),
            true,
            workload::content(i, 0, params.data_size),
        )
    });
    workload::create_all(managed, sources, params.concurrency).await?;
    let deadline = started + Duration::from_secs(300) + Duration::from_millis(100) * n as u32;
    loop {
        controller.ensure_running()?;
        let written = controller.metric_sum(WRITES).await? - writes_before;
        if written >= n as f64 && copies(managed).await? >= n {
            break;
        }
        if Instant::now() >= deadline {
            bail!("{written} of {n} Secret copies written in time");
        }
        tokio::time::sleep(POLL).await;
    }
    let converge_seconds = started.elapsed().as_secs_f64();
    let after_sources = controller.memory()?;

    let writes_before = controller.metric_sum(WRITES).await?;
    let objects = (0..params.unmanaged).map(|i| {
        workload::secret(
            format!("unmanaged-{i:06}"),
            false,
            workload::content(i, 0, params.data_size),
        )
    });
    workload::create_all(unmanaged, objects, params.concurrency).await?;
    tokio::time::sleep(UNMANAGED_SETTLE).await;
    controller.ensure_running()?;
    let after_unmanaged = controller.memory()?;
    Ok(SecretFigures {
        sources: n,
        converge_seconds,
        bytes_per_source: (after_sources.rss_bytes as f64 - before.rss_bytes as f64) / n as f64,
        before,
        after_sources,
        unmanaged: params.unmanaged,
        unmanaged_rss_delta_bytes: after_unmanaged.rss_bytes as i64
            - after_sources.rss_bytes as i64,
        after_unmanaged,
        writes_during_unmanaged: controller.metric_sum(WRITES).await? - writes_before,
    })
}

/// Copies in the namespace, by their names (metadata only).
async fn copies(api: &Api<Secret>) -> anyhow::Result<usize> {
    let listed = api
        .list_metadata(
            &ListParams::default().labels("app.kubernetes.io/managed-by=configmap-mirror"),
        )
        .await?;
    Ok(listed
        .items
        .iter()
        .filter(|copy| {
            copy.metadata
                .name
                .as_deref()
                .is_some_and(|name| workload::source_of_companion(name).is_some())
        })
        .count())
}
