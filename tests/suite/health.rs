//! /readyz follows the caches' initial sync; /healthz fails when a watch
//! has been failing for longer than the threshold, and recovers. The
//! default listener answers on IPv4 and IPv6.

use crate::common;

use std::{
    net::{Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener},
    process::Command,
    time::Duration,
};

use common::{ControllerProcess, Scene};
use testenv::Signal;

async fn status_of(controller: &ControllerProcess, path: &str) -> u16 {
    controller
        .get(path)
        .await
        .map(|(status, _)| status)
        .unwrap_or(0)
}

async fn wait_status(controller: &ControllerProcess, path: &str, status: u16) {
    testenv::wait_for(
        &format!("{path} to answer {status}"),
        common::PATIENCE,
        || async { (status_of(controller, path).await == status).then_some(()) },
    )
    .await
    .unwrap_or_else(|e| panic!("{e:#}"));
}

#[tokio::test]
async fn readiness_waits_for_the_caches_and_liveness_catches_a_failing_watch() {
    let scene = Scene::new("health").await;
    // A ServiceAccount without any role: listing is forbidden.
    common::kubectl_apply(
        &scene,
        &common::service_account(&scene.namespace, "controller"),
    );
    let kubeconfig = scene.token_kubeconfig("controller").await;
    let args = [
        "--namespace",
        scene.namespace.as_str(),
        "--watch-failure-threshold",
        "2s",
    ];
    let controller =
        ControllerProcess::start_unready(scene.control_plane, &kubeconfig, &scene.namespace, &args)
            .await;

    // Listing is forbidden: the caches cannot sync, the watches keep failing.
    assert_eq!(status_of(&controller, "/readyz").await, 503);
    wait_status(&controller, "/healthz", 503).await;
    let (_, why) = controller.get("/healthz").await.expect("healthz");
    assert!(why.contains("watch failing"), "{why}");
    assert_eq!(status_of(&controller, "/readyz").await, 503);
    // /metrics shows it too, for an alert: the seconds each watch has been
    // failing.
    const FAILING: &str = "configmap_mirror_watch_failing_seconds";
    let failing = controller.metric(FAILING, "watch=\"sources\"").await;
    assert!(failing >= 2.0, "{FAILING} sources: {failing}");

    let verbs = ["get", "list", "watch", "create", "update", "delete"];
    common::kubectl_apply(
        &scene,
        &common::role_for(&scene.namespace, "controller", "controller", &verbs),
    );
    wait_status(&controller, "/readyz", 200).await;
    wait_status(&controller, "/healthz", 200).await;
    scene
        .configmaps()
        .create(&common::mk_source("colors", &[("a", "1")]))
        .await;
    scene.configmaps().companion_in_sync("colors").await;
    assert_eq!(controller.metric(FAILING, "").await, 0.0);
}

/// The port of the default `--http-addr`.
const DEFAULT_PORT: u16 = 8080;

/// Fails, naming the fix, unless this host's loopback has `::1` and port
/// 8080 is free on both loopbacks.
fn assert_default_port_free_on_both_loopbacks() {
    if let Err(e) = TcpListener::bind((Ipv6Addr::LOCALHOST, 0)) {
        panic!(
            "this host's loopback has no ::1 ({e}; see `ip -6 addr show lo`): the test of the \
             dual-stack listener needs it; enable IPv6 on lo \
             (`sysctl -w net.ipv6.conf.lo.disable_ipv6=0`)"
        );
    }
    for ip in [Ipv4Addr::LOCALHOST.into(), Ipv6Addr::LOCALHOST.into()] {
        let addr = SocketAddr::new(ip, DEFAULT_PORT);
        if let Err(e) = TcpListener::bind(addr) {
            panic!(
                "{addr} is taken ({e}): this test runs the controller with its default \
                 --http-addr, port {DEFAULT_PORT}; stop what listens there"
            );
        }
    }
}

#[tokio::test]
async fn the_default_address_answers_probes_on_ipv4_and_ipv6() {
    assert_default_port_free_on_both_loopbacks();
    let scene = Scene::new("health-dual-stack").await;
    let log = scene
        .control_plane
        .log_dir()
        .join(format!("controller-{}-default-addr.log", scene.namespace));
    // No --http-addr: the default, as the chart's Pods run it.
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_configmap-mirror"));
    cmd.args(["--namespace", &scene.namespace, "--log-format", "text"])
        .env("KUBECONFIG", scene.control_plane.kubeconfig_path())
        .env_remove("MIRROR_HTTP_ADDR");
    let mut controller = testenv::spawn_child(cmd, &log).expect("start configmap-mirror");
    let log_text = || std::fs::read_to_string(&log).unwrap_or_default();
    // The kubelet probes the pod's IPv4 address or its IPv6 address, as the
    // cluster has them: both must answer.
    for url in [
        format!("http://127.0.0.1:{DEFAULT_PORT}/healthz"),
        format!("http://[::1]:{DEFAULT_PORT}/healthz"),
    ] {
        testenv::wait_for(
            &format!("{url} to answer 200"),
            common::PATIENCE,
            || async {
                let status = reqwest::get(&url).await.ok()?.status();
                (status == 200).then_some(())
            },
        )
        .await
        .unwrap_or_else(|e| panic!("{e:#}\n{}", log_text()));
    }
    // Answered by this controller, listening where the default says.
    let serving = format!("addr=[::]:{DEFAULT_PORT}");
    assert!(
        log_text().contains(&serving),
        "no {serving} in:\n{}",
        log_text()
    );
    controller
        .signal(Signal::Term)
        .expect("signal the controller");
    let status = controller
        .wait_with_timeout(Duration::from_secs(30))
        .expect("wait for the controller")
        .unwrap_or_else(|| panic!("the controller did not stop on SIGTERM\n{}", log_text()));
    assert!(status.success(), "{status}\n{}", log_text());
}

/// `configmap-mirror probe URL` against the binary's own listener.
fn probe(url: &str) -> (Option<i32>, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_configmap-mirror"))
        .args(["probe", "--timeout", "10s", url])
        .output()
        .expect("run configmap-mirror probe");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test]
async fn the_probe_subcommand_passes_on_2xx_and_says_why_otherwise() {
    let scene = Scene::new("probe").await;
    common::kubectl_apply(
        &scene,
        &common::service_account(&scene.namespace, "controller"),
    );
    let kubeconfig = scene.token_kubeconfig("controller").await;
    let args = ["--namespace", scene.namespace.as_str()];
    let controller =
        ControllerProcess::start_unready(scene.control_plane, &kubeconfig, &scene.namespace, &args)
            .await;
    let readyz = format!("http://127.0.0.1:{}/readyz", controller.port);

    // Listing is forbidden: not ready, and the probe says so on one line.
    assert_eq!(status_of(&controller, "/readyz").await, 503);
    let (code, stdout, stderr) = probe(&readyz);
    assert_eq!(code, Some(1), "{stdout}{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with(&format!("GET {readyz}: 503 Service Unavailable")),
        "{stderr}"
    );

    let verbs = ["get", "list", "watch", "create", "update", "delete"];
    common::kubectl_apply(
        &scene,
        &common::role_for(&scene.namespace, "controller", "controller", &verbs),
    );
    wait_status(&controller, "/readyz", 200).await;
    let (code, stdout, stderr) = probe(&readyz);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("200 OK"), "{stdout}");

    // Nothing listening any more: non-zero, and the line says so.
    assert!(controller.stop().success());
    let (code, stdout, stderr) = probe(&readyz);
    assert_eq!(code, Some(1), "{stdout}{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("cannot connect to 127.0.0.1:") && stderr.contains("refused"),
        "{stderr}"
    );
}

/// A listener on `address` that answers each request with `answer` and
/// sends back the request heads it read.
async fn answering(
    address: &str,
    answer: &'static str,
) -> (u16, tokio::sync::mpsc::UnboundedReceiver<String>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .unwrap_or_else(|e| panic!("listen on {address}: {e}"));
    let port = listener.local_addr().expect("its address").port();
    let (heads, received) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let mut head = Vec::new();
            let mut buffer = [0u8; 1024];
            while !head.ends_with(b"\r\n\r\n") {
                match stream.read(&mut buffer).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => head.extend_from_slice(&buffer[..n]),
                }
            }
            let _ = stream.write_all(answer.as_bytes()).await;
            let _ = stream.shutdown().await;
            let _ = heads.send(String::from_utf8_lossy(&head).into_owned());
        }
    });
    (port, received)
}

#[tokio::test]
async fn the_probe_speaks_to_ipv6_literals_names_and_a_given_address() {
    const OK: &str = "HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n";
    let (port, mut heads) = answering("[::1]:0", OK).await;
    let url = format!("http://[::1]:{port}/readyz");
    let (code, stdout, stderr) = tokio::task::spawn_blocking(move || probe(&url))
        .await
        .expect("probe");
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    let head = heads.recv().await.expect("a request");
    assert!(head.starts_with("GET /readyz HTTP/1.1\r\n"), "{head}");
    assert!(head.contains(&format!("host: [::1]:{port}\r\n")), "{head}");

    // A name, resolved by the system (localhost may give ::1 first, where
    // nothing listens on this port: the next address is tried).
    let (port, mut heads) = answering("127.0.0.1:0", OK).await;
    let url = format!("http://localhost:{port}/x?y=1");
    let (code, stdout, stderr) = tokio::task::spawn_blocking(move || probe(&url))
        .await
        .expect("probe");
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    let head = heads.recv().await.expect("a request");
    assert!(head.starts_with("GET /x?y=1 HTTP/1.1\r\n"), "{head}");

    // --address: a name no resolver knows, reached at the address given,
    // and still named in the request.
    let url = format!("http://configmap-mirror.team-a.svc:{port}/readyz");
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(env!("CARGO_BIN_EXE_configmap-mirror"))
            .args(["probe", "--address", "127.0.0.1", &url])
            .output()
            .expect("run configmap-mirror probe")
    })
    .await
    .expect("probe");
    assert!(out.status.success(), "{out:?}");
    let head = heads.recv().await.expect("a request");
    assert!(
        head.contains(&format!("host: configmap-mirror.team-a.svc:{port}\r\n")),
        "{head}"
    );

    // An answer that never comes: the probe gives up at its timeout.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("listen");
    let url = format!("http://{}/readyz", silent.local_addr().expect("address"));
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(env!("CARGO_BIN_EXE_configmap-mirror"))
            .args(["probe", "--timeout", "300ms", &url])
            .output()
            .expect("run configmap-mirror probe")
    })
    .await
    .expect("probe");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("no answer within 300ms"), "{stderr}");
}
