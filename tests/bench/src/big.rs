//! Big sources: a tenant whose sources each hold hundreds of KiB. The
//! controller caches a digest of each source's content, not the content,
//! so its memory must not follow what the sources hold.

use std::time::{Duration, Instant};

use anyhow::bail;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::{Api, api::ListParams};
use serde::Serialize;

use crate::controller::Controller;
use crate::procstat::Memory;
use crate::workload;

/// Bytes of data per big source.
pub const BIG_SOURCE_BYTES: usize = 512 * 1024;
const WRITES: &str = "configmap_mirror_companion_writes_total";
const POLL: Duration = Duration::from_millis(200);
const PATIENCE: Duration = Duration::from_secs(300);

#[derive(Clone, Debug, Serialize)]
pub struct BigSources {
    pub sources: usize,
    pub bytes_each: usize,
    pub converge_seconds: f64,
    pub before: Memory,
    pub after: Memory,
    pub rss_delta_bytes: i64,
    /// The phase's own peak: VmHWM, reset as the phase began (false when
    /// the kernel refused the reset: the peak is then the process's).
    pub peak_reset: bool,
    /// The peak over the RSS after convergence (issue 51's goal: < 2).
    pub peak_over_settled: f64,
}

pub async fn run(
    api: &Api<ConfigMap>,
    controller: &mut Controller,
    count: usize,
    concurrency: usize,
) -> anyhow::Result<BigSources> {
    let peak_reset = crate::procstat::reset_peak(controller.pid()).is_ok();
    let before = controller.memory()?;
    let writes_before = controller.metric_sum(WRITES).await?;
    let started = Instant::now();
    let sources = (0..count).map(|i| {
        workload::configmap(
            format!("big-{i:04}"),
            true,
            workload::content(i, 0, BIG_SOURCE_BYTES),
        )
    });
    // Few at once: each request carries half a MiB.
    workload::create_all(api, sources, concurrency.min(4)).await?;
    loop {
        controller.ensure_running()?;
        let written = controller.metric_sum(WRITES).await? - writes_before;
        if written >= count as f64 && companions(api).await? >= count {
            break;
        }
        if started.elapsed() > PATIENCE {
            bail!("{written} of {count} big companions written within {PATIENCE:?}");
        }
        tokio::time::sleep(POLL).await;
    }
    let converge_seconds = started.elapsed().as_secs_f64();
    let after = controller.memory()?;
    Ok(BigSources {
        sources: count,
        bytes_each: BIG_SOURCE_BYTES,
        converge_seconds,
        rss_delta_bytes: after.rss_bytes as i64 - before.rss_bytes as i64,
        peak_reset,
        peak_over_settled: after.hwm_bytes as f64 / after.rss_bytes.max(1) as f64,
        before,
        after,
    })
}

async fn companions(api: &Api<ConfigMap>) -> anyhow::Result<usize> {
    let listed = api
        .list_metadata(
            &ListParams::default().labels("app.kubernetes.io/managed-by=configmap-mirror"),
        )
        .await?;
    Ok(listed.items.len())
}
