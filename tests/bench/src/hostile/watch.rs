//! What the hostile-tenant phase watches while the attacks run, each on a
//! task of its own so that a stalled answer of one never holds back the
//! others:
//!
//! - the supervisor: the controller process, every 100 ms. It reads its
//!   peak memory and CPU from procfs, notices when it exits on its own, and
//!   starts it again as a Deployment would, under a new identity;
//! - the prober: `/healthz`, one request at a time, each timed;
//! - the scraper: `/metrics`, for the reconciles counted;
//! - the Lease: who holds it, and how often it changed hands.
//!
//! Each figure goes to the window (an attack, or the quiet time before
//! them) that is open when it is taken.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use k8s_openapi::api::coordination::v1::Lease;
use kube::{Api, Client};
use serde::Serialize;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use crate::controller::{Controller, Launcher, sum_of};
use crate::procstat;

const SUPERVISE_EVERY: Duration = Duration::from_millis(100);
const PROBE_EVERY: Duration = Duration::from_millis(100);
/// A probe not answered within this counts as this long: far above the
/// goal of one second, and above the 10–15 s stalls the issue reports.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(20);
const SCRAPE_EVERY: Duration = Duration::from_secs(1);
const SCRAPE_TIMEOUT: Duration = Duration::from_secs(5);
const LEASE_EVERY: Duration = Duration::from_millis(500);
/// A controller that exited is started again after this, as a kubelet's
/// first restart would be.
const RESTART_AFTER: Duration = Duration::from_secs(1);
/// A released Lease is taken at the next try, a retry period (2 s) at
/// most; one that expires takes its duration (15 s) and that try.
const LEAD_PATIENCE: Duration = Duration::from_secs(30);
/// No reconcile counted for this long, by scrapes a second apart.
const SETTLED_FOR: Duration = Duration::from_secs(3);
const RECONCILES: &str = "controller_runtime_reconcile_total";

/// The figures of one window.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Window {
    pub name: String,
    pub seconds: f64,
    /// Every `/healthz` answer's time, in ms; a timeout counts as
    /// [`PROBE_TIMEOUT`], a refused connection (no process) is not timed.
    pub healthz_ms: Vec<f64>,
    pub healthz_timeouts: usize,
    pub healthz_refused: usize,
    /// The controller's VmHWM, reset when the window opened; the most of
    /// any process that ran in it.
    pub peak_bytes: u64,
    pub rss_start_bytes: u64,
    pub rss_end_bytes: u64,
    pub cpu_seconds: f64,
    pub reconciles: f64,
    /// The controller exited without being asked to.
    pub exits: usize,
    /// Times its identity stopped holding the Lease, or it exited, while it
    /// led and was not being stopped by the bench.
    pub lease_lost: usize,
    /// The other tenant's heals, in ms.
    pub heals_ms: Vec<f64>,
    /// Heals not back within the heal timeout (counted at it).
    pub heals_timed_out: usize,
    /// Heals that overlapped a restart the bench made (attacks 4 and 5):
    /// no controller was there to heal, whatever its code. Left out of
    /// `heals_ms` and of the goal.
    pub heals_during_restart_ms: Vec<f64>,
    #[serde(skip)]
    cpu_at_start: f64,
    #[serde(skip)]
    reconciles_at_start: f64,
    #[serde(skip)]
    started: Option<Instant>,
}

/// The controller now running.
#[derive(Clone, Debug, Default)]
struct Running {
    pid: u32,
    base_url: String,
    identity: String,
    /// The bench is stopping it: its exit and its Lease's release are no loss.
    stopping: bool,
    /// Its identity was seen holding the Lease.
    led: bool,
    /// A loss was counted for it already.
    lost: bool,
}

#[derive(Default)]
struct Record {
    windows: Vec<Window>,
    open: Option<usize>,
    running: Running,
    /// CPU and reconciles of the processes that have exited, as last read.
    dead_cpu: f64,
    dead_reconciles: f64,
    live_cpu: f64,
    live_reconciles: f64,
    lease_transitions: Vec<i32>,
    starts: usize,
    /// Over the whole phase, between windows too (an attack's clean-up).
    totals: Totals,
    /// Bumped as the bench begins a restart and again when it is done:
    /// odd while one is under way.
    restart_marks: usize,
}

/// What counts over the whole phase, whichever window was open.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Totals {
    pub exits: usize,
    pub lease_lost: usize,
}

impl Record {
    fn window(&mut self) -> Option<&mut Window> {
        self.open.map(|i| &mut self.windows[i])
    }

    fn cpu(&self) -> f64 {
        self.dead_cpu + self.live_cpu
    }

    fn reconciles(&self) -> f64 {
        self.dead_reconciles + self.live_reconciles
    }

    fn lose_lease(&mut self) {
        if !self.running.lost && !self.running.stopping {
            self.running.lost = true;
            self.totals.lease_lost += 1;
            if let Some(w) = self.window() {
                w.lease_lost += 1;
            }
        }
    }
}

/// The watches of one phase; [`Watches::finish`] ends them and stops the
/// controller.
pub struct Watches {
    record: Arc<Mutex<Record>>,
    commands: mpsc::Sender<Command>,
    tasks: Vec<JoinHandle<()>>,
    supervisor: JoinHandle<anyhow::Result<()>>,
}

enum Command {
    Restart(oneshot::Sender<anyhow::Result<()>>),
    Stop(oneshot::Sender<anyhow::Result<()>>),
}

/// How each start of the controller is made: its Lease flags are added per
/// start, with an identity of its own.
pub struct Starter {
    pub launcher: Launcher,
    pub lease_namespace: String,
}

impl Starter {
    fn start(&self, n: usize) -> anyhow::Result<(Controller, String)> {
        let identity = format!("hostile-bench-{n}");
        let mut args = vec![
            "--leader-elect".to_owned(),
            "--leader-election-namespace".to_owned(),
            self.lease_namespace.clone(),
            "--leader-election-identity".to_owned(),
            identity.clone(),
        ];
        args.extend(self.launcher.extra_args.iter().cloned());
        let launcher = Launcher {
            extra_args: args,
            ..self.launcher.clone()
        };
        Ok((launcher.start()?, identity))
    }
}

impl Watches {
    /// Starts the controller, waits until it is ready, and starts watching.
    pub async fn start(client: &Client, starter: Starter) -> anyhow::Result<Watches> {
        let record = Arc::new(Mutex::new(Record::default()));
        let (mut controller, identity) = starter.start(1)?;
        controller.wait_ready().await?;
        {
            let mut r = lock(&record);
            r.starts = 1;
            r.running = Running {
                pid: controller.pid(),
                base_url: controller.base_url().to_owned(),
                identity,
                ..Running::default()
            };
        }
        let (commands, receiver) = mpsc::channel(1);
        let http = reqwest::Client::builder()
            .no_proxy()
            .build()
            .context("building the probes' HTTP client")?;
        let leases: Api<Lease> = Api::namespaced(client.clone(), &starter.lease_namespace);
        let tasks = vec![
            tokio::spawn(probe(record.clone(), http.clone())),
            tokio::spawn(scrape(record.clone(), http)),
            tokio::spawn(watch_lease(record.clone(), leases)),
        ];
        let supervisor = tokio::spawn(supervise(record.clone(), starter, controller, receiver));
        Ok(Watches {
            record,
            commands,
            tasks,
            supervisor,
        })
    }

    /// Opens a window named `name`: the figures from now on are its own.
    pub fn open(&self, name: &str) {
        let mut r = lock(&self.record);
        let pid = r.running.pid;
        // Where the kernel refuses the reset, the peak is the process's
        // lifetime one; the report says which.
        let reset = procstat::reset_peak(pid);
        if let Err(e) = &reset {
            eprintln!("bench:   the peak memory cannot be reset ({e:#}): it is the process's own");
        }
        let memory = procstat::memory(pid).unwrap_or_default();
        if let Ok(cpu) = procstat::cpu_seconds(pid) {
            r.live_cpu = cpu;
        }
        let window = Window {
            name: name.to_owned(),
            peak_bytes: memory.hwm_bytes,
            rss_start_bytes: memory.rss_bytes,
            cpu_at_start: r.cpu(),
            reconciles_at_start: r.reconciles(),
            started: Some(Instant::now()),
            ..Window::default()
        };
        r.windows.push(window);
        r.open = Some(r.windows.len() - 1);
    }

    /// Closes the open window and returns its figures. The reconciles
    /// counted are those the last scrape saw, at most a second old.
    pub fn close(&self) -> Window {
        let mut r = lock(&self.record);
        let pid = r.running.pid;
        if let Ok(cpu) = procstat::cpu_seconds(pid) {
            r.live_cpu = cpu;
        }
        let memory = procstat::memory(pid).unwrap_or_default();
        let (cpu, reconciles) = (r.cpu(), r.reconciles());
        let Some(w) = r.window() else {
            return Window::default();
        };
        w.peak_bytes = w.peak_bytes.max(memory.hwm_bytes);
        w.rss_end_bytes = memory.rss_bytes;
        w.cpu_seconds = cpu - w.cpu_at_start;
        w.reconciles = reconciles - w.reconciles_at_start;
        w.seconds = w.started.map_or(0.0, |t| t.elapsed().as_secs_f64());
        let closed = w.clone();
        r.open = None;
        closed
    }

    /// A mark to give [`Watches::heal`]: taken before a heal, it tells
    /// whether a restart by the bench overlapped it.
    pub fn restart_mark(&self) -> usize {
        lock(&self.record).restart_marks
    }

    /// Records one heal of the other tenant's source in the open window;
    /// `mark` is [`Watches::restart_mark`] from before it began.
    pub fn heal(&self, took: Duration, timed_out: bool, mark: usize) {
        let mut r = lock(&self.record);
        let overlapped = mark % 2 == 1 || r.restart_marks != mark;
        if let Some(w) = r.window() {
            let ms = took.as_secs_f64() * 1000.0;
            if overlapped {
                w.heals_during_restart_ms.push(ms);
            } else {
                w.heals_ms.push(ms);
                w.heals_timed_out += usize::from(timed_out);
            }
        }
    }

    /// The running controller's metrics endpoint.
    pub fn base_url(&self) -> String {
        lock(&self.record).running.base_url.clone()
    }

    /// Stops the controller (SIGTERM) and starts it again, ready.
    pub async fn restart(&self) -> anyhow::Result<()> {
        self.command(Command::Restart).await
    }

    /// Processes started, the first included.
    pub fn starts(&self) -> usize {
        lock(&self.record).starts
    }

    /// Waits, for at most `patience`, until the running controller holds
    /// the Lease and its count of reconciles has not moved for
    /// [`SETTLED_FOR`]: one attack's aftermath (a restart, a Lease to
    /// wait out, copies to remove) is then not the next one's figure.
    pub async fn wait_settled(&self, patience: Duration) -> bool {
        let started = Instant::now();
        let mut last = (f64::NAN, Instant::now());
        while started.elapsed() < patience {
            let (led, reconciles) = {
                let r = lock(&self.record);
                (r.running.led, r.reconciles())
            };
            if !led || reconciles != last.0 {
                last = (reconciles, Instant::now());
            } else if last.1.elapsed() >= SETTLED_FOR {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        false
    }

    /// Exits and Leases lost over the whole phase.
    pub fn totals(&self) -> Totals {
        lock(&self.record).totals
    }

    /// The Lease's leaseTransitions, each value seen in order.
    pub fn lease_transitions(&self) -> Vec<i32> {
        lock(&self.record).lease_transitions.clone()
    }

    async fn command(
        &self,
        make: impl FnOnce(oneshot::Sender<anyhow::Result<()>>) -> Command,
    ) -> anyhow::Result<()> {
        let (reply, answer) = oneshot::channel();
        self.commands
            .send(make(reply))
            .await
            .map_err(|_| anyhow::anyhow!("the supervisor has ended"))?;
        answer
            .await
            .map_err(|_| anyhow::anyhow!("the supervisor has ended"))?
    }

    /// Ends every watch and stops the controller by its pid.
    pub async fn finish(self) -> anyhow::Result<()> {
        let stopped = self.command(Command::Stop).await;
        for task in &self.tasks {
            task.abort();
        }
        // The supervisor's own failure, if it ended early, says more than
        // the refused stop does.
        self.supervisor
            .await
            .context("the supervisor task failed")??;
        stopped
    }
}

fn lock(record: &Arc<Mutex<Record>>) -> MutexGuard<'_, Record> {
    record
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Owns the controller: reads its memory and CPU, starts it again when it
/// exits, and carries out the bench's restarts and the final stop.
async fn supervise(
    record: Arc<Mutex<Record>>,
    starter: Starter,
    mut controller: Controller,
    mut commands: mpsc::Receiver<Command>,
) -> anyhow::Result<()> {
    loop {
        let command = tokio::select! {
            Some(command) = commands.recv() => Some(command),
            () = tokio::time::sleep(SUPERVISE_EVERY) => None,
        };
        match command {
            Some(Command::Stop(reply)) => {
                lock(&record).running.stopping = true;
                let stopped = controller.stop().await.map(drop);
                let _ = reply.send(stopped);
                return Ok(());
            }
            Some(Command::Restart(reply)) => {
                {
                    let mut r = lock(&record);
                    r.running.stopping = true;
                    r.restart_marks += 1;
                }
                let _ = controller.stop().await;
                read_live(&record, None);
                match start_again(&record, &starter).await {
                    Ok(next) => {
                        controller = next;
                        // Ready is not leading: until the new process holds
                        // the Lease, no controller heals either.
                        wait_leading(&record).await;
                        lock(&record).restart_marks += 1;
                        let _ = reply.send(Ok(()));
                    }
                    Err(e) => {
                        let message = format!("{e:#}");
                        let _ = reply.send(Err(e));
                        anyhow::bail!("the controller could not be started again: {message}");
                    }
                }
            }
            None => {
                if let Some(status) = controller.exit_status()? {
                    eprintln!("bench:   the controller exited on its own: {status}");
                    {
                        let mut r = lock(&record);
                        if r.running.led {
                            r.lose_lease();
                        }
                        r.totals.exits += 1;
                        if let Some(w) = r.window() {
                            w.exits += 1;
                        }
                    }
                    read_live(&record, None);
                    tokio::time::sleep(RESTART_AFTER).await;
                    controller = start_again(&record, &starter).await?;
                } else {
                    read_live(&record, Some(controller.pid()));
                }
            }
        }
    }
}

/// Waits until the Lease watch has seen the running process hold the
/// Lease, for at most [`LEAD_PATIENCE`].
async fn wait_leading(record: &Arc<Mutex<Record>>) {
    let started = Instant::now();
    while !lock(record).running.led && started.elapsed() < LEAD_PATIENCE {
        tokio::time::sleep(LEASE_EVERY / 2).await;
    }
}

/// Reads the running process's memory and CPU into the record; with None,
/// moves the last figures of the process that ended to the dead ones.
fn read_live(record: &Arc<Mutex<Record>>, pid: Option<u32>) {
    let mut r = lock(record);
    match pid {
        Some(pid) => {
            if let Ok(cpu) = procstat::cpu_seconds(pid) {
                r.live_cpu = cpu;
            }
            if let Ok(memory) = procstat::memory(pid)
                && let Some(w) = r.window()
            {
                w.peak_bytes = w.peak_bytes.max(memory.hwm_bytes);
            }
        }
        None => {
            r.dead_cpu += std::mem::take(&mut r.live_cpu);
            r.dead_reconciles += std::mem::take(&mut r.live_reconciles);
        }
    }
}

async fn start_again(record: &Arc<Mutex<Record>>, starter: &Starter) -> anyhow::Result<Controller> {
    let n = lock(record).starts + 1;
    let (mut controller, identity) = starter.start(n)?;
    {
        let mut r = lock(record);
        r.starts = n;
        r.running = Running {
            pid: controller.pid(),
            base_url: controller.base_url().to_owned(),
            identity,
            ..Running::default()
        };
    }
    controller.wait_ready().await?;
    Ok(controller)
}

/// `/healthz`, one request at a time, every [`PROBE_EVERY`].
async fn probe(record: Arc<Mutex<Record>>, http: reqwest::Client) {
    loop {
        let tick = Instant::now();
        let url = format!("{}/healthz", lock(&record).running.base_url);
        let answer = http.get(&url).timeout(PROBE_TIMEOUT).send().await;
        let took = tick.elapsed();
        if let Some(w) = lock(&record).window() {
            match answer {
                Ok(_) => w.healthz_ms.push(took.as_secs_f64() * 1000.0),
                Err(e) if e.is_timeout() => {
                    w.healthz_timeouts += 1;
                    w.healthz_ms.push(PROBE_TIMEOUT.as_secs_f64() * 1000.0);
                }
                Err(_) => w.healthz_refused += 1,
            }
        }
        tokio::time::sleep_until((tick + PROBE_EVERY).into()).await;
    }
}

/// The reconciles the running process has counted, every second.
async fn scrape(record: Arc<Mutex<Record>>, http: reqwest::Client) {
    loop {
        let (pid, base_url) = {
            let r = lock(&record);
            (r.running.pid, r.running.base_url.clone())
        };
        let url = format!("{base_url}/metrics");
        let text = async {
            let response = http.get(&url).timeout(SCRAPE_TIMEOUT).send().await?;
            response.text().await
        };
        if let Ok(text) = text.await {
            let mut r = lock(&record);
            // A scrape of a process that was replaced meanwhile is dropped.
            if r.running.pid == pid {
                r.live_reconciles = sum_of(&text, RECONCILES);
            }
        }
        tokio::time::sleep(SCRAPE_EVERY).await;
    }
}

/// Who holds the Lease, every [`LEASE_EVERY`]: a running controller that
/// led and no longer holds it has lost it.
async fn watch_lease(record: Arc<Mutex<Record>>, leases: Api<Lease>) {
    loop {
        if let Ok(Some(lease)) = leases.get_opt("configmap-mirror").await {
            let spec = lease.spec.unwrap_or_default();
            let holder = spec.holder_identity.unwrap_or_default();
            let mut r = lock(&record);
            let transitions = spec.lease_transitions.unwrap_or(0);
            if r.lease_transitions.last() != Some(&transitions) {
                r.lease_transitions.push(transitions);
            }
            if holder == r.running.identity {
                r.running.led = true;
            } else if r.running.led {
                r.lose_lease();
            }
        }
        tokio::time::sleep(LEASE_EVERY).await;
    }
}
