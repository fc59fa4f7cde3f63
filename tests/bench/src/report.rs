//! The figures of one run, as a table for people and JSON for tools.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use serde::Serialize;

use crate::params::Params;
use crate::procstat::Memory;

const MIB: f64 = 1024.0 * 1024.0;
// The targets are in decimal megabytes, the stricter reading of "MB".
const MB: f64 = 1_000_000.0;

#[derive(Clone, Debug, Serialize)]
pub struct Results {
    /// When the run finished (UTC, RFC 3339).
    pub date: String,
    pub kubernetes_version: String,
    pub controller_build: Build,
    pub params: Params,
    pub floor: Floor,
    pub cold: Cold,
    pub steady: Steady,
    pub heal: Latency,
    pub update: Latency,
    pub burst: Burst,
    pub fan_out: crate::fanout::FanOut,
    pub churn: crate::churn::Churn,
    pub secrets: crate::secrets::SecretFigures,
    pub big: crate::big::BigSources,
    pub memory: MemoryFigures,
    pub cpu: Cpu,
    pub targets: Vec<Target>,
    /// Filled in once the controller has stopped.
    pub controller_log: Option<LogSummary>,
}

/// What the controller logged over the whole run.
#[derive(Clone, Debug, Serialize)]
pub struct LogSummary {
    /// A copy that outlives the state directory.
    pub path: String,
    pub lines: usize,
    pub warnings: usize,
    pub errors: usize,
    /// The first few warnings and errors, verbatim.
    pub first_problems: Vec<String>,
}

impl LogSummary {
    /// Counts levels in the controller's JSON log.
    pub fn of(path: &Path, text: &str) -> LogSummary {
        let level = |line: &str, level: &str| line.contains(&format!("\"level\":\"{level}\""));
        let problems = || {
            text.lines()
                .filter(|line| level(line, "WARN") || level(line, "ERROR"))
        };
        LogSummary {
            path: crate::params::shown_path(path),
            lines: text.lines().count(),
            warnings: text.lines().filter(|line| level(line, "WARN")).count(),
            errors: text.lines().filter(|line| level(line, "ERROR")).count(),
            first_problems: problems().take(5).map(str::to_owned).collect(),
        }
    }
}

/// Which controller was measured: the workspace changes under a run, so
/// the figures name the binary and the source state it was likely built from.
#[derive(Clone, Debug, Serialize)]
pub struct Build {
    pub binary: String,
    pub size_bytes: u64,
    /// The binary's modification time (UTC, RFC 3339).
    pub modified: String,
    /// `git rev-parse --short HEAD` of the workspace, if git is there.
    pub git_head: Option<String>,
    /// Whether the working tree had uncommitted changes during the run.
    pub git_dirty: Option<bool>,
}

impl Build {
    pub fn describe(binary: &Path, workspace: &Path) -> anyhow::Result<Build> {
        let meta = std::fs::metadata(binary)
            .with_context(|| format!("reading metadata of {}", binary.display()))?;
        let modified = meta
            .modified()
            .ok()
            .and_then(|time| jiff::Timestamp::try_from(time).ok())
            .and_then(|time| jiff::Timestamp::from_second(time.as_second()).ok())
            .map_or_else(|| "unknown".to_owned(), |time| time.to_string());
        let git = |args: &[&str]| {
            let out = std::process::Command::new("git")
                .arg("-C")
                .arg(workspace)
                .args(args)
                .output()
                .ok()
                .filter(|out| out.status.success())?;
            String::from_utf8(out.stdout).ok()
        };
        Ok(Build {
            binary: crate::params::shown_path(binary),
            size_bytes: meta.len(),
            modified,
            git_head: git(&["rev-parse", "--short", "HEAD"]).map(|s| s.trim().to_owned()),
            git_dirty: git(&["status", "--porcelain", "--untracked-files=no"])
                .map(|s| !s.trim().is_empty()),
        })
    }
}

/// The API's own speed: the bench creating the sources, controller off.
#[derive(Clone, Debug, Serialize)]
pub struct Floor {
    pub seconds: f64,
    pub writes_per_second: f64,
}

/// From starting the controller until every companion exists and matches.
#[derive(Clone, Debug, Serialize)]
pub struct Cold {
    pub seconds: f64,
    /// Until its /readyz: process start and both caches listed.
    pub ready_seconds: f64,
    pub ratio_to_floor: f64,
    pub companions_per_second: f64,
    /// Events the controller had created by then: API writes on top of the
    /// companions, which the floor does not have to make.
    pub events_at_convergence: usize,
}

/// Companion writes seen while nothing changed, one restart included.
#[derive(Clone, Debug, Serialize)]
pub struct Steady {
    pub idle_seconds: f64,
    /// Creates, updates and deletes of companions seen by the bench's watch.
    pub companion_writes_observed: u64,
    /// Same, during the creation of the unmanaged ConfigMaps.
    pub companion_writes_during_unmanaged: u64,
    /// The restarted controller's own count, for cross-checking.
    pub controller_reported_writes: f64,
    pub restart: Restart,
}

#[derive(Clone, Debug, Serialize)]
pub struct Restart {
    pub stop_seconds: f64,
    /// From starting the new process until /readyz (caches listed).
    pub ready_seconds: f64,
    /// Until its pass over every object had finished (last comparison).
    pub settled_seconds: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct Latency {
    pub samples: usize,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    pub mean_ms: f64,
    /// Every sample in the order taken, to spot warm-up or periodic stalls.
    pub in_order_ms: Vec<f64>,
}

impl Latency {
    pub fn of(mut samples: Vec<Duration>) -> Latency {
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        let in_order_ms = samples.iter().copied().map(ms).collect();
        samples.sort();
        // Nearest rank: a reported percentile is always a measured sample.
        let rank = |p: f64| {
            let n = samples.len();
            let index = ((p * n as f64).ceil() as usize).clamp(1, n.max(1)) - 1;
            samples.get(index).copied().map_or(0.0, ms)
        };
        let mean = if samples.is_empty() {
            0.0
        } else {
            samples.iter().copied().map(ms).sum::<f64>() / samples.len() as f64
        };
        Latency {
            samples: samples.len(),
            p50_ms: rank(0.50),
            p90_ms: rank(0.90),
            p99_ms: rank(0.99),
            max_ms: rank(1.0),
            mean_ms: mean,
            in_order_ms,
        }
    }
}

/// Every source patched at once.
#[derive(Clone, Debug, Serialize)]
pub struct Burst {
    /// How long the bench took to send all patches.
    pub patch_seconds: f64,
    /// From the first patch until every companion matched.
    pub converge_seconds: f64,
    /// The converge time over the time the patches alone took.
    pub ratio_to_patching: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct MemoryFigures {
    /// After the restarted controller re-listed and checked every source.
    pub after_convergence: Memory,
    pub bytes_per_source: f64,
    pub unmanaged_create_seconds: f64,
    pub after_unmanaged: Memory,
    pub unmanaged_rss_delta_bytes: i64,
    /// At the end of the run, after the heal, update and burst phases.
    pub at_end: Memory,
}

/// Controller CPU seconds (user + system) per phase.
#[derive(Clone, Debug, Serialize)]
pub struct Cpu {
    pub cold_seconds: f64,
    pub cold_per_1000_sources: f64,
    /// The restarted process, from start until it settled.
    pub restart_seconds: f64,
    pub restart_per_1000_sources: f64,
    /// The rest of the idle time, after the restart settled.
    pub idle_seconds_per_minute: f64,
    pub unmanaged_seconds: f64,
    pub heal_seconds: f64,
    pub update_seconds: f64,
    pub burst_seconds: f64,
    pub burst_per_1000_sources: f64,
    pub by_process: ProcessCpu,
}

/// CPU seconds of every process in the heaviest phases: the machine is
/// shared, so this shows who the time went to, the bench included.
#[derive(Clone, Debug, Serialize)]
pub struct ProcessCpu {
    pub floor: BTreeMap<String, f64>,
    pub cold: BTreeMap<String, f64>,
    pub burst: BTreeMap<String, f64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Target {
    pub name: String,
    pub target: String,
    pub value: String,
    pub pass: bool,
    /// Only a failed asserted target fails the run.
    pub asserted: bool,
}

impl Results {
    /// Compares the figures with the targets.
    pub fn assess(&self) -> Vec<Target> {
        let Results {
            floor,
            cold,
            steady,
            heal,
            update,
            memory,
            churn,
            secrets,
            big,
            params,
            cpu,
            ..
        } = self;
        let target = |name: &str, target: &str, value: String, pass: bool| Target {
            name: name.to_owned(),
            target: target.to_owned(),
            value,
            pass,
            asserted: false,
        };
        let writes = steady.companion_writes_observed + steady.companion_writes_during_unmanaged;
        let rss = memory.after_convergence.rss_bytes as f64;
        let first_heal_ms = heal.in_order_ms.first().copied().unwrap_or(f64::NAN);
        vec![
            Target {
                asserted: true,
                ..target(
                    &format!("retry state after {} refused sources", churn.cycles),
                    "= 0 objects",
                    churn.failing_after.to_string(),
                    churn.failing_after == 0.0,
                )
            },
            Target {
                asserted: true,
                ..target(
                    "steady-state companion writes",
                    "= 0",
                    writes.to_string(),
                    writes == 0,
                )
            },
            target(
                "cold convergence",
                "<= 1.3 x floor",
                format!(
                    "{:.2} x ({:.1}s vs {:.1}s)",
                    cold.ratio_to_floor, cold.seconds, floor.seconds
                ),
                cold.ratio_to_floor <= 1.3,
            ),
            target(
                "heal p99",
                "<= 10 ms",
                format!("{:.1} ms", heal.p99_ms),
                heal.p99_ms <= 10.0,
            ),
            // The heal phase follows the restart: its first sample is the
            // first heal the restarted controller makes.
            target(
                "first heal after the restart",
                "<= heal p99",
                format!("{:.1} ms", first_heal_ms),
                first_heal_ms <= heal.p99_ms,
            ),
            target(
                "update p99",
                "<= 10 ms",
                format!("{:.1} ms", update.p99_ms),
                update.p99_ms <= 10.0,
            ),
            target(
                &format!("RSS with {} sources", params.sources),
                "<= 32 MB = 30.5 MiB (at 10,000)",
                format!("{:.1} MiB", rss / MIB),
                rss <= 32.0 * MB,
            ),
            target(
                "idle CPU after settling",
                "= 0",
                format!("{:.3} s per minute", cpu.idle_seconds_per_minute),
                cpu.idle_seconds_per_minute == 0.0,
            ),
            target(
                &format!("+{} unmanaged ConfigMaps", params.unmanaged),
                "< 5 MB = 4.8 MiB",
                format!("{:+.1} MiB", memory.unmanaged_rss_delta_bytes as f64 / MIB),
                (memory.unmanaged_rss_delta_bytes as f64) < 5.0 * MB,
            ),
            target(
                &format!("+{} unmanaged Secrets", secrets.unmanaged),
                "< 5 MB = 4.8 MiB",
                format!("{:+.1} MiB", secrets.unmanaged_rss_delta_bytes as f64 / MIB),
                (secrets.unmanaged_rss_delta_bytes as f64) < 5.0 * MB,
            ),
            target(
                &format!(
                    "RSS growth for {} sources of {} KiB",
                    big.sources,
                    big.bytes_each / 1024
                ),
                "< 16 MB = 15.3 MiB",
                format!("{:+.1} MiB", big.rss_delta_bytes as f64 / MIB),
                (big.rss_delta_bytes as f64) < 16.0 * MB,
            ),
            target(
                &format!(
                    "peak over settled RSS, {} sources of {} KiB",
                    big.sources,
                    big.bytes_each / 1024
                ),
                "< 2 x (issue 51)",
                format!(
                    "{:.2} x (peak {:.1} MiB{}, settled {:.1} MiB)",
                    big.peak_over_settled,
                    big.after.hwm_bytes as f64 / MIB,
                    if big.peak_reset {
                        ""
                    } else {
                        " since the start"
                    },
                    big.after.rss_bytes as f64 / MIB
                ),
                big.peak_over_settled < 2.0,
            ),
            Target {
                asserted: true,
                ..target(
                    "copy writes while unmanaged Secrets are created",
                    "= 0",
                    secrets.writes_during_unmanaged.to_string(),
                    secrets.writes_during_unmanaged == 0.0,
                )
            },
        ]
    }

    /// Whether every asserted target was met.
    pub fn passed(&self) -> bool {
        self.targets.iter().all(|t| t.pass || !t.asserted)
    }

    pub fn write_json(&self, path: &Path) -> anyhow::Result<()> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        let json = serde_json::to_string_pretty(self)?;
        std::fs::write(path, json + "\n").with_context(|| format!("writing {}", path.display()))
    }

    pub fn table(&self) -> String {
        let p = &self.params;
        let mut rows: Vec<(String, String)> = Vec::new();
        let mut row = |label: &str, value: String| rows.push((label.to_owned(), value));
        let lat = |l: &Latency| {
            format!(
                "p50 {:.1}  p90 {:.1}  p99 {:.1}  max {:.1} ms  (n={})",
                l.p50_ms, l.p90_ms, l.p99_ms, l.max_ms, l.samples
            )
        };
        let by_process = |cpu: &BTreeMap<String, f64>| {
            let parts: Vec<String> = cpu
                .iter()
                .map(|(name, seconds)| format!("{name} {seconds:.1}"))
                .collect();
            format!("{} (CPU s)", parts.join(", "))
        };
        let mem = |m: &Memory| {
            format!(
                "RSS {:.1} MiB, peak {:.1} MiB",
                m.rss_bytes as f64 / MIB,
                m.hwm_bytes as f64 / MIB
            )
        };
        row(
            "1. API floor (bench creates sources)",
            format!(
                "{:.1} s, {:.0} writes/s",
                self.floor.seconds, self.floor.writes_per_second
            ),
        );
        row("   all processes", by_process(&self.cpu.by_process.floor));
        row(
            "2. cold convergence",
            format!(
                "{:.1} s, {:.0} companions/s, {:.2} x floor (ready after {:.2} s)",
                self.cold.seconds,
                self.cold.companions_per_second,
                self.cold.ratio_to_floor,
                self.cold.ready_seconds
            ),
        );
        row(
            "   CPU",
            format!(
                "{:.2} s, {:.3} s per 1,000 sources",
                self.cpu.cold_seconds, self.cpu.cold_per_1000_sources
            ),
        );
        row("   all processes", by_process(&self.cpu.by_process.cold));
        row(
            "   Events created meanwhile",
            self.cold.events_at_convergence.to_string(),
        );
        row(
            "3. steady-state companion writes",
            format!(
                "{} in {:.0} s idle incl. a restart; {} while unmanaged were created; controller counted {}",
                self.steady.companion_writes_observed,
                self.steady.idle_seconds,
                self.steady.companion_writes_during_unmanaged,
                self.steady.controller_reported_writes
            ),
        );
        let r = &self.steady.restart;
        row(
            "   restart",
            format!(
                "stop {:.2} s, ready {:.2} s, settled {:.2} s, CPU {:.2} s ({:.3} s per 1,000)",
                r.stop_seconds,
                r.ready_seconds,
                r.settled_seconds,
                self.cpu.restart_seconds,
                self.cpu.restart_per_1000_sources
            ),
        );
        row(
            "   idle CPU after settling",
            format!("{:.3} s per minute", self.cpu.idle_seconds_per_minute),
        );
        row("4. heal (delete -> recreated)", lat(&self.heal));
        row(
            "   CPU",
            format!(
                "{:.2} s for {} heals",
                self.cpu.heal_seconds, self.heal.samples
            ),
        );
        row("5. update propagation", lat(&self.update));
        row(
            "   CPU",
            format!(
                "{:.2} s for {} updates",
                self.cpu.update_seconds, self.update.samples
            ),
        );
        row(
            "6. burst (patch all sources)",
            format!(
                "converged in {:.1} s; patching alone {:.1} s ({:.2} x)",
                self.burst.converge_seconds, self.burst.patch_seconds, self.burst.ratio_to_patching
            ),
        );
        row(
            "   CPU",
            format!(
                "{:.2} s, {:.3} s per 1,000 sources",
                self.cpu.burst_seconds, self.cpu.burst_per_1000_sources
            ),
        );
        row("   all processes", by_process(&self.cpu.by_process.burst));
        row(
            &format!("8. fan-out into {} namespaces", self.fan_out.namespaces),
            format!(
                "all mirrors in {:.2} s; one update reached all in {:.2} s",
                self.fan_out.converge_seconds, self.fan_out.propagate_seconds
            ),
        );
        let c = &self.churn;
        row(
            &format!("9. churn: {} refused sources", c.cycles),
            format!(
                "retry state for {} at most, {} after; {} -> {}, delta {:+.2} MiB ({:.1} s)",
                c.failing_at_most,
                c.failing_after,
                mem(&c.before),
                mem(&c.after),
                c.rss_delta_bytes as f64 / MIB,
                c.seconds
            ),
        );
        let s = &self.secrets;
        row(
            &format!("10. {} Secrets", s.sources),
            format!(
                "all copies in {:.2} s; {} -> {}, {:.0} bytes per Secret",
                s.converge_seconds,
                mem(&s.before),
                mem(&s.after_sources),
                s.bytes_per_source
            ),
        );
        row(
            &format!("   + {} unmanaged Secrets", s.unmanaged),
            format!(
                "{}; delta {:+.2} MiB; {} copy writes",
                mem(&s.after_unmanaged),
                s.unmanaged_rss_delta_bytes as f64 / MIB,
                s.writes_during_unmanaged
            ),
        );
        let b = &self.big;
        row(
            &format!("11. {} sources of {} KiB", b.sources, b.bytes_each / 1024),
            format!(
                "all companions in {:.1} s; {} -> {}, delta {:+.2} MiB",
                b.converge_seconds,
                mem(&b.before),
                mem(&b.after),
                b.rss_delta_bytes as f64 / MIB
            ),
        );
        let m = &self.memory;
        row(
            "7. memory after re-list convergence",
            format!(
                "{}; {:.0} bytes per source; {:.1} MiB of the RSS are file pages",
                mem(&m.after_convergence),
                m.bytes_per_source,
                m.after_convergence.rss_file_bytes as f64 / MIB
            ),
        );
        row(
            &format!("   + {} unmanaged ConfigMaps", p.unmanaged),
            format!(
                "{}; delta {:+.2} MiB (created in {:.1} s; controller CPU {:.2} s)",
                mem(&m.after_unmanaged),
                m.unmanaged_rss_delta_bytes as f64 / MIB,
                m.unmanaged_create_seconds,
                self.cpu.unmanaged_seconds
            ),
        );
        row("   at the end of the run", mem(&m.at_end));
        if let Some(log) = &self.controller_log {
            row(
                "controller log",
                format!(
                    "{} lines, {} warnings, {} errors ({})",
                    log.lines, log.warnings, log.errors, log.path
                ),
            );
        }

        let width = rows.iter().map(|(l, _)| l.len()).max().unwrap_or(0);
        let mut out = String::new();
        let _ = writeln!(
            out,
            "configmap-mirror benchmark, {} (Kubernetes {})",
            self.date, self.kubernetes_version
        );
        let b = &self.controller_build;
        let _ = writeln!(
            out,
            "controller {} ({} bytes, built {}; workspace {}{})",
            b.binary,
            b.size_bytes,
            b.modified,
            b.git_head.as_deref().unwrap_or("unknown"),
            if b.git_dirty == Some(true) {
                " + uncommitted changes"
            } else {
                ""
            }
        );
        let _ = writeln!(
            out,
            "sources {}, data {} B in {} keys, unmanaged {}, concurrency {}, samples {}, idle {} s",
            p.sources,
            p.data_size,
            crate::params::DATA_KEYS,
            p.unmanaged,
            p.concurrency,
            p.samples,
            p.idle_secs
        );
        let _ = writeln!(out);
        for (label, value) in &rows {
            let _ = writeln!(out, "{label:<width$}  {value}");
        }
        let _ = writeln!(out);
        let name_width = self.targets.iter().map(|t| t.name.len()).max().unwrap_or(0);
        let target_width = self
            .targets
            .iter()
            .map(|t| t.target.len())
            .max()
            .unwrap_or(0);
        for t in &self.targets {
            let verdict = match (t.pass, t.asserted) {
                (true, _) => "PASS",
                (false, false) => "MISS",
                (false, true) => "FAIL",
            };
            let _ = writeln!(
                out,
                "{verdict}  {:<name_width$}  {:<target_width$}  {}",
                t.name, t.target, t.value
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_levels_are_counted_from_json_lines() {
        let text = "{\"level\":\"INFO\",\"fields\":{}}\n\
                    {\"level\":\"WARN\",\"fields\":{}}\n\
                    {\"level\":\"ERROR\",\"fields\":{}}\n";
        let summary = LogSummary::of(Path::new("x.log"), text);
        assert_eq!((summary.lines, summary.warnings, summary.errors), (3, 1, 1));
        assert_eq!(summary.first_problems.len(), 2);
    }

    #[test]
    fn percentiles_are_nearest_rank_samples() {
        let samples = (1..=100).map(Duration::from_millis).collect();
        let latency = Latency::of(samples);
        assert_eq!(latency.p50_ms, 50.0);
        assert_eq!(latency.p90_ms, 90.0);
        assert_eq!(latency.p99_ms, 99.0);
        assert_eq!(latency.max_ms, 100.0);
        assert!((latency.mean_ms - 50.5).abs() < 1e-9);
    }

    #[test]
    fn few_samples_give_the_largest_for_high_percentiles() {
        let latency = Latency::of(vec![Duration::from_millis(3), Duration::from_millis(1)]);
        assert_eq!(latency.p50_ms, 1.0);
        assert_eq!(latency.p99_ms, 3.0);
        assert_eq!(Latency::of(Vec::new()).p99_ms, 0.0);
    }
}
