//! What one benchmark run does: sizes, pacing, and where it keeps its files.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

/// Everything a run is parameterised by. The defaults are the figures the
/// issue's targets are stated for; [`Params::small`] is quick enough for the
/// test suite.
#[derive(Clone, Debug, Serialize)]
pub struct Params {
    /// Labeled source ConfigMaps, hence companions.
    pub sources: usize,
    /// Bytes of data per source, split across [`DATA_KEYS`] keys.
    pub data_size: usize,
    /// Unlabeled ConfigMaps created to show they cost the controller nothing.
    pub unmanaged: usize,
    /// The controller's `--concurrency`, and the bench's own when it writes.
    pub concurrency: usize,
    /// Deletes timed for healing, and patches timed for update propagation.
    pub samples: usize,
    /// Seconds of idling (one controller restart included) in which no
    /// companion may be written.
    pub idle_secs: u64,
    /// Namespaces one source is mirrored into, for the fan-out figure.
    pub fan_out: usize,
    /// Sources the controller must refuse, created and deleted again, for
    /// the figure of the retry state it keeps.
    pub churn: usize,
    /// Sources of 512 KiB each, for the figure of memory against content.
    pub big_sources: usize,
    /// One heal or update sample starts at most this often, so samples
    /// measure the controller's reaction rather than a queue we built up.
    #[serde(with = "millis")]
    pub sample_pace: Duration,
    /// Control-plane state and the controller's log; removed after the run.
    pub state_dir: PathBuf,
}

/// Sources' data is spread over this many keys, as real ConfigMaps usually
/// hold a few files rather than one.
pub const DATA_KEYS: usize = 4;

impl Default for Params {
    fn default() -> Self {
        Params {
            sources: 10_000,
            data_size: 1024,
            unmanaged: 50_000,
            concurrency: 16,
            samples: 200,
            idle_secs: 60,
            fan_out: 500,
            churn: 2000,
            big_sources: 150,
            sample_pace: Duration::from_millis(50),
            state_dir: bench_dir().join("state"),
        }
    }
}

impl Params {
    /// The `--small` preset: every phase runs, in about a minute.
    pub fn small() -> Self {
        Params {
            sources: 200,
            unmanaged: 1000,
            samples: 20,
            idle_secs: 10,
            fan_out: 20,
            churn: 200,
            big_sources: 15,
            // Its own, so a quick run never collides with a full one's state.
            state_dir: bench_dir().join("state-small"),
            ..Params::default()
        }
    }

    /// Rejects sizes no phase can work with.
    pub fn validate(&self) -> anyhow::Result<()> {
        anyhow::ensure!(self.sources > 0, "--sources must be at least 1");
        anyhow::ensure!(self.concurrency > 0, "--concurrency must be at least 1");
        anyhow::ensure!(
            u16::try_from(self.concurrency).is_ok(),
            "--concurrency must fit the controller's flag (at most 65535)"
        );
        anyhow::ensure!(
            self.samples <= self.sources,
            "--samples ({}) cannot exceed --sources ({}): each sample uses its own source",
            self.samples,
            self.sources
        );
        Ok(())
    }
}

/// The workspace root, fixed at build time so the bench and its test find
/// the same files whatever directory they are started from.
pub fn workspace_root() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    root.canonicalize().unwrap_or(root)
}

/// A path as the report shows it: relative to the workspace when inside
/// it, so published figures name no directory of the machine they ran on.
pub fn shown_path(path: &Path) -> String {
    let root = workspace_root();
    let path = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    path.strip_prefix(&root)
        .unwrap_or(&path)
        .display()
        .to_string()
}

/// Where runs keep state and results; under `target/`, so git ignores it.
pub fn bench_dir() -> PathBuf {
    workspace_root().join("target/bench")
}

/// The release build of the controller, the one the figures are about.
pub fn default_controller() -> PathBuf {
    workspace_root().join("target/release/configmap-mirror")
}

mod millis {
    use std::time::Duration;

    pub fn serialize<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_small_preset_only_shrinks_the_sizes() {
        let small = Params::small();
        let full = Params::default();
        assert_eq!(small.sources, 200);
        assert_eq!(small.unmanaged, 1000);
        assert_eq!(small.samples, 20);
        assert_eq!(small.idle_secs, 10);
        assert_eq!(small.data_size, full.data_size);
        assert_eq!(small.concurrency, full.concurrency);
        assert!(small.validate().is_ok() && full.validate().is_ok());
    }

    #[test]
    fn more_samples_than_sources_are_refused() {
        let params = Params {
            sources: 5,
            samples: 6,
            ..Params::default()
        };
        assert!(params.validate().is_err());
    }
}
