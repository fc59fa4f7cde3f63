//! A control plane with one kubelet node: where the project's Deployment
//! runs as real pods.
//!
//! Needs root. One such cluster runs on a machine at a time: its network
//! names and ranges are fixed ([`crate::node_network`]). Its node keeps its
//! files in one directory (by default `.local/node/` of the workspace); a
//! start first removes whatever a node that was killed outright left there.

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow, bail};

use crate::binaries::{node_binaries, workspace_root};
use crate::control_plane::{ControlPlane, KUBERNETES_SERVICE_IP, Options};
use crate::node::Node;
use crate::node_cleanup;
use crate::node_network::{self, HOST_ADDRESS, NodeNetwork};
use crate::process::process_alive;

/// Holds the pid of the process that owns a node directory.
const OWNER: &str = ".testenv-node-owner";

/// How to start a [`Cluster`].
#[derive(Clone, Debug)]
pub struct ClusterOptions {
    /// The control plane's; its address and controllers are set by the
    /// cluster.
    pub control_plane: Options,
    /// The node's directory; by default `.local/node/` of the workspace.
    pub node_dir: Option<PathBuf>,
    /// Upper bound for the node to become Ready, after the control plane.
    pub node_startup_timeout: Duration,
}

impl Default for ClusterOptions {
    fn default() -> Self {
        ClusterOptions {
            control_plane: Options::default(),
            node_dir: None,
            // A first start on a busy machine pages in a few hundred MB of
            // binaries and unpacks the images.
            node_startup_timeout: Duration::from_secs(180),
        }
    }
}

/// A running cluster. Dropping it stops the node and its pods, then the
/// control plane, then removes the node's network, mounts, cgroups and files.
pub struct Cluster {
    // Dropped in this order.
    node: Node,
    control_plane: ControlPlane,
    /// Held for its drop, which removes the network.
    _network: NodeNetwork,
    node_dir: NodeDir,
    startup_duration: Duration,
}

impl Cluster {
    /// Starts the control plane and the node, and waits until the node is
    /// Ready. Fails, naming the install command, if a program is missing.
    pub fn start(options: ClusterOptions) -> anyhow::Result<Cluster> {
        // Startup blocks on readiness probes with a runtime of its own,
        // which cannot run inside the caller's.
        std::thread::Builder::new()
            .name("testenv-cluster-start".to_owned())
            .spawn(move || start(options))
            .context("starting the cluster startup thread")?
            .join()
            .map_err(|_| anyhow!("cluster startup panicked"))?
    }

    pub fn control_plane(&self) -> &ControlPlane {
        &self.control_plane
    }

    /// Imports an image archive (`podman save`, `docker save`) into the
    /// node's containerd, so that pods using it start without a pull.
    pub fn load_image(&self, archive: &Path) -> anyhow::Result<()> {
        self.node.load_image(archive)
    }

    /// Holds `containerd.log`, `kubelet.log`, `kube-proxy.log` and
    /// `kube-scheduler.log`.
    pub fn node_log_dir(&self) -> PathBuf {
        self.node.log_dir()
    }

    /// From the call to `start` until the node was Ready.
    pub fn startup_duration(&self) -> Duration {
        self.startup_duration
    }

    /// The `kubernetes` Service's ClusterIP, which pods use.
    pub fn kubernetes_service_ip(&self) -> Ipv4Addr {
        KUBERNETES_SERVICE_IP
    }

    /// (name, pid) of every server of the control plane and the node.
    pub fn pids(&self) -> Vec<(&str, u32)> {
        let mut pids = self.control_plane.pids();
        pids.extend(self.node.pids());
        pids
    }

    /// The node's directory, which is gone once the cluster is dropped.
    pub fn node_dir(&self) -> &Path {
        &self.node_dir.path
    }
}

fn start(options: ClusterOptions) -> anyhow::Result<Cluster> {
    let started = Instant::now();
    if !is_root() {
        bail!(
            "a cluster with a node needs root (it creates network interfaces, mounts and cgroups)"
        );
    }
    let binaries = node_binaries()?;
    let node_dir = NodeDir::claim(
        options
            .node_dir
            .clone()
            .unwrap_or_else(|| workspace_root().join(".local/node")),
    )?;
    let network = NodeNetwork::create(&binaries.pause, &node_dir.path.join("logs"))?;
    let control_plane = ControlPlane::start(Options {
        apiserver_address: Some(HOST_ADDRESS),
        node_controllers: true,
        ..options.control_plane
    })?;
    let deadline = Instant::now() + options.node_startup_timeout;
    let node =
        Node::start(&node_dir.path, binaries, &control_plane, &network, deadline).map_err(|e| {
            anyhow!(
                "starting the node failed: {e:#}\n{}",
                node_log_tails(&node_dir.path.join("logs"))
            )
        })?;
    let startup_duration = started.elapsed();
    eprintln!(
        "testenv: node {} ready in {:.1}s (node files: {})",
        crate::node::NODE_NAME,
        startup_duration.as_secs_f64(),
        node_dir.path.display()
    );
    Ok(Cluster {
        node,
        control_plane,
        _network: network,
        node_dir,
        startup_duration,
    })
}

fn node_log_tails(log_dir: &Path) -> String {
    let mut out = String::new();
    for name in [
        "containerd",
        "kubelet",
        "kube-proxy",
        "kube-scheduler",
        "netns-holder",
    ] {
        let path = log_dir.join(format!("{name}.log"));
        if let Ok(tail) = crate::logs::tail(&path, 30) {
            out.push_str(&format!(
                "----- last lines of {} -----\n{tail}",
                path.display()
            ));
        }
    }
    out
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|status| {
        status
            .lines()
            .find_map(|line| line.strip_prefix("Uid:"))
            .and_then(|ids| ids.split_whitespace().nth(1))
            == Some("0")
    })
}

/// The node's directory, marked with our pid. On drop, removes the node's
/// mounts, cgroups and files outside it, then the directory itself.
struct NodeDir {
    path: PathBuf,
}

impl NodeDir {
    fn claim(path: PathBuf) -> anyhow::Result<NodeDir> {
        let path =
            std::path::absolute(&path).with_context(|| format!("resolving {}", path.display()))?;
        if path.exists() {
            let owner = std::fs::read_to_string(path.join(OWNER))
                .ok()
                .and_then(|text| text.trim().parse::<u32>().ok());
            match owner {
                Some(pid) if process_alive(pid) => bail!(
                    "{} belongs to a running node (pid {pid}); stop it first (`make cluster-down`)",
                    path.display()
                ),
                Some(_) => {
                    eprintln!(
                        "testenv: removing what a stopped node left in {}",
                        path.display()
                    );
                    remove_node_traces(&path)?;
                }
                None if is_empty_dir(&path) => {}
                None => bail!(
                    "refusing to use {}: it is not empty and was not created by testenv",
                    path.display()
                ),
            }
        }
        std::fs::create_dir_all(&path).with_context(|| format!("creating {}", path.display()))?;
        let owner = path.join(OWNER);
        std::fs::write(&owner, format!("{}\n", std::process::id()))
            .with_context(|| format!("writing {}", owner.display()))?;
        Ok(NodeDir { path })
    }
}

impl Drop for NodeDir {
    fn drop(&mut self) {
        if let Err(e) = remove_node_traces(&self.path) {
            eprintln!("testenv: cleaning up the node: {e:#}");
        }
    }
}

/// Everything a node in `dir` left: its pods' processes and shims, mounts,
/// cgroups, network and files. Its own servers must have stopped.
fn remove_node_traces(dir: &Path) -> anyhow::Result<()> {
    node_cleanup::stop_pods(dir)?;
    node_cleanup::remove_traces(dir)?;
    node_network::remove_host_side();
    std::fs::remove_dir_all(dir).with_context(|| format!("removing {}", dir.display()))
}

fn is_empty_dir(path: &Path) -> bool {
    std::fs::read_dir(path).is_ok_and(|mut entries| entries.next().is_none())
}
