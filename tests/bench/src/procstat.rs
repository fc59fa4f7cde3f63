//! What the controller process costs, read from procfs: the kernel's own
//! accounting, so the controller needs no cooperation and no profiler.

use std::collections::BTreeMap;
use std::process::Command;
use std::sync::OnceLock;

use anyhow::{Context, bail};
use serde::Serialize;

/// CPU time (user + system, all threads) the process has used so far.
pub fn cpu_seconds(pid: u32) -> anyhow::Result<f64> {
    let path = format!("/proc/{pid}/stat");
    let stat = std::fs::read_to_string(&path).with_context(|| format!("reading {path}"))?;
    let ticks = cpu_ticks(&stat).with_context(|| format!("unexpected format of {path}"))?;
    Ok(ticks as f64 / clock_ticks_per_second() as f64)
}

/// utime + stime from the text of `/proc/PID/stat`.
fn cpu_ticks(stat: &str) -> Option<u64> {
    // The command name (field 2) is in parentheses and may contain spaces
    // and parentheses itself, so fields are counted from its last ')'. What
    // follows starts at field 3; utime and stime are fields 14 and 15.
    let (_, rest) = stat.rsplit_once(')')?;
    let mut fields = rest.split_whitespace().skip(14 - 3);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(utime + stime)
}

/// The unit of the stat times; nearly always 100, but it is the kernel's
/// configuration that decides, so it is asked once.
fn clock_ticks_per_second() -> u64 {
    static TICKS: OnceLock<u64> = OnceLock::new();
    *TICKS.get_or_init(|| {
        Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .filter(|out| out.status.success())
            .and_then(|out| String::from_utf8(out.stdout).ok())
            .and_then(|text| text.trim().parse().ok())
            .filter(|&ticks| ticks > 0)
            .unwrap_or(100)
    })
}

/// CPU seconds used by each of several processes, for splitting a phase's
/// cost between the controller, the API server, etcd and the bench itself.
#[derive(Clone, Debug)]
pub struct CpuSnapshot(Vec<(String, f64)>);

impl CpuSnapshot {
    /// Processes that have exited are left out.
    pub fn take(processes: &[(String, u32)]) -> CpuSnapshot {
        CpuSnapshot(
            processes
                .iter()
                .filter_map(|(name, pid)| Some((name.clone(), cpu_seconds(*pid).ok()?)))
                .collect(),
        )
    }

    /// CPU seconds each process used since `earlier`. A process missing
    /// from `earlier` was started since, so all its time counts.
    pub fn since(&self, earlier: &CpuSnapshot) -> BTreeMap<String, f64> {
        self.0
            .iter()
            .map(|(name, now)| {
                let before = earlier
                    .0
                    .iter()
                    .find(|(n, _)| n == name)
                    .map_or(0.0, |(_, s)| *s);
                (name.clone(), now - before)
            })
            .collect()
    }
}

/// Resident memory now and at its peak.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Memory {
    pub rss_bytes: u64,
    pub hwm_bytes: u64,
    /// The part of `rss_bytes` that is pages of files, mostly the binary's
    /// own code: shared with the page cache, and dropped by the kernel under
    /// pressure rather than swapped or counted as a leak.
    pub rss_file_bytes: u64,
}

pub fn memory(pid: u32) -> anyhow::Result<Memory> {
    let path = format!("/proc/{pid}/status");
    let status = std::fs::read_to_string(&path).with_context(|| format!("reading {path}"))?;
    match (
        kib_field(&status, "VmRSS:"),
        kib_field(&status, "VmHWM:"),
        kib_field(&status, "RssFile:"),
    ) {
        (Some(rss), Some(hwm), Some(file)) => Ok(Memory {
            rss_bytes: rss * 1024,
            hwm_bytes: hwm * 1024,
            rss_file_bytes: file * 1024,
        }),
        _ => bail!("{path} has no VmRSS/VmHWM/RssFile (has the process exited?)"),
    }
}

/// Resets the process's peak resident memory (VmHWM) to its current RSS,
/// so that a later [`memory`] gives the peak since now: the kernel's
/// `clear_refs` value 5. Fails where the kernel or the rights refuse it.
pub fn reset_peak(pid: u32) -> anyhow::Result<()> {
    let path = format!("/proc/{pid}/clear_refs");
    std::fs::write(&path, "5").with_context(|| format!("writing 5 to {path}"))
}

/// A `Name:  1234 kB` line of `/proc/PID/status`, in KiB.
fn kib_field(status: &str, name: &str) -> Option<u64> {
    let line = status.lines().find(|line| line.starts_with(name))?;
    let mut words = line[name.len()..].split_whitespace();
    let value = words.next()?.parse().ok()?;
    (words.next() == Some("kB")).then_some(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_ticks_are_found_after_a_command_name_with_spaces_and_parens() {
        let stat = "4242 (tokio (rt) x) S 1 4242 4242 0 -1 4194560 100 0 0 0 \
                    250 75 0 0 20 0 9 0 1000 100000 500";
        assert_eq!(cpu_ticks(stat), Some(325));
        assert_eq!(cpu_ticks("garbage"), None);
    }

    #[test]
    fn memory_fields_are_read_in_kib() {
        let status = "Name:\tx\nVmHWM:\t  2140 kB\nVmRSS:\t  2048 kB\nRssFile:\t   512 kB\n";
        assert_eq!(kib_field(status, "VmRSS:"), Some(2048));
        assert_eq!(kib_field(status, "VmHWM:"), Some(2140));
        assert_eq!(kib_field(status, "RssFile:"), Some(512));
        assert_eq!(kib_field(status, "VmSwap:"), None);
    }

    #[test]
    fn our_own_process_can_be_measured() {
        let pid = std::process::id();
        assert!(cpu_seconds(pid).unwrap() >= 0.0);
        let memory = memory(pid).unwrap();
        assert!(memory.rss_bytes > 0 && memory.hwm_bytes >= memory.rss_bytes);
        assert!(memory.rss_file_bytes > 0 && memory.rss_file_bytes < memory.rss_bytes);
    }

    #[test]
    fn a_reset_peak_falls_back_to_the_current_rss() {
        let pid = std::process::id();
        let ballast = vec![1u8; 64 << 20];
        std::hint::black_box(&ballast);
        drop(ballast);
        reset_peak(pid).unwrap();
        let memory = memory(pid).unwrap();
        assert!(
            memory.hwm_bytes < memory.rss_bytes + (32 << 20),
            "{memory:?}"
        );
    }
}
