//! Churn: a tenant creating sources the controller must refuse (their
//! companion's name would be too long) and deleting them again, over and
//! over. The retry state the controller keeps for each failing object must
//! go with the object: afterwards no failing object is left, and memory is
//! where it was.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use futures::{StreamExt, TryStreamExt, stream};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::{
    Api,
    api::{DeleteParams, ObjectMeta, PostParams},
};
use serde::Serialize;

use crate::controller::Controller;
use crate::procstat::Memory;

/// The controller's gauge of objects with retry state.
const FAILING: &str = "configmap_mirror_failing_objects";
/// Sources created, then deleted, together.
const BATCH: usize = 100;
const PATIENCE: Duration = Duration::from_secs(120);

#[derive(Clone, Debug, Serialize)]
pub struct Churn {
    /// Refused sources created and deleted.
    pub cycles: usize,
    /// The most objects with retry state at once (a batch).
    pub failing_at_most: f64,
    /// Objects with retry state once every refused source is gone.
    pub failing_after: f64,
    pub before: Memory,
    pub after: Memory,
    pub rss_delta_bytes: i64,
    pub seconds: f64,
}

/// Runs `cycles` create-refused-then-delete cycles in `namespace`, a batch
/// at a time: each batch is created, waited for until the controller holds
/// retry state for all of it, then deleted and waited for until it holds
/// none.
pub async fn run(
    sources: &Api<ConfigMap>,
    controller: &Controller,
    cycles: usize,
    concurrency: usize,
) -> anyhow::Result<Churn> {
    let started = Instant::now();
    let before = controller.memory()?;
    let mut failing_at_most: f64 = 0.0;
    let mut done = 0;
    while done < cycles {
        let names: Vec<String> = (done..cycles.min(done + BATCH)).map(refused_name).collect();
        stream::iter(&names)
            .map(|name| async move {
                sources
                    .create(&PostParams::default(), &refused_source(name))
                    .await
                    .with_context(|| format!("creating {name}"))
            })
            .buffer_unordered(concurrency)
            .try_collect::<Vec<_>>()
            .await?;
        let held = wait_failing(controller, |failing| failing >= names.len() as f64).await?;
        failing_at_most = failing_at_most.max(held);
        stream::iter(&names)
            .map(|name| async move {
                sources
                    .delete(name, &DeleteParams::default())
                    .await
                    .with_context(|| format!("deleting {name}"))
            })
            .buffer_unordered(concurrency)
            .try_collect::<Vec<_>>()
            .await?;
        wait_failing(controller, |failing| failing == 0.0).await?;
        done += names.len();
    }
    let after = controller.memory()?;
    Ok(Churn {
        cycles,
        failing_at_most,
        failing_after: controller.metric_sum(FAILING).await?,
        before,
        after,
        rss_delta_bytes: after.rss_bytes as i64 - before.rss_bytes as i64,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// 246 + 7 = 253 characters, the longest name a ConfigMap may have: the
/// companion's, with the `-synced` suffix, cannot exist.
fn refused_name(i: usize) -> String {
    format!("{}{i:07}", "c".repeat(246))
}

fn refused_source(name: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            labels: Some(BTreeMap::from([(
                "workshop.io/managed".to_owned(),
                "true".to_owned(),
            )])),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([("a".to_owned(), "1".to_owned())])),
        ..ConfigMap::default()
    }
}

async fn wait_failing(
    controller: &Controller,
    reached: impl Fn(f64) -> bool,
) -> anyhow::Result<f64> {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let failing = controller.metric_sum(FAILING).await?;
        if reached(failing) {
            return Ok(failing);
        }
        if Instant::now() >= deadline {
            bail!("{FAILING} stayed at {failing} for {PATIENCE:?}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
