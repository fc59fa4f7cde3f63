//! The phases of a run, in the order they run. Each returns its figures;
//! the controller CPU each one costs is read around it.
//!
//! The order matters: memory is measured right after the idle phase (the
//! restarted controller, settled) and before the heal, update and burst
//! phases, whose allocations would otherwise blur the unmanaged delta.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context;
use futures::{StreamExt, TryStreamExt, stream};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;

use crate::controller::{Controller, Launcher};
use crate::observer::Observer;
use crate::params::Params;
use crate::procstat::CpuSnapshot;
use crate::report::{
    Build, Burst, Cold, Cpu, Floor, Latency, MemoryFigures, ProcessCpu, Restart, Results, Steady,
};
use crate::workload::{self, companion_name, source_name};

/// Waiting for one companion to heal or update; far above any target, so
/// only a stuck controller hits it.
const SAMPLE_TIMEOUT: Duration = Duration::from_secs(60);
/// How long the controller gets to notice unmanaged ConfigMaps, were it to
/// see them at all, before its memory is read again.
const UNMANAGED_SETTLE: Duration = Duration::from_secs(10);
/// Watched after the restart has settled, so that a write made by the
/// pass's last reconciles still arrives before the count is taken.
const MIN_QUIET_TAIL: Duration = Duration::from_secs(2);
const METRIC_WRITES: &str = "configmap_mirror_companion_writes_total";

/// The sources of one run, and the watch that times what happens to them.
pub(crate) struct Bench<'a> {
    params: &'a Params,
    sources: Api<ConfigMap>,
    observer: Observer,
    /// Each source's content generation; bumped by every patch.
    generations: Vec<u32>,
}

impl<'a> Bench<'a> {
    /// Starts watching the companions in `sources`' namespace.
    pub(crate) async fn new(params: &'a Params, sources: Api<ConfigMap>) -> anyhow::Result<Self> {
        Ok(Bench {
            params,
            observer: Observer::start(sources.clone()).await?,
            sources,
            generations: vec![0; params.sources],
        })
    }
}

impl Bench<'_> {
    /// Waiting for all sources' companions: generous, proportional to the
    /// work, so that only a pathologically slow controller times out.
    pub(crate) fn convergence_timeout(&self) -> Duration {
        Duration::from_secs(300) + Duration::from_millis(100) * self.params.sources as u32
    }

    fn next_content(
        &mut self,
        index: usize,
    ) -> (String, std::collections::BTreeMap<String, String>) {
        self.generations[index] += 1;
        let data = workload::content(index, self.generations[index], self.params.data_size);
        (workload::checksum(&data), data)
    }

    /// Sources spread evenly over all of them; `shift` picks a different
    /// spread for each phase, so no phase reuses another's objects.
    fn sample_indices(&self, shift: usize) -> impl Iterator<Item = usize> + use<> {
        let (n, k) = (self.params.sources, self.params.samples.max(1));
        (0..self.params.samples).map(move |i| (i * n / k + shift * n / (3 * k)) % n)
    }
}

/// Runs every phase against a fresh control plane.
pub async fn run(
    cp: &testenv::ControlPlane,
    params: &Params,
    controller: &Path,
    build: Build,
    log: &Path,
) -> anyhow::Result<Results> {
    let client = cp.client().await;
    let servers: Vec<(String, u32)> = cp
        .pids()
        .into_iter()
        .map(|(name, pid)| (name.to_owned(), pid))
        .chain([("mirror-bench".to_owned(), std::process::id())])
        .collect();
    let sources_ns = testenv::fresh_namespace(&client, "bench-sources").await?;
    let unmanaged_ns = testenv::fresh_namespace(&client, "bench-unmanaged").await?;
    let sources: Api<ConfigMap> = Api::namespaced(client.clone(), &sources_ns);
    let unmanaged: Api<ConfigMap> = Api::namespaced(client.clone(), &unmanaged_ns);
    let launcher = Launcher {
        profile: crate::profile::Profile::ConfigMapMirror,
        binary: controller.to_owned(),
        kubeconfig: cp.kubeconfig_path().to_owned(),
        concurrency: params.concurrency,
        log: log.to_owned(),
        extra_args: Vec::new(),
    };
    let mut bench = Bench::new(params, sources).await?;
    let n = params.sources;
    let per_1000 = |cpu: f64| cpu * 1000.0 / n as f64;

    phase("1/11", &format!("API floor: the bench creates {n} sources"));
    let before = CpuSnapshot::take(&servers);
    let floor = floor(&mut bench).await?;
    let floor_cpu = CpuSnapshot::take(&servers).since(&before);

    phase("2/11", "cold convergence: starting the controller");
    let (running, cold, cold_cpu) = cold(&bench, &launcher, &floor, &servers).await?;
    let events = workload::count_events(client.clone(), &sources_ns).await?;
    let cold = Cold {
        events_at_convergence: events,
        ..cold
    };

    phase(
        "3/11",
        &format!("steady state: {} s idle with a restart", params.idle_secs),
    );
    let (mut running, steady, idle) = steady(&bench, &launcher, running).await?;
    let after_convergence = running.memory()?;

    phase(
        "4/11",
        &format!("memory: creating {} unmanaged ConfigMaps", params.unmanaged),
    );
    let writes_before = bench.observer.state().writes();
    let cpu_before = running.cpu_seconds()?;
    let unmanaged_create = create_unmanaged(params, &unmanaged).await?;
    running.ensure_running()?;
    let after_unmanaged = running.memory()?;
    let unmanaged_cpu = running.cpu_seconds()? - cpu_before;
    let steady = Steady {
        companion_writes_during_unmanaged: bench.observer.state().writes() - writes_before,
        ..steady
    };

    phase(
        "5/11",
        &format!("heal: deleting {} companions", params.samples),
    );
    let cpu_before = running.cpu_seconds()?;
    let heal = heal(&bench).await?;
    let heal_cpu = running.cpu_seconds()? - cpu_before;

    phase(
        "6/11",
        &format!("update: patching {} sources", params.samples),
    );
    let cpu_before = running.cpu_seconds()?;
    let update = update(&mut bench).await?;
    let update_cpu = running.cpu_seconds()? - cpu_before;

    phase("7/11", &format!("burst: patching all {n} sources at once"));
    let cpu_before = running.cpu_seconds()?;
    let before = CpuSnapshot::take(&with_controller(&servers, &running));
    let burst = burst(&mut bench).await?;
    running.ensure_running()?;
    let burst_cpu = running.cpu_seconds()? - cpu_before;
    let burst_all_cpu = CpuSnapshot::take(&with_controller(&servers, &running)).since(&before);
    phase(
        "8/11",
        &format!("fan-out: one source into {} namespaces", params.fan_out),
    );
    let fan_out = crate::fanout::run(
        &client,
        crate::profile::Profile::ConfigMapMirror,
        &sources_ns,
        crate::fanout::PREFIX,
        params.fan_out,
        params.concurrency,
    )
    .await?;
    phase(
        "9/11",
        &format!(
            "churn: {} refused sources created and deleted",
            params.churn
        ),
    );
    let churn_ns = testenv::fresh_namespace(&client, "bench-churn").await?;
    let churn = crate::churn::run(
        &Api::namespaced(client.clone(), &churn_ns),
        &running,
        params.churn,
        params.concurrency,
    )
    .await?;
    phase(
        "10/11",
        &format!(
            "secrets: {n} managed, then {} unmanaged Secrets",
            params.unmanaged
        ),
    );
    let secrets = crate::secrets::run(
        &Api::namespaced(
            client.clone(),
            &testenv::fresh_namespace(&client, "bench-secrets").await?,
        ),
        &Api::namespaced(
            client.clone(),
            &testenv::fresh_namespace(&client, "bench-unmanaged-secrets").await?,
        ),
        &mut running,
        params,
    )
    .await?;
    phase(
        "11/11",
        &format!(
            "big sources: {} of {} KiB",
            params.big_sources,
            crate::big::BIG_SOURCE_BYTES / 1024
        ),
    );
    let big = crate::big::run(
        &Api::namespaced(
            client.clone(),
            &testenv::fresh_namespace(&client, "bench-big").await?,
        ),
        &mut running,
        params.big_sources,
        params.concurrency,
    )
    .await?;
    let at_end = running.memory()?;
    running
        .stop()
        .await
        .context("stopping the controller at the end")?;

    let memory = MemoryFigures {
        after_convergence,
        bytes_per_source: after_convergence.rss_bytes as f64 / n as f64,
        unmanaged_create_seconds: unmanaged_create.as_secs_f64(),
        after_unmanaged,
        unmanaged_rss_delta_bytes: after_unmanaged.rss_bytes as i64
            - after_convergence.rss_bytes as i64,
        at_end,
    };
    let cpu = Cpu {
        cold_seconds: cold_cpu.controller,
        cold_per_1000_sources: per_1000(cold_cpu.controller),
        restart_seconds: idle.restart_cpu,
        restart_per_1000_sources: per_1000(idle.restart_cpu),
        idle_seconds_per_minute: idle.tail_cpu / idle.tail.as_secs_f64() * 60.0,
        unmanaged_seconds: unmanaged_cpu,
        heal_seconds: heal_cpu,
        update_seconds: update_cpu,
        burst_seconds: burst_cpu,
        burst_per_1000_sources: per_1000(burst_cpu),
        by_process: ProcessCpu {
            floor: floor_cpu,
            cold: cold_cpu.all,
            burst: burst_all_cpu,
        },
    };
    let mut results = Results {
        date: now(),
        kubernetes_version: testenv::kube_version()?,
        controller_build: build,
        params: params.clone(),
        floor,
        cold,
        steady,
        heal,
        update,
        burst,
        fan_out,
        churn,
        secrets,
        big,
        memory,
        cpu,
        targets: Vec::new(),
        controller_log: None,
    };
    results.targets = results.assess();
    Ok(results)
}

/// The processes to account CPU to, with the controller's current pid.
pub(crate) fn with_controller(
    servers: &[(String, u32)],
    controller: &Controller,
) -> Vec<(String, u32)> {
    let mut all = servers.to_vec();
    all.push(("configmap-mirror".to_owned(), controller.pid()));
    all
}

pub(crate) fn phase(step: &str, what: &str) {
    eprintln!("bench: [{step}] {what}");
}

pub(crate) fn now() -> String {
    let now = jiff::Timestamp::now();
    jiff::Timestamp::from_second(now.as_second())
        .unwrap_or(now)
        .to_string()
}

/// Creating the sources doubles as the measure of what the API server
/// sustains for this object size and concurrency, with the controller off.
pub(crate) async fn floor(bench: &mut Bench<'_>) -> anyhow::Result<Floor> {
    let (n, size) = (bench.params.sources, bench.params.data_size);
    let objects: Vec<ConfigMap> = (0..n)
        .map(|i| workload::configmap(source_name(i), true, workload::content(i, 0, size)))
        .collect();
    let names: Vec<String> = (0..n).map(source_name).collect();
    let sums: Vec<String> = objects
        .iter()
        .map(|cm| workload::checksum(cm.data.as_ref().unwrap_or(&Default::default())))
        .collect();
    bench.observer.expect(
        names
            .iter()
            .map(String::as_str)
            .zip(sums.iter().map(String::as_str)),
    );
    let took = workload::create_all(
        &bench.sources,
        objects.into_iter(),
        bench.params.concurrency,
    )
    .await?;
    Ok(Floor {
        seconds: took.as_secs_f64(),
        writes_per_second: n as f64 / took.as_secs_f64(),
    })
}

/// A phase's CPU: the controller's own, and every process's.
pub(crate) struct PhaseCpu {
    pub(crate) controller: f64,
    pub(crate) all: BTreeMap<String, f64>,
}

/// Starts the controller with every source waiting and no companion yet,
/// and times it until the watch has shown every companion, correct.
pub(crate) async fn cold(
    bench: &Bench<'_>,
    launcher: &Launcher,
    floor: &Floor,
    servers: &[(String, u32)],
) -> anyhow::Result<(Controller, Cold, PhaseCpu)> {
    let n = bench.params.sources;
    let started = Instant::now();
    let before = CpuSnapshot::take(servers);
    let mut running = launcher.start()?;
    let ready = async {
        running.wait_ready().await?;
        anyhow::Ok(Instant::now())
    };
    let all_match =
        bench
            .observer
            .wait_matching("cold convergence", n, bench.convergence_timeout());
    let (ready, converged) = tokio::try_join!(ready, all_match)?;
    running.ensure_running()?;
    let cpu = PhaseCpu {
        controller: running.cpu_seconds()?,
        all: CpuSnapshot::take(&with_controller(servers, &running)).since(&before),
    };
    let seconds = converged.saturating_duration_since(started).as_secs_f64();
    let cold = Cold {
        seconds,
        ready_seconds: ready.saturating_duration_since(started).as_secs_f64(),
        ratio_to_floor: seconds / floor.seconds,
        companions_per_second: n as f64 / seconds,
        events_at_convergence: 0,
    };
    Ok((running, cold, cpu))
}

/// ConfigMaps without the source label, in a namespace of their own: a
/// controller that filters on the server never even receives them.
async fn create_unmanaged(params: &Params, api: &Api<ConfigMap>) -> anyhow::Result<Duration> {
    let objects = (0..params.unmanaged).map(|i| {
        workload::configmap(
            format!("unmanaged-{i:06}"),
            false,
            workload::content(i, 0, params.data_size),
        )
    });
    let took = workload::create_all(api, objects, params.concurrency).await?;
    tokio::time::sleep(UNMANAGED_SETTLE).await;
    Ok(took)
}

/// What the idle phase measured besides [`Steady`].
struct Idle {
    restart_cpu: f64,
    tail_cpu: f64,
    tail: Duration,
}

/// Idles with one restart in the middle, which makes the controller
/// re-list and re-check every source: the moment a controller that does
/// not compare carefully would rewrite everything.
async fn steady(
    bench: &Bench<'_>,
    launcher: &Launcher,
    running: Controller,
) -> anyhow::Result<(Controller, Steady, Idle)> {
    let idle = Duration::from_secs(bench.params.idle_secs);
    let started = Instant::now();
    let writes_before = bench.observer.state().writes();
    tokio::time::sleep(idle / 2).await;

    let stop_seconds = running.stop().await?.as_secs_f64();
    let Restarted {
        controller: mut running,
        ready_seconds,
        settled,
        settled_seconds,
        cpu_seconds: restart_cpu,
    } = restart(bench, launcher).await?;

    let end = (started + idle).max(settled + MIN_QUIET_TAIL);
    tokio::time::sleep_until(end.into()).await;
    running.ensure_running()?;
    let tail_cpu = running.cpu_seconds()? - restart_cpu;
    let writes = bench.observer.state().writes() - writes_before;
    let steady = Steady {
        idle_seconds: started.elapsed().as_secs_f64(),
        companion_writes_observed: writes,
        companion_writes_during_unmanaged: 0,
        controller_reported_writes: running.metric_sum(METRIC_WRITES).await?,
        restart: Restart {
            stop_seconds,
            ready_seconds,
            settled_seconds,
        },
    };
    let idle = Idle {
        restart_cpu,
        tail_cpu,
        tail: end.saturating_duration_since(settled),
    };
    Ok((running, steady, idle))
}

/// A controller started again over sources it had already converged.
pub(crate) struct Restarted {
    pub(crate) controller: Controller,
    /// From starting the process until /readyz (caches listed).
    pub(crate) ready_seconds: f64,
    /// When its pass over every source had finished.
    pub(crate) settled: Instant,
    pub(crate) settled_seconds: f64,
    /// The process's CPU until then: the re-list and the comparisons.
    pub(crate) cpu_seconds: f64,
}

/// Starts the controller over `bench`'s converged sources and waits until
/// it is ready and has compared every one: the re-list every restart pays.
pub(crate) async fn restart(bench: &Bench<'_>, launcher: &Launcher) -> anyhow::Result<Restarted> {
    let started = Instant::now();
    let mut controller = launcher.start()?;
    controller.wait_ready().await?;
    let ready_seconds = started.elapsed().as_secs_f64();
    let settled = controller
        .wait_quiet(bench.params.sources as f64, bench.convergence_timeout())
        .await?;
    Ok(Restarted {
        ready_seconds,
        settled_seconds: settled.saturating_duration_since(started).as_secs_f64(),
        cpu_seconds: controller.cpu_seconds()?,
        settled,
        controller,
    })
}

/// Deletes companions one at a time and times each until the watch shows
/// its successor.
pub(crate) async fn heal(bench: &Bench<'_>) -> anyhow::Result<Latency> {
    let mut samples = Vec::with_capacity(bench.params.samples);
    for index in bench.sample_indices(0) {
        let tick = Instant::now();
        let name = companion_name(&source_name(index));
        let old_uid = bench
            .observer
            .state()
            .companion(&name)
            .map(|c| c.uid.clone())
            .with_context(|| format!("companion {name} is not there to delete"))?;
        workload::delete(&bench.sources, &name, &old_uid).await?;
        let acknowledged = Instant::now();
        let back = bench
            .observer
            .wait_until(&format!("{name} to be recreated"), SAMPLE_TIMEOUT, |s| {
                s.companion(&name)
                    .filter(|c| c.uid != old_uid)
                    .map(|c| c.since)
            })
            .await?;
        samples.push(back.saturating_duration_since(acknowledged));
        tokio::time::sleep_until((tick + bench.params.sample_pace).into()).await;
    }
    Ok(Latency::of(samples))
}

/// Patches sources one at a time and times each until the watch shows the
/// new checksum on the companion.
async fn update(bench: &mut Bench<'_>) -> anyhow::Result<Latency> {
    let mut samples = Vec::with_capacity(bench.params.samples);
    for index in bench.sample_indices(1).collect::<Vec<_>>() {
        let tick = Instant::now();
        let source = source_name(index);
        let name = companion_name(&source);
        let (checksum, data) = bench.next_content(index);
        bench
            .observer
            .expect([(source.as_str(), checksum.as_str())]);
        workload::patch_data(&bench.sources, &source, &data).await?;
        let acknowledged = Instant::now();
        let updated = bench
            .observer
            .wait_until(&format!("{name} to be updated"), SAMPLE_TIMEOUT, |s| {
                s.companion(&name)
                    .filter(|c| c.checksum.as_deref() == Some(checksum.as_str()))
                    .map(|c| c.since)
            })
            .await?;
        samples.push(updated.saturating_duration_since(acknowledged));
        tokio::time::sleep_until((tick + bench.params.sample_pace).into()).await;
    }
    Ok(Latency::of(samples))
}

/// Changes every source at once, as a mass rollout of configuration would.
async fn burst(bench: &mut Bench<'_>) -> anyhow::Result<Burst> {
    let n = bench.params.sources;
    let changes: Vec<(String, String, _)> = (0..n)
        .map(|i| {
            let (checksum, data) = bench.next_content(i);
            (source_name(i), checksum, data)
        })
        .collect();
    bench.observer.expect(
        changes
            .iter()
            .map(|(name, checksum, _)| (name.as_str(), checksum.as_str())),
    );
    let started = Instant::now();
    let sources = &bench.sources;
    stream::iter(&changes)
        .map(|(name, _, data)| workload::patch_data(sources, name, data))
        .buffer_unordered(bench.params.concurrency)
        .try_collect::<()>()
        .await?;
    let patch_seconds = started.elapsed().as_secs_f64();
    let converged = bench
        .observer
        .wait_matching("burst convergence", n, bench.convergence_timeout())
        .await?;
    let converge_seconds = converged.saturating_duration_since(started).as_secs_f64();
    Ok(Burst {
        patch_seconds,
        converge_seconds,
        ratio_to_patching: converge_seconds / patch_seconds,
    })
}
