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
    pinned("hack/kube-version")
}

/// A release the compatibility tests run against, by its role in
/// `hack/compat-versions` (`oldest` or `newest`).
pub fn compat_version(role: &str) -> anyhow::Result<String> {
    let path = workspace_root().join("hack/compat-versions");
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    text.lines()
        .filter(|line| !line.trim_start().starts_with('#'))
        .find_map(
            |line| match line.split_whitespace().collect::<Vec<_>>()[..] {
                [name, version] if name == role => Some(version.to_owned()),
                _ => None,
            },
        )
        .with_context(|| format!("{} names no {role} release", path.display()))
}

/// The cached control-plane binaries of another release than the pinned
/// one, as `make k8s-compat` builds them.
pub fn bin_dir_for(version: &str) -> anyhow::Result<PathBuf> {
    let dir = cache_dir()?.join(format!("k8s-{version}")).join("bin");
    require_all(
        &dir,
        &format!("Kubernetes {version} binaries"),
        "run `make k8s-compat` to build them",
    )?;
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
    require_all(dir, "control-plane binaries", INSTALL_HINT)
}

/// Fails, saying which of `what` are missing and how to get them (`hint`),
/// unless `dir` holds every binary.
fn require_all(dir: &Path, what: &str, hint: &str) -> anyhow::Result<()> {
    let missing: Vec<&str> = REQUIRED
        .iter()
        .copied()
        .filter(|bin| !is_executable(&dir.join(bin)))
        .collect();
    if !missing.is_empty() {
        bail!(
            "{what} missing from {}: {}; {hint}",
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

const NODE_INSTALL_HINT: &str = "run `make node` (hack/install-node.sh) to build them, or point KUBE_NODE_BIN_DIR at a directory holding them";

/// What a local kubelet node runs besides the control plane.
#[derive(Clone, Debug)]
pub(crate) struct NodeBinaries {
    /// kubelet, kube-proxy and kube-scheduler.
    pub kubernetes_dir: PathBuf,
    /// containerd, containerd-shim-runc-v2 and ctr.
    pub containerd_dir: PathBuf,
    pub runc: PathBuf,
    /// bridge, host-local and loopback.
    pub cni_plugins: PathBuf,
    /// The node-tools image (pause and http-get), a docker-archive.
    pub node_tools_image: PathBuf,
    /// The pause program itself.
    pub pause: PathBuf,
}

/// Finds everything the node runs, or fails naming how to install what is
/// missing.
pub(crate) fn node_binaries() -> anyhow::Result<NodeBinaries> {
    let cache = cache_dir()?;
    let kubernetes_dir = match std::env::var_os("KUBE_NODE_BIN_DIR").filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => cache
            .join(format!("k8s-node-{}", kube_version()?))
            .join("bin"),
    };
    let containerd_dir = cache
        .join(format!("containerd-{}", pinned("hack/containerd-version")?))
        .join("bin");
    let node_tools = workspace_root().join("target/node-tools");
    let mut missing: Vec<PathBuf> = [
        kubernetes_dir.join("kubelet"),
        kubernetes_dir.join("kube-proxy"),
        kubernetes_dir.join("kube-scheduler"),
        containerd_dir.join("containerd"),
        containerd_dir.join("containerd-shim-runc-v2"),
        containerd_dir.join("ctr"),
        node_tools.join("rootfs/pause"),
    ]
    .into_iter()
    .filter(|path| !is_executable(path))
    .collect();
    let node_tools_image = node_tools.join("node-tools.tar");
    if !node_tools_image.is_file() {
        missing.push(node_tools_image.clone());
    }
    if !missing.is_empty() {
        let list: Vec<String> = missing.iter().map(|p| p.display().to_string()).collect();
        bail!(
            "the local node's programs are missing: {}; {NODE_INSTALL_HINT}",
            list.join(", ")
        );
    }
    let cni_plugins = PathBuf::from("/usr/lib/cni");
    let mut packages = Vec::new();
    let runc = on_path("runc");
    if runc.is_none() {
        packages.push("runc");
    }
    if !["bridge", "host-local", "loopback"]
        .iter()
        .all(|plugin| is_executable(&cni_plugins.join(plugin)))
    {
        packages.push("containernetworking-plugins");
    }
    for (program, package) in [
        ("iptables", "iptables"),
        ("ip", "iproute2"),
        ("nsenter", "util-linux"),
        ("unshare", "util-linux"),
        ("mount", "mount"),
    ] {
        if on_path(program).is_none() && !packages.contains(&package) {
            packages.push(package);
        }
    }
    let Some(runc) = runc.filter(|_| packages.is_empty()) else {
        bail!(
            "the local node needs Debian packages: apt-get install {}",
            packages.join(" ")
        );
    };
    Ok(NodeBinaries {
        kubernetes_dir,
        containerd_dir,
        runc,
        cni_plugins,
        node_tools_image,
        pause: node_tools.join("rootfs/pause"),
    })
}

/// A version pinned in a file of the repository.
fn pinned(file: &str) -> anyhow::Result<String> {
    let path = workspace_root().join(file);
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let version = text.trim();
    if version.is_empty() {
        bail!("{} is empty", path.display());
    }
    Ok(version.to_owned())
}

fn on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| is_executable(candidate))
}

/// PATH with `dir` first.
pub(crate) fn path_with(dir: &Path) -> std::ffi::OsString {
    let rest = std::env::var_os("PATH").unwrap_or_default();
    std::env::join_paths(std::iter::once(dir.to_owned()).chain(std::env::split_paths(&rest)))
        .unwrap_or(rest)
}
