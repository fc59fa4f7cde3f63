//! The one HTTP listener: /metrics, /healthz, /readyz.

use std::{
    io,
    net::{Ipv4Addr, Ipv6Addr, SocketAddr},
    sync::Arc,
    time::Instant,
};

use axum::{
    Router,
    extract::State,
    http::{StatusCode, header},
    response::IntoResponse,
    routing::get,
};
use socket2::{Domain, Protocol, Socket, Type};
use tokio::net::TcpListener;

use crate::{ops::health::Health, ops::metrics::Metrics};

#[derive(Clone)]
struct Shared {
    metrics: Arc<Metrics>,
    health: Arc<Health>,
}

pub fn router(metrics: Arc<Metrics>, health: Arc<Health>) -> Router {
    Router::new()
        .route("/metrics", get(metrics_text))
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .with_state(Shared { metrics, health })
}

/// Listens on `addr`. The unspecified IPv6 address (`[::]`, the default)
/// listens on both stacks: IPV6_V6ONLY is turned off whatever the host's
/// default (`net.ipv6.bindv6only`), so the kubelet's probes reach the pod
/// on its IPv4 or its IPv6 address. On a kernel without IPv6 it listens on
/// `0.0.0.0` instead, on the same port. Needs a Tokio runtime.
pub fn bind(addr: SocketAddr) -> io::Result<TcpListener> {
    match listen(addr) {
        Err((step, error)) => match ipv4_instead(addr, step, &error) {
            Some(ipv4) => {
                tracing::info!(%addr, %error, "no IPv6 on this host: listening on {ipv4}");
                listen(ipv4).map_err(|(_, error)| error)
            }
            None => Err(error),
        },
        Ok(listener) => Ok(listener),
    }
}

/// The step of listening that failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// Making the socket: the kernel refuses its address family.
    Socket,
    /// Everything after.
    Bind,
}

fn listen(addr: SocketAddr) -> Result<TcpListener, (Step, io::Error)> {
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))
        .map_err(|error| (Step::Socket, error))?;
    let bind = || {
        if addr.ip() == Ipv6Addr::UNSPECIFIED {
            socket.set_only_v6(false)?;
        }
        // As std's and Tokio's own bind: a restart can listen again at once
        // while the last process's connections linger in TIME_WAIT.
        socket.set_reuse_address(true)?;
        socket.set_nonblocking(true)?;
        socket.bind(&addr.into())?;
        socket.listen(1024)
    };
    bind().map_err(|error| (Step::Bind, error))?;
    TcpListener::from_std(socket.into()).map_err(|error| (Step::Bind, error))
}

/// Where to listen when listening on `addr` failed with `error` at
/// `step`: on `0.0.0.0`, same port, when `addr` is `[::]` and the kernel
/// has no IPv6 (it refuses an IPv6 socket, or has no IPv6 address to bind).
fn ipv4_instead(addr: SocketAddr, step: Step, error: &io::Error) -> Option<SocketAddr> {
    let no_ipv6 = step == Step::Socket || error.kind() == io::ErrorKind::AddrNotAvailable;
    (addr.ip() == Ipv6Addr::UNSPECIFIED && no_ipv6)
        .then(|| SocketAddr::from((Ipv4Addr::UNSPECIFIED, addr.port())))
}

/// Serves until `shutdown` completes.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, router)
        .with_graceful_shutdown(shutdown)
        .await
}

async fn metrics_text(State(shared): State<Shared>) -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        shared.metrics.render(),
    )
}

async fn healthz(State(shared): State<Shared>) -> impl IntoResponse {
    match shared.health.liveness(Instant::now()) {
        Ok(note) => (StatusCode::OK, note),
        Err(why) => (StatusCode::SERVICE_UNAVAILABLE, why),
    }
}

async fn readyz(State(shared): State<Shared>) -> impl IntoResponse {
    match shared.health.readiness() {
        Ok(()) => (StatusCode::OK, "ok".to_owned()),
        Err(why) => (StatusCode::SERVICE_UNAVAILABLE, why),
    }
}

#[cfg(test)]
mod tests {
    use tokio::{
        io::{AsyncReadExt, AsyncWriteExt},
        net::TcpStream,
    };

    use super::*;

    /// Whether a client at `to` reaches `listener`: a byte sent arrives.
    /// The kernel completes the connection before it is accepted, so a
    /// refused one fails at once.
    async fn reaches(listener: &TcpListener, to: SocketAddr) -> bool {
        let Ok(mut client) = TcpStream::connect(to).await else {
            return false;
        };
        let Ok((mut server, _)) = listener.accept().await else {
            return false;
        };
        let mut byte = [0u8; 1];
        client.write_all(b"x").await.is_ok()
            && server.read_exact(&mut byte).await.is_ok()
            && byte == *b"x"
    }

    #[tokio::test]
    async fn the_unspecified_ipv6_address_listens_on_both_stacks() {
        let listener = bind("[::]:0".parse().expect("an address")).expect("listen on [::]");
        let port = listener.local_addr().expect("its address").port();
        assert!(reaches(&listener, SocketAddr::from((Ipv4Addr::LOCALHOST, port))).await);
        assert!(reaches(&listener, SocketAddr::from((Ipv6Addr::LOCALHOST, port))).await);
    }

    #[tokio::test]
    async fn an_ipv4_address_listens_on_ipv4_only() {
        let listener = bind("127.0.0.1:0".parse().expect("an address")).expect("listen");
        let addr = listener.local_addr().expect("its address");
        assert!(addr.is_ipv4());
        assert!(reaches(&listener, addr).await);
    }

    #[tokio::test]
    async fn a_taken_port_is_an_error_not_a_fallback() {
        let first = bind("[::]:0".parse().expect("an address")).expect("listen");
        let taken = first.local_addr().expect("its address");
        let error = bind(taken).expect_err("the port is taken");
        assert_eq!(error.kind(), io::ErrorKind::AddrInUse);
    }

    #[test]
    fn only_the_unspecified_ipv6_address_falls_back_and_only_without_ipv6() {
        let any6: SocketAddr = "[::]:8080".parse().expect("an address");
        let ipv4 = Some("0.0.0.0:8080".parse().expect("an address"));
        let unsupported = io::Error::other("address family not supported");
        let not_available = io::Error::from(io::ErrorKind::AddrNotAvailable);
        let in_use = io::Error::from(io::ErrorKind::AddrInUse);
        assert_eq!(ipv4_instead(any6, Step::Socket, &unsupported), ipv4);
        assert_eq!(ipv4_instead(any6, Step::Bind, &not_available), ipv4);
        assert_eq!(ipv4_instead(any6, Step::Bind, &in_use), None);
        let loopback6: SocketAddr = "[::1]:8080".parse().expect("an address");
        assert_eq!(ipv4_instead(loopback6, Step::Socket, &unsupported), None);
        let any4: SocketAddr = "0.0.0.0:8080".parse().expect("an address");
        assert_eq!(ipv4_instead(any4, Step::Socket, &unsupported), None);
    }
}
