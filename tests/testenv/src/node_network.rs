//! The node's network: a network namespace of its own, joined to this
//! machine by one veth pair, and nothing else.
//!
//! ```text
//!   this machine                         the node's network namespace
//!   kube-apiserver on 10.99.255.1 ── veth ── 10.99.255.2 kubelet, kube-proxy, containerd
//!   route 10.99.0.0/24 via .255.2                bridge cmm-br0 10.99.0.1 ── pods 10.99.0.0/24
//! ```
//!
//! The namespace has no default route, so a pod's packet for anywhere else
//! has nowhere to go; the API server is reached as in any cluster, through
//! the `kubernetes` Service's ClusterIP, which kube-proxy translates to
//! 10.99.255.1. On top of that, a FORWARD rule in the namespace and one on
//! this machine drop whatever comes from the pods for outside the pod and
//! Service ranges. Removing the namespace removes the bridge, the pods'
//! links and every rule kube-proxy wrote; the rest is removed on drop.

use std::ffi::OsStr;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

use crate::control_plane::SERVICE_CLUSTER_IP_RANGE;
use crate::process::{ChildProcess, spawn_child};

/// The end of the link on this machine, where the API server serves.
pub(crate) const HOST_ADDRESS: Ipv4Addr = Ipv4Addr::new(10, 99, 255, 1);
/// The node's end of the link: its InternalIP.
pub(crate) const NODE_ADDRESS: Ipv4Addr = Ipv4Addr::new(10, 99, 255, 2);
const LINK_PREFIX_LENGTH: u8 = 30;
pub(crate) const POD_CIDR: &str = "10.99.0.0/24";
pub(crate) const BRIDGE: &str = "cmm-br0";
const HOST_LINK: &str = "cmm-host";
const NODE_LINK: &str = "cmm-node";
/// The FORWARD rules' chain, on this machine and in the namespace.
const GUARD_CHAIN: &str = "CONFIGMAP-MIRROR-NODE";
const GUARD_COMMENT: &str = "configmap-mirror node: pod traffic stays on this machine";

/// The namespace, its link and routes, and the guard rules; all removed on
/// drop.
pub(crate) struct NodeNetwork {
    /// Keeps the namespace alive until the node's own processes join it.
    holder: ChildProcess,
    namespace: PathBuf,
}

impl NodeNetwork {
    /// `pause`: a program that waits for a signal, to hold the namespace.
    pub(crate) fn create(pause: &Path, log_dir: &Path) -> anyhow::Result<NodeNetwork> {
        check_ranges_are_free()?;
        if link_exists(HOST_LINK) {
            bail!(
                "network interface {HOST_LINK} exists: another local node is running on this \
                 machine (stop it with `make cluster-down`), or one was left over (`ip link del {HOST_LINK}`)"
            );
        }
        let mut unshare = Command::new("unshare");
        unshare.arg("--net").arg("--").arg(pause);
        let holder = spawn_child(unshare, &log_dir.join("netns-holder.log"))?;
        let namespace = PathBuf::from(format!("/proc/{}/ns/net", holder.pid()));
        let network = NodeNetwork { holder, namespace };
        network.wait_for_own_namespace()?;
        network
            .configure()
            .context("setting up the node's network")?;
        Ok(network)
    }

    /// `/proc/PID/ns/net` of the namespace, for nsenter.
    pub(crate) fn namespace(&self) -> &Path {
        &self.namespace
    }

    /// unshare has created the namespace once its pid's namespace differs
    /// from ours.
    fn wait_for_own_namespace(&self) -> anyhow::Result<()> {
        let ours =
            std::fs::read_link("/proc/self/ns/net").context("reading our network namespace")?;
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if std::fs::read_link(&self.namespace).is_ok_and(|theirs| theirs != ours) {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!("unshare --net did not create a network namespace");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn configure(&self) -> anyhow::Result<()> {
        let pid = self.holder.pid().to_string();
        let host_address = format!("{HOST_ADDRESS}/{LINK_PREFIX_LENGTH}");
        let node_address = format!("{NODE_ADDRESS}/{LINK_PREFIX_LENGTH}");
        let node_address_only = NODE_ADDRESS.to_string();
        run_here(
            "ip",
            &[
                "link", "add", HOST_LINK, "type", "veth", "peer", "name", NODE_LINK, "netns", &pid,
            ],
        )?;
        run_here("ip", &["address", "add", &host_address, "dev", HOST_LINK])?;
        run_here("ip", &["link", "set", HOST_LINK, "up"])?;
        run_here(
            "ip",
            &[
                "route",
                "add",
                POD_CIDR,
                "via",
                &node_address_only,
                "dev",
                HOST_LINK,
            ],
        )?;

        self.run_inside("ip", &["link", "set", "lo", "up"])?;
        self.run_inside("ip", &["address", "add", &node_address, "dev", NODE_LINK])?;
        self.run_inside("ip", &["link", "set", NODE_LINK, "up"])?;
        // Routing between the pods' bridge and the link; per namespace, so
        // this machine's own setting is untouched. Bridged pod-to-pod
        // traffic must pass iptables for kube-proxy's Service rules.
        self.run_inside(
            "sh",
            &["-c", "echo 1 > /proc/sys/net/ipv4/ip_forward && echo 1 > /proc/sys/net/bridge/bridge-nf-call-iptables"],
        )?;

        add_guard(|args| run_here("iptables", args), false)?;
        add_guard(|args| self.run_inside("iptables", args), true)?;
        Ok(())
    }

    fn run_inside(&self, program: &str, args: &[&str]) -> anyhow::Result<()> {
        let mut net = std::ffi::OsString::from("--net=");
        net.push(&self.namespace);
        let mut all: Vec<&OsStr> = vec![net.as_os_str(), "--".as_ref(), program.as_ref()];
        all.extend(args.iter().map(OsStr::new));
        run_checked("nsenter", &all)
    }
}

impl Drop for NodeNetwork {
    fn drop(&mut self) {
        let _ = self.holder.kill();
        remove_host_side();
    }
}

/// The rules and link on this machine's side. The namespace itself, with
/// everything in it, goes when its last process has stopped.
pub(crate) fn remove_host_side() {
    // A rule is deleted by its whole specification, comment included.
    let comment = ["-m", "comment", "--comment", GUARD_COMMENT];
    for jump in [["-s", POD_CIDR], ["-i", HOST_LINK]] {
        let rule = [
            &["-D", "FORWARD"][..],
            &jump,
            &comment,
            &["-j", GUARD_CHAIN],
        ]
        .concat();
        while run_here("iptables", &rule).is_ok() {}
    }
    let _ = run_here("iptables", &["-F", GUARD_CHAIN]);
    let _ = run_here("iptables", &["-X", GUARD_CHAIN]);
    if link_exists(HOST_LINK) {
        // Removes both ends, and the route through it.
        let _ = run_here("ip", &["link", "del", HOST_LINK]);
    }
}

/// Pods may reach pods and Services; anything else they send is dropped.
/// Inside the namespace, Service traffic has been translated to its endpoint
/// by the time it is forwarded, so it is recognised by its original
/// destination.
fn add_guard(iptables: impl Fn(&[&str]) -> anyhow::Result<()>, inside: bool) -> anyhow::Result<()> {
    let commented =
        |rule: &[&str]| iptables(&[rule, &["-m", "comment", "--comment", GUARD_COMMENT]].concat());
    iptables(&["-N", GUARD_CHAIN])?;
    let mut returns = vec![vec!["-d", POD_CIDR], vec!["-d", SERVICE_CLUSTER_IP_RANGE]];
    if inside {
        returns.push(vec![
            "-m",
            "conntrack",
            "--ctorigdst",
            SERVICE_CLUSTER_IP_RANGE,
        ]);
    }
    for matches in returns {
        commented(&[&["-A", GUARD_CHAIN][..], &matches, &["-j", "RETURN"]].concat())?;
    }
    commented(&["-A", GUARD_CHAIN, "-j", "DROP"])?;
    commented(&["-I", "FORWARD", "1", "-s", POD_CIDR, "-j", GUARD_CHAIN])?;
    if !inside {
        // Whatever arrives from the node to be forwarded, whatever its source.
        commented(&["-I", "FORWARD", "1", "-i", HOST_LINK, "-j", GUARD_CHAIN])?;
    }
    Ok(())
}

/// The node's ranges must not be in use on this machine already: its route
/// would take their traffic.
fn check_ranges_are_free() -> anyhow::Result<()> {
    for probe in [HOST_ADDRESS.to_string(), "10.99.0.1".to_owned()] {
        let out = Command::new("ip")
            .args(["-4", "route", "show", "match", &probe])
            .output()
            .context("running ip (apt-get install iproute2)")?;
        let routes = String::from_utf8_lossy(&out.stdout);
        if let Some(route) = routes.lines().find(|line| !line.starts_with("default")) {
            bail!(
                "the local node needs 10.99.0.0/24 and 10.99.255.0/30, but this machine already \
                 routes {probe}: {route}"
            );
        }
    }
    Ok(())
}

fn link_exists(name: &str) -> bool {
    Path::new("/sys/class/net").join(name).exists()
}

fn run_here(program: &str, args: &[&str]) -> anyhow::Result<()> {
    let args: Vec<&OsStr> = args.iter().map(OsStr::new).collect();
    run_checked(program, &args)
}

fn run_checked(program: &str, args: &[&OsStr]) -> anyhow::Result<()> {
    let out = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("running {program}"))?;
    if !out.status.success() {
        bail!(
            "{program} {} failed: {}",
            args.iter()
                .map(|a| a.to_string_lossy())
                .collect::<Vec<_>>()
                .join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}
