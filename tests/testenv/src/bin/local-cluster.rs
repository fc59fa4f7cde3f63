//! Runs a local control plane in the foreground until SIGTERM or SIGINT, for
//! trying the controller by hand.
//!
//!     local-cluster up --state-dir DIR --kubeconfig FILE [--pid-file FILE] [--node]
//!
//! With `--node` (needs root) a kubelet node runs beside the control plane,
//! with its files in `.local/node/` of the workspace, so that Deployments
//! run as real pods.
//!
//! The pid file (default: DIR.pid) is written before anything starts and the
//! kubeconfig only once the cluster is ready, so a script can start this in
//! the background, wait for the kubeconfig to appear, and later stop it with
//! `kill -TERM "$(cat PIDFILE)"`. On exit the servers are stopped and the
//! state directory, kubeconfig and pid file removed.
#![forbid(unsafe_code)]

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use testenv::{Cluster, ClusterOptions, ControlPlane, Options, process_alive};
use tokio::signal::unix::{SignalKind, signal};

const USAGE: &str = "usage: local-cluster up --state-dir DIR --kubeconfig FILE [--pid-file FILE] [--etcd-unsafe-no-fsync] [--node]";

struct Args {
    state_dir: PathBuf,
    kubeconfig: PathBuf,
    pid_file: PathBuf,
    etcd_unsafe_no_fsync: bool,
    node: bool,
}

/// What runs: a control plane alone, or with a node.
enum Running {
    ControlPlane(Box<ControlPlane>),
    Cluster(Box<Cluster>),
}

impl Running {
    fn control_plane(&self) -> &ControlPlane {
        match self {
            Running::ControlPlane(control_plane) => control_plane,
            Running::Cluster(cluster) => cluster.control_plane(),
        }
    }
}

fn main() -> ExitCode {
    let args = match parse_args(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(e) => {
            eprintln!("local-cluster: {e:#}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let result = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")
        .and_then(|runtime| runtime.block_on(up(&args)));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("local-cluster: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn parse_args(mut args: impl Iterator<Item = String>) -> anyhow::Result<Args> {
    match args.next().as_deref() {
        Some("up") => {}
        Some(other) => bail!("unknown command {other:?}"),
        None => bail!("missing command"),
    }
    let (mut state_dir, mut kubeconfig, mut pid_file, mut etcd_unsafe_no_fsync, mut node) =
        (None, None, None, false, false);
    while let Some(arg) = args.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) => (flag.to_owned(), Some(value.to_owned())),
            None => (arg, None),
        };
        let mut value = || {
            inline
                .clone()
                .or_else(|| args.next())
                .map(PathBuf::from)
                .with_context(|| format!("{flag} needs a value"))
        };
        match flag.as_str() {
            "--state-dir" => state_dir = Some(value()?),
            "--kubeconfig" => kubeconfig = Some(value()?),
            "--pid-file" => pid_file = Some(value()?),
            "--etcd-unsafe-no-fsync" => etcd_unsafe_no_fsync = true,
            "--node" => node = true,
            _ => bail!("unknown argument {flag:?}"),
        }
    }
    let state_dir = std::path::absolute(state_dir.context("--state-dir is required")?)?;
    let kubeconfig = std::path::absolute(kubeconfig.context("--kubeconfig is required")?)?;
    let pid_file = match pid_file {
        Some(path) => std::path::absolute(path)?,
        None => {
            let mut name = state_dir.clone().into_os_string();
            name.push(".pid");
            PathBuf::from(name)
        }
    };
    Ok(Args {
        state_dir,
        kubeconfig,
        pid_file,
        etcd_unsafe_no_fsync,
        node,
    })
}

async fn up(args: &Args) -> anyhow::Result<()> {
    claim_pid_file(&args.pid_file)?;
    // One left by a run that was killed outright names a dead server, and
    // whoever waits for this run's kubeconfig to appear must not take it.
    let _ = std::fs::remove_file(&args.kubeconfig);
    let result = serve(args).await;
    let _ = std::fs::remove_file(&args.pid_file);
    result
}

async fn serve(args: &Args) -> anyhow::Result<()> {
    // Installed before starting, so a stop request during startup is not
    // fatal: it is honoured as soon as the servers are up and can be stopped
    // in order.
    let mut terminate =
        signal(SignalKind::terminate()).context("installing the SIGTERM handler")?;
    let mut interrupt = signal(SignalKind::interrupt()).context("installing the SIGINT handler")?;

    let options = Options {
        state_dir: Some(args.state_dir.clone()),
        etcd_unsafe_no_fsync: args.etcd_unsafe_no_fsync,
        ..Options::default()
    };
    let node = args.node;
    let mut starting = tokio::task::spawn_blocking(move || {
        if node {
            let options = ClusterOptions {
                control_plane: options,
                ..ClusterOptions::default()
            };
            Cluster::start(options).map(|cluster| Running::Cluster(Box::new(cluster)))
        } else {
            ControlPlane::start(options)
                .map(|control_plane| Running::ControlPlane(Box::new(control_plane)))
        }
    });
    let mut stop_requested = false;
    let running = loop {
        tokio::select! {
            started = &mut starting => break started.context("the startup task failed")??,
            _ = terminate.recv(), if !stop_requested => stop_requested = true,
            _ = interrupt.recv(), if !stop_requested => stop_requested = true,
        }
        eprintln!("local-cluster: stopping once startup has finished");
    };

    let control_plane = running.control_plane();
    if !stop_requested {
        publish(control_plane.kubeconfig_path(), &args.kubeconfig)
            .with_context(|| format!("writing {}", args.kubeconfig.display()))?;
        eprintln!(
            "local-cluster: ready at {} (pid {}, logs in {})",
            control_plane.server_url(),
            std::process::id(),
            control_plane.log_dir().display()
        );
        println!("export KUBECONFIG={}", args.kubeconfig.display());
        tokio::select! {
            _ = terminate.recv() => {}
            _ = interrupt.recv() => {}
        }
    }
    eprintln!("local-cluster: stopping");
    let _ = std::fs::remove_file(&args.kubeconfig);
    drop(running);
    eprintln!("local-cluster: stopped");
    Ok(())
}

/// Copies via a temporary file and a rename, so whoever waits for the
/// kubeconfig to appear never reads it half-written.
fn publish(from: &Path, to: &Path) -> std::io::Result<()> {
    if let Some(parent) = to.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let mut tmp = to.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    std::fs::copy(from, &tmp)?;
    std::fs::rename(&tmp, to)
}

fn claim_pid_file(path: &Path) -> anyhow::Result<()> {
    // A pid outlives its process and may be reused, so a live pid counts only
    // if it is still this program.
    if let Ok(text) = std::fs::read_to_string(path)
        && let Ok(pid) = text.trim().parse::<u32>()
        && process_alive(pid)
        && std::fs::read_to_string(format!("/proc/{pid}/comm"))
            .is_ok_and(|comm| comm.trim() == "local-cluster")
    {
        bail!("already running as pid {pid} (pid file {})", path.display());
    }
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating {}", parent.display()))?;
    }
    std::fs::write(path, format!("{}\n", std::process::id()))
        .with_context(|| format!("writing pid file {}", path.display()))
}
