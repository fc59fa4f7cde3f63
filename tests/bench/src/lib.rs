//! The configmap-mirror benchmark: how fast the controller converges, how
//! quickly it heals, and what it costs, all measured in one run against a
//! real local control plane and the release binary as its own process.
//!
//! Reading order: [`params`] (what a run does), [`phases`] (the run),
//! [`observer`] (the one clock all timings are read from), then
//! [`report`] (what comes out).
#![forbid(unsafe_code)]

pub mod big;
pub mod chart;
pub mod churn;
pub mod cluster_fanout;
pub mod controller;
pub mod fanout;
pub mod glob;
pub mod grant_fanout;
pub mod hostile;
pub mod mirror_fanout;
pub mod observer;
pub mod only;
pub mod params;
pub mod phases;
pub mod procstat;
pub mod profile;
pub mod report;
pub mod secrets;
pub mod status_writes;
pub mod sweep;
pub mod watched;
pub mod workload;

use std::path::{Path, PathBuf};

use anyhow::Context;

pub use params::Params;
pub use report::Results;

use report::LogSummary;

/// Starts a control plane in `params.state_dir`, runs every phase against
/// the controller binary at `controller`, and returns the figures. The
/// control plane and its state are gone when this returns; the controller's
/// log is kept next to the state directory.
pub async fn run(params: Params, controller: &Path) -> anyhow::Result<Results> {
    params.validate()?;
    controller::check_binary(controller)?;
    let build = report::Build::describe(controller, &params::workspace_root())?;
    eprintln!(
        "bench: starting a control plane in {}",
        params.state_dir.display()
    );
    let (cp, snapshot) = start_plane(params.state_dir.clone(), controller).await?;
    let log = cp.log_dir().join("configmap-mirror.log");
    let outcome = phases::run(&cp, &params, &snapshot, build, &log).await;
    // Kept whatever the outcome: a failed run is when the log matters most.
    let kept = keep_log(&log, &params.state_dir);
    drop(cp);
    let mut results = match (outcome, &kept) {
        (Ok(results), _) => results,
        (Err(e), Ok(summary)) => {
            return Err(e.context(format!("the controller's log is in {}", summary.path)));
        }
        (Err(e), Err(_)) => return Err(e),
    };
    results.controller_log = kept.ok();
    Ok(results)
}

/// Starts a control plane in `state_dir` and copies `controller` into it,
/// returning the copy's path. Writes are durable, as in a real cluster, so
/// the floor and the controller pay the same fsync cost. The copy is what
/// runs: a rebuild of the original during a long run would otherwise swap
/// the binary between a start and a restart.
pub(crate) async fn start_plane(
    state_dir: PathBuf,
    controller: &Path,
) -> anyhow::Result<(testenv::ControlPlane, PathBuf)> {
    let options = testenv::Options {
        state_dir: Some(state_dir),
        etcd_unsafe_no_fsync: false,
        ..testenv::Options::default()
    };
    let cp = tokio::task::spawn_blocking(move || testenv::ControlPlane::start(options))
        .await
        .context("the control-plane startup task failed")??;
    let file_name = controller
        .file_name()
        .unwrap_or(std::ffi::OsStr::new("controller"));
    let snapshot = cp.state_dir().join(file_name);
    std::fs::copy(controller, &snapshot)
        .with_context(|| format!("copying {} into the state directory", controller.display()))?;
    Ok((cp, snapshot))
}

/// Copies the controller's log out of the state directory, which is
/// removed with the control plane, and summarises it.
fn keep_log(log: &Path, state_dir: &Path) -> anyhow::Result<LogSummary> {
    let kept = kept_log_path(state_dir);
    std::fs::copy(log, &kept)
        .with_context(|| format!("copying {} to {}", log.display(), kept.display()))?;
    let text = std::fs::read_to_string(&kept)?;
    Ok(LogSummary::of(&kept, &text))
}

fn kept_log_path(state_dir: &Path) -> PathBuf {
    let mut name = state_dir.file_name().unwrap_or_default().to_owned();
    name.push("-configmap-mirror.log");
    state_dir.with_file_name(name)
}
