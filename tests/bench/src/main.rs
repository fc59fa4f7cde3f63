//! `mirror-bench`: see the library for what it measures.
#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

use mirror_bench::only::{OnlyParams, Phase};
use mirror_bench::params::{self, Params};
use mirror_bench::sweep::SweepParams;

/// Benchmarks configmap-mirror against a local control plane: convergence,
/// healing, update latency, steady-state writes, CPU and memory.
#[derive(Debug, Parser)]
#[command(name = "mirror-bench")]
struct Args {
    /// The controller binary to run [default: target/release/configmap-mirror]
    #[arg(long)]
    controller: Option<PathBuf>,
    /// Where to write the figures as JSON [default: target/bench/results.json]
    #[arg(long)]
    json: Option<PathBuf>,
    /// Quick preset: 200 sources, 1000 unmanaged, 20 samples, 10 s idle
    /// (with --sweep: sizes 50 and 200, fan-outs 5 and 20, 10 glob sources
    /// and 5 new namespaces); the flags below
    /// still override it.
    #[arg(long)]
    small: bool,
    /// Run one phase alone, on a control plane of its own, at the sizes
    /// its target is stated for (--sources and --fan-out default to
    /// 10000; with --small, 200 and 20)
    #[arg(long, value_enum, conflicts_with = "sweep")]
    only: Option<Phase>,
    /// Labeled source ConfigMaps [default: 10000]
    #[arg(long)]
    sources: Option<usize>,
    /// Bytes of data per source, over 4 keys [default: 1024]
    #[arg(long)]
    data_size: Option<usize>,
    /// Unlabeled ConfigMaps created to measure their memory cost [default: 50000]
    #[arg(long)]
    unmanaged: Option<usize>,
    /// Controller --concurrency, and the bench's own write concurrency [default: 16]
    #[arg(long)]
    concurrency: Option<usize>,
    /// Heal and update latency samples [default: 200]
    #[arg(long)]
    samples: Option<usize>,
    /// Namespaces one source is mirrored into [default: 500; with --only,
    /// 10000]
    #[arg(long)]
    fan_out: Option<usize>,
    /// Refused sources created and deleted, for the retry state's figure [default: 2000]
    #[arg(long)]
    churn: Option<usize>,
    /// Sources of 512 KiB, for memory against content [default: 150]
    #[arg(long)]
    big_sources: Option<usize>,
    /// Seconds of idling, one controller restart included [default: 60]
    #[arg(long)]
    idle_secs: Option<u64>,
    /// Control-plane state directory [default: target/bench/state]
    #[arg(long)]
    state_dir: Option<PathBuf>,
    /// Measure how the cost grows instead: each size on a control plane of
    /// its own, then fan-outs, with SVG charts (see docs/contributing/benchmarks.md)
    #[arg(long)]
    sweep: bool,
    /// Sweep: source counts [default: 1000,10000,50000,100000]
    #[arg(long, value_delimiter = ',', requires = "sweep")]
    sizes: Option<Vec<usize>>,
    /// Sweep: namespaces one source is mirrored into, each timed against
    /// its API floor and followed by copy heals [default: 100,1000,10000]
    #[arg(long, value_delimiter = ',', requires = "sweep")]
    fan_outs: Option<Vec<usize>>,
    /// Sweep: the peer runs only the fan-outs up to this many namespaces
    /// [default: 2000]
    #[arg(long, requires = "sweep")]
    peer_max_fan_out: Option<usize>,
    /// Sweep and --only: copies deleted one at a time after each fan-out, and mirrors
    /// after --mirrored-sources [default: 50]
    #[arg(long)]
    copy_heal_samples: Option<usize>,
    /// Sweep: sources each mirrored into --mirror-namespaces [default: 1000]
    #[arg(long, requires = "sweep")]
    mirrored_sources: Option<usize>,
    /// Sweep: namespaces each of --mirrored-sources goes to [default: 10]
    #[arg(long, requires = "sweep")]
    mirror_namespaces: Option<usize>,
    /// Sweep and --only: sources whose mirror-to glob names namespaces not created yet
    /// [default: 100]
    #[arg(long)]
    glob_sources: Option<usize>,
    /// Sweep and --only: namespaces then created one at a time, each timed until every
    /// --glob-sources mirror is in it [default: 20]
    #[arg(long)]
    glob_namespaces: Option<usize>,
    /// --only hostile-tenant: which attacks run, of 1 to 6 [default: all]
    #[arg(long, value_delimiter = ',', requires = "only")]
    attacks: Option<Vec<u8>>,
    /// --only hostile-tenant: seconds each attack is watched once its
    /// objects are written [default: 30; with --small, 5]
    #[arg(long, requires = "only")]
    attack_secs: Option<u64>,
    /// --only hostile-tenant: the attacks' sources without the managed label, so that
    /// the controller never sees them: the other tenant's heals then show what the
    /// attacks' own writes cost the API server and etcd, the controller aside
    #[arg(long, requires = "only")]
    unlabelled: bool,
    /// Sweep: a kubernetes-replicator binary to measure beside it
    /// [default: the one in the cache, if built; see docs/contributing/benchmarks.md]
    #[arg(long, requires = "sweep")]
    peer: Option<PathBuf>,
}

impl Args {
    fn params(&self) -> Params {
        let mut p = if self.small {
            Params::small()
        } else {
            Params::default()
        };
        let set = |field: &mut usize, value: Option<usize>| *field = value.unwrap_or(*field);
        set(&mut p.sources, self.sources);
        set(&mut p.data_size, self.data_size);
        set(&mut p.unmanaged, self.unmanaged);
        set(&mut p.concurrency, self.concurrency);
        set(&mut p.samples, self.samples);
        set(&mut p.fan_out, self.fan_out);
        set(&mut p.churn, self.churn);
        set(&mut p.big_sources, self.big_sources);
        p.idle_secs = self.idle_secs.unwrap_or(p.idle_secs);
        if let Some(dir) = &self.state_dir {
            p.state_dir = dir.clone();
        }
        p
    }

    fn only_params(&self, phase: Phase) -> OnlyParams {
        let mut p = if self.small {
            OnlyParams::small(phase)
        } else {
            OnlyParams::new(phase)
        };
        p.sources = self.sources.unwrap_or(p.sources);
        p.namespaces = self.fan_out.unwrap_or(p.namespaces);
        p.sweep = self.sweep_params_from(p.sweep);
        let hostile = &mut p.hostile;
        hostile.fan_namespaces = self.fan_out.unwrap_or(hostile.fan_namespaces);
        hostile.quiet_samples = self.samples.unwrap_or(hostile.quiet_samples);
        hostile.concurrency = self.concurrency.unwrap_or(hostile.concurrency);
        hostile.attack_secs = self.attack_secs.unwrap_or(hostile.attack_secs);
        hostile.unlabelled = self.unlabelled;
        if let Some(attacks) = &self.attacks {
            hostile.attacks = attacks.clone();
        }
        p
    }

    fn sweep_params(&self) -> SweepParams {
        self.sweep_params_from(if self.small {
            SweepParams::small()
        } else {
            SweepParams::default()
        })
    }

    /// `p` with the flags given on top.
    fn sweep_params_from(&self, mut p: SweepParams) -> SweepParams {
        let set = |field: &mut usize, value: Option<usize>| *field = value.unwrap_or(*field);
        set(&mut p.samples, self.samples);
        set(&mut p.data_size, self.data_size);
        set(&mut p.concurrency, self.concurrency);
        set(&mut p.mirrored_sources, self.mirrored_sources);
        set(&mut p.mirror_namespaces, self.mirror_namespaces);
        set(&mut p.peer_max_fan_out, self.peer_max_fan_out);
        set(&mut p.copy_heal_samples, self.copy_heal_samples);
        set(&mut p.glob_sources, self.glob_sources);
        set(&mut p.glob_namespaces, self.glob_namespaces);
        if let Some(sizes) = &self.sizes {
            p.sizes = sizes.clone();
        }
        if let Some(fan_outs) = &self.fan_outs {
            p.fan_outs = fan_outs.clone();
        }
        if let Some(dir) = &self.state_dir {
            p.state_dir = dir.clone();
        }
        if let Some(peer) = &self.peer {
            p.peer = Some(peer.clone());
        }
        p
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    let controller = args
        .controller
        .clone()
        .unwrap_or_else(params::default_controller);
    if let Some(phase) = args.only {
        let params = args.only_params(phase);
        let json = args
            .json
            .clone()
            .unwrap_or_else(|| params.sweep.out_dir.join(format!("{}.json", phase.name())));
        let results = mirror_bench::only::run(params, &controller).await;
        return match report(results, &json, |r| (r.table(), r.write_json(&json))) {
            Some(_) => ExitCode::SUCCESS,
            None => ExitCode::FAILURE,
        };
    }
    if args.sweep {
        let params = args.sweep_params();
        let json = args
            .json
            .clone()
            .unwrap_or_else(|| params.out_dir.join("sweep.json"));
        let results = mirror_bench::sweep::run(params, &controller).await;
        return match report(results, &json, |r| (r.table(), r.write_json(&json))) {
            Some(_) => ExitCode::SUCCESS,
            None => ExitCode::FAILURE,
        };
    }
    let json = args
        .json
        .clone()
        .unwrap_or_else(|| params::bench_dir().join("results.json"));
    let results = mirror_bench::run(args.params(), &controller).await;
    match report(results, &json, |r| (r.table(), r.write_json(&json))) {
        Some(results) if results.passed() => ExitCode::SUCCESS,
        Some(_) => {
            eprintln!("mirror-bench: the controller wrote companions while nothing had changed");
            ExitCode::FAILURE
        }
        None => ExitCode::FAILURE,
    }
}

/// Prints a run's table and writes its JSON to `json`; None, with the
/// reason on stderr, when the run or the write failed.
fn report<R>(
    results: anyhow::Result<R>,
    json: &std::path::Path,
    table_and_write: impl FnOnce(&R) -> (String, anyhow::Result<()>),
) -> Option<R> {
    let results = results.map_err(|e| eprintln!("mirror-bench: {e:#}")).ok()?;
    let (table, written) = table_and_write(&results);
    println!("{table}");
    written.map_err(|e| eprintln!("mirror-bench: {e:#}")).ok()?;
    println!("figures written to {}", json.display());
    Some(results)
}
