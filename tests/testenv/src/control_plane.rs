//! Starting, using and stopping one etcd + kube-apiserver +
//! kube-controller-manager.

use std::ffi::OsString;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow, bail};
use rand::distr::{Alphanumeric, SampleString};

use crate::certs::{self, Pki};
use crate::kubeconfig;
use crate::logs::{self, log_file};
use crate::ports::free_port;
use crate::process::{ChildProcess, Signal, spawn_child};
use crate::state::StateDir;

const ADMIN_USER: &str = "testenv-admin";
const CONTROLLER_MANAGER_USER: &str = "system:kube-controller-manager";
const SERVICE_ACCOUNT_ISSUER: &str = "https://kubernetes.default.svc.cluster.local";
pub(crate) const SERVICE_CLUSTER_IP_RANGE: &str = "10.0.0.0/24";
/// The `kubernetes` Service's ClusterIP: the first address of the range.
pub(crate) const KUBERNETES_SERVICE_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
/// A port taken between probing and binding is the one startup failure worth
/// retrying; see `ports`.
const START_ATTEMPTS: u32 = 3;
// Files in the state directory.
const CA_CERT: &str = "pki/ca.crt";
const SERVING_CERT: &str = "pki/serving.crt";
const SERVING_KEY: &str = "pki/serving.key";
const SERVICE_ACCOUNT_KEY: &str = "pki/service-account.key";
const SERVICE_ACCOUNT_PUBLIC_KEY: &str = "pki/service-account.pub";
const TOKENS: &str = "tokens.csv";
const ADMIN_KUBECONFIG: &str = "admin.kubeconfig";
const CONTROLLER_MANAGER_KUBECONFIG: &str = "controller-manager.kubeconfig";

const POLL: Duration = Duration::from_millis(50);
/// How long kube-apiserver gets to shut down gracefully before it is
/// killed: its shutdown waits for open connections for up to its request
/// timeout, 60 s by default, and this adds a margin.
const APISERVER_STOP_GRACE: Duration = Duration::from_secs(70);

/// How to start a [`ControlPlane`].
#[derive(Clone, Debug)]
pub struct Options {
    /// Keep all state (etcd data, keys, kubeconfigs, logs) here instead of a
    /// fresh directory under the build output. It must be empty, missing or
    /// left by a control plane that is no longer running. Removed on drop.
    pub state_dir: Option<PathBuf>,
    /// Run etcd with `--unsafe-no-fsync`: much faster writes, no durability.
    pub etcd_unsafe_no_fsync: bool,
    /// Where the server binaries are; by default `KUBE_BIN_DIR`, else the
    /// cache `make k8s` fills for the version in `hack/kube-version`.
    pub bin_dir: Option<PathBuf>,
    /// Appended to kube-apiserver's command line; later flags win.
    pub extra_apiserver_args: Vec<String>,
    /// Upper bound for all servers to become ready.
    pub startup_timeout: Duration,
    /// Serve on this address instead of 127.0.0.1, and advertise it as the
    /// `kubernetes` Service's endpoint (the endpoint reconciler is then on),
    /// so that pods on a node reach the API server through the Service's
    /// ClusterIP. For [`Cluster`](crate::Cluster), which gives it an address
    /// on the link to its node.
    pub apiserver_address: Option<Ipv4Addr>,
    /// Also run the controllers a node's Deployments need: Deployments and
    /// ReplicaSets, ServiceAccounts and their CA bundle, EndpointSlices,
    /// disruption budgets and node lifecycle.
    pub node_controllers: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            state_dir: None,
            etcd_unsafe_no_fsync: false,
            bin_dir: None,
            extra_apiserver_args: Vec::new(),
            // Generous: the first start after a build pages in ~100 MB of
            // binaries, on a machine that may be busy compiling.
            startup_timeout: Duration::from_secs(120),
            apiserver_address: None,
            node_controllers: false,
        }
    }
}

/// A running control plane. Dropping it stops every server and removes its
/// state directory.
pub struct ControlPlane {
    servers: Servers,
    server_url: String,
    ca_pem: String,
    ca_der: Vec<u8>,
    admin_token: String,
    kubeconfig_path: PathBuf,
    log_dir: PathBuf,
    bin_dir: PathBuf,
    startup_duration: Duration,
    startup_timeout: Duration,
    state: StateDir,
}

struct Servers {
    etcd: ChildProcess,
    apiserver: ChildProcess,
    controller_manager: ChildProcess,
    apiserver_port: u16,
    /// To start kube-apiserver again with the same port, files and etcd.
    apiserver_launch: LaunchSpec,
}

/// A command's program and arguments, all that the server commands set.
struct LaunchSpec {
    program: OsString,
    args: Vec<OsString>,
}

impl LaunchSpec {
    fn of(command: &Command) -> LaunchSpec {
        LaunchSpec {
            program: command.get_program().to_owned(),
            args: command.get_args().map(ToOwned::to_owned).collect(),
        }
    }

    fn command(&self) -> Command {
        let mut command = Command::new(&self.program);
        command.args(&self.args);
        command
    }
}

impl Servers {
    /// Clients before the servers they depend on.
    fn stop(&mut self) {
        for child in [
            &mut self.controller_manager,
            &mut self.apiserver,
            &mut self.etcd,
        ] {
            let _ = child.kill();
        }
    }
}

/// A control plane of the test binary's own, like [`ControlPlane::shared`]
/// but apart from it: for tests that must not share a cluster with the
/// others, such as those that run a cluster-wide controller.
///
/// ```no_run
/// static CLUSTER_WIDE: testenv::LazyControlPlane = testenv::LazyControlPlane::new();
/// let control_plane = CLUSTER_WIDE.get();
/// ```
#[derive(Default)]
pub struct LazyControlPlane(OnceLock<Result<ControlPlane, String>>);

impl LazyControlPlane {
    pub const fn new() -> LazyControlPlane {
        LazyControlPlane(OnceLock::new())
    }

    /// Starts it on first use. Panics if it cannot start, so that tests
    /// fail rather than skip. Never dropped when static: its servers die
    /// with the process.
    pub fn get(&self) -> &ControlPlane {
        self.get_with(Vec::new)
    }

    /// As [`LazyControlPlane::get`], with kube-apiserver given the flags
    /// `extra_apiserver_args` returns (called once, on first use).
    pub fn get_with(&self, extra_apiserver_args: impl FnOnce() -> Vec<String>) -> &ControlPlane {
        let started = self.0.get_or_init(|| {
            let options = Options {
                // Tests never need the data to survive a crash.
                etcd_unsafe_no_fsync: true,
                extra_apiserver_args: extra_apiserver_args(),
                ..Options::default()
            };
            ControlPlane::start(options).map_err(|e| format!("{e:#}"))
        });
        match started {
            Ok(control_plane) => control_plane,
            Err(e) => panic!("cannot start the test control plane: {e}"),
        }
    }
}

impl ControlPlane {
    /// The control plane shared by every test in this test binary, started
    /// on first use. Panics if it cannot start, so that tests fail rather
    /// than skip. Never dropped: its servers die with the process.
    pub fn shared() -> &'static ControlPlane {
        static SHARED: LazyControlPlane = LazyControlPlane::new();
        SHARED.get()
    }

    /// Starts a control plane owned by the caller. Blocks until every server
    /// is ready; callable from inside or outside an async runtime.
    pub fn start(options: Options) -> anyhow::Result<ControlPlane> {
        block_on_own_thread("testenv-start", || start(options))
    }

    /// Kills kube-apiserver (SIGKILL), as a crash or the loss of its host
    /// would: its port refuses connections and every open connection is
    /// closed at once. etcd and kube-controller-manager keep running.
    /// [`start_apiserver`](Self::start_apiserver) starts it again.
    pub fn kill_apiserver(&mut self) -> anyhow::Result<()> {
        self.servers.apiserver.kill()?;
        Ok(())
    }

    /// Stops etcd (SIGSTOP), as a stalled disk or host would: it neither
    /// answers nor closes a connection. kube-apiserver keeps running: it
    /// answers what needs no storage (`/version`, and the lists and watches
    /// its watch cache serves), while a request that must reach etcd waits
    /// until its request timeout (60 s by default) and is then dropped.
    /// [`thaw_etcd`](Self::thaw_etcd) resumes it; dropping the control
    /// plane kills it either way.
    pub fn freeze_etcd(&self) -> anyhow::Result<()> {
        self.servers.etcd.signal(Signal::Stop)
    }

    /// Resumes etcd after [`freeze_etcd`](Self::freeze_etcd) (SIGCONT).
    pub fn thaw_etcd(&self) -> anyhow::Result<()> {
        self.servers.etcd.signal(Signal::Cont)
    }

    /// Stops kube-apiserver as an upgrade would: SIGTERM, and SIGKILL only
    /// if it has not exited within the grace time. It stops listening at
    /// once but keeps connections that carry watches open, silent, until
    /// its request timeout (60 s by default) has passed, so with any watch
    /// open this takes about a minute. etcd and kube-controller-manager keep
    /// running. [`start_apiserver`](Self::start_apiserver) starts it again.
    pub fn stop_apiserver(&mut self) -> anyhow::Result<()> {
        let apiserver = &mut self.servers.apiserver;
        if apiserver.try_wait()?.is_some() {
            return Ok(());
        }
        apiserver.signal(Signal::Term)?;
        if apiserver.wait_with_timeout(APISERVER_STOP_GRACE)?.is_none() {
            eprintln!(
                "testenv: kube-apiserver did not stop within {APISERVER_STOP_GRACE:?} of SIGTERM; killing it"
            );
            apiserver.kill()?;
        }
        Ok(())
    }

    /// Starts kube-apiserver again after it stopped, with the same flags:
    /// the same port, certificates, tokens and etcd, so clients reconnect to
    /// the same URL and find the objects written before. Blocks until its
    /// `/readyz` passes; its log goes on in the same file.
    pub fn start_apiserver(&mut self) -> anyhow::Result<()> {
        let started = Instant::now();
        if self.servers.apiserver.try_wait()?.is_none() {
            bail!(
                "kube-apiserver is still running (pid {})",
                self.servers.apiserver.pid()
            );
        }
        // Stored at once, so that the server is stopped with the others
        // even if it never becomes ready.
        self.servers.apiserver = spawn_child(
            self.servers.apiserver_launch.command(),
            &log_file(&self.log_dir, "kube-apiserver"),
        )?;
        let deadline = started + self.startup_timeout;
        let readyz = format!("{}/readyz", self.server_url);
        let (ca_pem, admin_token) = (&self.ca_pem, &self.admin_token);
        let servers = &mut self.servers;
        block_on_own_thread("testenv-apiserver-start", || async move {
            let http = probe_client(ca_pem)?;
            let mut children = [&mut servers.etcd, &mut servers.apiserver];
            wait_ready("kube-apiserver /readyz", deadline, &mut children, || {
                succeeds(http.get(&readyz).bearer_auth(admin_token))
            })
            .await
        })?;
        eprintln!(
            "testenv: kube-apiserver ready again at {} in {:.2}s",
            self.server_url,
            started.elapsed().as_secs_f64()
        );
        Ok(())
    }

    /// A new admin client. A `kube::Client` is bound to the runtime that
    /// first uses it, and every `#[tokio::test]` has its own runtime, so
    /// clients are not shared between tests.
    pub async fn client(&self) -> kube::Client {
        kube::Client::try_from(self.kube_config())
            .expect("building a client for the test control plane")
    }

    /// Admin (`system:masters`) client configuration.
    pub fn kube_config(&self) -> kube::Config {
        self.token_config(&self.admin_token)
    }

    /// Admin client configuration for reaching the API server at
    /// `server_url` instead, such as a [`FaultProxy`](crate::FaultProxy)'s:
    /// the serving certificate is valid for any `https://127.0.0.1:<port>`.
    pub fn kube_config_via(&self, server_url: &str) -> anyhow::Result<kube::Config> {
        kubeconfig::config(server_url, &self.ca_der, &self.admin_token)
    }

    /// Client configuration authenticating with `token` only.
    pub fn token_config(&self, token: &str) -> kube::Config {
        kubeconfig::config(&self.server_url, &self.ca_der, token).expect("the server URL is valid")
    }

    /// An admin kubeconfig file, usable by kubectl and other clients.
    pub fn kubeconfig_path(&self) -> &Path {
        &self.kubeconfig_path
    }

    /// Writes a kubeconfig file that authenticates with `token` only, for
    /// running a binary as a ServiceAccount.
    pub fn write_token_kubeconfig(&self, token: &str, path: &Path) -> anyhow::Result<()> {
        self.write_token_kubeconfig_via(&self.server_url, token, path)
    }

    /// Like [`write_token_kubeconfig`](Self::write_token_kubeconfig), for
    /// reaching the API server at `server_url`, such as a
    /// [`FaultProxy`](crate::FaultProxy)'s.
    pub fn write_token_kubeconfig_via(
        &self,
        server_url: &str,
        token: &str,
        path: &Path,
    ) -> anyhow::Result<()> {
        kubeconfig::write_private(
            path,
            &kubeconfig::render(server_url, &self.ca_pem, "token", token),
        )
    }

    /// Writes an admin kubeconfig file for reaching the API server at
    /// `server_url`, such as a [`FaultProxy`](crate::FaultProxy)'s.
    pub fn write_admin_kubeconfig_via(&self, server_url: &str, path: &Path) -> anyhow::Result<()> {
        kubeconfig::write_private(
            path,
            &kubeconfig::render(server_url, &self.ca_pem, ADMIN_USER, &self.admin_token),
        )
    }

    pub fn server_url(&self) -> String {
        self.server_url.clone()
    }

    /// kubectl with the admin kubeconfig.
    pub fn kubectl(&self) -> Command {
        let mut cmd = Command::new(self.bin_dir.join("kubectl"));
        cmd.arg("--kubeconfig").arg(&self.kubeconfig_path);
        cmd
    }

    /// The CA that signed the serving certificates.
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// Holds `etcd.log`, `kube-apiserver.log` and `kube-controller-manager.log`.
    pub fn log_dir(&self) -> &Path {
        &self.log_dir
    }

    pub fn state_dir(&self) -> &Path {
        self.state.path()
    }

    pub fn bin_dir(&self) -> &Path {
        &self.bin_dir
    }

    /// From the call to `start` until every server was ready.
    pub fn startup_duration(&self) -> Duration {
        self.startup_duration
    }

    pub fn apiserver_port(&self) -> u16 {
        self.servers.apiserver_port
    }

    /// Where kube-apiserver listens, e.g. as a [`FaultProxy`](crate::FaultProxy)'s
    /// upstream.
    pub fn apiserver_address(&self) -> SocketAddr {
        SocketAddr::from((Ipv4Addr::LOCALHOST, self.servers.apiserver_port))
    }

    /// (name, pid) of each server process.
    pub fn pids(&self) -> Vec<(&str, u32)> {
        [
            &self.servers.etcd,
            &self.servers.apiserver,
            &self.servers.controller_manager,
        ]
        .into_iter()
        .map(|child| (child.name(), child.pid()))
        .collect()
    }
}

impl Drop for ControlPlane {
    fn drop(&mut self) {
        self.servers.stop();
        logs::forget(&self.log_dir);
    }
}

/// Everything the servers read, written once per control plane.
struct Layout {
    root: PathBuf,
    log_dir: PathBuf,
    bin_dir: PathBuf,
    pki: Pki,
    admin_token: String,
    controller_manager_token: String,
    options: Options,
}

impl Layout {
    fn path(&self, name: &str) -> PathBuf {
        self.root.join(name)
    }

    fn path_flag(&self, flag: &str, name: &str) -> String {
        format!("{flag}={}", self.path(name).display())
    }

    fn apiserver_address(&self) -> Ipv4Addr {
        self.options
            .apiserver_address
            .unwrap_or(Ipv4Addr::LOCALHOST)
    }

    fn server_url(&self, port: u16) -> String {
        format!("https://{}:{port}", self.apiserver_address())
    }
}

async fn start(options: Options) -> anyhow::Result<ControlPlane> {
    let started = Instant::now();
    let bin_dir = match &options.bin_dir {
        Some(dir) => {
            crate::binaries::check(dir)?;
            dir.clone()
        }
        None => crate::binaries::bin_dir()?,
    };
    let state = match &options.state_dir {
        Some(dir) => StateDir::given(dir)?,
        None => StateDir::temp()?,
    };
    let root = state.path().to_owned();
    let layout = Layout {
        log_dir: root.join("logs"),
        root,
        bin_dir,
        pki: certs::generate(options.apiserver_address).context("generating certificates")?,
        admin_token: random_token(),
        controller_manager_token: random_token(),
        options,
    };
    write_files(&layout)?;
    logs::show_on_panic(&layout.log_dir);

    let deadline = started + layout.options.startup_timeout;
    let mut attempt = 1;
    let servers = loop {
        match launch(&layout, deadline).await {
            Ok(servers) => break servers,
            Err(e) if attempt < START_ATTEMPTS && port_conflict(&layout.log_dir) => {
                eprintln!(
                    "testenv: a port was taken while starting ({e:#}); retrying with other ports"
                );
                set_aside_failed_attempt(&layout, attempt)?;
                attempt += 1;
            }
            Err(e) => {
                logs::forget(&layout.log_dir);
                let tails = logs::tails(&layout.log_dir);
                // Kept for inspection; the next run removes it once we are gone.
                let kept = state.keep();
                // The cause first: the log tails that follow are long.
                return Err(anyhow!(
                    "starting the control plane failed: {e:#}\nstate and logs kept in {}\n{tails}",
                    kept.display()
                ));
            }
        }
    };

    let startup_duration = started.elapsed();
    let server_url = layout.server_url(servers.apiserver_port);
    eprintln!(
        "testenv: control plane ready at {server_url} in {:.2}s (state: {})",
        startup_duration.as_secs_f64(),
        state.path().display()
    );
    Ok(ControlPlane {
        servers,
        server_url,
        kubeconfig_path: layout.path(ADMIN_KUBECONFIG),
        ca_pem: layout.pki.ca_pem,
        ca_der: layout.pki.ca_der,
        admin_token: layout.admin_token,
        log_dir: layout.log_dir,
        bin_dir: layout.bin_dir,
        startup_duration,
        startup_timeout: layout.options.startup_timeout,
        state,
    })
}

/// Runs `work` to completion on a thread and runtime of its own. The work is
/// async (readiness probes) but the harness's API is not, and a runtime
/// cannot be blocked on from within another one: this way the API can be
/// called from inside or outside an async runtime.
fn block_on_own_thread<T, F, Fut>(thread_name: &str, work: F) -> anyhow::Result<T>
where
    T: Send,
    F: FnOnce() -> Fut + Send,
    Fut: Future<Output = anyhow::Result<T>>,
{
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name(thread_name.to_owned())
            .spawn_scoped(scope, || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()?;
                runtime.block_on(work())
            })
            .with_context(|| format!("starting thread {thread_name}"))?
            .join()
            .map_err(|_| anyhow!("thread {thread_name} panicked"))?
    })
}

fn random_token() -> String {
    Alphanumeric.sample_string(&mut rand::rng(), 40)
}

fn write_files(layout: &Layout) -> anyhow::Result<()> {
    let pki = &layout.pki;
    let files = [
        (CA_CERT, &pki.ca_pem),
        (SERVING_CERT, &pki.serving_cert_pem),
        (SERVING_KEY, &pki.serving_key_pem),
        (SERVICE_ACCOUNT_KEY, &pki.service_account_key_pem),
        (
            SERVICE_ACCOUNT_PUBLIC_KEY,
            &pki.service_account_public_key_pem,
        ),
    ];
    for (name, contents) in files {
        kubeconfig::write_private(&layout.path(name), contents)?;
    }
    // One line per user, `token,user,uid,"groups"`: the only way to
    // authenticate besides ServiceAccount tokens.
    let tokens: String = [
        (&layout.admin_token, ADMIN_USER),
        (&layout.controller_manager_token, CONTROLLER_MANAGER_USER),
    ]
    .iter()
    .map(|(token, user)| format!("{token},{user},{user},\"system:masters\"\n"))
    .collect();
    kubeconfig::write_private(&layout.path(TOKENS), &tokens)?;
    std::fs::create_dir_all(&layout.log_dir)
        .with_context(|| format!("creating {}", layout.log_dir.display()))?;
    Ok(())
}

/// Starts etcd, kube-apiserver and kube-controller-manager on fresh ports and
/// waits for each; any process started is killed again on error.
async fn launch(layout: &Layout, deadline: Instant) -> anyhow::Result<Servers> {
    let etcd_port = free_port()?;
    let etcd_peer_port = free_port()?;
    let apiserver_port = free_port()?;
    let controller_manager_port = free_port()?;
    let etcd_url = format!("http://127.0.0.1:{etcd_port}");
    let server_url = layout.server_url(apiserver_port);

    // Kubeconfigs name the port, so they are written per attempt.
    let kubeconfigs = [
        (ADMIN_KUBECONFIG, ADMIN_USER, &layout.admin_token),
        (
            CONTROLLER_MANAGER_KUBECONFIG,
            CONTROLLER_MANAGER_USER,
            &layout.controller_manager_token,
        ),
    ];
    for (name, user, token) in kubeconfigs {
        let contents = kubeconfig::render(&server_url, &layout.pki.ca_pem, user, token);
        kubeconfig::write_private(&layout.path(name), &contents)?;
    }

    let http = probe_client(&layout.pki.ca_pem)?;
    let get = |url: String| http.get(url).bearer_auth(&layout.admin_token);

    let mut etcd = spawn_child(
        etcd_command(layout, etcd_port, etcd_peer_port),
        &log_file(&layout.log_dir, "etcd"),
    )?;
    wait_ready("etcd /health", deadline, &mut [&mut etcd], || {
        let request = http.get(format!("{etcd_url}/health"));
        async move {
            let body = request.send().await.ok()?.text().await.ok()?;
            body.contains(r#""health":"true""#).then_some(())
        }
    })
    .await?;

    let apiserver_command = apiserver_command(layout, &etcd_url, apiserver_port);
    let apiserver_launch = LaunchSpec::of(&apiserver_command);
    let mut apiserver = spawn_child(
        apiserver_command,
        &log_file(&layout.log_dir, "kube-apiserver"),
    )?;
    wait_ready(
        "kube-apiserver /readyz",
        deadline,
        &mut [&mut etcd, &mut apiserver],
        || succeeds(get(format!("{server_url}/readyz"))),
    )
    .await?;

    // Started only now: it gives up if the apiserver is not healthy soon.
    let mut controller_manager = spawn_child(
        controller_manager_command(layout, controller_manager_port),
        &log_file(&layout.log_dir, "kube-controller-manager"),
    )?;
    let mut all = [&mut etcd, &mut apiserver, &mut controller_manager];
    wait_ready("the default namespace", deadline, &mut all, || {
        succeeds(get(format!("{server_url}/api/v1/namespaces/default")))
    })
    .await?;
    wait_ready(
        "kube-controller-manager /healthz",
        deadline,
        &mut all,
        || {
            succeeds(get(format!(
                "https://127.0.0.1:{controller_manager_port}/healthz"
            )))
        },
    )
    .await?;

    Ok(Servers {
        etcd,
        apiserver,
        controller_manager,
        apiserver_port,
        apiserver_launch,
    })
}

/// An HTTP client trusting only the control plane's CA, for readiness probes.
fn probe_client(ca_pem: &str) -> anyhow::Result<reqwest::Client> {
    reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(ca_pem.as_bytes())?)
        .tls_built_in_root_certs(false)
        .no_proxy()
        .timeout(Duration::from_secs(5))
        .build()
        .context("building the readiness-probe HTTP client")
}

async fn succeeds(request: reqwest::RequestBuilder) -> Option<()> {
    let response = request.send().await.ok()?;
    response.status().is_success().then_some(())
}

fn etcd_command(layout: &Layout, port: u16, peer_port: u16) -> Command {
    let client_url = format!("http://127.0.0.1:{port}");
    let peer_url = format!("http://127.0.0.1:{peer_port}");
    let mut cmd = Command::new(layout.bin_dir.join("etcd"));
    cmd.arg("--name=testenv")
        .arg(layout.path_flag("--data-dir", "etcd"))
        .arg(format!("--listen-client-urls={client_url}"))
        .arg(format!("--advertise-client-urls={client_url}"))
        .arg(format!("--listen-peer-urls={peer_url}"))
        .arg(format!("--initial-advertise-peer-urls={peer_url}"))
        .arg(format!("--initial-cluster=testenv={peer_url}"))
        .arg("--initial-cluster-state=new");
    if layout.options.etcd_unsafe_no_fsync {
        cmd.arg("--unsafe-no-fsync");
    }
    cmd
}

fn apiserver_command(layout: &Layout, etcd_url: &str, port: u16) -> Command {
    let address = layout.apiserver_address();
    let mut cmd = Command::new(layout.bin_dir.join("kube-apiserver"));
    cmd.arg(format!("--etcd-servers={etcd_url}"))
        .arg(format!("--bind-address={address}"))
        .arg(format!("--advertise-address={address}"))
        .arg(format!("--secure-port={port}"))
        .arg(layout.path_flag("--tls-cert-file", SERVING_CERT))
        .arg(layout.path_flag("--tls-private-key-file", SERVING_KEY))
        // Unused with the files above, but the default is a system directory.
        .arg(layout.path_flag("--cert-dir", "apiserver-certs"))
        .arg(layout.path_flag("--token-auth-file", TOKENS))
        .arg("--authorization-mode=RBAC")
        .arg(format!("--service-account-issuer={SERVICE_ACCOUNT_ISSUER}"))
        .arg(layout.path_flag("--service-account-key-file", SERVICE_ACCOUNT_PUBLIC_KEY))
        .arg(layout.path_flag("--service-account-signing-key-file", SERVICE_ACCOUNT_KEY))
        .arg(format!(
            "--service-cluster-ip-range={SERVICE_CLUSTER_IP_RANGE}"
        ))
        // A node's name may not resolve; its InternalIP is the address to use
        // for logs and exec.
        .arg("--kubelet-preferred-address-types=InternalIP")
        .arg("--profiling=false");
    if layout.options.apiserver_address.is_none() {
        // The `kubernetes` Service's endpoints cannot hold a loopback
        // address, so reconciling them would only log errors.
        cmd.arg("--endpoint-reconciler-type=none");
    }
    cmd.args(&layout.options.extra_apiserver_args);
    cmd
}

fn controller_manager_command(layout: &Layout, port: u16) -> Command {
    let mut cmd = Command::new(layout.bin_dir.join("kube-controller-manager"));
    cmd.arg(layout.path_flag("--kubeconfig", CONTROLLER_MANAGER_KUBECONFIG))
        // Deleting dependents (ownerReferences) and namespaces' contents: what
        // a real cluster does that the apiserver alone does not; and the
        // type-checking of admission policies, which reports expressions
        // that do not fit a matched kind in the policy's status.
        .arg(if layout.options.node_controllers {
            // What a Deployment needs to become running pods. Without
            // nodelifecycle a new node keeps its not-ready taint.
            "--controllers=garbagecollector,namespace,validatingadmissionpolicy-status-controller,\
             deployment,replicaset,serviceaccount,serviceaccount-token,root-ca-cert-publisher,\
             endpointslice,disruption,nodelifecycle"
        } else {
            "--controllers=garbagecollector,namespace,validatingadmissionpolicy-status-controller"
        })
        .arg("--leader-elect=false")
        .arg("--use-service-account-credentials=false")
        .arg("--bind-address=127.0.0.1")
        .arg(format!("--secure-port={port}"))
        .arg(layout.path_flag("--tls-cert-file", SERVING_CERT))
        .arg(layout.path_flag("--tls-private-key-file", SERVING_KEY))
        .arg(layout.path_flag("--cert-dir", "controller-manager-certs"))
        .arg("--profiling=false");
    if layout.options.node_controllers {
        // The CA that pods' `kube-root-ca.crt` ConfigMap publishes, and the
        // key that signs ServiceAccount token Secrets.
        cmd.arg(layout.path_flag("--root-ca-file", CA_CERT))
            .arg(layout.path_flag("--service-account-private-key-file", SERVICE_ACCOUNT_KEY));
    }
    cmd
}

/// Polls `probe` until it succeeds; fails early if one of `children` exits.
async fn wait_ready<F, Fut>(
    what: &str,
    deadline: Instant,
    children: &mut [&mut ChildProcess],
    mut probe: F,
) -> anyhow::Result<()>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<()>>,
{
    loop {
        for child in children.iter_mut() {
            if let Some(status) = child.try_wait()? {
                bail!("{} exited while waiting for {what}: {status}", child.name());
            }
        }
        let remaining = deadline.saturating_duration_since(Instant::now());
        if remaining.is_zero() {
            bail!("timed out waiting for {what}");
        }
        if let Ok(Some(())) = tokio::time::timeout(remaining, probe()).await {
            return Ok(());
        }
        tokio::time::sleep(POLL).await;
    }
}

fn port_conflict(log_dir: &Path) -> bool {
    logs::SERVERS.iter().any(|server| {
        std::fs::read_to_string(log_file(log_dir, server))
            .is_ok_and(|log| log.contains("address already in use"))
    })
}

/// Keeps the failed attempt's logs under another name, so they neither mix
/// with the next attempt's nor trigger another port-conflict retry, and
/// clears etcd's data, which records the old peer address.
fn set_aside_failed_attempt(layout: &Layout, attempt: u32) -> anyhow::Result<()> {
    for server in logs::SERVERS {
        let log = log_file(&layout.log_dir, server);
        if log.exists() {
            let aside = layout
                .log_dir
                .join(format!("{server}.attempt-{attempt}.log"));
            std::fs::rename(&log, &aside).with_context(|| format!("renaming {}", log.display()))?;
        }
    }
    let etcd_data = layout.path("etcd");
    if etcd_data.exists() {
        std::fs::remove_dir_all(&etcd_data)
            .with_context(|| format!("removing {}", etcd_data.display()))?;
    }
    Ok(())
}
