//! The directory holding one control plane's data, keys and logs.

use std::path::{Path, PathBuf};
use std::sync::Once;

use anyhow::{Context, bail};

use crate::binaries::workspace_root;
use crate::process::process_alive;

/// Marks a directory as ours, holding the pid that owns it, so a given state
/// directory is wiped only when it came from an earlier, dead run.
const MARKER: &str = ".testenv-owner";

/// Removed on drop unless kept.
pub(crate) struct StateDir {
    path: PathBuf,
    keep: bool,
}

impl StateDir {
    /// A fresh directory under the build output, named after our pid. The
    /// shared control plane is never dropped, so its directory outlives the
    /// test binary: a later run removes it once that pid is gone, which keeps
    /// the logs of a failed run around until then.
    pub(crate) fn temp() -> anyhow::Result<StateDir> {
        let base = runs_dir();
        std::fs::create_dir_all(&base).with_context(|| format!("creating {}", base.display()))?;
        static CLEANUP: Once = Once::new();
        CLEANUP.call_once(|| remove_dead_runs(&base));
        let path = tempfile::Builder::new()
            .prefix(&format!("{}-", std::process::id()))
            .tempdir_in(&base)
            .with_context(|| format!("creating a directory in {}", base.display()))?
            .keep();
        let dir = StateDir { path, keep: false };
        mark(&dir.path)?;
        Ok(dir)
    }

    /// Uses `dir`, which must be empty, missing, or left by a dead run.
    pub(crate) fn given(dir: &Path) -> anyhow::Result<StateDir> {
        let dir =
            std::path::absolute(dir).with_context(|| format!("resolving {}", dir.display()))?;
        if dir.exists() {
            let empty = std::fs::read_dir(&dir)
                .with_context(|| format!("reading {}", dir.display()))?
                .next()
                .is_none();
            if !empty {
                match owner(&dir) {
                    Some(pid) if process_alive(pid) => {
                        bail!(
                            "{} is in use by a running control plane (pid {pid})",
                            dir.display()
                        )
                    }
                    Some(_) => std::fs::remove_dir_all(&dir)
                        .with_context(|| format!("removing stale state in {}", dir.display()))?,
                    None => bail!(
                        "refusing to use {}: it is not empty and was not created by testenv",
                        dir.display()
                    ),
                }
            }
        }
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        mark(&dir)?;
        Ok(StateDir {
            path: dir,
            keep: false,
        })
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Leaves the directory in place when dropped.
    pub(crate) fn keep(mut self) -> PathBuf {
        self.keep = true;
        self.path.clone()
    }
}

impl Drop for StateDir {
    fn drop(&mut self) {
        if !self.keep {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

fn runs_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .map_or_else(
            || workspace_root().join("target"),
            |dir| workspace_root().join(dir),
        );
    target.join("testenv")
}

fn mark(dir: &Path) -> anyhow::Result<()> {
    let path = dir.join(MARKER);
    std::fs::write(&path, format!("{}\n", std::process::id()))
        .with_context(|| format!("writing {}", path.display()))
}

fn owner(dir: &Path) -> Option<u32> {
    std::fs::read_to_string(dir.join(MARKER))
        .ok()?
        .trim()
        .parse()
        .ok()
}

fn remove_dead_runs(base: &Path) {
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let pid = owner(&path).or_else(|| {
            let name = entry.file_name();
            name.to_str()?.split_once('-')?.0.parse().ok()
        });
        if pid.is_some_and(|pid| !process_alive(pid)) {
            let _ = std::fs::remove_dir_all(&path);
        }
    }
}
