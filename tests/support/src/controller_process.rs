//! The controller binary as a child process of the test.

use std::{path::PathBuf, process::Command, time::Duration};

use anyhow::Context as _;
use testenv::{ChildProcess, ControlPlane, Signal, free_port, spawn_child, wait_for};

use crate::PATIENCE;

/// The controller binary, running as a child process with its own HTTP
/// port; stopped (and killed if need be) when dropped.
pub struct ControllerProcess {
    child: ChildProcess,
    pub port: u16,
    pub log: PathBuf,
}

impl ControllerProcess {
    /// Starts the test build of the controller with `kubeconfig` and waits
    /// until its caches are synced.
    pub async fn start(
        control_plane: &ControlPlane,
        kubeconfig: &PathBuf,
        tag: &str,
        args: &[&str],
    ) -> ControllerProcess {
        let binary = crate::controller_binary();
        ControllerProcess::start_binary(&binary, control_plane, kubeconfig, tag, args, &[]).await
    }

    /// Like [`ControllerProcess::start`], for another build of the binary.
    pub async fn start_binary(
        binary: &PathBuf,
        control_plane: &ControlPlane,
        kubeconfig: &PathBuf,
        tag: &str,
        args: &[&str],
        envs: &[(&str, &str)],
    ) -> ControllerProcess {
        let mut cmd = Command::new(binary);
        cmd.args(args)
            .env("KUBECONFIG", kubeconfig)
            .envs(envs.iter().copied());
        ControllerProcess::start_command(cmd, control_plane, tag).await
    }

    /// Runs `cmd`, whose last arguments must be the controller's, and waits
    /// until the controller's caches are synced.
    pub async fn start_command(
        cmd: Command,
        control_plane: &ControlPlane,
        tag: &str,
    ) -> ControllerProcess {
        let controller = ControllerProcess::spawn(cmd, control_plane, tag).await;
        wait_for("the controller to be ready", PATIENCE, || async {
            (controller.get("/readyz").await.ok()?.0 == 200).then_some(())
        })
        .await
        .unwrap_or_else(|e| panic!("{e:#}\n{}", controller.log_text()));
        controller
    }

    /// Starts the test build and waits only for its HTTP listener.
    pub async fn start_unready(
        control_plane: &ControlPlane,
        kubeconfig: &PathBuf,
        tag: &str,
        args: &[&str],
    ) -> ControllerProcess {
        let mut cmd = Command::new(crate::controller_binary());
        cmd.args(args).env("KUBECONFIG", kubeconfig);
        ControllerProcess::spawn(cmd, control_plane, tag).await
    }

    async fn spawn(mut cmd: Command, control_plane: &ControlPlane, tag: &str) -> ControllerProcess {
        let port = free_port().expect("find a free port");
        let log = control_plane
            .log_dir()
            .join(format!("controller-{tag}-{port}.log"));
        cmd.args([
            "--http-addr",
            &format!("127.0.0.1:{port}"),
            "--log-format",
            "text",
        ]);
        if !cmd.get_envs().any(|(key, _)| key == "RUST_LOG") {
            cmd.env("RUST_LOG", "info,configmap_mirror=debug");
        }
        let child = spawn_child(cmd, &log).expect("start configmap-mirror");
        let controller = ControllerProcess { child, port, log };
        wait_for("the controller to listen", PATIENCE, || async {
            controller.get("/healthz").await.ok().map(|_| ())
        })
        .await
        .unwrap_or_else(|e| panic!("{e:#}\n{}", controller.log_text()));
        controller
    }

    /// Status and body of a GET on the controller's HTTP listener.
    pub async fn get(&self, path: &str) -> anyhow::Result<(u16, String)> {
        let url = format!("http://127.0.0.1:{}{path}", self.port);
        let response = reqwest::get(&url)
            .await
            .with_context(|| format!("GET {url}"))?;
        let status = response.status().as_u16();
        Ok((status, response.text().await?))
    }

    /// The sum of every series of metric `name` whose labels contain `labels`.
    pub async fn metric(&self, name: &str, labels: &str) -> f64 {
        let (_, text) = self.get("/metrics").await.expect("scrape /metrics");
        sum_metric(&text, name, labels)
    }

    /// Companion writes made by this process, by its own count.
    pub async fn writes(&self) -> f64 {
        self.metric("configmap_mirror_companion_writes_total", "")
            .await
    }

    /// The metric once it has reached `at_least` (or its value when
    /// patience runs out). The controller counts a write just after the API
    /// server accepts it, so a test that has seen the write may be a moment
    /// ahead of the counter; counters only grow, so waiting for the expected
    /// value and then comparing still catches any extra count.
    pub async fn metric_reaching(&self, name: &str, labels: &str, at_least: f64) -> f64 {
        let what = format!("{name}{{{labels}}} to reach {at_least}");
        let reached = wait_for(&what, PATIENCE, || async {
            let value = self.metric(name, labels).await;
            (value >= at_least).then_some(value)
        })
        .await;
        match reached {
            Ok(value) => value,
            Err(_) => self.metric(name, labels).await,
        }
    }

    /// [`ControllerProcess::writes`], once it has reached `at_least`.
    pub async fn writes_reaching(&self, at_least: f64) -> f64 {
        self.metric_reaching("configmap_mirror_companion_writes_total", "", at_least)
            .await
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub fn pid(&self) -> u32 {
        self.child.pid()
    }

    /// A figure of the process's `/proc/<pid>/status` in KiB, such as
    /// `VmRSS` (resident now) or `VmHWM` (the most it was resident).
    pub fn memory_kib(&self, field: &str) -> u64 {
        let path = format!("/proc/{}/status", self.pid());
        let status = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {path}: {e}"));
        let line = status
            .lines()
            .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'));
        let kib = line.and_then(|rest| rest.trim().strip_suffix("kB")?.trim().parse().ok());
        kib.unwrap_or_else(|| panic!("no {field} in {path}:\n{status}"))
    }

    pub fn signal(&self, signal: Signal) {
        self.child.signal(signal).expect("signal the controller");
    }

    /// SIGTERM, then the exit status.
    pub fn stop(mut self) -> std::process::ExitStatus {
        self.signal(Signal::Term);
        self.child
            .wait_with_timeout(PATIENCE)
            .expect("wait for the controller")
            .unwrap_or_else(|| {
                panic!(
                    "the controller did not stop on SIGTERM\n{}",
                    self.log_text()
                )
            })
    }

    pub fn wait_exit(&mut self, timeout: Duration) -> Option<std::process::ExitStatus> {
        self.child
            .wait_with_timeout(timeout)
            .expect("wait for the controller")
    }
}

impl Drop for ControllerProcess {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let text = self.log_text();
            let tail: Vec<&str> = text.lines().rev().take(80).collect();
            eprintln!("--- last lines of {} ---", self.log.display());
            for line in tail.iter().rev() {
                eprintln!("{line}");
            }
        }
    }
}

/// Sums a metric over the series whose label text contains `labels`.
pub fn sum_metric(text: &str, name: &str, labels: &str) -> f64 {
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| {
            let (series, value) = line.rsplit_once(' ')?;
            let (metric, rest) = series.split_once('{').unwrap_or((series, ""));
            (metric == name && rest.contains(labels)).then(|| value.parse::<f64>().ok())?
        })
        .sum()
}
