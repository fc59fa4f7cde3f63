//! The controller under test: the real binary, as its own process, so that
//! its CPU and memory are its own and a restart is a real restart.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

use crate::procstat::{self, Memory};
use crate::profile::Profile;

const READY_TIMEOUT: Duration = Duration::from_secs(120);
const STOP_TIMEOUT: Duration = Duration::from_secs(30);
const POLL: Duration = Duration::from_millis(50);
/// No reconcile for this long means a pass is over.
const QUIET_FOR: Duration = Duration::from_secs(1);
const QUIET_POLL: Duration = Duration::from_millis(100);

/// How to start the controller; each start is a fresh process.
#[derive(Clone, Debug)]
pub struct Launcher {
    pub profile: Profile,
    pub binary: PathBuf,
    pub kubeconfig: PathBuf,
    pub concurrency: usize,
    pub log: PathBuf,
    /// Flags passed after the profile's own.
    pub extra_args: Vec<String>,
}

pub struct Controller {
    child: testenv::ChildProcess,
    base_url: String,
    http: reqwest::Client,
    profile: Profile,
}

/// Fails early, and says how to fix it, when the binary was not built.
pub fn check_binary(binary: &Path) -> anyhow::Result<()> {
    if !binary.is_file() {
        bail!(
            "the controller binary {} does not exist; build it first with \
             `cargo build --release --locked` (or pass --controller PATH)",
            binary.display()
        );
    }
    Ok(())
}

impl Launcher {
    /// Starts the controller the way its profile says and does not wait
    /// for it. configmap-mirror watches all namespaces, so that unmanaged
    /// objects anywhere are in its reach, and mirrors both kinds (the
    /// Secret phase needs it; the ConfigMap phases then measure a
    /// controller with every kind on).
    pub fn start(&self) -> anyhow::Result<Controller> {
        check_binary(&self.binary)?;
        let port = testenv::free_port()?;
        let mut cmd = self
            .profile
            .command(&self.binary, &self.kubeconfig, port, self.concurrency);
        cmd.args(&self.extra_args);
        let child = testenv::spawn_child(cmd, &self.log)?;
        let http = reqwest::Client::builder()
            .no_proxy()
            .timeout(Duration::from_secs(5))
            .build()
            .context("building the HTTP client for the controller's endpoints")?;
        Ok(Controller {
            child,
            base_url: format!("http://127.0.0.1:{port}"),
            http,
            profile: self.profile,
        })
    }
}

impl Controller {
    pub fn pid(&self) -> u32 {
        self.child.pid()
    }

    /// Where its HTTP endpoints (`/healthz`, `/readyz`, `/metrics`) answer.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// How it ended, once it has exited; None while it runs.
    pub fn exit_status(&mut self) -> anyhow::Result<Option<std::process::ExitStatus>> {
        self.child.try_wait()
    }

    pub fn cpu_seconds(&self) -> anyhow::Result<f64> {
        procstat::cpu_seconds(self.pid())
    }

    pub fn memory(&self) -> anyhow::Result<Memory> {
        procstat::memory(self.pid())
    }

    /// Fails if the controller has died, which would make every later
    /// figure meaningless.
    pub fn ensure_running(&mut self) -> anyhow::Result<()> {
        if let Some(status) = self.child.try_wait()? {
            bail!("the controller exited unexpectedly: {status}");
        }
        Ok(())
    }

    /// Waits for /readyz: configmap-mirror's caches hold a full list (a
    /// peer's readiness means what that peer says it means).
    pub async fn wait_ready(&mut self) -> anyhow::Result<()> {
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            self.ensure_running()?;
            let url = format!("{}/readyz", self.base_url);
            if let Ok(response) = self.http.get(url).send().await
                && response.status().is_success()
            {
                return Ok(());
            }
            if Instant::now() >= deadline {
                bail!("the controller was not ready within {READY_TIMEOUT:?}");
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// The controller's own metrics, in the Prometheus text format.
    pub async fn metrics(&self) -> anyhow::Result<String> {
        if !self.profile.has_metrics() {
            bail!("{} has no metrics endpoint", self.profile.name());
        }
        let url = format!("{}/metrics", self.base_url);
        let response = self.http.get(&url).send().await?.error_for_status()?;
        Ok(response.text().await?)
    }

    /// Sum of every series of `family` (e.g. all operations of a counter).
    pub async fn metric_sum(&self, family: &str) -> anyhow::Result<f64> {
        Ok(sum_of(&self.metrics().await?, family))
    }

    /// Waits until the controller has compared at least `at_least` objects
    /// (reconciled, or found in sync by a resync sweep) and then sat idle for
    /// [`QUIET_FOR`]: the end of the pass a (re)start makes over every cached
    /// object. Only needed to know when a pass that writes nothing is over;
    /// returns when the last comparison was counted.
    pub async fn wait_quiet(
        &mut self,
        at_least: f64,
        timeout: Duration,
    ) -> anyhow::Result<Instant> {
        let deadline = Instant::now() + timeout;
        let mut last = (-1.0, Instant::now());
        loop {
            self.ensure_running()?;
            let text = self.metrics().await?;
            let compared = sum_of(&text, "controller_runtime_reconcile_total")
                + sum_of(&text, "configmap_mirror_resync_objects_total");
            let busy = sum_of(&text, "controller_runtime_active_workers");
            if compared != last.0 || busy != 0.0 {
                last = (compared, Instant::now());
            } else if compared >= at_least && last.1.elapsed() >= QUIET_FOR {
                return Ok(last.1);
            }
            if Instant::now() >= deadline {
                bail!(
                    "the controller did not settle within {timeout:?} \
                     ({compared} compared, {busy} running)"
                );
            }
            tokio::time::sleep(QUIET_POLL).await;
        }
    }

    /// SIGTERM, as Kubernetes stops a pod, and waits for a clean exit (or,
    /// for a peer that installs no handler, death by that signal).
    pub async fn stop(mut self) -> anyhow::Result<Duration> {
        let started = Instant::now();
        self.child.signal(testenv::Signal::Term)?;
        loop {
            if let Some(status) = self.child.try_wait()? {
                if !status.success() && !self.profile.may_die_of_sigterm(&status) {
                    bail!("the controller exited with {status} on SIGTERM");
                }
                return Ok(started.elapsed());
            }
            if started.elapsed() > STOP_TIMEOUT {
                bail!("the controller did not exit within {STOP_TIMEOUT:?} of SIGTERM");
            }
            tokio::time::sleep(POLL).await;
        }
    }
}

/// Adds up every sample line of `family` in a text exposition. Counters may
/// carry the `_total` suffix on the sample only, so either name matches.
pub(crate) fn sum_of(text: &str, family: &str) -> f64 {
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| {
            let (series, value) = line.rsplit_once(' ')?;
            let name = series.split('{').next()?;
            let matches = name == family || name.strip_suffix("_total") == Some(family);
            matches.then(|| value.parse::<f64>().ok()).flatten()
        })
        // Not `sum()`, which starts from -0.0 and prints an absent series so.
        .fold(0.0, |total, value| total + value)
}

#[cfg(test)]
mod tests {
    use super::sum_of;

    #[test]
    fn series_of_a_family_are_added_up() {
        let text = "# TYPE configmap_mirror_companion_writes counter\n\
                    configmap_mirror_companion_writes_total{operation=\"create\"} 7\n\
                    configmap_mirror_companion_writes_total{operation=\"update\"} 2\n\
                    configmap_mirror_managed_sources 9\n";
        assert_eq!(sum_of(text, "configmap_mirror_companion_writes_total"), 9.0);
        assert_eq!(sum_of(text, "configmap_mirror_companion_writes"), 9.0);
        assert_eq!(sum_of(text, "configmap_mirror_managed_sources"), 9.0);
        assert_eq!(sum_of(text, "absent").to_string(), "0");
    }
}
