//! Child processes that cannot outlive the process that started them.
//!
//! Each child gets its own process group, so a terminal's Ctrl-C reaches only
//! us and we decide how the servers stop, and runs under
//! `setpriv --pdeathsig KILL`, so the kernel kills it when we die, however we
//! die. The parent-death signal fires when the *thread* that forked the child
//! exits, and test threads end after every test, so all children are forked by
//! one thread that lives as long as the process.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::sync::mpsc::{self, Sender};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

/// Signals [`ChildProcess::signal`] can send.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Signal {
    Term,
    Int,
    Hup,
    Kill,
    /// Pauses the process, as a long stall would.
    Stop,
    /// Resumes a stopped process.
    Cont,
}

impl Signal {
    fn name(self) -> &'static str {
        match self {
            Signal::Term => "TERM",
            Signal::Int => "INT",
            Signal::Hup => "HUP",
            Signal::Kill => "KILL",
            Signal::Stop => "STOP",
            Signal::Cont => "CONT",
        }
    }
}

/// A running child; killed together with its process group when dropped.
#[derive(Debug)]
pub struct ChildProcess {
    name: String,
    child: Child,
    /// Set once the child has been reaped: from then on its pid may belong to
    /// an unrelated process and must not be signalled.
    status: Option<ExitStatus>,
}

type SpawnRequest = (Command, Sender<io::Result<Child>>);

/// Starts `cmd` as a child that dies with this process. Its stdout and stderr
/// are appended to `log_file`. The environment and working directory set on
/// `cmd` are kept; `env_clear` is not.
pub fn spawn_child(cmd: Command, log_file: &Path) -> anyhow::Result<ChildProcess> {
    spawn_wrapped(cmd, log_file, &[])
}

/// Like [`spawn_child`], with the child in the network namespace `netns`
/// (a `/proc/PID/ns/net` path). nsenter execs the command, so the pid is
/// still the command's own.
pub(crate) fn spawn_child_in_netns(
    cmd: Command,
    log_file: &Path,
    netns: &Path,
) -> anyhow::Result<ChildProcess> {
    let mut net = std::ffi::OsString::from("--net=");
    net.push(netns);
    spawn_wrapped(cmd, log_file, &["nsenter".into(), net, "--".into()])
}

/// Runs `prefix` (a command that ends by exec'ing its arguments) with `cmd`.
fn spawn_wrapped(
    cmd: Command,
    log_file: &Path,
    prefix: &[std::ffi::OsString],
) -> anyhow::Result<ChildProcess> {
    let program = cmd.get_program().to_owned();
    let name = Path::new(&program).file_name().map_or_else(
        || program.to_string_lossy().into_owned(),
        |n| n.to_string_lossy().into_owned(),
    );

    let mut wrapped = Command::new("setpriv");
    wrapped
        .args(["--pdeathsig", "KILL", "--"])
        .args(prefix)
        .arg(&program)
        .args(cmd.get_args());
    for (key, value) in cmd.get_envs() {
        match value {
            Some(value) => wrapped.env(key, value),
            None => wrapped.env_remove(key),
        };
    }
    if let Some(dir) = cmd.get_current_dir() {
        wrapped.current_dir(dir);
    }
    let log = open_log(log_file)?;
    wrapped
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .process_group(0);

    let child = spawn_from_long_lived_thread(wrapped)
        .with_context(|| format!("starting {name} (via setpriv, from util-linux)"))?;
    Ok(ChildProcess {
        name,
        child,
        status: None,
    })
}

fn open_log(path: &Path) -> anyhow::Result<File> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating {}", parent.display()))?;
    }
    OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .with_context(|| format!("opening log file {}", path.display()))
}

fn spawn_from_long_lived_thread(cmd: Command) -> io::Result<Child> {
    static SPAWNER: OnceLock<Sender<SpawnRequest>> = OnceLock::new();
    let spawner = SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<SpawnRequest>();
        // The sender lives in a static, so this loop never ends and the
        // thread stays alive until the process exits.
        std::thread::Builder::new()
            .name("testenv-spawner".to_owned())
            .spawn(move || {
                for (mut cmd, reply) in rx {
                    let _ = reply.send(cmd.spawn());
                }
            })
            .expect("cannot start the process-spawner thread");
        tx
    });
    let (reply_tx, reply_rx) = mpsc::channel();
    let gone = || io::Error::other("the process-spawner thread is gone");
    spawner.send((cmd, reply_tx)).map_err(|_| gone())?;
    reply_rx.recv().map_err(|_| gone())?
}

impl ChildProcess {
    /// The executable's file name, e.g. `etcd`.
    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends `signal` to the child only (not its group), by pid.
    pub fn signal(&self, signal: Signal) -> anyhow::Result<()> {
        if self.status.is_some() {
            bail!("{} (pid {}) has already exited", self.name, self.pid());
        }
        run_kill(signal, &self.pid().to_string())
    }

    /// The exit status if the child has exited, without blocking.
    pub fn try_wait(&mut self) -> anyhow::Result<Option<ExitStatus>> {
        if self.status.is_none() {
            self.status = self.child.try_wait()?;
        }
        Ok(self.status)
    }

    /// Waits up to `timeout` for the child to exit; `None` if it is still running.
    pub fn wait_with_timeout(&mut self, timeout: Duration) -> anyhow::Result<Option<ExitStatus>> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.try_wait()? {
                return Ok(Some(status));
            }
            if Instant::now() >= deadline {
                return Ok(None);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Kills the child's whole process group and reaps the child.
    pub fn kill(&mut self) -> anyhow::Result<ExitStatus> {
        if let Some(status) = self.try_wait()? {
            return Ok(status);
        }
        // Until it is reaped the child's pid, and with it the process group id
        // it leads, cannot be reused, so this cannot hit an unrelated process.
        if run_kill(Signal::Kill, &format!("-{}", self.pid())).is_err() {
            self.child.kill()?;
        }
        let status = self.child.wait()?;
        self.status = Some(status);
        Ok(status)
    }
}

impl Drop for ChildProcess {
    fn drop(&mut self) {
        let _ = self.kill();
    }
}

/// Whether `pid` names a process that has not exited. A zombie counts as
/// exited: it only waits to be reaped, which an orphan's new parent may do
/// late.
pub fn process_alive(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    // The state follows the command name, which is in parentheses and may
    // itself contain spaces and parentheses.
    let state = stat
        .rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().next());
    !matches!(state, Some("Z" | "X") | None)
}

/// `target` is a pid, or a negated process group id.
pub(crate) fn run_kill(signal: Signal, target: &str) -> anyhow::Result<()> {
    let status = Command::new("kill")
        .args(["-s", signal.name(), "--", target])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .context("running kill")?;
    if !status.success() {
        bail!("kill -s {} -- {target} failed: {status}", signal.name());
    }
    Ok(())
}
