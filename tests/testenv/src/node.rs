//! A kubelet node beside the control plane: containerd (with Debian's runc
//! and CNI plugins), kubelet, kube-proxy in iptables mode, and
//! kube-scheduler, so that Deployments run as real pods.
//!
//! containerd, kubelet and kube-proxy run in the node's network namespace
//! ([`crate::node_network`]); kube-scheduler runs beside the API server. All
//! of the node's files live in one directory; its pods' cgroups under one
//! cgroup ([`node_cleanup::CGROUP_ROOT`]).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use k8s_openapi::api::core::v1::Node as NodeObject;
use kube::Api;

use crate::binaries::{self, NodeBinaries};
use crate::control_plane::ControlPlane;
use crate::node_cleanup::{self, CGROUP_ROOT, CNI_NETWORK};
use crate::node_network::{BRIDGE, NODE_ADDRESS, NodeNetwork, POD_CIDR};
use crate::ports::free_port;
use crate::process::{ChildProcess, Signal, spawn_child, spawn_child_in_netns};

/// The Node object's name.
pub const NODE_NAME: &str = "configmap-mirror-node";
/// The image of the node's pause program and its `http-get`, built by
/// `hack/install-node.sh` (which names it too).
pub const NODE_TOOLS_IMAGE: &str = "localhost/configmap-mirror-node-tools:dev";
/// How long the node's servers get to stop on SIGTERM.
const STOP_GRACE: Duration = Duration::from_secs(10);
const POLL: Duration = Duration::from_millis(200);

/// The node's processes; stopped, with its pods, when dropped.
pub(crate) struct Node {
    dir: PathBuf,
    binaries: NodeBinaries,
    kubelet: ChildProcess,
    kube_proxy: ChildProcess,
    scheduler: ChildProcess,
    containerd: ChildProcess,
}

impl Node {
    /// Starts the node in `network`, registered with `control_plane`, and
    /// waits until it is Ready. `dir` must be empty.
    pub(crate) fn start(
        dir: &Path,
        binaries: NodeBinaries,
        control_plane: &ControlPlane,
        network: &NodeNetwork,
        deadline: Instant,
    ) -> anyhow::Result<Node> {
        let log_dir = dir.join("logs");
        std::fs::create_dir_all(&log_dir)
            .with_context(|| format!("creating {}", log_dir.display()))?;
        node_cleanup::record_missing_host_dirs(dir)?;
        node_cleanup::create_cgroups().context("creating the node's cgroups")?;
        let files = write_config(dir, &binaries, control_plane)?;

        let mut containerd = spawn_child_in_netns(
            containerd_command(&binaries, &files),
            &log_dir.join("containerd.log"),
            network.namespace(),
        )?;
        wait_until(
            "containerd to answer",
            deadline,
            &mut [&mut containerd],
            || ctr(&binaries, dir, &["version"]).is_ok(),
        )?;
        ctr(
            &binaries,
            dir,
            &[
                "images",
                "import",
                &binaries.node_tools_image.to_string_lossy(),
            ],
        )
        .context("importing the node-tools image")?;

        let kubelet = spawn_child_in_netns(
            kubelet_command(&binaries, &files, dir, control_plane),
            &log_dir.join("kubelet.log"),
            network.namespace(),
        )?;
        let kube_proxy = spawn_child_in_netns(
            kube_proxy_command(&binaries, &files),
            &log_dir.join("kube-proxy.log"),
            network.namespace(),
        )?;
        let scheduler = spawn_child(
            scheduler_command(&binaries, dir, control_plane)?,
            &log_dir.join("kube-scheduler.log"),
        )?;
        let mut node = Node {
            dir: dir.to_owned(),
            binaries,
            kubelet,
            kube_proxy,
            scheduler,
            containerd,
        };
        node.wait_ready(control_plane, deadline)?;
        Ok(node)
    }

    fn wait_ready(
        &mut self,
        control_plane: &ControlPlane,
        deadline: Instant,
    ) -> anyhow::Result<()> {
        let config = control_plane.kube_config();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let client = runtime.block_on(async { kube::Client::try_from(config) })?;
        let nodes: Api<NodeObject> = Api::all(client);
        let mut children = [
            &mut self.containerd,
            &mut self.kubelet,
            &mut self.kube_proxy,
            &mut self.scheduler,
        ];
        wait_until("the node to be Ready", deadline, &mut children, || {
            runtime
                .block_on(nodes.get_opt(NODE_NAME))
                .ok()
                .flatten()
                .is_some_and(|node| is_ready(&node))
        })
    }

    /// Imports a docker-archive or OCI image tarball into the node's
    /// containerd, so that pods naming the image start without a pull.
    pub(crate) fn load_image(&self, archive: &Path) -> anyhow::Result<()> {
        ctr(
            &self.binaries,
            &self.dir,
            &["images", "import", &archive.to_string_lossy()],
        )
        .with_context(|| format!("importing {} into the node", archive.display()))
    }

    pub(crate) fn log_dir(&self) -> PathBuf {
        self.dir.join("logs")
    }

    /// (name, pid) of each of the node's own processes.
    pub(crate) fn pids(&self) -> Vec<(&str, u32)> {
        [
            &self.containerd,
            &self.kubelet,
            &self.kube_proxy,
            &self.scheduler,
        ]
        .into_iter()
        .map(|child| (child.name(), child.pid()))
        .collect()
    }

    fn stop(&mut self) -> anyhow::Result<()> {
        for child in [
            &mut self.kubelet,
            &mut self.kube_proxy,
            &mut self.scheduler,
            &mut self.containerd,
        ] {
            stop_child(child);
        }
        node_cleanup::stop_pods(&self.dir)
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        if let Err(e) = self.stop() {
            eprintln!("testenv: stopping the node: {e:#}");
        }
    }
}

/// SIGTERM, then SIGKILL if it has not exited within the grace time.
fn stop_child(child: &mut ChildProcess) {
    if child.signal(Signal::Term).is_ok()
        && child.wait_with_timeout(STOP_GRACE).ok().flatten().is_some()
    {
        return;
    }
    let _ = child.kill();
}

fn is_ready(node: &NodeObject) -> bool {
    node.status
        .as_ref()
        .and_then(|status| status.conditions.as_ref())
        .is_some_and(|conditions| {
            conditions
                .iter()
                .any(|c| c.type_ == "Ready" && c.status == "True")
        })
}

/// Polls `ready` until it holds; fails early if one of `children` exits.
fn wait_until(
    what: &str,
    deadline: Instant,
    children: &mut [&mut ChildProcess],
    mut ready: impl FnMut() -> bool,
) -> anyhow::Result<()> {
    loop {
        for child in children.iter_mut() {
            if let Some(status) = child.try_wait()? {
                bail!("{} exited while waiting for {what}: {status}", child.name());
            }
        }
        if ready() {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("timed out waiting for {what}");
        }
        std::thread::sleep(POLL);
    }
}

/// The configuration files of the node's servers.
struct ConfigFiles {
    containerd: PathBuf,
    containerd_socket: PathBuf,
    kubelet: PathBuf,
    kube_proxy: PathBuf,
}

fn write_config(
    dir: &Path,
    binaries: &NodeBinaries,
    control_plane: &ControlPlane,
) -> anyhow::Result<ConfigFiles> {
    let containerd_dir = dir.join("containerd");
    let cni_config_dir = dir.join("cni/net.d");
    let files = ConfigFiles {
        containerd: containerd_dir.join("config.toml"),
        containerd_socket: containerd_socket(dir),
        kubelet: dir.join("kubelet/config.yaml"),
        kube_proxy: dir.join("kube-proxy.yaml"),
    };
    let kubeconfig = control_plane.kubeconfig_path().display().to_string();
    let containerd_config = format!(
        r#"version = 4
root = "{root}"
state = "{state}"
# Nothing of this machine's own containerd configuration.
imports = []

[plugins."io.containerd.server.v1.grpc"]
  address = "{socket}"

[plugins."io.containerd.server.v1.ttrpc"]
  address = "{socket}.ttrpc"

[plugins."io.containerd.internal.v1.opt"]
  path = "{opt}"

[plugins."io.containerd.nri.v1.nri"]
  disable = true

[plugins."io.containerd.cri.v1.images"]
  snapshotter = "overlayfs"
  [plugins."io.containerd.cri.v1.images".pinned_images]
    sandbox = "{sandbox}"

[plugins."io.containerd.cri.v1.runtime"]
  # nsexec cannot lower oom_score_adj without CAP_SYS_RESOURCE, which root
  # may lack; containers then get their parent's instead.
  restrict_oom_score_adj = true
  # Pods' network namespaces are pinned below the state directory, not
  # in /run/netns.
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.cri.v1.runtime".cni]
    bin_dirs = ["{cni_bin}"]
    conf_dir = "{cni_conf}"
  [plugins."io.containerd.cri.v1.runtime".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
        BinaryName = "{runc}"
        Root = "{runc_root}"
        SystemdCgroup = false

[plugins."io.containerd.grpc.v1.cri"]
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
"#,
        root = containerd_dir.join("root").display(),
        state = containerd_dir.join("state").display(),
        socket = files.containerd_socket.display(),
        opt = containerd_dir.join("opt").display(),
        sandbox = NODE_TOOLS_IMAGE,
        cni_bin = binaries.cni_plugins.display(),
        cni_conf = cni_config_dir.display(),
        runc = binaries.runc.display(),
        runc_root = containerd_dir.join("runc").display(),
    );
    let cni_config = format!(
        r#"{{
  "cniVersion": "1.0.0",
  "name": "{CNI_NETWORK}",
  "plugins": [
    {{
      "type": "bridge",
      "bridge": "{BRIDGE}",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {{
        "type": "host-local",
        "ranges": [[{{"subnet": "{POD_CIDR}"}}]],
        "routes": [{{"dst": "0.0.0.0/0"}}],
        "dataDir": "{ipam}"
      }}
    }}
  ]
}}
"#,
        ipam = dir.join("cni/ipam").display(),
    );
    let kubelet_config = format!(
        r#"apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
containerRuntimeEndpoint: unix://{socket}
# This machine's cgroups are v1, kubelet manages them directly (no systemd),
# and swap may be on.
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: /{CGROUP_ROOT}
failSwapOn: false
address: {NODE_ADDRESS}
readOnlyPort: 0
# The API server calls in for logs and exec without a client certificate;
# the port is reachable only from this machine.
authentication:
  anonymous:
    enabled: true
  webhook:
    enabled: false
authorization:
  mode: AlwaysAllow
podLogsDir: {pod_logs}
# No DNS for pods: they reach the API server by its ClusterIP, and nothing
# outside this machine.
resolvConf: ""
# The disk is shared with everything else on the machine: evict only when
# it is all but full, and never collect images (they cannot be pulled back).
evictionHard:
  nodefs.available: "1%"
  imagefs.available: "1%"
  memory.available: "100Mi"
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
"#,
        socket = files.containerd_socket.display(),
        pod_logs = dir.join("pod-logs").display(),
    );
    let kube_proxy_config = format!(
        r#"apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
clientConnection:
  kubeconfig: {kubeconfig}
hostnameOverride: {NODE_NAME}
clusterCIDR: {POD_CIDR}
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
# Leaves the connection-tracking limits, which are this machine's, alone.
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
iptables:
  localhostNodePorts: false
"#
    );
    for (path, contents) in [
        (&files.containerd, containerd_config),
        (
            &cni_config_dir.join("10-configmap-mirror.conflist"),
            cni_config,
        ),
        (&files.kubelet, kubelet_config),
        (&files.kube_proxy, kube_proxy_config),
    ] {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
        std::fs::write(path, contents).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(files)
}

fn containerd_socket(dir: &Path) -> PathBuf {
    dir.join("containerd/containerd.sock")
}

fn containerd_command(binaries: &NodeBinaries, files: &ConfigFiles) -> Command {
    let mut cmd = Command::new(binaries.containerd_dir.join("containerd"));
    cmd.arg("--config").arg(&files.containerd);
    // containerd finds its shim on PATH.
    cmd.env("PATH", binaries::path_with(&binaries.containerd_dir));
    cmd
}

fn kubelet_command(
    binaries: &NodeBinaries,
    files: &ConfigFiles,
    dir: &Path,
    control_plane: &ControlPlane,
) -> Command {
    let mut cmd = Command::new(binaries.kubernetes_dir.join("kubelet"));
    cmd.arg("--config")
        .arg(&files.kubelet)
        .arg("--kubeconfig")
        .arg(control_plane.kubeconfig_path())
        .arg("--root-dir")
        .arg(dir.join("kubelet"))
        .arg("--cert-dir")
        .arg(dir.join("kubelet/pki"))
        .arg(format!("--hostname-override={NODE_NAME}"))
        .arg(format!("--node-ip={NODE_ADDRESS}"));
    cmd
}

fn kube_proxy_command(binaries: &NodeBinaries, files: &ConfigFiles) -> Command {
    let mut cmd = Command::new(binaries.kubernetes_dir.join("kube-proxy"));
    cmd.arg("--config").arg(&files.kube_proxy);
    cmd
}

fn scheduler_command(
    binaries: &NodeBinaries,
    dir: &Path,
    control_plane: &ControlPlane,
) -> anyhow::Result<Command> {
    let mut cmd = Command::new(binaries.kubernetes_dir.join("kube-scheduler"));
    cmd.arg("--kubeconfig")
        .arg(control_plane.kubeconfig_path())
        .arg("--leader-elect=false")
        .arg("--bind-address=127.0.0.1")
        .arg(format!("--secure-port={}", free_port()?))
        .arg("--cert-dir")
        .arg(dir.join("kube-scheduler-certs"));
    Ok(cmd)
}

/// Runs ctr against the node's containerd, in the namespace CRI uses.
fn ctr(binaries: &NodeBinaries, dir: &Path, args: &[&str]) -> anyhow::Result<()> {
    let out = Command::new(binaries.containerd_dir.join("ctr"))
        .arg("--address")
        .arg(containerd_socket(dir))
        .args(["--namespace", "k8s.io"])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .context("running ctr")?;
    if !out.status.success() {
        bail!(
            "ctr {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}
