//! Finds the control-plane executables.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

/// Every executable the harness runs; `make k8s` builds exactly this set.
pub(crate) const REQUIRED: [&str; 4] = [
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kubectl",
];

const INSTALL_HINT: &str = "run `make k8s` (hack/install-k8s.sh) to build them, or point KUBE_BIN_DIR at a directory holding them";

pub(crate) fn workspace_root() -> PathBuf {
    // This crate lives two levels below the workspace root; the path is baked
    // in at compile time so tests find it whatever their working directory.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    // Canonical, so paths printed in errors and logs are readable.
    root.canonicalize().unwrap_or(root)
}

/// The Kubernetes version the binaries must match, kept in one file so the
/// install script, CI and the harness cannot drift apart.
pub fn kube_version() -> anyhow::Result<String> {
    let path = workspace_root().join("hack/kube-version");
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let version = text.trim();
    if version.is_empty() {
        bail!("{} is empty", path.display());
    }
    Ok(version.to_owned())
}

/// A release the compatibility tests run against, by its role in
/// `hack/compat-versions` (`oldest` or `newest`).
pub fn compat_version(role: &str) -> anyhow::Result<String> {
    let path = workspace_root().join("hack/compat-versions");
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    text.lines()
        .filter(|line| !line.trim_start().starts_with('#'))
        .find_map(|line| match line.split_whitespace().collect::<Vec<_>>()[..] {
            [name, version] if name == role => Some(version.to_owned()),
            _ => None,
        })
        .with_context(|| format!("{} names no {role} release", path.display()))
}

/// The cached control-plane binaries of another release than the pinned
/// one, as `make k8s-compat` builds them.
pub fn bin_dir_for(version: &str) -> anyhow::Result<PathBuf> {
    let dir = cache_dir()?.join(format!("k8s-{version}")).join("bin");
    let missing: Vec<&str> = REQUIRED
        .iter()
        .copied()
        .filter(|bin| !is_executable(&dir.join(bin)))
        .collect();
    if !missing.is_empty() {
        bail!(
            "Kubernetes {version} binaries missing from {}: {}; run `make k8s-compat` to build them",
            dir.display(),
            missing.join(", ")
        );
    }
    Ok(dir)
}

/// The directory holding the control-plane binaries: `KUBE_BIN_DIR` if
/// set, otherwise the per-user cache the install script fills.
pub fn bin_dir() -> anyhow::Result<PathBuf> {
    let dir = match std::env::var_os("KUBE_BIN_DIR").filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => cache_dir()?
            .join(format!("k8s-{}", kube_version()?))
            .join("bin"),
    };
    check(&dir)?;
    Ok(dir)
}

/// Fails, naming the install command, unless `dir` holds every binary.
pub(crate) fn check(dir: &Path) -> anyhow::Result<()> {
    let missing: Vec<&str> = REQUIRED
        .iter()
        .copied()
        .filter(|bin| !is_executable(&dir.join(bin)))
        .collect();
    if !missing.is_empty() {
        bail!(
            "control-plane binaries missing from {}: {}; {INSTALL_HINT}",
            dir.display(),
            missing.join(", ")
        );
    }
    Ok(())
}

fn cache_dir() -> anyhow::Result<PathBuf> {
    if let Some(dir) = std::env::var_os("XDG_CACHE_HOME").filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(dir).join("configmap-mirror"));
    }
    let home = std::env::var_os("HOME").filter(|v| !v.is_empty());
    let home =
        home.with_context(|| format!("neither XDG_CACHE_HOME nor HOME is set; {INSTALL_HINT}"))?;
    Ok(PathBuf::from(home).join(".cache/configmap-mirror"))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}
