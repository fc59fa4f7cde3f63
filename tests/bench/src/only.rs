//! One phase alone (`mirror-bench --only PHASE`), on a control plane of its
//! own: the figures a target is stated for, measured without the hours the
//! whole sweep takes. Each phase is the sweep's own code, at one size. Its
//! figures are written as `<phase>.json` and its controller's log as
//! `<phase>.log`, so that one phase's run leaves another's be.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::Context as _;
use configmap_mirror::api::ClusterMirror;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{ObjectMeta, PostParams};
use kube::{Api, Client, CustomResourceExt};
use serde::Serialize;

use crate::cluster_fanout::{self, ClusterFanOut};
use crate::controller::{Controller, check_binary};
use crate::fanout::CopyHeal;
use crate::glob::{self, NewNamespaces};
use crate::grant_fanout::{self, GrantFanOut};
use crate::hostile::{self, HostileFigures, HostileParams};
use crate::mirror_fanout::{self, MirrorFanOut};
use crate::params;
use crate::phases;
use crate::profile::Profile;
use crate::report::{Build, Latency};
use crate::sweep::{self, FanOutPoint, Plane, SizePoint, SweepParams};

const MIB: f64 = 1024.0 * 1024.0;

/// The phases that run alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Phase {
    /// `--sources` sources: floor, cold convergence, restart, memory, heals.
    Cold,
    /// One source into `--fan-out` namespaces by the label path: floor,
    /// convergence, one update, copy heals.
    FanOut,
    /// `--glob-sources` sources whose glob names namespaces not created
    /// yet, then `--glob-namespaces` such namespaces, timed one at a time.
    NewNamespaces,
    /// One ClusterMirror into `--fan-out` labelled namespaces, beside the
    /// label path's fan-out into the same namespaces and the floor.
    ClusterMirror,
    /// The six attacks of a tenant with no cluster rights (issue 51), with
    /// another tenant's heals timed meanwhile; `--fan-out` sizes attack 6.
    HostileTenant,
    /// `--fan-out` namespaces that consent by one MirrorGrant each: the
    /// grants' memory, one source into them all, every grant withdrawn.
    Grants,
    /// One tenant's Mirror into `--fan-out` consenting namespaces, beside
    /// the floor; then a tenth as many Mirrors (at most 1,000) that mirror
    /// nothing, for their memory.
    Mirrors,
}

impl Phase {
    /// As given to `--only`: the name of its log and figures.
    pub fn name(self) -> String {
        clap::ValueEnum::to_possible_value(&self)
            .map_or_else(|| "only".to_owned(), |v| v.get_name().to_owned())
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct OnlyParams {
    pub phase: Phase,
    /// Sources of the cold phase.
    pub sources: usize,
    /// Namespaces of the fan-out phases.
    pub namespaces: usize,
    /// Everything else: samples, copy heals, glob sizes, data size,
    /// concurrency and directories.
    pub sweep: SweepParams,
    /// The hostile tenant's attacks.
    pub hostile: HostileParams,
}

impl OnlyParams {
    /// The sizes the targets are stated for.
    pub fn new(phase: Phase) -> OnlyParams {
        OnlyParams {
            phase,
            sources: 10_000,
            namespaces: 10_000,
            sweep: SweepParams {
                state_dir: params::bench_dir().join("only-state"),
                out_dir: params::bench_dir().join("only"),
                ..SweepParams::default()
            },
            hostile: HostileParams::default(),
        }
    }

    /// A quick run, for the tests.
    pub fn small(phase: Phase) -> OnlyParams {
        OnlyParams {
            phase,
            sources: 200,
            namespaces: 20,
            sweep: SweepParams {
                state_dir: params::bench_dir().join("only-state-small"),
                out_dir: params::bench_dir().join("only-small"),
                ..SweepParams::small()
            },
            hostile: HostileParams::small(),
        }
    }

    fn validate(&self) -> anyhow::Result<()> {
        self.hostile.validate()?;
        anyhow::ensure!(
            self.sources > 0 && self.namespaces > 0,
            "--sources and --fan-out must be at least 1"
        );
        let sweep = SweepParams {
            sizes: vec![self.sources],
            fan_outs: vec![self.namespaces],
            ..self.sweep.clone()
        };
        sweep.validate()
    }
}

/// What the phase measured.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Figures {
    Cold(SizePoint),
    FanOut(FanOutPoint),
    NewNamespaces(NewNamespaces),
    ClusterMirror(ClusterFanOut),
    HostileTenant(HostileFigures),
    Grants(GrantFanOut),
    Mirrors(MirrorFanOut),
}

#[derive(Clone, Debug, Serialize)]
pub struct OnlyResults {
    pub date: String,
    pub kubernetes_version: String,
    pub controller_build: Build,
    pub params: OnlyParams,
    pub figures: Figures,
}

/// Runs `params.phase` against `controller` on a control plane of its own.
pub async fn run(params: OnlyParams, controller: &Path) -> anyhow::Result<OnlyResults> {
    params.validate()?;
    check_binary(controller)?;
    let build = Build::describe(controller, &params::workspace_root())?;
    let out_dir = &params.sweep.out_dir;
    std::fs::create_dir_all(out_dir).with_context(|| format!("creating {}", out_dir.display()))?;
    let name = params.phase.name();
    phases::phase(&name, "on a control plane of its own");
    let plane = Plane::start(&params.sweep, &name, controller).await?;
    let figures = run_phase(&plane, &params).await;
    plane.finish(out_dir);
    Ok(OnlyResults {
        date: phases::now(),
        kubernetes_version: testenv::kube_version()?,
        controller_build: build,
        figures: figures?,
        params,
    })
}

async fn run_phase(plane: &Plane, params: &OnlyParams) -> anyhow::Result<Figures> {
    let client = plane.cp.client().await;
    let sweep = &params.sweep;
    let start = |extra_args: Vec<String>| -> anyhow::Result<Controller> {
        let mut launcher = plane.launcher(Profile::ConfigMapMirror, sweep.concurrency);
        launcher.extra_args = extra_args;
        launcher.start()
    };
    let figures = match params.phase {
        Phase::Cold => Figures::Cold(sweep::size_point(plane, sweep, params.sources).await?),
        Phase::FanOut => {
            let mut running = start(Vec::new())?;
            running.wait_ready().await?;
            let profile = Profile::ConfigMapMirror;
            let sizes = [params.namespaces];
            let mut points =
                sweep::fan_out_points(&client, &mut running, sweep, profile, &sizes).await?;
            running.stop().await.context("stopping the controller")?;
            Figures::FanOut(points.pop().context("the fan-out measured nothing")?)
        }
        Phase::NewNamespaces => {
            let mut running = start(Vec::new())?;
            running.wait_ready().await?;
            let figures = glob::run(
                &client,
                &mut running,
                sweep.glob_sources,
                sweep.glob_namespaces,
                sweep.data_size,
                sweep.concurrency,
            )
            .await?;
            running.stop().await.context("stopping the controller")?;
            Figures::NewNamespaces(figures)
        }
        Phase::ClusterMirror => {
            install_cluster_mirror_crd(&client).await?;
            create_namespace(&client, cluster_fanout::SOURCE_NAMESPACE).await?;
            let allowed = cluster_fanout::SOURCE_NAMESPACE.to_owned();
            let mut running = start(vec!["--cluster-mirror-source-namespaces".into(), allowed])?;
            running.wait_ready().await?;
            cluster_fanout::probe(&client).await?;
            let setup = cluster_fanout::Setup {
                client: &client,
                namespaces: params.namespaces,
                concurrency: sweep.concurrency,
                heal_samples: sweep.copy_heal_samples,
            };
            let figures = cluster_fanout::run(&setup, &mut running).await?;
            running.stop().await.context("stopping the controller")?;
            Figures::ClusterMirror(figures)
        }
        Phase::HostileTenant => Figures::HostileTenant(hostile::run(plane, &params.hostile).await?),
        Phase::Grants => {
            grant_fanout::install_crd(&client).await?;
            let mut running = start(Vec::new())?;
            running.wait_ready().await?;
            let (namespaces, concurrency) = (params.namespaces, sweep.concurrency);
            let figures = grant_fanout::run(&client, &mut running, namespaces, concurrency).await?;
            running.stop().await.context("stopping the controller")?;
            Figures::Grants(figures)
        }
        Phase::Mirrors => {
            mirror_fanout::install_crd(&client).await?;
            let mut running = start(Vec::new())?;
            running.wait_ready().await?;
            let namespaces = params.namespaces;
            let mirrors = (namespaces / 10).clamp(1, 1000);
            let figures = mirror_fanout::run(
                &client,
                &mut running,
                namespaces,
                mirrors,
                sweep.concurrency,
            )
            .await?;
            running.stop().await.context("stopping the controller")?;
            Figures::Mirrors(figures)
        }
    };
    Ok(figures)
}

/// Installs the ClusterMirror CRD, as the chart ships it, and waits until
/// it serves, so the controller finds it when it starts.
pub(crate) async fn install_cluster_mirror_crd(client: &Client) -> anyhow::Result<()> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.create(&PostParams::default(), &ClusterMirror::crd())
        .await
        .context("installing the ClusterMirror CRD")?;
    let api: Api<ClusterMirror> = Api::all(client.clone());
    testenv::wait_for(
        "the ClusterMirror CRD to serve",
        std::time::Duration::from_secs(60),
        || async { api.list(&Default::default()).await.ok().map(drop) },
    )
    .await
}

pub(crate) async fn create_namespace(client: &Client, name: &str) -> anyhow::Result<()> {
    let namespace = Namespace {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    };
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &namespace)
        .await
        .with_context(|| format!("creating the namespace {name}"))?;
    Ok(())
}

impl OnlyResults {
    pub fn write_json(&self, path: &Path) -> anyhow::Result<()> {
        let json = serde_json::to_string_pretty(self)?;
        std::fs::write(path, json).with_context(|| format!("writing {}", path.display()))
    }

    pub fn table(&self) -> String {
        let mut out = format!(
            "mirror-bench --only, {} (Kubernetes {})\n",
            self.date, self.kubernetes_version
        );
        // Writing to a String cannot fail.
        let _ = match &self.figures {
            Figures::Cold(p) => cold_table(&mut out, p),
            Figures::FanOut(p) => fan_out_table(&mut out, p),
            Figures::NewNamespaces(g) => writeln!(
                out,
                "new namespaces: {} glob sources, {} namespaces created one at a time ({} present before): until every mirror is in, {}",
                g.sources,
                g.latency.samples,
                g.namespaces_present,
                latency(&g.latency)
            ),
            Figures::ClusterMirror(c) => cluster_mirror_table(&mut out, c),
            Figures::HostileTenant(h) => h.table(&mut out),
            Figures::Grants(g) => writeln!(
                out,
                "{} namespaces consenting by a grant each: grants followed in {:.1} s, RSS {:.0} B per grant; \
                 floor {:.1} s; all mirrors {:.1} s (x{:.2} the floor); every grant withdrawn, mirrors gone in {:.1} s",
                g.namespaces,
                g.grants_followed_seconds,
                g.memory_per_grant_bytes,
                g.floor.seconds,
                g.fan_out.converge_seconds,
                g.converge_ratio_to_floor,
                g.withdraw_seconds
            ),
            Figures::Mirrors(m) => writeln!(
                out,
                "one Mirror into {} consenting namespaces: floor {:.1} s; all copies {:.1} s (x{:.2} the floor); \
                 one update {:.1} s (x{:.2}); controller CPU {:.1} s during the floor, {:.1} s during both; \
                 floor of objects shaped as the copies {:.1} s (all copies x{:.2} of it); \
                 {} Mirrors more, mirroring nothing, reported in {:.1} s, RSS {:.0} B per Mirror",
                m.namespaces,
                m.floor.seconds,
                m.fan_out.converge_seconds,
                m.converge_ratio_to_floor,
                m.fan_out.propagate_seconds,
                m.propagate_ratio_to_floor,
                m.controller_cpu_seconds_floor,
                m.controller_cpu_seconds_fan_out,
                m.shaped_floor.seconds,
                m.converge_ratio_to_shaped_floor,
                m.mirrors,
                m.mirrors_reported_seconds,
                m.memory_per_mirror_bytes
            ),
        };
        out
    }
}

fn latency(l: &Latency) -> String {
    format!(
        "p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms ({} samples)",
        l.p50_ms, l.p99_ms, l.max_ms, l.samples
    )
}

fn heal(h: &CopyHeal) -> String {
    h.latency.as_ref().map_or_else(
        || "the first deleted copy did not come back".to_owned(),
        latency,
    )
}

fn cold_table(out: &mut String, p: &SizePoint) -> std::fmt::Result {
    writeln!(
        out,
        "{} sources: floor {:.1} s; cold convergence {:.1} s (x{:.2} the floor), CPU {:.2} s per 1000",
        p.sources, p.floor.seconds, p.cold.seconds, p.cold.ratio_to_floor, p.cold_cpu_per_1000
    )?;
    writeln!(
        out,
        "restart: ready {:.1} s, settled {:.1} s; RSS {:.1} MiB (peak {:.1} MiB); heal {}",
        p.restart_ready_seconds,
        p.restart_settled_seconds,
        p.memory.rss_bytes as f64 / MIB,
        p.memory.hwm_bytes as f64 / MIB,
        latency(&p.heal)
    )
}

fn fan_out_table(out: &mut String, p: &FanOutPoint) -> std::fmt::Result {
    writeln!(
        out,
        "fan-out into {} namespaces: floor {:.1} s; all copies {:.1} s (x{:.2} the floor); update {:.1} s (x{:.2})",
        p.fan_out.namespaces,
        p.floor.seconds,
        p.fan_out.converge_seconds,
        p.converge_ratio_to_floor,
        p.fan_out.propagate_seconds,
        p.propagate_ratio_to_floor
    )?;
    writeln!(
        out,
        "controller CPU {:.2} s; RSS {:.1} MiB; copy heal {}",
        p.controller_cpu_seconds,
        p.memory.rss_bytes as f64 / MIB,
        heal(&p.heal.heal)
    )
}

fn cluster_mirror_table(out: &mut String, c: &ClusterFanOut) -> std::fmt::Result {
    writeln!(
        out,
        "fan-out into {} namespaces; API floor {:.1} s ({:.0} writes/s)",
        c.namespaces, c.floor.seconds, c.floor.writes_per_second
    )?;
    writeln!(
        out,
        "{:<14} {:>22} {:>22} {:>18}",
        "", "all copies", "update", "RSS per namespace"
    )?;
    let row = |s: f64, r: f64| format!("{s:.1} s (x{r:.2})");
    let kib = |b: f64| format!("{:.2} KiB", b / 1024.0);
    writeln!(
        out,
        "{:<14} {:>22} {:>22} {:>18}",
        "label path",
        row(c.label.converge_seconds, c.label_converge_ratio_to_floor),
        row(c.label.propagate_seconds, c.label_propagate_ratio_to_floor),
        kib(c.label_memory_per_namespace_bytes)
    )?;
    writeln!(
        out,
        "{:<14} {:>22} {:>22} {:>18}",
        "ClusterMirror",
        row(c.converge_seconds, c.converge_ratio_to_floor),
        row(c.propagate_seconds, c.propagate_ratio_to_floor),
        kib(c.memory_per_namespace_bytes)
    )?;
    for (what, w) in [
        ("fan-out", &c.converge_status_writes),
        ("update", &c.update_status_writes),
    ] {
        writeln!(
            out,
            "status writes, {what}: {} ({} changing the status) in {:.1} s, {:.2}/s, at most {} in one second",
            w.writes, w.status_changes, w.seconds, w.per_second, w.max_in_one_second
        )?;
    }
    writeln!(
        out,
        "ClusterMirror: first copy after {:.2} s; copies current: {} of {}; status selected {}, synced {}, failed {}",
        c.first_copy_seconds, c.copies_present, c.namespaces, c.selected, c.synced, c.failed
    )?;
    writeln!(out, "ClusterMirror copy heal {}", heal(&c.heal))
}
