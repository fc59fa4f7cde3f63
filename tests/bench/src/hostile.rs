//! The hostile tenant (issue 51): a tenant with no cluster rights throws
//! the six attacks of [`attacks`] at the controller, one after another,
//! while another tenant's copy is deleted and timed until it is back, again
//! and again. The controller runs with leader election, as the chart runs
//! it, and is started again whenever it exits, as a Deployment would.
//!
//! Measured per attack, by [`watch`]: the controller's CPU per reconcile,
//! its peak memory (VmHWM, reset as each attack begins, so no restart is
//! needed to read each attack's own peak), the worst `/healthz` answer, the
//! times the Lease was lost, and the other tenant's heals. The goals are
//! the issue's: no Lease lost, `/healthz` under 1 s, peak memory under half
//! the chart's memory limit, and the other tenant's heal p99 within 5× its
//! quiet figure, measured before the attacks.

pub mod attacks;
pub mod watch;

use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::{Api, Client};
use serde::Serialize;

use crate::observer::Observer;
use crate::profile::Profile;
use crate::report::{Latency, Target};
use crate::sweep::Plane;
use crate::workload;

use attacks::Outcome;
use watch::{Starter, Watches, Window};

const MIB: f64 = 1024.0 * 1024.0;
/// The other tenant's sources, whose companions are healed in turn: the
/// controller restores a companion rewritten by someone else 5 times
/// within a minute only slowly, so one source healed every 250 ms would
/// measure that guard, not the heal. 120 of them, at most one heal every
/// 250 ms, heal each about twice a minute.
const CALM_SOURCES: usize = 120;
/// A heal not back within this is counted at it.
const HEAL_TIMEOUT: Duration = Duration::from_secs(60);
/// How long the controller gets, before each attack, to lead and fall
/// quiet after the last one.
const SETTLE_PATIENCE: Duration = Duration::from_secs(120);
/// What the controller logs when it gives its Lease up.
const LOST_THE_LEASE: &str = "lost the lease";

/// The sizes of the attacks; [`HostileParams::default`] is the issue's.
#[derive(Clone, Debug, Serialize)]
pub struct HostileParams {
    /// Keys of the sources of attacks 1 and 3.
    pub keys: usize,
    /// Bytes of the one key of the sources of attacks 2, 4 and 5.
    pub bytes: usize,
    /// Attack 1: exclusion globs, and each one's length.
    pub exclusions: usize,
    pub glob_len: usize,
    /// Attack 2: names the one key is copied into besides its own.
    pub renames: usize,
    /// Attack 3: sources of `keys` keys carrying mirror-keys.
    pub keyed_sources: usize,
    /// Attack 4: sources of `bytes` in one namespace.
    pub namespace_sources: usize,
    /// Attack 5: sources of `bytes` mirrored to "*", and namespaces open
    /// to mirrors from anywhere.
    pub wide_sources: usize,
    pub open_namespaces: usize,
    /// Attack 6: sources changed at once, each mirrored into
    /// `fan_namespaces` namespaces.
    pub fan_sources: usize,
    pub fan_namespaces: usize,
    /// How long each attack is watched once its objects are written.
    pub attack_secs: u64,
    /// How long an attack waits for copies it must have written first.
    pub setup_secs: u64,
    /// Heals of the other tenant's copy before the attacks.
    pub quiet_samples: usize,
    /// One heal starts at most this often.
    pub heal_pace_ms: u64,
    /// Which of the six attacks run, in order.
    pub attacks: Vec<u8>,
    /// The attacks' sources go without the managed label: the controller
    /// never sees them, and the other tenant's heals show what the attacks'
    /// own writes cost the API server and etcd, the controller aside.
    pub unlabelled: bool,
    pub concurrency: usize,
}

impl Default for HostileParams {
    fn default() -> Self {
        HostileParams {
            keys: 60_000,
            // "1 MB": the API server takes up to 1 MiB of data per object.
            bytes: 1_000_000,
            exclusions: 99,
            glob_len: 250,
            renames: 99,
            keyed_sources: 6,
            namespace_sources: 100,
            wide_sources: 16,
            open_namespaces: 32,
            fan_sources: 16,
            fan_namespaces: 1_000,
            attack_secs: 30,
            setup_secs: 600,
            quiet_samples: 20,
            heal_pace_ms: 250,
            attacks: vec![1, 2, 3, 4, 5, 6],
            unlabelled: false,
            concurrency: 16,
        }
    }
}

impl HostileParams {
    /// Every attack, a tenth of its size or less: a couple of minutes.
    pub fn small() -> Self {
        HostileParams {
            keys: 6_000,
            bytes: 100_000,
            keyed_sources: 2,
            namespace_sources: 10,
            wide_sources: 4,
            open_namespaces: 4,
            fan_sources: 4,
            fan_namespaces: 20,
            attack_secs: 5,
            setup_secs: 120,
            quiet_samples: 10,
            ..HostileParams::default()
        }
    }

    pub fn validate(&self) -> anyhow::Result<()> {
        anyhow::ensure!(
            self.attacks.iter().all(|a| (1..=6).contains(a)),
            "--attacks takes numbers from 1 to 6"
        );
        anyhow::ensure!(self.quiet_samples > 0, "--samples must be at least 1");
        anyhow::ensure!(
            self.renames < 100 && self.exclusions < 100,
            "mirror-keys takes at most 100 entries"
        );
        Ok(())
    }
}

/// One attack's figures.
#[derive(Clone, Debug, Serialize)]
pub struct Attack {
    pub number: u8,
    pub outcome: Outcome,
    pub window: Window,
    pub healthz_worst_ms: f64,
    pub heal: Latency,
    /// The controller's CPU over the reconciles it counted, in ms.
    pub cpu_ms_per_reconcile: Option<f64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct HostileFigures {
    /// The chart's `resources.limits.memory`.
    pub memory_limit_bytes: u64,
    /// The attacks ran unlabelled ([`HostileParams::unlabelled`]).
    pub unlabelled: bool,
    /// The quiet time: the other tenant's heals with nothing else going on.
    pub quiet: Window,
    pub quiet_heal: Latency,
    pub attacks: Vec<Attack>,
    /// Over every attack.
    pub heal: Latency,
    pub healthz_worst_ms: f64,
    pub peak_bytes: u64,
    /// Over the whole phase, the attacks' clean-ups included.
    pub lease_lost: usize,
    pub exits: usize,
    /// Controller processes started, the first included (the bench's own
    /// restarts in attacks 4 and 5 count).
    pub starts: usize,
    /// The Lease's leaseTransitions, each value seen, in order.
    pub lease_transitions: Vec<i32>,
    /// Lines of the controller's log saying it lost the Lease.
    pub log_lease_lost: usize,
    pub goals: Vec<Target>,
}

/// Runs the phase on `plane`, with the controller started by the bench.
pub(crate) async fn run(plane: &Plane, params: &HostileParams) -> anyhow::Result<HostileFigures> {
    params.validate()?;
    let memory_limit_bytes = chart_memory_limit()?;
    let client = plane.cp.client().await;
    // As the chart installs it: without it the controller logs, every
    // second, that it cannot watch ClusterMirrors.
    crate::only::install_cluster_mirror_crd(&client).await?;
    let lease_namespace = testenv::fresh_namespace(&client, "hostile-lease").await?;
    let tenant = testenv::fresh_namespace(&client, "calm-tenant").await?;
    let calm: Api<ConfigMap> = Api::namespaced(client.clone(), &tenant);
    let observer = Observer::start(calm.clone()).await?;
    let sources = (0..CALM_SOURCES)
        .map(|i| workload::configmap(calm_source(i), true, workload::content(i, 0, 1024)));
    workload::create_all(&calm, sources, params.concurrency).await?;
    let mut launcher = plane.launcher(Profile::ConfigMapMirror, params.concurrency);
    launcher.extra_args = Vec::new();
    let starter = Starter {
        launcher,
        lease_namespace,
    };
    let watches = Watches::start(&client, starter).await?;
    let healer = Healer {
        observer: &observer,
        api: &calm,
        watches: &watches,
        pace: Duration::from_millis(params.heal_pace_ms),
        next: std::sync::atomic::AtomicUsize::new(0),
    };
    let outcome = attack_all(&client, &watches, &healer, params).await;
    let log_before_finish = std::fs::read_to_string(&plane.log).unwrap_or_default();
    let starts = watches.starts();
    let lease_transitions = watches.lease_transitions();
    let totals = watches.totals();
    watches.finish().await.context("stopping the controller")?;
    let (quiet, attacks) = outcome?;
    let mut figures = HostileFigures {
        memory_limit_bytes,
        unlabelled: params.unlabelled,
        quiet_heal: heal_latency(&quiet),
        quiet,
        heal: Latency::of(Vec::new()),
        healthz_worst_ms: 0.0,
        peak_bytes: 0,
        lease_lost: totals.lease_lost,
        exits: totals.exits,
        starts,
        lease_transitions,
        log_lease_lost: log_before_finish.matches(LOST_THE_LEASE).count(),
        attacks,
        goals: Vec::new(),
    };
    figures.sum_up();
    figures.goals = figures.assess();
    Ok(figures)
}

type Windows = (Window, Vec<Attack>);

async fn attack_all(
    client: &Client,
    watches: &Watches,
    healer: &Healer<'_>,
    params: &HostileParams,
) -> anyhow::Result<Windows> {
    healer.wait_for_companions().await?;
    crate::phases::phase(
        "hostile 0",
        &format!("quiet: {} heals", params.quiet_samples),
    );
    watches.open("quiet");
    for _ in 0..params.quiet_samples {
        let tick = Instant::now();
        healer.heal_once().await?;
        tokio::time::sleep_until((tick + healer.pace).into()).await;
    }
    let quiet = watches.close();
    let mut attacks = Vec::new();
    for &number in &params.attacks {
        let attacker = testenv::fresh_namespace(client, &format!("hostile-{number}")).await?;
        let scene = attacks::Scene {
            client,
            watches,
            params,
            attacker: attacker.clone(),
        };
        let mut namespaces = vec![attacker];
        let prefix = format!("{}-to-", scene.attacker);
        match number {
            5 => {
                crate::fanout::create_namespaces(
                    client,
                    Profile::ConfigMapMirror,
                    &prefix,
                    params.open_namespaces,
                    params.concurrency,
                )
                .await?;
                namespaces.extend((0..params.open_namespaces).map(|i| format!("{prefix}{i}")));
            }
            6 => {
                crate::phases::phase("hostile 6", "setting up the fan-outs (not measured)");
                let setup = attacks::fan_setup(&scene, &prefix).await?;
                eprintln!("bench:   fan-outs written: {setup:?} s");
            }
            _ => {}
        }
        if !watches.wait_settled(SETTLE_PATIENCE).await {
            eprintln!("bench:   the controller did not settle within {SETTLE_PATIENCE:?}");
        }
        crate::phases::phase(
            &format!("hostile {number}"),
            ATTACK_NAMES[usize::from(number) - 1],
        );
        watches.open(&format!("attack {number}"));
        let stop = AtomicBool::new(false);
        let attack = async {
            let outcome = match number {
                1 => attacks::globs(&scene).await,
                2 => attacks::renames(&scene).await,
                3 => attacks::keyed(&scene).await,
                4 => attacks::crowded(&scene).await,
                5 => attacks::wide(&scene, &prefix).await,
                _ => attacks::fan_change(&scene).await,
            };
            stop.store(true, Ordering::Relaxed);
            outcome
        };
        let (outcome, ()) = tokio::join!(attack, healer.heal_until(&stop));
        let window = watches.close();
        eprintln!(
            "bench:   peak {:.1} MiB, /healthz worst {:.0} ms, {} exits, {} heals",
            window.peak_bytes as f64 / MIB,
            worst(&window.healthz_ms),
            window.exits,
            window.heals_ms.len()
        );
        attacks.push(Attack {
            number,
            outcome: outcome?,
            healthz_worst_ms: worst(&window.healthz_ms),
            heal: heal_latency(&window),
            cpu_ms_per_reconcile: (window.reconciles > 0.0)
                .then(|| window.cpu_seconds * 1000.0 / window.reconciles),
            window,
        });
        if number == 6 {
            namespaces.extend((0..params.fan_namespaces).map(|i| format!("{prefix}{i}")));
        }
        if params.attacks.last() != Some(&number) {
            attacks::clean_up(client, &namespaces).await;
        }
    }
    Ok((quiet, attacks))
}

const ATTACK_NAMES: [&str; 6] = [
    "1/6 many keys, mirror-keys of long exclusion globs",
    "2/6 one key of ~1 MB renamed into 99 names",
    "3/6 sources of many keys carrying mirror-keys",
    "4/6 sources of ~1 MB in one namespace, a restart, one changed",
    "5/6 sources of ~1 MB mirrored to \"*\", namespaces open to all; a restart",
    "6/6 fan-out sources changed at once",
];

fn worst(ms: &[f64]) -> f64 {
    ms.iter().copied().fold(0.0, f64::max)
}

fn heal_latency(window: &Window) -> Latency {
    Latency::of(
        window
            .heals_ms
            .iter()
            .map(|ms| Duration::from_secs_f64(ms / 1000.0))
            .collect(),
    )
}

/// The other tenant: its companion deleted and timed until it is back.
struct Healer<'a> {
    observer: &'a Observer,
    api: &'a Api<ConfigMap>,
    watches: &'a Watches,
    pace: Duration,
    /// The source whose companion is healed next.
    next: std::sync::atomic::AtomicUsize,
}

fn calm_source(i: usize) -> String {
    format!("calm-{i:03}")
}

impl Healer<'_> {
    /// Waits until every companion of the other tenant is there.
    async fn wait_for_companions(&self) -> anyhow::Result<()> {
        for i in 0..CALM_SOURCES {
            self.wait_for_companion(&workload::companion_name(&calm_source(i)))
                .await?;
        }
        Ok(())
    }

    async fn wait_for_companion(&self, name: &str) -> anyhow::Result<String> {
        self.observer
            .wait_until(&format!("{name} to be there"), HEAL_TIMEOUT, |s| {
                s.companion(name).map(|c| c.uid.clone())
            })
            .await
    }

    /// One heal, recorded in the open window.
    async fn heal_once(&self) -> anyhow::Result<()> {
        let i = self.next.fetch_add(1, Ordering::Relaxed) % CALM_SOURCES;
        let name = workload::companion_name(&calm_source(i));
        let uid = self.wait_for_companion(&name).await?;
        let mark = self.watches.restart_mark();
        workload::delete(self.api, &name, &uid).await?;
        let deleted = Instant::now();
        let back = self
            .observer
            .wait_until(&format!("{name} to be back"), HEAL_TIMEOUT, |s| {
                s.companion(&name).filter(|c| c.uid != uid).map(|c| c.since)
            })
            .await;
        match back {
            Ok(at) => self
                .watches
                .heal(at.saturating_duration_since(deleted), false, mark),
            Err(_) => self.watches.heal(HEAL_TIMEOUT, true, mark),
        }
        Ok(())
    }

    /// Heals one after another until `stop`; a failed heal is reported and
    /// the loop goes on.
    async fn heal_until(&self, stop: &AtomicBool) {
        while !stop.load(Ordering::Relaxed) {
            let tick = Instant::now();
            if let Err(e) = self.heal_once().await {
                eprintln!("bench:   the other tenant's heal failed: {e:#}");
            }
            while !stop.load(Ordering::Relaxed) && tick.elapsed() < self.pace {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    }
}

impl HostileFigures {
    fn sum_up(&mut self) {
        let mut heals = Vec::new();
        for a in &self.attacks {
            heals.extend(
                a.window
                    .heals_ms
                    .iter()
                    .map(|ms| Duration::from_secs_f64(ms / 1000.0)),
            );
            self.healthz_worst_ms = self.healthz_worst_ms.max(a.healthz_worst_ms);
            self.peak_bytes = self.peak_bytes.max(a.window.peak_bytes);
        }
        self.heal = Latency::of(heals);
    }

    /// The issue's goals.
    pub fn assess(&self) -> Vec<Target> {
        let goal = |name: &str, target: String, value: String, pass: bool| Target {
            name: name.to_owned(),
            target,
            value,
            pass,
            asserted: false,
        };
        let half = self.memory_limit_bytes as f64 / 2.0;
        let quiet = self.quiet_heal.p99_ms;
        vec![
            goal(
                "Lease lost",
                "never".into(),
                format!(
                    "{} times ({} exits; {} log lines)",
                    self.lease_lost, self.exits, self.log_lease_lost
                ),
                self.lease_lost == 0 && self.exits == 0 && self.log_lease_lost == 0,
            ),
            goal(
                "/healthz worst",
                "< 1 s".into(),
                format!("{:.0} ms", self.healthz_worst_ms),
                self.healthz_worst_ms < 1000.0,
            ),
            goal(
                "peak memory",
                format!("< {:.0} MiB (half the chart's limit)", half / MIB),
                format!("{:.1} MiB", self.peak_bytes as f64 / MIB),
                (self.peak_bytes as f64) < half,
            ),
            goal(
                "other tenant's heal p99",
                format!("<= 5 x quiet = {:.1} ms", 5.0 * quiet),
                format!("{:.1} ms (quiet {quiet:.1} ms)", self.heal.p99_ms),
                self.heal.samples > 0 && self.heal.p99_ms <= 5.0 * quiet,
            ),
        ]
    }

    pub fn table(&self, out: &mut String) -> std::fmt::Result {
        writeln!(
            out,
            "hostile tenant: the chart's memory limit {:.0} MiB; quiet heal {}",
            self.memory_limit_bytes as f64 / MIB,
            latency(&self.quiet_heal)
        )?;
        if self.unlabelled {
            writeln!(
                out,
                "the attacks' sources unlabelled: the controller never saw them, and the heals show the API server's share"
            )?;
        }
        writeln!(
            out,
            "{:<3} {:>10} {:>12} {:>11} {:>10} {:>10} {:>6} {:>6}  other tenant's heal",
            "#", "peak MiB", "RSS after", "healthz ms", "CPU s", "ms/recon", "lease", "exits",
        )?;
        for a in &self.attacks {
            let w = &a.window;
            writeln!(
                out,
                "{:<3} {:>10.1} {:>12.1} {:>11.0} {:>10.2} {:>10} {:>6} {:>6}  {}",
                a.number,
                w.peak_bytes as f64 / MIB,
                w.rss_end_bytes as f64 / MIB,
                a.healthz_worst_ms,
                w.cpu_seconds,
                a.cpu_ms_per_reconcile
                    .map_or_else(|| "-".to_owned(), |ms| format!("{ms:.1}")),
                w.lease_lost,
                w.exits,
                latency(&a.heal)
            )?;
        }
        for a in &self.attacks {
            let copies = a
                .outcome
                .copies_seconds
                .map_or_else(String::new, |s| format!("; its copies in {s:.1} s"));
            let during = &a.window.heals_during_restart_ms;
            let restart = if during.is_empty() {
                String::new()
            } else {
                format!(
                    "; {} heals overlapped the bench's restart, left out (max {:.0} ms)",
                    during.len(),
                    worst(during)
                )
            };
            writeln!(
                out,
                "  {}: {} ({:.0} s, {} reconciles, {} copy writes, the other tenant's included{copies}{restart})",
                a.number,
                a.outcome.what,
                a.window.seconds,
                a.window.reconciles,
                a.outcome.copy_writes
            )?;
        }
        writeln!(
            out,
            "controller started {} times; leaseTransitions seen {:?}",
            self.starts, self.lease_transitions
        )?;
        for t in &self.goals {
            let verdict = if t.pass { "met    " } else { "NOT MET" };
            writeln!(
                out,
                "{verdict}  {:<24} {:<40} {}",
                t.name, t.target, t.value
            )?;
        }
        Ok(())
    }
}

fn latency(l: &Latency) -> String {
    format!(
        "p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms ({} samples)",
        l.p50_ms, l.p99_ms, l.max_ms, l.samples
    )
}

/// The chart's `resources.limits.memory`, in bytes.
pub fn chart_memory_limit() -> anyhow::Result<u64> {
    let path = crate::params::workspace_root().join("charts/configmap-mirror/values.yaml");
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    memory_limit(&text).with_context(|| format!("no resources.limits.memory in {}", path.display()))
}

/// `resources.limits.memory` of a values file, read by indentation: the
/// file is the chart's own, whose layout a test pins.
fn memory_limit(values: &str) -> Option<u64> {
    let mut section = Vec::<&str>::new();
    for line in values.lines() {
        let content = line.trim_start();
        if content.is_empty() || content.starts_with('#') {
            continue;
        }
        let depth = (line.len() - content.len()) / 2;
        section.truncate(depth);
        let Some((key, value)) = content.split_once(':') else {
            continue;
        };
        let value = value.trim();
        if section == ["resources", "limits"] && key == "memory" {
            return quantity(value.trim_matches('"'));
        }
        if value.is_empty() {
            section.push(key);
        }
    }
    None
}

/// A Kubernetes memory quantity such as `256Mi` or `1G`, in bytes.
fn quantity(text: &str) -> Option<u64> {
    let units: [(&str, u64); 8] = [
        ("Ki", 1 << 10),
        ("Mi", 1 << 20),
        ("Gi", 1 << 30),
        ("Ti", 1 << 40),
        ("k", 1_000),
        ("M", 1_000_000),
        ("G", 1_000_000_000),
        ("T", 1_000_000_000_000),
    ];
    for (suffix, factor) in units {
        if let Some(number) = text.strip_suffix(suffix) {
            return number.parse::<u64>().ok().map(|n| n * factor);
        }
    }
    text.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_charts_memory_limit_is_read() {
        let limit = chart_memory_limit().unwrap();
        assert!(limit >= 64 << 20, "{limit}");
        let values = "resources:\n  requests:\n    memory: 128Mi\n  limits:\n    memory: 256Mi\nother:\n  memory: 1Gi\n";
        assert_eq!(memory_limit(values), Some(256 << 20));
        assert_eq!(quantity("1G"), Some(1_000_000_000));
        assert_eq!(quantity("512"), Some(512));
        assert_eq!(quantity("lots"), None);
    }

    #[test]
    fn an_exclusion_glob_has_its_length_and_matches_no_key() {
        let glob = attacks::exclusion_glob(42, 250);
        assert!((249..=250).contains(&glob.len()), "{}", glob.len());
        assert!(glob.starts_with("*q*q*") && glob.ends_with("*42*"));
        assert!(!glob.contains('k'));
    }

    #[test]
    fn the_issues_sizes_fit_the_annotation_limits() {
        let p = HostileParams::default();
        assert!(p.validate().is_ok() && HostileParams::small().validate().is_ok());
        let bad = HostileParams {
            attacks: vec![7],
            ..HostileParams::default()
        };
        assert!(bad.validate().is_err());
    }
}
