//! A loopback TCP proxy that breaks the link between a client and a server
//! on command, for fault tests against a real API server.
//!
//! It relays bytes without looking at them, so TLS passes through end to
//! end: a client connecting to the proxy verifies the server's certificate
//! for `127.0.0.1` as it would connecting directly.
//!
//! What each fault looks like to the client:
//! - [`FaultProxy::reset`]: every open connection is reset (RST), and new
//!   connections are refused, as when the server's host is gone. The
//!   upstream side of each connection is closed normally.
//! - [`FaultProxy::freeze`]: every connection stays open but no byte moves
//!   in either direction, as in a network partition. New connections are
//!   accepted but get no further than the TCP handshake. Unlike a real
//!   partition, the proxy's own kernel still acknowledges what it receives,
//!   so TCP keepalive and retransmission timeouts never fire: only the
//!   client's own timeouts notice.
//! - [`FaultProxy::freeze_open_connections`]: a freeze of only the
//!   connections open at the time of the call, until
//!   [`FaultProxy::thaw_open_connections`]; connections opened later pass
//!   normally. A client whose long-lived requests (watches) and short ones
//!   use separate connections keeps making the short ones (on new
//!   connections, once the frozen ones time out) while its watches hear
//!   nothing.
//! - [`FaultProxy::stall_responses_to_uploads`]: on a connection whose
//!   client has just sent a large request, the answer stops after its first
//!   bytes, as a half-open link does while a large body streams: the
//!   client gets the headers and waits for the rest.
//! - [`FaultProxy::set_latency`]: every chunk of bytes arrives that much
//!   later, in both directions; chunks stay in order and do not wait for
//!   each other. [`FaultProxy::set_response_latency`] delays only what the
//!   upstream sends back.
//!
//! When one side closes or resets its connection, the other side sees that
//! after every byte sent before it, held or delayed as those were, as a
//! network delivers the packets already on their way. So the writes of a
//! client that was frozen and then killed still reach the server on thaw.

use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use anyhow::{Context, anyhow, ensure};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::ports::listen_on_free_port;

/// Bytes read from one side in one go.
const CHUNK_SIZE: usize = 16 * 1024;
/// Chunks read but not yet written, per direction of a connection. Beyond
/// that the proxy stops reading, and the sender's kernel buffers fill up as
/// they would on a real link.
const CHUNKS_IN_FLIGHT: usize = 32;
const LISTEN_BACKLOG: u32 = 1024;

/// A proxy from `127.0.0.1:<port>` to one loopback upstream address, with
/// controls for injecting faults. The controls are blocking methods that
/// return once the fault is in effect; they can be called from any thread,
/// inside an async runtime or not. A reset and a freeze are independent:
/// restoring a frozen link leaves it frozen. The proxy runs on a thread and
/// runtime of its own, and dropping it closes every connection and stops
/// that thread.
///
/// ```no_run
/// # fn example(control_plane: &testenv::ControlPlane) -> anyhow::Result<()> {
/// let proxy = testenv::FaultProxy::start(control_plane.apiserver_address())?;
/// let kubeconfig = control_plane.state_dir().join("via-proxy.kubeconfig");
/// control_plane.write_admin_kubeconfig_via(&proxy.url(), &kubeconfig)?;
/// // ... start the controller with KUBECONFIG=kubeconfig ...
/// proxy.reset()?; // the API server is gone
/// proxy.restore()?; // and back
/// # Ok(()) }
/// ```
pub struct FaultProxy {
    port: u16,
    upstream: SocketAddr,
    requests: mpsc::UnboundedSender<Request>,
    counters: Arc<Counters>,
    thread: Option<std::thread::JoinHandle<()>>,
}

#[derive(Default)]
struct Counters {
    accepted: AtomicU64,
    open: AtomicUsize,
}

/// What every connection obeys; the latest value is broadcast to all.
#[derive(Clone, Copy, Debug, Default)]
struct Link {
    down: bool,
    frozen: bool,
    /// Connections numbered below this are frozen too.
    frozen_below: u64,
    /// Added to what the client sends.
    request_latency: Duration,
    /// Added to what the upstream sends back.
    response_latency: Duration,
    stall: Option<Stall>,
}

/// Which answers stop, and where.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stall {
    /// A request of at least this many bytes...
    after_upload: usize,
    /// ...gets only this many bytes of its answer.
    response_bytes: usize,
}

/// Which way a pump copies bytes.
#[derive(Clone, Copy, Debug)]
enum Direction {
    ToUpstream,
    ToClient,
}

impl Link {
    fn holds(&self, connection: u64) -> bool {
        self.frozen || connection < self.frozen_below
    }

    fn latency(&self, direction: Direction) -> Duration {
        match direction {
            Direction::ToUpstream => self.request_latency,
            Direction::ToClient => self.response_latency,
        }
    }
}

#[derive(Debug)]
enum Control {
    Reset,
    Restore,
    Freeze,
    Thaw,
    FreezeOpen,
    ThawOpen,
    SetLatency {
        request: Duration,
        response: Duration,
    },
    SetStall(Option<Stall>),
}

/// A std channel for the reply, because the caller may be on a runtime's
/// thread, where tokio's blocking receive panics.
type Request = (Control, std::sync::mpsc::Sender<anyhow::Result<()>>);

impl FaultProxy {
    /// Starts relaying to `upstream`, which must be a loopback address:
    /// fault tests send traffic only to this machine.
    pub fn start(upstream: SocketAddr) -> anyhow::Result<FaultProxy> {
        ensure!(
            upstream.ip().is_loopback(),
            "the fault proxy relays only to loopback addresses, not {upstream}"
        );
        let listener = listen_on_free_port()?;
        let port = listener.local_addr()?.port();
        listener.set_nonblocking(true)?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("building the fault proxy's runtime")?;
        // Registered with the runtime here, so a failure shows up in this call.
        let listener = {
            let _entered = runtime.enter();
            TcpListener::from_std(listener)?
        };
        let (requests, incoming_requests) = mpsc::unbounded_channel();
        let counters = Arc::new(Counters::default());
        let proxy = Proxy {
            port,
            upstream,
            counters: Arc::clone(&counters),
            link: watch::Sender::new(Link::default()),
            connections: JoinSet::new(),
        };
        let thread = std::thread::Builder::new()
            .name(format!("testenv-fault-proxy-{port}"))
            .spawn(move || runtime.block_on(proxy.run(Some(listener), incoming_requests)))
            .context("starting the fault proxy's thread")?;
        Ok(FaultProxy {
            port,
            upstream,
            requests,
            counters,
            thread: Some(thread),
        })
    }

    /// `https://127.0.0.1:<port>`, for a kubeconfig's server URL.
    pub fn url(&self) -> String {
        format!("https://127.0.0.1:{}", self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn address(&self) -> SocketAddr {
        SocketAddr::from((Ipv4Addr::LOCALHOST, self.port))
    }

    pub fn upstream(&self) -> SocketAddr {
        self.upstream
    }

    /// Resets every open connection and refuses new ones until
    /// [`restore`](Self::restore). Returns once every connection is closed
    /// and the port no longer listens.
    pub fn reset(&self) -> anyhow::Result<()> {
        self.control(Control::Reset)
    }

    /// Listens again on the same port after [`reset`](Self::reset). Fails if
    /// another process took the port meanwhile.
    pub fn restore(&self) -> anyhow::Result<()> {
        self.control(Control::Restore)
    }

    /// Holds every byte in both directions, leaving connections open, until
    /// [`thaw`](Self::thaw). Bytes already written on are not recalled.
    pub fn freeze(&self) -> anyhow::Result<()> {
        self.control(Control::Freeze)
    }

    /// Lets the held bytes flow again, in order, and new connections reach
    /// the upstream.
    pub fn thaw(&self) -> anyhow::Result<()> {
        self.control(Control::Thaw)
    }

    /// Holds every byte in both directions on the connections accepted so
    /// far, as [`freeze`](Self::freeze) does, until
    /// [`thaw_open_connections`](Self::thaw_open_connections); connections
    /// accepted later relay normally.
    pub fn freeze_open_connections(&self) -> anyhow::Result<()> {
        self.control(Control::FreezeOpen)
    }

    /// Lets the bytes held by [`freeze_open_connections`](Self::freeze_open_connections)
    /// flow again, in order. A [`freeze`](Self::freeze) still holds them.
    pub fn thaw_open_connections(&self) -> anyhow::Result<()> {
        self.control(Control::ThawOpen)
    }

    /// Delays every chunk read from then on by `latency` before it is
    /// written on, in both directions. Zero, the default, adds none.
    pub fn set_latency(&self, latency: Duration) -> anyhow::Result<()> {
        self.control(Control::SetLatency {
            request: latency,
            response: latency,
        })
    }

    /// Delays only what the upstream sends back (responses, watch events)
    /// by `latency`, from then on: a request reaches the API server at
    /// once, and the client learns of its outcome late.
    pub fn set_response_latency(&self, latency: Duration) -> anyhow::Result<()> {
        self.control(Control::SetLatency {
            request: Duration::ZERO,
            response: latency,
        })
    }

    /// From then on, on a connection whose client has sent at least
    /// `after_upload` bytes since the upstream last answered, only the first
    /// `response_bytes` of the answer get through; the rest is held (the
    /// connection stays open) until [`release_responses`](Self::release_responses).
    /// Connections that only send small requests, as watches do, flow on.
    pub fn stall_responses_to_uploads(
        &self,
        after_upload: usize,
        response_bytes: usize,
    ) -> anyhow::Result<()> {
        self.control(Control::SetStall(Some(Stall {
            after_upload,
            response_bytes,
        })))
    }

    /// Lets the answers held by a stall through, and stalls no more.
    pub fn release_responses(&self) -> anyhow::Result<()> {
        self.control(Control::SetStall(None))
    }

    /// Connections accepted since the start, including those refused on.
    pub fn accepted_connections(&self) -> u64 {
        self.counters.accepted.load(Ordering::SeqCst)
    }

    /// Connections accepted and not yet closed.
    pub fn open_connections(&self) -> usize {
        self.counters.open.load(Ordering::SeqCst)
    }

    fn control(&self, control: Control) -> anyhow::Result<()> {
        let (reply, result) = std::sync::mpsc::channel();
        let gone = || anyhow!("the fault proxy on port {} has stopped", self.port);
        self.requests.send((control, reply)).map_err(|_| gone())?;
        result.recv().map_err(|_| gone())?
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        // Closing the request channel ends the proxy's loop; its runtime then
        // drops every connection task, closing their sockets.
        let (closed, _) = mpsc::unbounded_channel();
        drop(std::mem::replace(&mut self.requests, closed));
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The state owned by the proxy's thread.
struct Proxy {
    port: u16,
    upstream: SocketAddr,
    counters: Arc<Counters>,
    link: watch::Sender<Link>,
    connections: JoinSet<()>,
}

impl Proxy {
    async fn run(
        mut self,
        mut listener: Option<TcpListener>,
        mut requests: mpsc::UnboundedReceiver<Request>,
    ) {
        loop {
            tokio::select! {
                request = requests.recv() => {
                    let Some((control, reply)) = request else { break };
                    let result = self.apply(control, &mut listener).await;
                    let _ = reply.send(result);
                }
                accepted = accept(listener.as_ref()) => match accepted {
                    Ok((client, _)) => self.spawn_connection(client),
                    // Failures here concern one incoming connection
                    // (aborted, or out of file descriptors for now).
                    Err(e) => {
                        eprintln!("testenv: fault proxy on port {}: accept failed: {e}", self.port);
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                },
                Some(finished) = self.connections.join_next(), if !self.connections.is_empty() => {
                    if let Err(e) = finished {
                        eprintln!("testenv: fault proxy on port {}: a connection task failed: {e}", self.port);
                    }
                }
            }
        }
    }

    async fn apply(
        &mut self,
        control: Control,
        listener: &mut Option<TcpListener>,
    ) -> anyhow::Result<()> {
        match control {
            Control::Reset => {
                // Closing the listening socket also resets the connections
                // still waiting in its backlog.
                *listener = None;
                self.link.send_modify(|link| link.down = true);
                while self.connections.join_next().await.is_some() {}
            }
            Control::Restore => {
                if listener.is_none() {
                    *listener = Some(
                        listen(self.port)
                            .with_context(|| format!("listening on port {} again", self.port))?,
                    );
                }
                self.link.send_modify(|link| link.down = false);
            }
            Control::Freeze => self.link.send_modify(|link| link.frozen = true),
            Control::Thaw => self.link.send_modify(|link| link.frozen = false),
            // Connections are numbered in the order accepted, from 0.
            Control::FreezeOpen => {
                let accepted = self.counters.accepted.load(Ordering::SeqCst);
                self.link.send_modify(|link| link.frozen_below = accepted);
            }
            Control::ThawOpen => self.link.send_modify(|link| link.frozen_below = 0),
            Control::SetLatency { request, response } => self.link.send_modify(|link| {
                link.request_latency = request;
                link.response_latency = response;
            }),
            Control::SetStall(stall) => self.link.send_modify(|link| link.stall = stall),
        }
        Ok(())
    }

    fn spawn_connection(&mut self, client: TcpStream) {
        let number = self.counters.accepted.fetch_add(1, Ordering::SeqCst);
        let open = OpenConnection::count(&self.counters);
        let upstream = self.upstream;
        let link = self.link.subscribe();
        self.connections
            .spawn(serve_connection(client, number, upstream, link, open));
    }
}

async fn accept(listener: Option<&TcpListener>) -> io::Result<(TcpStream, SocketAddr)> {
    match listener {
        Some(listener) => listener.accept().await,
        None => std::future::pending().await,
    }
}

/// Binds `port` again. Address reuse lets it bind while closed connections
/// on that port linger in TIME_WAIT.
fn listen(port: u16) -> io::Result<TcpListener> {
    let socket = TcpSocket::new_v4()?;
    socket.set_reuseaddr(true)?;
    socket.bind(SocketAddr::from((Ipv4Addr::LOCALHOST, port)))?;
    socket.listen(LISTEN_BACKLOG)
}

/// Counts one open connection for as long as it lives, however its task
/// ends.
struct OpenConnection(Arc<Counters>);

impl OpenConnection {
    fn count(counters: &Arc<Counters>) -> OpenConnection {
        counters.open.fetch_add(1, Ordering::SeqCst);
        OpenConnection(Arc::clone(counters))
    }
}

impl Drop for OpenConnection {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Ordering::SeqCst);
    }
}

async fn serve_connection(
    mut client: TcpStream,
    number: u64,
    upstream: SocketAddr,
    mut link: watch::Receiver<Link>,
    _open: OpenConnection,
) {
    let relay = relay(&mut client, number, upstream, link.clone());
    let reset = tokio::select! {
        result = relay => result.is_err(),
        // Also taken when the proxy is shutting down.
        _ = link.wait_for(|link| link.down) => true,
    };
    if reset {
        // A zero linger time makes closing send RST instead of FIN: the
        // client sees "connection reset" at its next read or write.
        let _ = client.set_zero_linger();
    }
}

/// Relays between `client` and a new connection to `upstream` until both
/// sides have closed. On an error, such as the upstream refusing the
/// connection or resetting it, the upstream side is reset here and the
/// caller resets the client's.
async fn relay(
    client: &mut TcpStream,
    number: u64,
    upstream: SocketAddr,
    mut link: watch::Receiver<Link>,
) -> io::Result<()> {
    // A partition lets no connection through to the other side either.
    until_flowing(&mut link, number).await?;
    let mut upstream = TcpStream::connect(upstream).await?;
    // Chunks are relayed as they come; batching is the endpoints' business.
    client.set_nodelay(true)?;
    upstream.set_nodelay(true)?;
    let uploaded = Arc::new(AtomicUsize::new(0));
    let result = {
        let (client_read, client_write) = client.split();
        let (upstream_read, upstream_write) = upstream.split();
        tokio::try_join!(
            pump(
                client_read,
                upstream_write,
                link.clone(),
                number,
                Direction::ToUpstream,
                Arc::clone(&uploaded),
            ),
            pump(
                upstream_read,
                client_write,
                link,
                number,
                Direction::ToClient,
                uploaded
            ),
        )
    };
    if result.is_err() {
        let _ = upstream.set_zero_linger();
    }
    result.map(|_| ())
}

/// What one side sent, on its way to the other.
enum Segment {
    Bytes(Vec<u8>),
    /// Reading failed: the sender reset the connection.
    Reset(io::Error),
}

struct Chunk {
    segment: Segment,
    due: Instant,
}

/// Copies `from` to `to` until `from` ends, then closes `to` for writing.
/// Reading and writing are separate so that latency delays every chunk by
/// the same amount instead of adding up over a burst.
///
/// A reset read from `from` is passed on after the bytes before it, as the
/// error returned, which ends the whole connection: whatever the other
/// direction still holds is bound for the side that is gone. A failed write
/// ends this direction only; the other one reads from the same dead socket
/// and ends by itself.
///
/// `uploaded` counts the bytes the client sent since the upstream last
/// answered: the upstream-bound pump adds to it, the client-bound pump
/// clears it, and holds an answer to a large upload if a stall says so.
async fn pump(
    mut from: impl AsyncRead + Unpin,
    mut to: impl AsyncWrite + Unpin,
    link: watch::Receiver<Link>,
    number: u64,
    direction: Direction,
    uploaded: Arc<AtomicUsize>,
) -> io::Result<()> {
    let (chunks, mut pending) = mpsc::channel::<Chunk>(CHUNKS_IN_FLIGHT);
    let read_link = link.clone();
    let read = async move {
        let mut buffer = vec![0; CHUNK_SIZE];
        loop {
            let segment = match from.read(&mut buffer).await {
                // Dropping `chunks` lets the writer finish.
                Ok(0) => return,
                Ok(read) => Segment::Bytes(buffer[..read].to_vec()),
                Err(error) => Segment::Reset(error),
            };
            let last = matches!(segment, Segment::Reset(_));
            let due = Instant::now() + read_link.borrow().latency(direction);
            if chunks.send(Chunk { segment, due }).await.is_err() || last {
                return;
            }
        }
    };
    let mut write_link = link;
    let write = async move {
        // Bytes of the current answer written, once it answers a large upload.
        let mut answered: Option<usize> = None;
        while let Some(chunk) = pending.recv().await {
            tokio::time::sleep_until(chunk.due).await;
            until_flowing(&mut write_link, number).await?;
            match chunk.segment {
                Segment::Bytes(bytes) => {
                    match direction {
                        Direction::ToUpstream => {
                            uploaded.fetch_add(bytes.len(), Ordering::SeqCst);
                        }
                        Direction::ToClient => {
                            let since_upload = uploaded.swap(0, Ordering::SeqCst);
                            let stall = write_link.borrow().stall;
                            if stall.is_some_and(|s| since_upload >= s.after_upload) {
                                answered = Some(0);
                            } else if since_upload > 0 {
                                answered = None;
                            }
                            if let Some(sent) = answered.as_mut() {
                                until_unstalled(&mut write_link, *sent).await?;
                                *sent += bytes.len();
                            }
                        }
                    }
                    if to.write_all(&bytes).await.is_err() {
                        return Ok(());
                    }
                }
                Segment::Reset(error) => return Err(error),
            }
        }
        // The end of the stream is held by a freeze like any byte.
        until_flowing(&mut write_link, number).await?;
        // A peer that is gone already needs no telling.
        let _ = to.shutdown().await;
        Ok(())
    };
    let mut read = std::pin::pin!(read);
    let mut write = std::pin::pin!(write);
    tokio::select! {
        // Nothing more can be delivered: stop reading too.
        result = &mut write => result,
        () = &mut read => write.await,
    }
}

/// Waits while a stall holds an answer of which `sent` bytes got through.
async fn until_unstalled(link: &mut watch::Receiver<Link>, sent: usize) -> io::Result<()> {
    link.wait_for(|link| link.stall.is_none_or(|stall| sent < stall.response_bytes))
        .await
        .map(|_| ())
        .map_err(|_| io::Error::other("the fault proxy is shutting down"))
}

/// Waits while connection `number` is frozen.
async fn until_flowing(link: &mut watch::Receiver<Link>, number: u64) -> io::Result<()> {
    link.wait_for(|link| !link.holds(number))
        .await
        .map(|_| ())
        .map_err(|_| io::Error::other("the fault proxy is shutting down"))
}
