//! Removing what a node leaves on the machine besides its own processes:
//! the pods' processes and containerd's shims, mounts, cgroups, and the few
//! files kubelet and the CNI plugins write outside the node's directory.
//!
//! Used at every stop, and before a start to clear what a node that was
//! killed outright left behind. Every process is found through a file the
//! node wrote (a cgroup's member list, a shim's pid file) and stopped by pid.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

use crate::process::{Signal, process_alive, run_kill};

/// The node's cgroup under every cgroup v1 hierarchy; kubelet puts every pod
/// below it (its `cgroupRoot`).
pub(crate) const CGROUP_ROOT: &str = "configmap-mirror-node";
/// The CNI network's name, which prefixes the CNI plugins' cache files.
pub(crate) const CNI_NETWORK: &str = "configmap-mirror-node";
/// Where kubelet links every container's log, whatever its configuration.
const CONTAINER_LOG_LINKS: &str = "/var/log/containers";
/// Where the CNI library caches each attachment's result.
const CNI_CACHE: &str = "/var/lib/cni";
/// Where containerd's shims put their sockets, whatever containerd's state
/// directory is.
const SHIM_SOCKETS: &str = "/run/containerd";
/// Where kubelet serves device plugins, whatever its root directory is.
const KUBELET_DEVICE_PLUGINS: &str = "/var/lib/kubelet";
/// Host directories the node may create; those that did not exist before it
/// started are listed in this file of the node's directory, and removed
/// again with what the node wrote in them.
pub(crate) const CREATED_HOST_DIRS: &str = "created-host-dirs";
const HOST_DIRS: [&str; 4] = [
    CONTAINER_LOG_LINKS,
    CNI_CACHE,
    SHIM_SOCKETS,
    KUBELET_DEVICE_PLUGINS,
];
/// containerd's per-task bundles, below its state directory.
pub(crate) const TASK_BUNDLES: &str = "containerd/state/io.containerd.runtime.v2.task";

const PATIENCE: Duration = Duration::from_secs(30);

/// Records which of the host directories the node may create are missing
/// now, so that they are removed again afterwards.
pub(crate) fn record_missing_host_dirs(node_dir: &Path) -> anyhow::Result<()> {
    let missing: String = HOST_DIRS
        .iter()
        .filter(|dir| !Path::new(dir).exists())
        .map(|dir| format!("{dir}\n"))
        .collect();
    let path = node_dir.join(CREATED_HOST_DIRS);
    std::fs::write(&path, missing).with_context(|| format!("writing {}", path.display()))
}

/// The cgroup v1 hierarchies mounted on this machine (their mount points).
pub(crate) fn cgroup_hierarchies() -> anyhow::Result<Vec<PathBuf>> {
    Ok(mounts()?
        .into_iter()
        .filter(|mount| mount.fs_type == "cgroup")
        .map(|mount| mount.point)
        .collect())
}

/// Creates the node's cgroup in every hierarchy: kubelet requires its
/// `cgroupRoot` to exist.
pub(crate) fn create_cgroups() -> anyhow::Result<()> {
    for hierarchy in cgroup_hierarchies()? {
        let dir = hierarchy.join(CGROUP_ROOT);
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        // A new cpuset has no CPUs and no memory nodes, so nothing could
        // join it: it gets its parent's.
        for file in ["cpuset.cpus", "cpuset.mems"] {
            if let Ok(value) = std::fs::read_to_string(hierarchy.join(file)) {
                std::fs::write(dir.join(file), value.trim())
                    .with_context(|| format!("writing {}", dir.join(file).display()))?;
            }
        }
    }
    Ok(())
}

/// Stops every pod process and shim of the node in `node_dir`. Its other
/// processes must have stopped first: kubelet would start pods again, and
/// containerd would remove a task's bundle, where its shim is found, as soon
/// as the task's processes are gone.
pub(crate) fn stop_pods(node_dir: &Path) -> anyhow::Result<()> {
    kill_cgroup_members()?;
    kill_shims(node_dir)
}

/// Removes the node's mounts, cgroups and files outside `node_dir`, once
/// every process of the node has stopped. Then `node_dir` may be removed.
pub(crate) fn remove_traces(node_dir: &Path) -> anyhow::Result<()> {
    unmount_below(node_dir)?;
    remove_cgroups()?;
    remove_host_files(node_dir)
}

/// Every process in the node's cgroups: the pods' containers.
fn kill_cgroup_members() -> anyhow::Result<()> {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let mut pids = BTreeSet::new();
        for hierarchy in cgroup_hierarchies()? {
            collect_members(&hierarchy.join(CGROUP_ROOT), &mut pids);
        }
        if pids.is_empty() {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("pod processes still running after SIGKILL: {pids:?}");
        }
        for pid in pids {
            // It may have exited since it was listed.
            let _ = run_kill(Signal::Kill, &pid.to_string());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn collect_members(cgroup: &Path, pids: &mut BTreeSet<u32>) {
    if let Ok(members) = std::fs::read_to_string(cgroup.join("cgroup.procs")) {
        pids.extend(
            members
                .lines()
                .filter_map(|line| line.trim().parse::<u32>().ok()),
        );
    }
    for child in subdirectories(cgroup) {
        collect_members(&child, pids);
    }
}

fn subdirectories(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|entry| entry.file_type().is_ok_and(|t| t.is_dir()))
        .map(|entry| entry.path())
        .collect()
}

/// The node's shims: they outlive containerd by design. A shim runs in its
/// task's bundle, below the node's directory, and records its pid there.
fn kill_shims(node_dir: &Path) -> anyhow::Result<()> {
    let bundles = node_dir.join(TASK_BUNDLES);
    let mut pids = BTreeSet::new();
    for namespace in subdirectories(&bundles) {
        for bundle in subdirectories(&namespace) {
            pids.extend(
                std::fs::read_to_string(bundle.join("shim.pid"))
                    .ok()
                    .and_then(|text| text.trim().parse::<u32>().ok()),
            );
        }
    }
    // A bundle removed while its shim ran leaves the shim's working
    // directory as the only trace.
    for entry in std::fs::read_dir("/proc")
        .context("reading /proc")?
        .flatten()
    {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|name| name.parse::<u32>().ok())
        else {
            continue;
        };
        if std::fs::read_link(entry.path().join("cwd")).is_ok_and(|cwd| cwd.starts_with(&bundles)) {
            pids.insert(pid);
        }
    }
    for pid in pids {
        // A pid file outlives its process and a pid may be reused: only a
        // shim is stopped.
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        if !comm.starts_with("containerd-shim") {
            continue;
        }
        let _ = run_kill(Signal::Kill, &pid.to_string());
        let deadline = Instant::now() + PATIENCE;
        while process_alive(pid) {
            if Instant::now() > deadline {
                bail!("containerd shim {pid} still running after SIGKILL");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    Ok(())
}

struct Mount {
    point: PathBuf,
    fs_type: String,
}

fn mounts() -> anyhow::Result<Vec<Mount>> {
    let table =
        std::fs::read_to_string("/proc/self/mountinfo").context("reading /proc/self/mountinfo")?;
    Ok(table
        .lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split(' ').collect();
            // The mount point is the 5th field; the file system type follows
            // the "-" that ends the optional fields.
            let separator = fields.iter().position(|field| *field == "-")?;
            Some(Mount {
                point: PathBuf::from(unescape_mount_path(fields.get(4)?)),
                fs_type: (*fields.get(separator + 1)?).to_owned(),
            })
        })
        .collect())
}

/// mountinfo writes space, tab, newline and backslash as octal escapes.
fn unescape_mount_path(field: &str) -> String {
    let mut out = Vec::with_capacity(field.len());
    let bytes = field.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\'
            && let Some(code) = field
                .get(i + 1..i + 4)
                .and_then(|digits| u8::from_str_radix(digits, 8).ok())
        {
            out.push(code);
            i += 4;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Unmounts everything below `dir`, innermost first: pods' volumes, root
/// file systems, shared memory and network namespace pins.
fn unmount_below(dir: &Path) -> anyhow::Result<()> {
    let mut points: Vec<PathBuf> = mounts()?
        .into_iter()
        .map(|mount| mount.point)
        .filter(|point| point.starts_with(dir) && point != dir)
        .collect();
    points.sort_by_key(|point| std::cmp::Reverse(point.components().count()));
    points.dedup();
    for point in points {
        // One path may hold several stacked mounts.
        while mounts()?.iter().any(|mount| mount.point == point) {
            if !run("umount", &[point.as_os_str()])
                && !run("umount", &["-l".as_ref(), point.as_os_str()])
            {
                bail!("cannot unmount {}", point.display());
            }
        }
    }
    Ok(())
}

fn run(program: &str, args: &[&std::ffi::OsStr]) -> bool {
    Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// Removes the node's cgroups, innermost first, in every hierarchy.
fn remove_cgroups() -> anyhow::Result<()> {
    for hierarchy in cgroup_hierarchies()? {
        let root = hierarchy.join(CGROUP_ROOT);
        if !root.exists() {
            continue;
        }
        let mut dirs = Vec::new();
        collect_dirs(&root, &mut dirs);
        dirs.sort_by_key(|dir| std::cmp::Reverse(dir.components().count()));
        for dir in dirs {
            // Members that were just killed may take a moment to leave.
            let deadline = Instant::now() + PATIENCE;
            while let Err(e) = std::fs::remove_dir(&dir) {
                if e.kind() == std::io::ErrorKind::NotFound {
                    break;
                }
                if Instant::now() > deadline {
                    return Err(e).with_context(|| format!("removing cgroup {}", dir.display()));
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }
    Ok(())
}

fn collect_dirs(dir: &Path, out: &mut Vec<PathBuf>) {
    out.push(dir.to_owned());
    for child in subdirectories(dir) {
        collect_dirs(&child, out);
    }
}

/// Container log links and CNI cache entries of this node, its shims'
/// sockets, and the host directories it created.
fn remove_host_files(node_dir: &Path) -> anyhow::Result<()> {
    if let Ok(links) = std::fs::read_dir(CONTAINER_LOG_LINKS) {
        for link in links.flatten() {
            if std::fs::read_link(link.path()).is_ok_and(|target| target.starts_with(node_dir)) {
                let _ = std::fs::remove_file(link.path());
            }
        }
    }
    let mut cache_files = Vec::new();
    collect_files(Path::new(CNI_CACHE), &mut cache_files);
    for file in cache_files {
        let ours = file
            .file_name()
            .and_then(|name| name.to_str())
            .is_some_and(|name| name.starts_with(CNI_NETWORK));
        if ours {
            let _ = std::fs::remove_file(&file);
        }
    }
    for socket in shim_sockets(node_dir) {
        let _ = std::fs::remove_file(socket);
    }
    let created = std::fs::read_to_string(node_dir.join(CREATED_HOST_DIRS)).unwrap_or_default();
    for dir in created.lines().filter(|dir| HOST_DIRS.contains(dir)) {
        // Only the node has written there since it created it.
        let _ = std::fs::remove_dir_all(dir);
    }
    Ok(())
}

fn collect_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        match entry.file_type() {
            Ok(t) if t.is_dir() => collect_files(&entry.path(), out),
            Ok(_) => out.push(entry.path()),
            Err(_) => {}
        }
    }
}

/// The socket of each task bundle's shim, from the address it recorded.
fn shim_sockets(node_dir: &Path) -> Vec<PathBuf> {
    let mut sockets = Vec::new();
    for namespace in subdirectories(&node_dir.join(TASK_BUNDLES)) {
        for bundle in subdirectories(&namespace) {
            for file in ["address", "bootstrap.json"] {
                let Ok(text) = std::fs::read_to_string(bundle.join(file)) else {
                    continue;
                };
                let Some(start) = text.find("unix://") else {
                    continue;
                };
                let path: String = text[start + "unix://".len()..]
                    .chars()
                    .take_while(|c| !matches!(c, '"' | '\n' | ' '))
                    .collect();
                let path = PathBuf::from(path);
                if path.starts_with(SHIM_SOCKETS) {
                    sockets.push(path);
                }
            }
        }
    }
    sockets
}

#[cfg(test)]
mod tests {
    use super::unescape_mount_path;

    #[test]
    fn mount_paths_are_unescaped() {
        assert_eq!(unescape_mount_path(r"/a\040b\134c"), r"/a b\c");
        assert_eq!(unescape_mount_path("/plain"), "/plain");
    }
}
