//! The sweep (`mirror-bench --sweep`, `make bench-sweep`): how the
//! controller's cost grows with the cluster, from a thousand sources to a
//! hundred thousand, and with the number of namespaces one source fans out
//! to.
//!
//! Every size gets a control plane of its own, so that etcd and the API
//! server start each size as they start the full run. For each size the
//! bench creates the sources (the API floor), starts the controller (cold
//! convergence), restarts it (the re-list every restart pays), reads its
//! memory once that pass is over, and times heals, the first of them right
//! after the restart. The fan-out and mirroring phases share one more
//! control plane.
//!
//! The figures are tabled, written as JSON, and drawn as SVG by [`chart`].

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context;
use configmap_mirror::contract::{CHECKSUM_ANNOTATION, copy_selector};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::runtime::watcher;
use kube::{Api, Client, ResourceExt};
use serde::Serialize;

use crate::chart::{Chart, Series};
use crate::controller::{Controller, Launcher, check_binary};
use crate::fanout::{self, CopyAt, CopyHeal, FanOut};
use crate::glob::{self, NewNamespaces};
use crate::params::{self, Params};
use crate::phases::{self, Bench};
use crate::procstat::Memory;
use crate::profile::{self, Profile};
use crate::report::{Build, Cold, Floor, Latency};
use crate::watched::{Apply, Watched};
use crate::workload;

const MIB: f64 = 1024.0 * 1024.0;
/// Memory is read this long after a pass has settled, so that what the
/// pass freed has been returned.
const SETTLE: Duration = Duration::from_secs(2);
/// The Deployment's and the chart's default memory limit: what the
/// capacity figure is stated against.
pub const DEFAULT_MEMORY_LIMIT_BYTES: u64 = 256 * 1024 * 1024;
const MIRRORED_PREFIX: &str = "bench-mirrored-";
const PATIENCE: Duration = Duration::from_secs(1800);

/// What one sweep does.
#[derive(Clone, Debug, Serialize)]
pub struct SweepParams {
    /// Source counts, one control plane each.
    pub sizes: Vec<usize>,
    /// Namespaces one source is mirrored into, one measurement each, with
    /// the API floor of as many writes and copy heals after each.
    pub fan_outs: Vec<usize>,
    /// The peer runs only the fan-outs up to this many namespaces: at its
    /// five writes a second, 10,000 would take over half an hour.
    pub peer_max_fan_out: usize,
    /// Sources that each ask for mirrors in [`SweepParams::mirror_namespaces`].
    pub mirrored_sources: usize,
    pub mirror_namespaces: usize,
    /// Heal samples per size.
    pub samples: usize,
    /// Copies deleted one at a time after each fan-out size, and mirrors of
    /// [`SweepParams::mirrored_sources`] after that phase.
    pub copy_heal_samples: usize,
    /// Sources whose mirror-to glob names namespaces that do not exist yet.
    pub glob_sources: usize,
    /// Namespaces then created one at a time, each timed until every one
    /// of [`SweepParams::glob_sources`] is mirrored into it.
    pub glob_namespaces: usize,
    /// A replicator binary to run the fan-out and copy heals against too.
    pub peer: Option<PathBuf>,
    pub data_size: usize,
    pub concurrency: usize,
    /// Control-plane state, one directory per plane, each removed after use.
    pub state_dir: PathBuf,
    /// Where the JSON, the charts and the controller's logs go.
    pub out_dir: PathBuf,
}

impl Default for SweepParams {
    fn default() -> Self {
        SweepParams {
            sizes: vec![1_000, 10_000, 50_000, 100_000],
            fan_outs: vec![100, 1_000, 10_000],
            peer_max_fan_out: 2_000,
            mirrored_sources: 1_000,
            mirror_namespaces: 10,
            samples: 100,
            copy_heal_samples: 50,
            glob_sources: 100,
            glob_namespaces: 20,
            peer: Some(profile::cached_replicator()).filter(|path| path.is_file()),
            data_size: Params::default().data_size,
            concurrency: Params::default().concurrency,
            state_dir: params::bench_dir().join("sweep-state"),
            out_dir: params::bench_dir().join("sweep"),
        }
    }
}

impl SweepParams {
    /// Every phase, at sizes that take about two minutes in all.
    pub fn small() -> Self {
        SweepParams {
            sizes: vec![50, 200],
            fan_outs: vec![5, 20],
            mirrored_sources: 20,
            mirror_namespaces: 3,
            samples: 10,
            copy_heal_samples: 5,
            glob_sources: 10,
            glob_namespaces: 5,
            // Only when asked for: a quick run's outcome should not depend
            // on what the cache holds.
            peer: None,
            state_dir: params::bench_dir().join("sweep-state-small"),
            out_dir: params::bench_dir().join("sweep-small"),
            ..SweepParams::default()
        }
    }

    pub fn validate(&self) -> anyhow::Result<()> {
        anyhow::ensure!(!self.sizes.is_empty(), "--sizes needs at least one size");
        anyhow::ensure!(
            !self.fan_outs.is_empty(),
            "--fan-outs needs at least one size"
        );
        anyhow::ensure!(
            self.sizes.iter().all(|&n| n > 0) && self.fan_outs.iter().all(|&f| f > 0),
            "every size and fan-out must be at least 1"
        );
        anyhow::ensure!(self.concurrency > 0, "--concurrency must be at least 1");
        anyhow::ensure!(
            self.glob_sources > 0 && self.glob_namespaces > 0,
            "--glob-sources and --glob-namespaces must be at least 1"
        );
        anyhow::ensure!(
            self.sizes.iter().all(|&n| self.samples <= n),
            "--samples ({}) cannot exceed the smallest size: each sample uses its own source",
            self.samples
        );
        Ok(())
    }
}

/// The figures of one size.
#[derive(Clone, Debug, Serialize)]
pub struct SizePoint {
    pub sources: usize,
    pub floor: Floor,
    pub cold: Cold,
    pub cold_cpu_seconds: f64,
    pub cold_cpu_per_1000: f64,
    /// The restarted controller: until /readyz, and until its pass over
    /// every cached object was over.
    pub restart_ready_seconds: f64,
    pub restart_settled_seconds: f64,
    pub restart_cpu_per_1000: f64,
    /// After the restart's pass, settled. Its peak is the process's peak
    /// since the restart: the initial list.
    pub memory: Memory,
    /// The first sample is the first heal after the restart.
    pub heal: Latency,
}

#[derive(Clone, Debug, Serialize)]
pub struct FanOutPoint {
    pub fan_out: FanOut,
    /// One plain ConfigMap of the source's size created in each of the
    /// fan-out's namespaces, by the bench, at its concurrency, on the same
    /// plane just before the source: the API's speed for as many writes.
    pub floor: Floor,
    /// All copies created, and one update everywhere, over the floor.
    pub converge_ratio_to_floor: f64,
    pub propagate_ratio_to_floor: f64,
    /// The controller's CPU from the first namespace created to the last
    /// mirror updated, less the floor's time.
    pub controller_cpu_seconds: f64,
    pub memory: Memory,
    /// Copies of this fan-out deleted one at a time, right after it.
    pub heal: HealPoint,
}

/// Copies deleted one at a time, and what the cluster held then.
#[derive(Clone, Debug, Serialize)]
pub struct HealPoint {
    /// Whose copies were deleted.
    pub copies_of: String,
    /// Namespaces in the cluster, every kind counted.
    pub namespaces_present: usize,
    /// Copies the controller under test had made by then and keeps.
    pub copies_present: usize,
    pub heal: CopyHeal,
}

/// A fan-out size the peer was not run at.
#[derive(Clone, Debug, Serialize)]
pub struct SkippedFanOut {
    pub namespaces: usize,
    pub reason: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct MirroredPoint {
    pub sources: usize,
    pub namespaces_each: usize,
    pub mirrors: usize,
    /// From the first source created to the last mirror observed.
    pub converge_seconds: f64,
    pub mirrors_per_second: f64,
    pub controller_cpu_seconds: f64,
    pub memory: Memory,
    /// Mirrors of these sources deleted one at a time, each of another
    /// source and spread over the namespaces, with every namespace of the
    /// plane present.
    pub heal: HealPoint,
}

/// A peer's figures, from the same phases on a control plane of its own.
#[derive(Clone, Debug, Serialize)]
pub struct PeerFigures {
    pub controller: String,
    pub binary: String,
    pub fan_out: Vec<FanOutPoint>,
    /// Sizes of [`SweepParams::fan_outs`] above
    /// [`SweepParams::peer_max_fan_out`].
    pub skipped_fan_outs: Vec<SkippedFanOut>,
    /// Copies of the largest fan-out it ran deleted one at a time; None
    /// when every fan-out size was above its cap.
    pub copy_heal: Option<CopyHeal>,
    /// Why the new-namespace phase has no figure for it.
    pub new_namespaces_absent: String,
}

/// How a figure grows between two sizes: `y ~ x^exponent`, so 1 is linear.
#[derive(Clone, Debug, Serialize)]
pub struct Growth {
    pub figure: String,
    pub from: usize,
    pub to: usize,
    pub exponent: f64,
}

/// RSS added per source between two sizes.
#[derive(Clone, Debug, Serialize)]
pub struct MarginalMemory {
    pub from: usize,
    pub to: usize,
    pub bytes_per_source: f64,
}

/// How many sources one replica holds within its memory limit, read off
/// the two largest sizes: their peaks extended along their slope.
#[derive(Clone, Debug, Serialize)]
pub struct Capacity {
    pub memory_limit_bytes: u64,
    pub sources_within_limit: Option<u64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct SweepResults {
    pub date: String,
    pub kubernetes_version: String,
    pub controller_build: Build,
    pub params: SweepParams,
    pub sizes: Vec<SizePoint>,
    pub fan_out: Vec<FanOutPoint>,
    /// Copies of the largest fan-out deleted one at a time (the same as
    /// that fan-out point's heal).
    pub copy_heal: CopyHeal,
    pub mirrored: MirroredPoint,
    /// Namespaces created with consent, each timed until every glob
    /// source's mirror was in it.
    pub new_namespaces: NewNamespaces,
    /// The same fan-out and copy heals by a peer, when one was given.
    pub peer: Option<PeerFigures>,
    pub growth: Vec<Growth>,
    pub marginal_memory: Vec<MarginalMemory>,
    pub capacity: Capacity,
    /// The charts drawn, relative to the workspace.
    pub charts: Vec<String>,
}

/// A control plane and the controller binary it runs, copied into its
/// state directory so that a rebuild during a long sweep changes nothing.
/// The controller's log is kept as `<name>.log` beside the figures.
pub(crate) struct Plane {
    pub(crate) cp: testenv::ControlPlane,
    binary: PathBuf,
    pub(crate) log: PathBuf,
    name: String,
}

impl Plane {
    pub(crate) async fn start(
        params: &SweepParams,
        name: &str,
        controller: &Path,
    ) -> anyhow::Result<Plane> {
        let (cp, binary) = crate::start_plane(params.state_dir.join(name), controller).await?;
        Ok(Plane {
            log: cp.log_dir().join("controller.log"),
            binary,
            cp,
            name: name.to_owned(),
        })
    }

    pub(crate) fn launcher(&self, profile: Profile, concurrency: usize) -> Launcher {
        Launcher {
            profile,
            binary: self.binary.clone(),
            kubeconfig: self.cp.kubeconfig_path().to_owned(),
            concurrency,
            log: self.log.clone(),
            extra_args: Vec::new(),
        }
    }

    fn servers(&self) -> Vec<(String, u32)> {
        self.cp
            .pids()
            .into_iter()
            .map(|(name, pid)| (name.to_owned(), pid))
            .collect()
    }

    /// Keeps the controller's log beside the figures and stops the plane.
    pub(crate) fn finish(self, out_dir: &Path) {
        let kept = out_dir.join(format!("{}.log", self.name));
        if let Err(e) = std::fs::copy(&self.log, &kept) {
            eprintln!("bench: could not keep {}: {e}", self.log.display());
        }
    }
}

pub async fn run(params: SweepParams, controller: &Path) -> anyhow::Result<SweepResults> {
    params.validate()?;
    check_binary(controller)?;
    let build = Build::describe(controller, &params::workspace_root())?;
    std::fs::create_dir_all(&params.out_dir)
        .with_context(|| format!("creating {}", params.out_dir.display()))?;
    let mut sizes = Vec::new();
    for (i, &n) in params.sizes.iter().enumerate() {
        phases::phase(
            &format!("size {}/{}", i + 1, params.sizes.len()),
            &format!("{n} sources: floor, cold convergence, restart, memory, heal"),
        );
        let plane = Plane::start(&params, &format!("size-{n}"), controller).await?;
        let point = size_point(&plane, &params, n).await;
        plane.finish(&params.out_dir);
        sizes.push(point?);
    }
    phases::phase(
        "mirroring",
        "fan-outs with their floors and copy heals, many sources into a few namespaces each, new namespaces for glob sources",
    );
    let plane = Plane::start(&params, "mirroring", controller).await?;
    let ours = our_mirroring(&plane, &params).await;
    plane.finish(&params.out_dir);
    let Mirroring {
        fan_out,
        mirrored,
        new_namespaces,
    } = ours?;
    let copy_heal = largest_heal(&fan_out).context("no fan-out size to heal copies of")?;
    let peer = match &params.peer {
        Some(binary) => {
            phases::phase(
                "peer",
                &format!(
                    "{}: fan-outs up to {} namespaces and copy heals",
                    Profile::Replicator.name(),
                    params.peer_max_fan_out
                ),
            );
            check_binary(binary)?;
            let plane = Plane::start(&params, "mirroring-replicator", binary).await?;
            let theirs = peer_mirroring(&plane, &params).await;
            plane.finish(&params.out_dir);
            Some(theirs?)
        }
        None => None,
    };

    let mut results = SweepResults {
        date: phases::now(),
        kubernetes_version: testenv::kube_version()?,
        controller_build: build,
        growth: growth(&sizes, &fan_out),
        marginal_memory: marginal_memory(&sizes),
        capacity: capacity(&sizes, DEFAULT_MEMORY_LIMIT_BYTES),
        params,
        sizes,
        fan_out,
        copy_heal,
        mirrored,
        new_namespaces,
        peer,
        charts: Vec::new(),
    };
    results.charts = results.draw()?;
    Ok(results)
}

pub(crate) async fn size_point(
    plane: &Plane,
    params: &SweepParams,
    n: usize,
) -> anyhow::Result<SizePoint> {
    let client = plane.cp.client().await;
    let servers = plane.servers();
    let run = Params {
        sources: n,
        samples: params.samples,
        data_size: params.data_size,
        concurrency: params.concurrency,
        ..Params::default()
    };
    let namespace = testenv::fresh_namespace(&client, "bench-sources").await?;
    let mut bench = Bench::new(&run, Api::namespaced(client.clone(), &namespace)).await?;
    let launcher = plane.launcher(Profile::ConfigMapMirror, params.concurrency);

    let floor = phases::floor(&mut bench).await?;
    let (running, cold, cold_cpu) = phases::cold(&bench, &launcher, &floor, &servers).await?;
    running.stop().await.context("stopping the controller")?;

    let restarted = phases::restart(&bench, &launcher).await?;
    let mut running = restarted.controller;
    tokio::time::sleep(SETTLE).await;
    running.ensure_running()?;
    let memory = running.memory()?;
    let heal = phases::heal(&bench).await?;
    running.stop().await.context("stopping the controller")?;

    let per_1000 = |cpu: f64| cpu * 1000.0 / n as f64;
    Ok(SizePoint {
        sources: n,
        cold_cpu_seconds: cold_cpu.controller,
        cold_cpu_per_1000: per_1000(cold_cpu.controller),
        restart_ready_seconds: restarted.ready_seconds,
        restart_settled_seconds: restarted.settled_seconds,
        restart_cpu_per_1000: per_1000(restarted.cpu_seconds),
        floor,
        cold,
        memory,
        heal,
    })
}

/// What configmap-mirror's mirroring plane measured.
struct Mirroring {
    fan_out: Vec<FanOutPoint>,
    mirrored: MirroredPoint,
    new_namespaces: NewNamespaces,
}

/// configmap-mirror on a plane of its own: the fan-out sizes, each with its
/// floor and copy heals, then many sources each mirrored into a few
/// namespaces and heals of their mirrors, then new namespaces that glob
/// sources were waiting for.
async fn our_mirroring(plane: &Plane, params: &SweepParams) -> anyhow::Result<Mirroring> {
    let client = plane.cp.client().await;
    let mut running = plane
        .launcher(Profile::ConfigMapMirror, params.concurrency)
        .start()?;
    running.wait_ready().await?;
    let profile = Profile::ConfigMapMirror;
    let fan_out = fan_out_points(&client, &mut running, params, profile, &params.fan_outs).await?;
    let copies_before = fan_out.iter().map(|p| p.fan_out.namespaces).sum();
    let mirrored = mirrored_point(&client, &mut running, params, copies_before).await?;
    eprintln!(
        "bench: {} glob sources, then {} new namespaces one at a time",
        params.glob_sources, params.glob_namespaces
    );
    let new_namespaces = glob::run(
        &client,
        &mut running,
        params.glob_sources,
        params.glob_namespaces,
        params.data_size,
        params.concurrency,
    )
    .await?;
    running.stop().await.context("stopping the controller")?;
    Ok(Mirroring {
        fan_out,
        mirrored,
        new_namespaces,
    })
}

/// The heal after the largest fan-out.
fn largest_heal(points: &[FanOutPoint]) -> Option<CopyHeal> {
    points
        .iter()
        .max_by_key(|p| p.fan_out.namespaces)
        .map(|p| p.heal.heal.clone())
}

/// The fan-out sizes the peer runs, and those it does not, with why.
fn peer_fan_outs(params: &SweepParams) -> (Vec<usize>, Vec<SkippedFanOut>) {
    let (run, skipped): (Vec<usize>, Vec<usize>) = params
        .fan_outs
        .iter()
        .partition(|&&n| n <= params.peer_max_fan_out);
    let skipped = skipped
        .into_iter()
        .map(|namespaces| SkippedFanOut {
            namespaces,
            reason: format!(
                "above --peer-max-fan-out {}: at its 5 writes/s, {namespaces} copies and their update would take about {} minutes",
                params.peer_max_fan_out,
                (2 * namespaces).div_ceil(5 * 60)
            ),
        })
        .collect();
    (run, skipped)
}

/// The peer on a plane of its own: the same fan-out sizes, up to its cap,
/// and heals.
async fn peer_mirroring(plane: &Plane, params: &SweepParams) -> anyhow::Result<PeerFigures> {
    let client = plane.cp.client().await;
    let mut running = plane
        .launcher(Profile::Replicator, params.concurrency)
        .start()?;
    running.wait_ready().await?;
    let (sizes, skipped_fan_outs) = peer_fan_outs(params);
    for skipped in &skipped_fan_outs {
        eprintln!(
            "bench: {}: no fan-out into {} namespaces: {}",
            Profile::Replicator.name(),
            skipped.namespaces,
            skipped.reason
        );
    }
    let fan_out =
        fan_out_points(&client, &mut running, params, Profile::Replicator, &sizes).await?;
    running.stop().await.context("stopping the peer")?;
    let copy_heal = largest_heal(&fan_out);
    Ok(PeerFigures {
        controller: Profile::Replicator.name().to_owned(),
        binary: params
            .peer
            .as_deref()
            .map_or_else(String::new, params::shown_path),
        fan_out,
        skipped_fan_outs,
        copy_heal,
        new_namespaces_absent: NEW_NAMESPACES_PEER_ABSENT.to_owned(),
    })
}

/// Why the peer has no new-namespace figure.
const NEW_NAMESPACES_PEER_ABSENT: &str = "not measured: the phase runs on configmap-mirror's plane only (replicator asks for no consent, and at its 5 writes/s 100 mirrors take 20 s per namespace by its rate alone)";

/// One source into each of `sizes` namespaces in turn, each size timed
/// against its floor and followed by heals of its copies.
pub(crate) async fn fan_out_points(
    client: &Client,
    running: &mut Controller,
    params: &SweepParams,
    profile: Profile,
    sizes: &[usize],
) -> anyhow::Result<Vec<FanOutPoint>> {
    let mut points = Vec::new();
    let mut copies_present = 0;
    for &count in sizes {
        eprintln!("bench: {}: fan-out into {count} namespaces", profile.name());
        let source_namespace = testenv::fresh_namespace(client, "bench-fan-source").await?;
        let prefix = format!("bench-fan{count}-");
        let cpu_before = running.cpu_seconds()?;
        fanout::create_namespaces(client, profile, &prefix, count, params.concurrency).await?;
        let cpu_before_floor = running.cpu_seconds()?;
        let floor = fanout::floor(client, &prefix, count, params.concurrency).await?;
        let cpu_floor = running.cpu_seconds()? - cpu_before_floor;
        let fan_out = fanout::converge(client, profile, &source_namespace, &prefix, count).await?;
        running.ensure_running()?;
        let controller_cpu_seconds = running.cpu_seconds()? - cpu_before - cpu_floor;
        let memory = running.memory()?;
        copies_present += count;

        let samples = params.copy_heal_samples.min(count);
        let namespaces_present = workload::count_namespaces(client).await?;
        eprintln!(
            "bench: {}: deleting {samples} copies, {namespaces_present} namespaces present",
            profile.name()
        );
        let heal = fanout::heal(client, profile, &prefix, samples).await?;
        running.ensure_running()?;
        points.push(FanOutPoint {
            converge_ratio_to_floor: fan_out.converge_seconds / floor.seconds,
            propagate_ratio_to_floor: fan_out.propagate_seconds / floor.seconds,
            fan_out,
            floor,
            controller_cpu_seconds,
            memory,
            heal: HealPoint {
                copies_of: format!("one source into {count} namespaces"),
                namespaces_present,
                copies_present,
                heal,
            },
        });
    }
    Ok(points)
}

/// Many sources, each mirrored into a few namespaces.
async fn mirrored_point(
    client: &Client,
    running: &mut Controller,
    params: &SweepParams,
    copies_before: usize,
) -> anyhow::Result<MirroredPoint> {
    let (sources, each) = (params.mirrored_sources, params.mirror_namespaces);
    eprintln!("bench: {sources} sources, each mirrored into {each} namespaces");
    fanout::create_namespaces(
        client,
        Profile::ConfigMapMirror,
        MIRRORED_PREFIX,
        each,
        params.concurrency,
    )
    .await?;
    let source_namespace = testenv::fresh_namespace(client, "bench-mirrored-source").await?;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), &source_namespace);
    let objects: Vec<ConfigMap> = (0..sources)
        .map(|i| {
            let mut source = workload::configmap(
                workload::source_name(i),
                false,
                workload::content(i, 0, params.data_size),
            );
            Profile::ConfigMapMirror.ask_for_copies(&mut source, MIRRORED_PREFIX);
            source
        })
        .collect();
    let expected: HashMap<String, String> = objects
        .iter()
        .map(|cm| {
            let data = cm.data.clone().unwrap_or_default();
            (cm.name_any(), workload::checksum(&data))
        })
        .collect();
    let cpu_before = running.cpu_seconds()?;
    let started = Instant::now();
    let all_mirrors = wait_for_mirrors(client.clone(), expected, sources * each);
    let create = workload::create_all(&api, objects.into_iter(), params.concurrency);
    let (last, _) = tokio::try_join!(all_mirrors, create)?;
    running.ensure_running()?;
    let converge_seconds = last.saturating_duration_since(started).as_secs_f64();
    let controller_cpu_seconds = running.cpu_seconds()? - cpu_before;
    let memory = running.memory()?;

    // Each sample another source's mirror, in the namespaces in turn.
    let copies: Vec<CopyAt> = (0..params.copy_heal_samples.min(sources))
        .map(|i| CopyAt {
            namespace: format!("{MIRRORED_PREFIX}{}", i % each),
            name: workload::source_name(i),
        })
        .collect();
    let namespaces_present = workload::count_namespaces(client).await?;
    eprintln!(
        "bench: deleting {} of their mirrors, {namespaces_present} namespaces present",
        copies.len()
    );
    let ours = watcher::Config::default().labels(&copy_selector());
    let heal = fanout::heal_copies(
        client,
        Profile::ConfigMapMirror,
        ours,
        MIRRORED_PREFIX,
        &copies,
    )
    .await?;
    running.ensure_running()?;
    Ok(MirroredPoint {
        sources,
        namespaces_each: each,
        mirrors: sources * each,
        converge_seconds,
        mirrors_per_second: (sources * each) as f64 / converge_seconds,
        controller_cpu_seconds,
        memory,
        heal: HealPoint {
            copies_of: format!("{sources} sources into {each} namespaces each"),
            namespaces_present,
            copies_present: copies_before + sources * each,
            heal,
        },
    })
}

/// The copies in the mirrored namespaces, by namespace and name: whether
/// each carries its source's checksum.
struct Mirrors {
    expected: HashMap<String, String>,
    matches: HashMap<(String, String), bool>,
    /// How many of `matches` are true, kept as they change: a wait asks
    /// after every event, under the lock the watch needs for the next one.
    matching: usize,
    /// When a copy last started to match.
    last_match: Option<Instant>,
}

impl Mirrors {
    fn new(expected: HashMap<String, String>) -> Mirrors {
        Mirrors {
            expected,
            matches: HashMap::new(),
            matching: 0,
            last_match: None,
        }
    }

    fn matching(&self) -> usize {
        self.matching
    }
}

impl Apply for Mirrors {
    fn apply(&mut self, event: watcher::Event<ConfigMap>, at: Instant) {
        let (watcher::Event::InitApply(copy) | watcher::Event::Apply(copy)) = event else {
            return;
        };
        let namespace = copy.namespace().unwrap_or_default();
        if !namespace.starts_with(MIRRORED_PREFIX) {
            return;
        }
        let name = copy.name_any();
        let carries = copy.annotations().get(CHECKSUM_ANNOTATION);
        let matches = carries.is_some() && carries == self.expected.get(&name);
        let matched = self.matches.insert((namespace, name), matches) == Some(true);
        match (matched, matches) {
            (false, true) => {
                self.matching += 1;
                self.last_match = Some(at);
            }
            (true, false) => self.matching -= 1,
            _ => {}
        }
    }
}

/// Watches the copies in the mirrored namespaces until `count` of them
/// carry their source's checksum; returns when the last one did.
async fn wait_for_mirrors(
    client: Client,
    expected: HashMap<String, String>,
    count: usize,
) -> anyhow::Result<Instant> {
    let config = watcher::Config::default().labels(&copy_selector());
    let mirrors = Mirrors::new(expected);
    let watched = Watched::start("mirror watch", Api::all(client), config, mirrors).await?;
    let all_in = watched
        .wait_until("every mirror", PATIENCE, |mirrors| {
            (mirrors.matching() >= count).then(|| mirrors.last_match.unwrap_or_else(Instant::now))
        })
        .await;
    all_in.with_context(|| format!("{} of {count} mirrors in place", watched.state().matching()))
}

/// `y ~ x^k` between two points: 1 is linear, 0 flat, 2 quadratic.
fn exponent((x1, y1): (f64, f64), (x2, y2): (f64, f64)) -> Option<f64> {
    let k = (y2 / y1).ln() / (x2 / x1).ln();
    (x1 > 0.0 && y1 > 0.0 && x2 > 0.0 && y2 > 0.0 && x1 != x2 && k.is_finite()).then_some(k)
}

/// Between each pair of neighbouring sizes (and fan-outs), how each figure
/// grew.
fn growth(sizes: &[SizePoint], fan_out: &[FanOutPoint]) -> Vec<Growth> {
    type Figure = fn(&SizePoint) -> f64;
    let figures: [(&str, Figure); 6] = [
        ("API floor (s)", |p| p.floor.seconds),
        ("cold convergence (s)", |p| p.cold.seconds),
        ("cold CPU (s)", |p| p.cold_cpu_seconds),
        ("restart until settled (s)", |p| p.restart_settled_seconds),
        ("RSS after restart", |p| p.memory.rss_bytes as f64),
        ("heal p50 (ms)", |p| p.heal.p50_ms),
    ];
    let mut out = Vec::new();
    for (figure, value) in figures {
        for pair in sizes.windows(2) {
            let (a, b) = (&pair[0], &pair[1]);
            if let Some(k) = exponent((a.sources as f64, value(a)), (b.sources as f64, value(b))) {
                out.push(Growth {
                    figure: figure.to_owned(),
                    from: a.sources,
                    to: b.sources,
                    exponent: k,
                });
            }
        }
    }
    type FanOutFigure = fn(&FanOutPoint) -> Option<f64>;
    let fan_out_figures: [(&str, FanOutFigure); 4] = [
        ("fan-out convergence (s), by namespaces", |p| {
            Some(p.fan_out.converge_seconds)
        }),
        ("fan-out update (s), by namespaces", |p| {
            Some(p.fan_out.propagate_seconds)
        }),
        ("copy heal p50 (ms), by namespaces present", |p| {
            p.heal.heal.latency.as_ref().map(|l| l.p50_ms)
        }),
        ("copy heal p99 (ms), by namespaces present", |p| {
            p.heal.heal.latency.as_ref().map(|l| l.p99_ms)
        }),
    ];
    for (figure, value) in fan_out_figures {
        // Heals are placed by the namespaces present, the rest by the
        // fan-out's own.
        let x = |p: &FanOutPoint| {
            if figure.starts_with("copy heal") {
                p.heal.namespaces_present
            } else {
                p.fan_out.namespaces
            }
        };
        for pair in fan_out.windows(2) {
            let (a, b) = (&pair[0], &pair[1]);
            let (Some(ya), Some(yb)) = (value(a), value(b)) else {
                continue;
            };
            if let Some(k) = exponent((x(a) as f64, ya), (x(b) as f64, yb)) {
                out.push(Growth {
                    figure: figure.to_owned(),
                    from: x(a),
                    to: x(b),
                    exponent: k,
                });
            }
        }
    }
    out
}

fn marginal_memory(sizes: &[SizePoint]) -> Vec<MarginalMemory> {
    sizes
        .windows(2)
        .map(|pair| MarginalMemory {
            from: pair[0].sources,
            to: pair[1].sources,
            bytes_per_source: (pair[1].memory.rss_bytes as f64 - pair[0].memory.rss_bytes as f64)
                / (pair[1].sources as f64 - pair[0].sources as f64),
        })
        .collect()
}

/// The two largest sizes' peaks, extended linearly to the limit. None when
/// there is no slope to extend (one size, or memory that did not grow).
fn capacity(sizes: &[SizePoint], limit: u64) -> Capacity {
    let mut by_size: Vec<&SizePoint> = sizes.iter().collect();
    by_size.sort_by_key(|p| p.sources);
    let sources_within_limit = match by_size.as_slice() {
        [.., a, b] => {
            let slope = (b.memory.hwm_bytes as f64 - a.memory.hwm_bytes as f64)
                / (b.sources as f64 - a.sources as f64);
            let room = limit as f64 - b.memory.hwm_bytes as f64;
            (slope > 0.0).then(|| (b.sources as f64 + room / slope).max(0.0).round() as u64)
        }
        _ => None,
    };
    Capacity {
        memory_limit_bytes: limit,
        sources_within_limit,
    }
}

impl SweepResults {
    pub fn write_json(&self, path: &Path) -> anyhow::Result<()> {
        let json = serde_json::to_string_pretty(self)?;
        std::fs::write(path, json).with_context(|| format!("writing {}", path.display()))
    }

    /// The charts, as SVG files in the output directory.
    fn draw(&self) -> anyhow::Result<Vec<String>> {
        let by_size = |f: fn(&SizePoint) -> f64| -> Vec<(f64, f64)> {
            self.sizes
                .iter()
                .map(|p| (p.sources as f64, f(p)))
                .collect()
        };
        let series = |name: &str, points| Series {
            name: name.to_owned(),
            points,
        };
        let charts = [
            (
                "sweep-time.svg",
                Chart {
                    title: "Convergence time by sources".into(),
                    x_label: "sources".into(),
                    y_label: "seconds".into(),
                    series: vec![
                        series("API floor", by_size(|p| p.floor.seconds)),
                        series("cold convergence", by_size(|p| p.cold.seconds)),
                        series("restart, settled", by_size(|p| p.restart_settled_seconds)),
                    ],
                },
            ),
            (
                "sweep-memory.svg",
                Chart {
                    title: "Controller memory by sources".into(),
                    x_label: "sources".into(),
                    y_label: "MiB".into(),
                    series: vec![
                        series("RSS, settled", by_size(|p| p.memory.rss_bytes as f64 / MIB)),
                        series("peak", by_size(|p| p.memory.hwm_bytes as f64 / MIB)),
                    ],
                },
            ),
            (
                "sweep-cpu.svg",
                Chart {
                    title: "Controller CPU by sources".into(),
                    x_label: "sources".into(),
                    y_label: "CPU seconds".into(),
                    series: vec![
                        series("cold convergence", by_size(|p| p.cold_cpu_seconds)),
                        series(
                            "restart",
                            by_size(|p| p.restart_cpu_per_1000 * p.sources as f64 / 1000.0),
                        ),
                    ],
                },
            ),
            (
                "sweep-heal.svg",
                Chart {
                    title: "Heal latency by sources".into(),
                    x_label: "sources".into(),
                    y_label: "milliseconds".into(),
                    series: vec![
                        series("p50", by_size(|p| p.heal.p50_ms)),
                        series("p99", by_size(|p| p.heal.p99_ms)),
                        series(
                            "first after restart",
                            by_size(|p| p.heal.in_order_ms.first().copied().unwrap_or(0.0)),
                        ),
                    ],
                },
            ),
            (
                "sweep-fan-out.svg",
                Chart {
                    title: "One source into many namespaces".into(),
                    x_label: "namespaces".into(),
                    y_label: "seconds".into(),
                    series: vec![
                        series(
                            "all mirrors created",
                            self.fan_out
                                .iter()
                                .map(|p| (p.fan_out.namespaces as f64, p.fan_out.converge_seconds))
                                .collect(),
                        ),
                        series(
                            "one update everywhere",
                            self.fan_out
                                .iter()
                                .map(|p| (p.fan_out.namespaces as f64, p.fan_out.propagate_seconds))
                                .collect(),
                        ),
                        series(
                            "API floor",
                            self.fan_out
                                .iter()
                                .map(|p| (p.fan_out.namespaces as f64, p.floor.seconds))
                                .collect(),
                        ),
                    ]
                    .into_iter()
                    .chain(self.peer.iter().flat_map(|peer| {
                        [
                            series(
                                &format!("{}: all copies", peer.controller),
                                peer.fan_out
                                    .iter()
                                    .map(|p| {
                                        (p.fan_out.namespaces as f64, p.fan_out.converge_seconds)
                                    })
                                    .collect(),
                            ),
                            series(
                                &format!("{}: one update", peer.controller),
                                peer.fan_out
                                    .iter()
                                    .map(|p| {
                                        (p.fan_out.namespaces as f64, p.fan_out.propagate_seconds)
                                    })
                                    .collect(),
                            ),
                        ]
                    }))
                    .collect(),
                },
            ),
            (
                "sweep-heal-namespaces.svg",
                Chart {
                    title: "Copy heal latency by namespaces present".into(),
                    x_label: "namespaces in the cluster".into(),
                    y_label: "milliseconds".into(),
                    series: self.heal_series(),
                },
            ),
        ];
        let mut written = Vec::new();
        for (file, chart) in charts {
            let path = self.params.out_dir.join(file);
            std::fs::write(&path, chart.to_svg())
                .with_context(|| format!("writing {}", path.display()))?;
            written.push(params::shown_path(&path));
        }
        Ok(written)
    }

    /// Every heal point of configmap-mirror's plane, the fan-outs' and the
    /// mirrored sources'.
    pub fn heal_points(&self) -> impl Iterator<Item = &HealPoint> {
        self.fan_out
            .iter()
            .map(|p| &p.heal)
            .chain(std::iter::once(&self.mirrored.heal))
    }

    /// p50 and p99 of the fan-outs' copy heals, and of the mirrors of the
    /// many sources mirrored into a few namespaces each, by the namespaces
    /// present.
    fn heal_series(&self) -> Vec<Series> {
        let by_namespaces = |points: &[&HealPoint], f: fn(&Latency) -> f64| -> Vec<(f64, f64)> {
            points
                .iter()
                .filter_map(|p| Some((p.namespaces_present as f64, f(p.heal.latency.as_ref()?))))
                .collect()
        };
        let fan_out: Vec<&HealPoint> = self.fan_out.iter().map(|p| &p.heal).collect();
        let mirrored = [&self.mirrored.heal];
        // Legend names are short: the legend is 160 pixels wide.
        let series = |name: &str, points| Series {
            name: name.to_owned(),
            points,
        };
        vec![
            series("fan-out, p50", by_namespaces(&fan_out, |l| l.p50_ms)),
            series("fan-out, p99", by_namespaces(&fan_out, |l| l.p99_ms)),
            series("mirrored, p50", by_namespaces(&mirrored, |l| l.p50_ms)),
            series("mirrored, p99", by_namespaces(&mirrored, |l| l.p99_ms)),
        ]
    }

    /// The figures for people.
    pub fn table(&self) -> String {
        use std::fmt::Write as _;
        let mut t = String::new();
        let build = &self.controller_build;
        let _ = writeln!(
            t,
            "configmap-mirror sweep, {} (Kubernetes {})",
            self.date, self.kubernetes_version
        );
        let _ = writeln!(
            t,
            "controller {} ({} bytes; workspace {}{})",
            build.binary,
            build.size_bytes,
            build.git_head.as_deref().unwrap_or("unknown"),
            if build.git_dirty == Some(true) {
                " + uncommitted changes"
            } else {
                ""
            }
        );
        let _ = writeln!(
            t,
            "data {} B per source, concurrency {}, {} heal samples per size\n",
            self.params.data_size, self.params.concurrency, self.params.samples
        );
        let _ = writeln!(
            t,
            "{:>8} {:>8} {:>8} {:>6} {:>9} {:>8} {:>8} {:>9} {:>9} {:>8} {:>8} {:>8}",
            "sources",
            "floor s",
            "cold s",
            "xfloor",
            "CPU/1k s",
            "ready s",
            "settle s",
            "RSS MiB",
            "peak MiB",
            "heal p50",
            "heal p99",
            "1st heal"
        );
        for p in &self.sizes {
            let _ = writeln!(
                t,
                "{:>8} {:>8.1} {:>8.1} {:>6.2} {:>9.3} {:>8.2} {:>8.2} {:>9.1} {:>9.1} {:>8.1} {:>8.1} {:>8.1}",
                p.sources,
                p.floor.seconds,
                p.cold.seconds,
                p.cold.ratio_to_floor,
                p.cold_cpu_per_1000,
                p.restart_ready_seconds,
                p.restart_settled_seconds,
                p.memory.rss_bytes as f64 / MIB,
                p.memory.hwm_bytes as f64 / MIB,
                p.heal.p50_ms,
                p.heal.p99_ms,
                p.heal.in_order_ms.first().copied().unwrap_or(0.0),
            );
        }
        let _ = writeln!(t);
        for m in &self.marginal_memory {
            let _ = writeln!(
                t,
                "RSS per added source, {} -> {}: {:.0} bytes",
                m.from, m.to, m.bytes_per_source
            );
        }
        match self.capacity.sources_within_limit {
            Some(n) => {
                let _ = writeln!(
                    t,
                    "sources within the default {} MiB limit, from the two largest sizes' peaks: about {n}",
                    self.capacity.memory_limit_bytes / (1024 * 1024)
                );
            }
            None => {
                let _ = writeln!(t, "sources within the default limit: absent (no slope)");
            }
        }
        let _ = writeln!(t, "\ngrowth exponents (1 = linear, 0 = flat):");
        for g in &self.growth {
            let _ = writeln!(
                t,
                "  {:<42} {:>7} -> {:<7} {:>5.2}",
                g.figure, g.from, g.to, g.exponent
            );
        }
        let _ = writeln!(
            t,
            "\nfan-out of one source (floor: one plain ConfigMap of the source's size created in each namespace, at concurrency {}; xfloor = time / floor):",
            self.params.concurrency
        );
        let _ = writeln!(
            t,
            "  {:<17} {:>6} {:>8} {:>8} {:>6} {:>8} {:>6} {:>7} {:>8}",
            "controller",
            "ns",
            "floor s",
            "copies s",
            "xfloor",
            "update s",
            "xfloor",
            "CPU s",
            "RSS MiB"
        );
        let peer_fan_out = self
            .peer
            .as_ref()
            .map(|p| p.fan_out.as_slice())
            .unwrap_or_default();
        for p in self.fan_out.iter().chain(peer_fan_out) {
            let _ = writeln!(
                t,
                "  {:<17} {:>6} {:>8.2} {:>8.2} {:>6.2} {:>8.2} {:>6.2} {:>7.2} {:>8.1}",
                p.fan_out.controller,
                p.fan_out.namespaces,
                p.floor.seconds,
                p.fan_out.converge_seconds,
                p.converge_ratio_to_floor,
                p.fan_out.propagate_seconds,
                p.propagate_ratio_to_floor,
                p.controller_cpu_seconds,
                p.memory.rss_bytes as f64 / MIB
            );
        }
        if let Some(peer) = &self.peer {
            for skipped in &peer.skipped_fan_outs {
                let _ = writeln!(
                    t,
                    "  {:<17} {:>6} absent: {}",
                    peer.controller, skipped.namespaces, skipped.reason
                );
            }
        }

        let _ = writeln!(
            t,
            "\ncopies deleted one at a time, after each phase, by what the cluster held:"
        );
        let _ = writeln!(
            t,
            "  {:<17} {:<36} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>4}",
            "controller", "copies of", "ns", "copies", "p50 ms", "p90 ms", "p99 ms", "max ms", "n"
        );
        let peer_heals = self
            .peer
            .iter()
            .flat_map(|p| p.fan_out.iter().map(|f| &f.heal));
        for h in self.heal_points().chain(peer_heals) {
            let _ = match &h.heal.latency {
                Some(l) => writeln!(
                    t,
                    "  {:<17} {:<36} {:>7} {:>7} {:>7.1} {:>7.1} {:>7.1} {:>7.1} {:>4}",
                    h.heal.controller,
                    h.copies_of,
                    h.namespaces_present,
                    h.copies_present,
                    l.p50_ms,
                    l.p90_ms,
                    l.p99_ms,
                    l.max_ms,
                    l.samples
                ),
                None => writeln!(
                    t,
                    "  {:<17} {:<36} {:>7} {:>7} absent: a deleted copy was not back within {} s",
                    h.heal.controller,
                    h.copies_of,
                    h.namespaces_present,
                    h.copies_present,
                    fanout::HEAL_PATIENCE.as_secs()
                ),
            };
        }
        match &self.peer {
            Some(peer) => {
                let _ = writeln!(
                    t,
                    "  ({} from {}; it writes at client-go's default 5 requests/s, burst 10, with no flag to raise it)",
                    peer.controller, peer.binary
                );
            }
            None => {
                let _ = writeln!(
                    t,
                    "  (no peer: none given with --peer, and hack/install-replicator.sh has built none)"
                );
            }
        }
        let m = &self.mirrored;
        let _ = writeln!(
            t,
            "\n{} sources into {} namespaces each: {} mirrors in {:.1} s ({:.0}/s), controller CPU {:.2} s ({:.3} s per 1,000 mirrors), RSS {:.1} MiB",
            m.sources,
            m.namespaces_each,
            m.mirrors,
            m.converge_seconds,
            m.mirrors_per_second,
            m.controller_cpu_seconds,
            m.controller_cpu_seconds * 1000.0 / m.mirrors.max(1) as f64,
            m.memory.rss_bytes as f64 / MIB
        );
        let g = &self.new_namespaces;
        let _ = writeln!(
            t,
            "\nnew namespaces with consent, {} sources waiting for them by glob ({}*), {} namespaces present before:",
            g.sources,
            glob::PREFIX,
            g.namespaces_present
        );
        let _ = writeln!(
            t,
            "  {:<17} all {} mirrors in each: p50 {:.1}  p90 {:.1}  p99 {:.1}  max {:.1} ms (n={}), from just before the create call; CPU {:.2} s",
            g.controller,
            g.sources,
            g.latency.p50_ms,
            g.latency.p90_ms,
            g.latency.p99_ms,
            g.latency.max_ms,
            g.latency.samples,
            g.controller_cpu_seconds
        );
        let _ = writeln!(
            t,
            "  (the sources had their companions {:.2} s after the first was created)",
            g.sources_settled_seconds
        );
        if let Some(peer) = &self.peer {
            let _ = writeln!(
                t,
                "  {:<17} absent: {}",
                peer.controller, peer.new_namespaces_absent
            );
        }
        let _ = writeln!(t, "\ncharts: {}", self.charts.join(", "));
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn copy_in(namespace: &str, checksum: &str) -> watcher::Event<ConfigMap> {
        let mut copy = ConfigMap::default();
        copy.metadata.namespace = Some(namespace.to_owned());
        copy.metadata.name = Some("src".to_owned());
        copy.annotations_mut()
            .insert(CHECKSUM_ANNOTATION.to_owned(), checksum.to_owned());
        watcher::Event::Apply(copy)
    }

    #[test]
    fn mirrors_count_each_copy_once_and_uncount_one_that_stops_matching() {
        let expected = HashMap::from([("src".to_owned(), "new".to_owned())]);
        let mut mirrors = Mirrors::new(expected);
        let a = format!("{MIRRORED_PREFIX}a");
        let b = format!("{MIRRORED_PREFIX}b");
        let t0 = Instant::now();
        mirrors.apply(copy_in(&a, "old"), t0);
        assert_eq!(mirrors.matching(), 0);
        mirrors.apply(copy_in(&a, "new"), t0);
        mirrors.apply(copy_in(&a, "new"), t0 + Duration::from_millis(1));
        assert_eq!(mirrors.matching(), 1);
        assert_eq!(mirrors.last_match, Some(t0));
        let t1 = t0 + Duration::from_millis(2);
        mirrors.apply(copy_in(&b, "new"), t1);
        mirrors.apply(copy_in("elsewhere", "new"), t1);
        assert_eq!(mirrors.matching(), 2);
        assert_eq!(mirrors.last_match, Some(t1));
        mirrors.apply(copy_in(&a, "old"), t1);
        assert_eq!(mirrors.matching(), 1);
    }

    #[test]
    fn exponents_read_linear_flat_and_quadratic() {
        let close = |a: Option<f64>, b: f64| (a.unwrap() - b).abs() < 1e-9;
        assert!(close(exponent((1e3, 2.0), (1e4, 20.0)), 1.0));
        assert!(close(exponent((1e3, 5.0), (1e5, 5.0)), 0.0));
        assert!(close(exponent((10.0, 1.0), (100.0, 100.0)), 2.0));
        assert_eq!(exponent((1e3, 0.0), (1e4, 1.0)), None);
        assert_eq!(exponent((1e3, 1.0), (1e3, 2.0)), None);
    }

    fn point(sources: usize, rss_mib: u64, peak_mib: u64) -> SizePoint {
        SizePoint {
            sources,
            floor: Floor {
                seconds: 1.0,
                writes_per_second: 1.0,
            },
            cold: Cold {
                seconds: 1.0,
                ready_seconds: 0.1,
                ratio_to_floor: 1.0,
                companions_per_second: 1.0,
                events_at_convergence: 0,
            },
            cold_cpu_seconds: 1.0,
            cold_cpu_per_1000: 1.0,
            restart_ready_seconds: 1.0,
            restart_settled_seconds: 1.0,
            restart_cpu_per_1000: 1.0,
            memory: Memory {
                rss_bytes: rss_mib * 1024 * 1024,
                hwm_bytes: peak_mib * 1024 * 1024,
                ..Memory::default()
            },
            heal: Latency::of(vec![Duration::from_millis(5)]),
        }
    }

    #[test]
    fn capacity_extends_the_two_largest_peaks_to_the_limit() {
        // 1 MiB per 1,000 sources beyond 40 MiB at 10,000: 256 MiB is
        // reached 216,000 sources later.
        let sizes = [
            point(1_000, 20, 25),
            point(10_000, 35, 40),
            point(5_000, 30, 35),
        ];
        let within = capacity(&sizes, 256 * 1024 * 1024);
        assert_eq!(within.sources_within_limit, Some(226_000));
        assert_eq!(capacity(&sizes[..1], 1 << 30).sources_within_limit, None);
    }

    #[test]
    fn marginal_memory_is_the_slope_between_neighbours() {
        let sizes = [point(1_000, 20, 25), point(3_000, 22, 25)];
        let marginal = marginal_memory(&sizes);
        assert_eq!(marginal.len(), 1);
        assert!((marginal[0].bytes_per_source - 2.0 * 1024.0 * 1024.0 / 2000.0).abs() < 1e-6);
    }

    #[test]
    fn the_peer_skips_the_fan_outs_above_its_cap_and_says_why() {
        let params = SweepParams {
            fan_outs: vec![100, 1_000, 10_000],
            peer_max_fan_out: 2_000,
            ..SweepParams::default()
        };
        let (run, skipped) = peer_fan_outs(&params);
        assert_eq!(run, vec![100, 1_000]);
        assert_eq!(skipped.len(), 1);
        assert_eq!(skipped[0].namespaces, 10_000);
        // 20,000 writes at 5 a second.
        assert!(
            skipped[0].reason.contains("about 67 minutes"),
            "{}",
            skipped[0].reason
        );
    }

    fn heal(controller: &str, latency: Option<Latency>) -> CopyHeal {
        CopyHeal {
            controller: controller.to_owned(),
            deleted: latency.as_ref().map_or(1, |l| l.samples),
            latency,
        }
    }

    fn fan_out_point(controller: &str, namespaces: usize, healed: bool) -> FanOutPoint {
        let latency = healed.then(|| Latency::of(vec![Duration::from_millis(4)]));
        FanOutPoint {
            fan_out: FanOut {
                controller: controller.to_owned(),
                namespaces,
                converge_seconds: 2.0,
                propagate_seconds: 3.0,
            },
            floor: Floor {
                seconds: 1.0,
                writes_per_second: namespaces as f64,
            },
            converge_ratio_to_floor: 2.0,
            propagate_ratio_to_floor: 3.0,
            controller_cpu_seconds: 1.0,
            memory: Memory::default(),
            heal: HealPoint {
                copies_of: format!("one source into {namespaces} namespaces"),
                namespaces_present: namespaces + 5,
                copies_present: namespaces,
                heal: heal(controller, latency),
            },
        }
    }

    fn results_with_a_capped_peer() -> SweepResults {
        let params = SweepParams {
            fan_outs: vec![100, 1_000, 10_000],
            peer_max_fan_out: 2_000,
            ..SweepParams::default()
        };
        let ours: Vec<FanOutPoint> = params
            .fan_outs
            .iter()
            .map(|&n| fan_out_point("configmap-mirror", n, true))
            .collect();
        let (sizes, skipped_fan_outs) = peer_fan_outs(&params);
        let theirs: Vec<FanOutPoint> = sizes
            .iter()
            .map(|&n| fan_out_point("replicator", n, false))
            .collect();
        let latency = Latency::of(vec![Duration::from_millis(7)]);
        SweepResults {
            date: "2026-11-25T00:00:00Z".into(),
            kubernetes_version: "v1.36.3".into(),
            controller_build: Build {
                binary: "configmap-mirror".into(),
                size_bytes: 1,
                modified: "unknown".into(),
                git_head: None,
                git_dirty: None,
            },
            sizes: vec![point(1_000, 20, 25)],
            growth: growth(&[], &ours),
            copy_heal: largest_heal(&ours).unwrap(),
            mirrored: MirroredPoint {
                sources: 1_000,
                namespaces_each: 10,
                mirrors: 10_000,
                converge_seconds: 10.0,
                mirrors_per_second: 1_000.0,
                controller_cpu_seconds: 3.0,
                memory: Memory::default(),
                heal: HealPoint {
                    copies_of: "1000 sources into 10 namespaces each".into(),
                    namespaces_present: 11_116,
                    copies_present: 21_100,
                    heal: heal("configmap-mirror", Some(latency.clone())),
                },
            },
            new_namespaces: NewNamespaces {
                controller: "configmap-mirror".into(),
                sources: 100,
                sources_settled_seconds: 0.5,
                namespaces_present: 11_117,
                latency,
                controller_cpu_seconds: 1.0,
            },
            peer: Some(PeerFigures {
                controller: "replicator".into(),
                binary: "replicator".into(),
                copy_heal: largest_heal(&theirs),
                fan_out: theirs,
                skipped_fan_outs,
                new_namespaces_absent: NEW_NAMESPACES_PEER_ABSENT.into(),
            }),
            fan_out: ours,
            marginal_memory: Vec::new(),
            capacity: capacity(&[], DEFAULT_MEMORY_LIMIT_BYTES),
            charts: Vec::new(),
            params,
        }
    }

    #[test]
    fn the_table_shows_floors_heals_by_namespaces_and_what_the_peer_skipped() {
        let results = results_with_a_capped_peer();
        let table = results.table();
        println!("{table}");
        let line = |start: &str| {
            table
                .lines()
                .find(|l| l.trim_start().starts_with(start))
                .unwrap_or_else(|| panic!("no line starting {start:?} in\n{table}"))
        };
        assert!(line("replicator         10000 absent:").contains("--peer-max-fan-out 2000"));
        assert!(
            line("replicator        one source into 1000 namespaces")
                .contains("absent: a deleted copy was not back")
        );
        let heal_at_10000 = line("configmap-mirror  one source into 10000 namespaces");
        assert!(heal_at_10000.contains("10005"), "{heal_at_10000}");
        assert!(line("configmap-mirror  1000 sources into 10 namespaces each").contains("11116"));
        assert!(
            line("replicator        absent: not measured").contains("configmap-mirror's plane")
        );
        assert!(line("configmap-mirror  all 100 mirrors in each:").contains("p50 7.0"));
        let fan_out_10000 = line("configmap-mirror   10000");
        assert!(fan_out_10000.contains("2.00") && fan_out_10000.contains("3.00"));
        assert!(
            results
                .growth
                .iter()
                .any(|g| g.figure.starts_with("copy heal p99") && g.from == 1_005)
        );
        let json = serde_json::to_value(&results).unwrap();
        assert_eq!(json["peer"]["skipped_fan_outs"][0]["namespaces"], 10_000);
        assert_eq!(json["fan_out"][2]["heal"]["namespaces_present"], 10_005);
        assert_eq!(json["new_namespaces"]["latency"]["samples"], 1);
    }

    #[test]
    fn the_heal_chart_places_heals_by_the_namespaces_present() {
        let series = results_with_a_capped_peer().heal_series();
        let names: Vec<&str> = series.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "fan-out, p50",
                "fan-out, p99",
                "mirrored, p50",
                "mirrored, p99"
            ]
        );
        let xs: Vec<f64> = series[0].points.iter().map(|p| p.0).collect();
        assert_eq!(xs, [105.0, 1_005.0, 10_005.0]);
        assert_eq!(series[3].points, [(11_116.0, 7.0)]);
    }

    #[test]
    fn the_small_sweep_is_valid_and_samples_must_fit_every_size() {
        assert!(SweepParams::small().validate().is_ok());
        assert!(SweepParams::default().validate().is_ok());
        let too_many = SweepParams {
            samples: 60,
            ..SweepParams::small()
        };
        assert!(too_many.validate().is_err());
    }
}
