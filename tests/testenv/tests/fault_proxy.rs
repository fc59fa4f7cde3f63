//! The fault proxy relays, resets, freezes (every connection or only the
//! open ones) and delays a link as documented, first between plain loopback
//! sockets whose both ends the test holds, then between a kube client and a
//! real kube-apiserver; and kube-apiserver can be restarted on the same etcd
//! and URL.

use std::io::ErrorKind;
use std::net::{Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::Api;
use kube::api::{ListParams, PostParams};
use testenv::{ControlPlane, FaultProxy, Options, process_alive, wait_for};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::timeout;

/// How long a held byte or call is watched for not arriving. Long enough
/// that a relay that leaked it would almost surely have delivered it.
const HELD: Duration = Duration::from_millis(700);
/// Upper bound for anything that should happen: generous for a busy machine.
const PATIENCE: Duration = Duration::from_secs(30);

/// The far end of the proxy, held by the test.
struct Upstream {
    listener: TcpListener,
}

impl Upstream {
    async fn bind() -> Upstream {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await.unwrap();
        Upstream { listener }
    }

    fn address(&self) -> SocketAddr {
        self.listener.local_addr().unwrap()
    }

    async fn accept(&self) -> TcpStream {
        let (stream, _) = timeout(PATIENCE, self.listener.accept())
            .await
            .expect("the proxy connects upstream")
            .unwrap();
        stream
    }
}

/// A connection through the proxy: (client side, upstream side).
async fn connect(proxy: &FaultProxy, upstream: &Upstream) -> (TcpStream, TcpStream) {
    let client = TcpStream::connect(proxy.address()).await.unwrap();
    (client, upstream.accept().await)
}

async fn send(stream: &mut TcpStream, bytes: &[u8]) {
    stream.write_all(bytes).await.unwrap();
}

async fn receive(stream: &mut TcpStream, len: usize) -> Vec<u8> {
    let mut buffer = vec![0; len];
    timeout(PATIENCE, stream.read_exact(&mut buffer))
        .await
        .expect("the bytes arrive")
        .unwrap();
    buffer
}

/// Asserts that nothing arrives for a while, leaving the stream usable.
async fn nothing_arrives(stream: &mut TcpStream, what: &str) {
    let mut byte = [0];
    if let Ok(read) = timeout(HELD, stream.read(&mut byte)).await {
        panic!("{what}: expected nothing, read {read:?}");
    }
}

async fn no_open_connections(proxy: &FaultProxy) {
    wait_for("the proxy to close every connection", PATIENCE, || async {
        (proxy.open_connections() == 0).then_some(())
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn bytes_flow_both_ways_and_closing_is_passed_on() {
    let upstream = Upstream::bind().await;
    let proxy = FaultProxy::start(upstream.address()).unwrap();
    assert_eq!(proxy.url(), format!("https://127.0.0.1:{}", proxy.port()));

    let (mut client, mut server) = connect(&proxy, &upstream).await;
    send(&mut client, b"request").await;
    assert_eq!(receive(&mut server, 7).await, b"request");
    // More than one chunk, so order across chunks is checked too.
    let big: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    send(&mut server, &big).await;
    assert_eq!(receive(&mut client, big.len()).await, big);
    assert_eq!(proxy.accepted_connections(), 1);
    assert_eq!(proxy.open_connections(), 1);

    // A half-close reaches the other side, which can still answer.
    client.shutdown().await.unwrap();
    let mut rest = Vec::new();
    server.read_to_end(&mut rest).await.unwrap();
    assert!(rest.is_empty());
    send(&mut server, b"bye").await;
    assert_eq!(receive(&mut client, 3).await, b"bye");
    drop(server);
    assert_eq!(client.read(&mut [0]).await.unwrap(), 0);
    no_open_connections(&proxy).await;
}

#[tokio::test]
async fn a_reset_closes_every_connection_and_refuses_new_ones_until_restored() {
    let upstream = Upstream::bind().await;
    let proxy = FaultProxy::start(upstream.address()).unwrap();
    let (mut client, mut server) = connect(&proxy, &upstream).await;

    proxy.reset().unwrap();
    assert_eq!(proxy.open_connections(), 0);
    let error = client.read(&mut [0]).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::ConnectionReset, "{error}");
    // The upstream side is closed, not reset.
    assert_eq!(server.read(&mut [0]).await.unwrap(), 0);
    let error = TcpStream::connect(proxy.address()).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::ConnectionRefused, "{error}");

    proxy.restore().unwrap();
    let (mut client, mut server) = connect(&proxy, &upstream).await;
    send(&mut client, b"again").await;
    assert_eq!(receive(&mut server, 5).await, b"again");
    assert_eq!(proxy.accepted_connections(), 2);
}

#[tokio::test]
async fn a_freeze_holds_every_byte_until_thawed_and_then_delivers_them_in_order() {
    let upstream = Upstream::bind().await;
    let proxy = FaultProxy::start(upstream.address()).unwrap();
    let (mut client, mut server) = connect(&proxy, &upstream).await;

    proxy.freeze().unwrap();
    send(&mut client, b"one ").await;
    send(&mut client, b"two").await;
    send(&mut server, b"answer").await;
    nothing_arrives(&mut server, "upstream during a freeze").await;
    nothing_arrives(&mut client, "client during a freeze").await;
    // A new connection is accepted but goes no further.
    let mut late_client = TcpStream::connect(proxy.address()).await.unwrap();
    send(&mut late_client, b"late").await;
    assert!(
        timeout(HELD, upstream.listener.accept()).await.is_err(),
        "a connection reached upstream during a freeze"
    );
    assert_eq!(proxy.accepted_connections(), 2);
    assert_eq!(proxy.open_connections(), 2);

    proxy.thaw().unwrap();
    assert_eq!(receive(&mut server, 7).await, b"one two");
    assert_eq!(receive(&mut client, 6).await, b"answer");
    let mut late_server = upstream.accept().await;
    assert_eq!(receive(&mut late_server, 4).await, b"late");
}

#[tokio::test]
async fn freezing_the_open_connections_holds_their_bytes_and_lets_later_ones_through() {
    let upstream = Upstream::bind().await;
    let proxy = FaultProxy::start(upstream.address()).unwrap();
    let (mut old_client, mut old_server) = connect(&proxy, &upstream).await;

    proxy.freeze_open_connections().unwrap();
    send(&mut old_client, b"held").await;
    send(&mut old_server, b"answer").await;
    nothing_arrives(&mut old_server, "upstream of a frozen connection").await;
    nothing_arrives(&mut old_client, "client of a frozen connection").await;
    let (mut new_client, mut new_server) = connect(&proxy, &upstream).await;
    send(&mut new_client, b"new").await;
    assert_eq!(receive(&mut new_server, 3).await, b"new");
    send(&mut new_server, b"reply").await;
    assert_eq!(receive(&mut new_client, 5).await, b"reply");
    nothing_arrives(&mut old_server, "upstream of a frozen connection").await;

    proxy.thaw_open_connections().unwrap();
    assert_eq!(receive(&mut old_server, 4).await, b"held");
    assert_eq!(receive(&mut old_client, 6).await, b"answer");
    assert_eq!(proxy.accepted_connections(), 2);
}

#[tokio::test]
async fn a_reset_sent_during_a_freeze_arrives_after_the_bytes_sent_before_it() {
    let upstream = Upstream::bind().await;
    let proxy = FaultProxy::start(upstream.address()).unwrap();
    let (mut client, mut server) = connect(&proxy, &upstream).await;

    proxy.freeze().unwrap();
    // A partitioned client writes, then dies.
    send(&mut client, b"last write").await;
    client.set_zero_linger().unwrap();
    drop(client);
    nothing_arrives(&mut server, "upstream during a freeze").await;

    proxy.thaw().unwrap();
    assert_eq!(receive(&mut server, 10).await, b"last write");
    let error = timeout(PATIENCE, server.read(&mut [0]))
        .await
        .expect("the reset arrives")
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::ConnectionReset, "{error}");
    no_open_connections(&proxy).await;
}

#[tokio::test]
async fn latency_delays_every_chunk_by_at_least_the_amount_set() {
    let upstream = Upstream::bind().await;
    let proxy = FaultProxy::start(upstream.address()).unwrap();
    let (mut client, mut server) = connect(&proxy, &upstream).await;
    let latency = Duration::from_millis(300);
    proxy.set_latency(latency).unwrap();

    // A lower bound only: the proxy never delivers early, however busy the
    // machine is.
    let sent = Instant::now();
    send(&mut client, b"ping").await;
    assert_eq!(receive(&mut server, 4).await, b"ping");
    send(&mut server, b"pong").await;
    assert_eq!(receive(&mut client, 4).await, b"pong");
    assert!(sent.elapsed() >= 2 * latency, "{:?}", sent.elapsed());

    proxy.set_latency(Duration::ZERO).unwrap();
    send(&mut client, b"fast").await;
    assert_eq!(receive(&mut server, 4).await, b"fast");
}

#[tokio::test]
async fn response_latency_delays_only_what_the_upstream_sends() {
    let upstream = Upstream::bind().await;
    let proxy = FaultProxy::start(upstream.address()).unwrap();
    let (mut client, mut server) = connect(&proxy, &upstream).await;
    proxy
        .set_response_latency(Duration::from_secs(3600))
        .unwrap();

    send(&mut client, b"ping").await;
    assert_eq!(receive(&mut server, 4).await, b"ping");
    send(&mut server, b"pong").await;
    nothing_arrives(&mut client, "the client while responses are delayed").await;
}

#[tokio::test]
async fn dropping_the_proxy_closes_its_connections_and_port() {
    let upstream = Upstream::bind().await;
    let proxy = FaultProxy::start(upstream.address()).unwrap();
    let address = proxy.address();
    let (mut client, mut server) = connect(&proxy, &upstream).await;

    drop(proxy);
    // Closed, by FIN or RST: either way no more bytes come.
    assert!(!matches!(client.read(&mut [0]).await, Ok(1)));
    assert!(!matches!(server.read(&mut [0]).await, Ok(1)));
    let error = TcpStream::connect(address).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::ConnectionRefused, "{error}");
}

/// Reads until nothing arrives for [`HELD`]; returns how much came.
async fn drain(stream: &mut TcpStream) -> usize {
    let mut buffer = vec![0; 64 * 1024];
    let mut total = 0;
    while let Ok(read) = timeout(HELD, stream.read(&mut buffer)).await {
        match read.unwrap() {
            0 => break,
            n => total += n,
        }
    }
    total
}

#[tokio::test]
async fn an_answer_to_a_large_upload_stops_after_its_first_bytes_until_released() {
    const UPLOAD: usize = 64 * 1024;
    const LET_THROUGH: usize = 16 * 1024;
    let upstream = Upstream::bind().await;
    let proxy = FaultProxy::start(upstream.address()).unwrap();
    let (mut client, mut server) = connect(&proxy, &upstream).await;
    proxy
        .stall_responses_to_uploads(UPLOAD, LET_THROUGH)
        .unwrap();

    // Small requests, as a watch makes, get their answers whole.
    send(&mut client, b"small").await;
    receive(&mut server, 5).await;
    send(&mut server, &[1; 100 * 1024]).await;
    receive(&mut client, 100 * 1024).await;

    // A large request: the first bytes of its answer arrive, the rest waits.
    let request = vec![2; 2 * UPLOAD];
    send(&mut client, &request).await;
    receive(&mut server, request.len()).await;
    let answer = 256 * 1024;
    send(&mut server, &vec![3; answer]).await;
    let through = drain(&mut client).await;
    assert!(
        (LET_THROUGH..answer).contains(&through),
        "{through} bytes of the answer got through"
    );

    proxy.release_responses().unwrap();
    receive(&mut client, answer - through).await;
}

#[test]
fn only_loopback_upstreams_are_accepted() {
    let error = FaultProxy::start(SocketAddr::from(([192, 0, 2, 1], 443)))
        .err()
        .expect("a non-loopback upstream must be refused");
    assert!(error.to_string().contains("loopback"), "{error}");
}

fn client_via(control_plane: &ControlPlane, url: &str) -> kube::Client {
    kube::Client::try_from(control_plane.kube_config_via(url).unwrap()).unwrap()
}

#[tokio::test]
async fn a_kube_client_through_the_proxy_sees_resets_and_freezes() {
    let control_plane = ControlPlane::shared();
    let proxy = FaultProxy::start(control_plane.apiserver_address()).unwrap();
    let namespaces: Api<Namespace> = Api::all(client_via(control_plane, &proxy.url()));
    let list = ListParams::default();
    let listed = namespaces.list(&list).await.unwrap();
    assert!(
        listed
            .items
            .iter()
            .any(|n| n.metadata.name.as_deref() == Some("default"))
    );

    proxy.reset().unwrap();
    let error = timeout(PATIENCE, namespaces.list(&list))
        .await
        .expect("a call during a reset fails rather than hangs")
        .expect_err("a call during a reset fails");
    eprintln!("a call during a reset failed with: {error}");
    proxy.restore().unwrap();
    namespaces.list(&list).await.unwrap();

    proxy.freeze().unwrap();
    let in_flight = tokio::spawn({
        let namespaces = namespaces.clone();
        async move { namespaces.list(&ListParams::default()).await }
    });
    let mut in_flight = std::pin::pin!(in_flight);
    assert!(
        timeout(HELD, &mut in_flight).await.is_err(),
        "a call completed during a freeze"
    );
    assert!(proxy.open_connections() >= 1);
    proxy.thaw().unwrap();
    let listed = timeout(PATIENCE, in_flight)
        .await
        .expect("the held call completes once thawed")
        .unwrap()
        .unwrap();
    assert!(!listed.items.is_empty());
}

fn apiserver_pid(control_plane: &ControlPlane) -> u32 {
    control_plane
        .pids()
        .into_iter()
        .find(|(server, _)| *server == "kube-apiserver")
        .map(|(_, pid)| pid)
        .unwrap()
}

/// Every client's call fails, quickly enough, while kube-apiserver is down.
async fn calls_fail(clients: &[(&str, &kube::Client)], namespace: &str) {
    for (what, client) in clients {
        let configmaps: Api<ConfigMap> = Api::namespaced((*client).clone(), namespace);
        let error = timeout(PATIENCE, configmaps.get("before-restart"))
            .await
            .expect("a call to a stopped apiserver fails rather than hangs")
            .expect_err("a call to a stopped apiserver fails");
        eprintln!("a {what} call to a stopped apiserver failed with: {error}");
    }
}

async fn objects_survived(clients: &[(&str, &kube::Client)], namespace: &str, before: &ConfigMap) {
    for (what, client) in clients {
        let configmaps: Api<ConfigMap> = Api::namespaced((*client).clone(), namespace);
        let found = configmaps
            .get("before-restart")
            .await
            .unwrap_or_else(|e| panic!("{what} call after the restart: {e}"));
        assert_eq!(found.data, before.data);
    }
}

#[tokio::test]
async fn the_apiserver_restarts_on_the_same_etcd_and_url() {
    let mut control_plane = ControlPlane::start(Options {
        etcd_unsafe_no_fsync: true,
        ..Options::default()
    })
    .unwrap();
    let proxy = FaultProxy::start(control_plane.apiserver_address()).unwrap();
    let direct = control_plane.client().await;
    let proxied = client_via(&control_plane, &proxy.url());
    let clients = [("direct", &direct), ("proxied", &proxied)];
    let namespace = testenv::fresh_namespace(&direct, "restart").await.unwrap();
    let mut before = ConfigMap::default();
    before.metadata.name = Some("before-restart".to_owned());
    before.data = Some([("key".to_owned(), "value".to_owned())].into());
    Api::<ConfigMap>::namespaced(direct.clone(), &namespace)
        .create(&PostParams::default(), &before)
        .await
        .unwrap();

    let crashed_pid = apiserver_pid(&control_plane);
    control_plane.kill_apiserver().unwrap();
    assert!(!process_alive(crashed_pid));
    calls_fail(&clients, &namespace).await;
    control_plane.start_apiserver().unwrap();
    assert!(control_plane.start_apiserver().is_err(), "started twice");
    objects_survived(&clients, &namespace, &before).await;

    // kube-controller-manager's watches make this stop take about a minute.
    let stopped_pid = apiserver_pid(&control_plane);
    assert_ne!(stopped_pid, crashed_pid);
    control_plane.stop_apiserver().unwrap();
    assert!(!process_alive(stopped_pid));
    calls_fail(&clients, &namespace).await;
    control_plane.start_apiserver().unwrap();
    objects_survived(&clients, &namespace, &before).await;

    for (server, pid) in control_plane.pids() {
        assert!(process_alive(pid), "{server} is no longer running");
    }
}
