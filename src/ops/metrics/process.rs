//! The standard `process_*` series every Prometheus client exports and
//! every controller dashboard plots: CPU, memory, file descriptors and the
//! start time, read from `/proc/self` at each scrape. No maintained crate
//! plugs into prometheus-client's `Collector`, so this one does.
//!
//! Parsing is pure and unit-tested; a file that cannot be read or parsed
//! leaves its series out of that scrape, never fails the scrape.

use std::fs;

use prometheus_client::{
    collector::Collector,
    encoding::{DescriptorEncoder, EncodeMetric},
    metrics::{counter::ConstCounter, gauge::ConstGauge},
};

/// Clock ticks per second in `/proc/<pid>/stat`: Linux reports them in
/// USER_HZ, which is 100 on every architecture's user-space ABI.
const TICKS_PER_SECOND: f64 = 100.0;

/// The gauges, by name and help, in the order [`Collector::encode`]
/// reads their values.
const GAUGES: [(&str, &str); 5] = [
    (
        "process_start_time_seconds",
        "Start time of the process since unix epoch in seconds",
    ),
    (
        "process_resident_memory_bytes",
        "Resident memory size in bytes",
    ),
    (
        "process_virtual_memory_bytes",
        "Virtual memory size in bytes",
    ),
    ("process_open_fds", "Number of open file descriptors"),
    ("process_max_fds", "Maximum number of open file descriptors"),
];

#[derive(Debug, Default)]
pub struct ProcessCollector;

/// One scrape's readings; None where a file could not be read.
#[derive(Debug, Default, PartialEq)]
struct Readings {
    cpu_seconds: Option<f64>,
    start_time_seconds: Option<f64>,
    resident_bytes: Option<i64>,
    virtual_bytes: Option<i64>,
    open_fds: Option<i64>,
    max_fds: Option<i64>,
}

impl Readings {
    fn now() -> Readings {
        let read = |path: &str| fs::read_to_string(path).ok();
        let stat = read("/proc/self/stat").and_then(|text| parse_stat(&text));
        let status = read("/proc/self/status");
        let boot_time = read("/proc/stat").and_then(|text| parse_boot_time(&text));
        Readings {
            cpu_seconds: stat.map(|s| s.cpu_ticks as f64 / TICKS_PER_SECOND),
            start_time_seconds: stat
                .zip(boot_time)
                .map(|(s, boot)| boot as f64 + s.start_ticks as f64 / TICKS_PER_SECOND),
            resident_bytes: status.as_deref().and_then(|s| status_bytes(s, "VmRSS:")),
            virtual_bytes: status.as_deref().and_then(|s| status_bytes(s, "VmSize:")),
            open_fds: fs::read_dir("/proc/self/fd")
                .ok()
                .and_then(|entries| i64::try_from(entries.count()).ok()),
            max_fds: read("/proc/self/limits").and_then(|text| parse_max_open_files(&text)),
        }
    }
}

impl Collector for ProcessCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let now = Readings::now();
        if let Some(seconds) = now.cpu_seconds {
            let counter = ConstCounter::new(seconds);
            let help = "Total user and system CPU time spent in seconds";
            counter.encode(encoder.encode_descriptor(
                "process_cpu_seconds",
                help,
                None,
                counter.metric_type(),
            )?)?;
        }
        let float = |n: Option<i64>| n.map(|n| n as f64);
        let values = [
            now.start_time_seconds,
            float(now.resident_bytes),
            float(now.virtual_bytes),
            float(now.open_fds),
            float(now.max_fds),
        ];
        for ((name, help), value) in GAUGES.into_iter().zip(values) {
            if let Some(value) = value {
                let gauge = ConstGauge::new(value);
                gauge.encode(encoder.encode_descriptor(
                    name,
                    help,
                    None,
                    gauge.metric_type(),
                )?)?;
            }
        }
        Ok(())
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct Stat {
    cpu_ticks: u64,
    start_ticks: u64,
}

/// utime + stime (fields 14 and 15) and starttime (22) of `/proc/<pid>/stat`.
/// The command name (field 2) may hold spaces and parentheses, so fields
/// are counted from the last `)`.
fn parse_stat(text: &str) -> Option<Stat> {
    let after_name = &text[text.rfind(')')? + 1..];
    // Field 3 is the first after the name.
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let field = |n: usize| fields.get(n - 3)?.parse::<u64>().ok();
    Some(Stat {
        cpu_ticks: field(14)?.checked_add(field(15)?)?,
        start_ticks: field(22)?,
    })
}

/// `btime` of `/proc/stat`: boot time, in seconds since the epoch.
fn parse_boot_time(text: &str) -> Option<u64> {
    text.lines()
        .find_map(|line| line.strip_prefix("btime "))
        .and_then(|value| value.trim().parse().ok())
}

/// A `kB` line of `/proc/<pid>/status`, in bytes.
fn status_bytes(text: &str, key: &str) -> Option<i64> {
    let value = text.lines().find_map(|line| line.strip_prefix(key))?;
    let kib: i64 = value.trim().strip_suffix("kB")?.trim().parse().ok()?;
    kib.checked_mul(1024)
}

/// The soft limit of "Max open files" in `/proc/<pid>/limits`.
fn parse_max_open_files(text: &str) -> Option<i64> {
    let line = text
        .lines()
        .find(|line| line.starts_with("Max open files"))?;
    line["Max open files".len()..]
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_counted_after_the_command_name() {
        let line = "4242 (configmap (mi) r) S 1 4242 4242 0 -1 4194560 2203 0 0 0 \
                    150 50 0 0 20 0 2 0 123456 1000 300 18446744073709551615";
        assert_eq!(
            parse_stat(line),
            Some(Stat {
                cpu_ticks: 200,
                start_ticks: 123456
            })
        );
        assert_eq!(parse_stat("4242 (x) S 1"), None);
    }

    #[test]
    fn memory_limits_and_boot_time_are_read_from_their_lines() {
        let status = "Name:\tconfigmap-mirr\nVmSize:\t  123456 kB\nVmRSS:\t    2048 kB\n";
        assert_eq!(status_bytes(status, "VmRSS:"), Some(2048 * 1024));
        assert_eq!(status_bytes(status, "VmSize:"), Some(123_456 * 1024));
        assert_eq!(status_bytes(status, "VmSwap:"), None);
        let limits = "Limit                     Soft Limit           Hard Limit           Units\n\
                      Max open files            1048576              1048576              files\n";
        assert_eq!(parse_max_open_files(limits), Some(1_048_576));
        assert_eq!(
            parse_boot_time("cpu  1 2 3\nbtime 1700000000\n"),
            Some(1_700_000_000)
        );
    }

    #[test]
    fn this_process_has_every_reading() {
        let now = Readings::now();
        assert!(now.cpu_seconds.is_some_and(|s| s >= 0.0));
        assert!(now.start_time_seconds.is_some_and(|s| s > 1.0e9));
        assert!(now.resident_bytes.is_some_and(|b| b > 0));
        assert!(now.virtual_bytes.is_some_and(|b| b > 0));
        assert!(now.open_fds.is_some_and(|n| n > 0));
        assert!(now.max_fds.is_some_and(|n| n > 0));
    }
}
