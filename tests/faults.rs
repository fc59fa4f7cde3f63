//! The link to the API server cut (reset: connections refused), frozen
//! (a partition: bytes held both ways), the API server process itself
//! restarted, its etcd frozen, or its watches rejected as overload, with the
//! controller in every state: the cluster converges once the link is back,
//! liveness tells an outage from a wedge, and a stop is bounded.

use test_support as common;

use std::{
    path::PathBuf,
    time::{Duration, Instant},
};

use common::{ControllerProcess, LEASE_TIMINGS, PATIENCE, Scene, mk_source};
use k8s_openapi::{
    api::{
        coordination::v1::Lease,
        core::v1::{ConfigMap, Namespace},
        flowcontrol::v1::FlowSchema,
    },
    apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta},
    jiff::Timestamp,
};
use kube::{
    Api,
    api::{ListParams, Patch, PatchParams, PostParams},
};
use serde_json::json;
use testenv::{ControlPlane, FaultProxy, Options, Signal, wait_for};

/// Waits until every connection through `proxy`, which only a replica
/// that has exited used, has closed: each request it held or slowed has
/// reached the API server and been answered (its audit entry written), or
/// was dropped on the way; none can land later.
async fn drained(proxy: &FaultProxy) {
    wait_for(
        "every connection through the proxy to close",
        PATIENCE,
        || async { (proxy.open_connections() == 0).then_some(()) },
    )
    .await
    .unwrap_or_else(|e| panic!("{e:#}"));
}

/// A proxy in front of the control plane's API server, and a kubeconfig
/// that goes through it.
fn proxied(scene: &Scene<'_>, tag: &str) -> (FaultProxy, PathBuf) {
    let control_plane = scene.control_plane;
    let proxy = FaultProxy::start(control_plane.apiserver_address()).expect("start the proxy");
    let kubeconfig = control_plane
        .log_dir()
        .join(format!("{}-{tag}-proxied.kubeconfig", scene.namespace));
    control_plane
        .write_admin_kubeconfig_via(&proxy.url(), &kubeconfig)
        .expect("write the kubeconfig");
    (proxy, kubeconfig)
}

async fn controller_via(
    scene: &Scene<'_>,
    kubeconfig: &PathBuf,
    tag: &str,
    extra: &[&str],
) -> ControllerProcess {
    let mut args = vec!["--namespace", scene.namespace.as_str()];
    args.extend_from_slice(extra);
    ControllerProcess::start(scene.control_plane, kubeconfig, tag, &args).await
}

async fn healthz(controller: &ControllerProcess) -> (u16, String) {
    controller
        .get("/healthz")
        .await
        .unwrap_or((0, String::new()))
}

async fn wait_healthz_ok(controller: &ControllerProcess) {
    wait_for("/healthz to say ok", PATIENCE, || async {
        let (status, body) = healthz(controller).await;
        (status == 200 && body == "ok").then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{e:#}\n{}", controller.log_text()));
}

async fn wait_leading(controller: &ControllerProcess) {
    wait_for("the replica to lead", PATIENCE, || async {
        (controller.metric("leader_election_master_status", "").await == 1.0).then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{e:#}\n{}", controller.log_text()));
}

#[tokio::test]
async fn changes_made_during_a_ten_second_outage_converge_when_it_ends() {
    let scene = Scene::new("fault-outage").await;
    let (proxy, kubeconfig) = proxied(&scene, "outage");
    let _mirror = controller_via(&scene, &kubeconfig, "outage", &[]).await;
    scene
        .configmaps()
        .create(&mk_source("colors", &[("a", "1")]))
        .await;
    scene
        .configmaps()
        .create(&mk_source("shapes", &[("b", "1")]))
        .await;
    scene.configmaps().companion_in_sync("colors").await;
    scene.configmaps().companion_in_sync("shapes").await;

    proxy.reset().expect("cut the link");
    scene
        .configmaps()
        .patch(
            "colors",
            json!({"data": {"a": "changed during the outage"}}),
        )
        .await;
    scene.configmaps().delete("shapes-synced").await;
    tokio::time::sleep(Duration::from_secs(10)).await;
    proxy.restore().expect("restore the link");

    scene.configmaps().companion_in_sync("colors").await;
    scene.configmaps().companion_in_sync("shapes").await;
}

#[tokio::test]
async fn changes_made_during_a_twenty_second_partition_converge_when_it_heals() {
    let scene = Scene::new("fault-partition").await;
    let (proxy, kubeconfig) = proxied(&scene, "partition");
    let _mirror = controller_via(&scene, &kubeconfig, "partition", &[]).await;
    scene
        .configmaps()
        .create(&mk_source("colors", &[("a", "1")]))
        .await;
    scene
        .configmaps()
        .create(&mk_source("shapes", &[("b", "1")]))
        .await;
    scene.configmaps().companion_in_sync("colors").await;
    scene.configmaps().companion_in_sync("shapes").await;

    proxy.freeze().expect("freeze the link");
    scene
        .configmaps()
        .patch(
            "colors",
            json!({"data": {"a": "changed during the partition"}}),
        )
        .await;
    scene.configmaps().delete("shapes-synced").await;
    tokio::time::sleep(Duration::from_secs(20)).await;
    proxy.thaw().expect("thaw the link");

    scene.configmaps().companion_in_sync("colors").await;
    scene.configmaps().companion_in_sync("shapes").await;
}

/// An unreachable API server is an outage, which a restart cannot fix:
/// liveness stays 200 throughout, says so, and is plain "ok" again soon
/// after the link returns.
#[tokio::test]
async fn liveness_stays_ok_through_a_long_outage_and_after_it() {
    let scene = Scene::new("fault-live").await;
    let (proxy, kubeconfig) = proxied(&scene, "live");
    let controller = controller_via(
        &scene,
        &kubeconfig,
        "live",
        &["--watch-failure-threshold", "2s"],
    )
    .await;
    wait_healthz_ok(&controller).await;

    proxy.reset().expect("cut the link");
    let outage_ends = Instant::now() + Duration::from_secs(12);
    let mut said_unreachable = false;
    while Instant::now() < outage_ends {
        let (status, body) = healthz(&controller).await;
        assert_eq!(status, 200, "liveness failed during an outage: {body}");
        said_unreachable |= body.contains("unreachable");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert!(said_unreachable, "{}", controller.log_text());
    proxy.restore().expect("restore the link");
    wait_healthz_ok(&controller).await;
    scene
        .configmaps()
        .source_in_sync("colors", &[("a", "1")])
        .await;
}

/// A reconnected watch on a quiet cluster delivers no event, and is
/// healthy all the same: nothing changes, yet liveness says "ok" again
/// and stays 200 well past the threshold.
#[tokio::test]
async fn a_two_second_blip_with_nothing_changing_leaves_liveness_ok() {
    let scene = Scene::new("fault-blip").await;
    let (proxy, kubeconfig) = proxied(&scene, "blip");
    let controller = controller_via(
        &scene,
        &kubeconfig,
        "blip",
        &["--watch-failure-threshold", "3s"],
    )
    .await;
    wait_healthz_ok(&controller).await;

    proxy.reset().expect("cut the link");
    tokio::time::sleep(Duration::from_secs(2)).await;
    proxy.restore().expect("restore the link");
    wait_healthz_ok(&controller).await;
    let watch_until = Instant::now() + Duration::from_secs(8);
    while Instant::now() < watch_until {
        let (status, body) = healthz(&controller).await;
        assert_eq!(status, 200, "{body}\n{}", controller.log_text());
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// What /healthz answered to polls over a span of time.
#[derive(Debug, Default)]
struct HealthzPolls {
    polls: usize,
    /// Polls answered with anything but 200 (503: wedged).
    failed: usize,
    first_failure: Option<(u16, String)>,
    /// Polls answered 200 with a note about failing watches.
    noted_failing: usize,
    last_note: Option<String>,
}

impl HealthzPolls {
    /// Polls `/healthz` every `every` for `span`.
    async fn over(controller: &ControllerProcess, span: Duration, every: Duration) -> Self {
        let mut polls = HealthzPolls::default();
        let until = Instant::now() + span;
        while Instant::now() < until {
            let (status, body) = healthz(controller).await;
            polls.polls += 1;
            if status != 200 {
                polls.failed += 1;
                polls.first_failure.get_or_insert((status, body));
            } else if body != "ok" {
                polls.noted_failing += 1;
                polls.last_note = Some(body);
            }
            tokio::time::sleep(every).await;
        }
        polls
    }

    fn add(&mut self, later: HealthzPolls) {
        self.polls += later.polls;
        self.failed += later.failed;
        if self.first_failure.is_none() {
            self.first_failure = later.first_failure;
        }
        self.noted_failing += later.noted_failing;
        if later.last_note.is_some() {
            self.last_note = later.last_note;
        }
    }

    fn assert_never_failed(&self, when: &str, controller: &ControllerProcess) {
        assert_eq!(
            self.failed,
            0,
            "/healthz failed {} of {} polls {when}; the first: {:?}\n{}",
            self.failed,
            self.polls,
            self.first_failure,
            controller.log_text()
        );
    }
}

/// After an outage longer than the threshold, the watches still waiting out
/// their backoff (up to 30 s) when the link returns are not wedged: the
/// threshold runs from the API server's first answer, and that answer makes
/// them retry at once.
#[tokio::test]
async fn liveness_stays_ok_when_the_link_returns_after_a_long_outage() {
    let scene = Scene::new("fault-return").await;
    let (proxy, kubeconfig) = proxied(&scene, "return");
    let controller = controller_via(
        &scene,
        &kubeconfig,
        "return",
        &["--watch-failure-threshold", "5s"],
    )
    .await;
    wait_healthz_ok(&controller).await;

    proxy.reset().expect("cut the link");
    tokio::time::sleep(Duration::from_secs(12)).await;
    proxy.restore().expect("restore the link");
    let polls = HealthzPolls::over(
        &controller,
        Duration::from_secs(40),
        Duration::from_millis(200),
    )
    .await;
    polls.assert_never_failed("in the 40 s after the link returned", &controller);
    scene
        .configmaps()
        .source_in_sync("colors", &[("a", "1")])
        .await;
}

/// etcd stops answering (SIGSTOP) for 100 s while kube-apiserver keeps
/// running and answers `/version`. With a watch cache the API server serves
/// the controller's lists and watches from memory and nothing fails; this
/// one has none for ConfigMaps, so a list waits for etcd until the API
/// server gives up after 60 s with a 504 (or the connection drops). A
/// replica started during the
/// outage (as the kubelet starts one it restarted) waits for its lists; a
/// blip of its link resets them, and the watches fail from then on, past
/// the threshold, first on the lost link and then on the 504s. It stays
/// live: a restart cannot bring etcd back. Once etcd is back the replica
/// converges on what it missed.
#[tokio::test]
async fn liveness_stays_ok_through_an_etcd_outage() {
    const OUTAGE: Duration = Duration::from_secs(100);
    let control_plane = ControlPlane::start(Options {
        etcd_unsafe_no_fsync: true,
        extra_apiserver_args: vec!["--watch-cache-sizes=configmaps#0".into()],
        ..Options::default()
    })
    .unwrap_or_else(|e| panic!("{e:#}"));
    let scene = Scene::on(&control_plane, "fault-etcd").await;
    scene
        .configmaps()
        .create(&mk_source("colors", &[("a", "1")]))
        .await;
    let (proxy, kubeconfig) = proxied(&scene, "etcd");

    control_plane.freeze_etcd().expect("freeze etcd");
    let outage_ends = Instant::now() + OUTAGE;
    let args = [
        "--namespace",
        scene.namespace.as_str(),
        "--watch-failure-threshold",
        "5s",
        "--initial-list",
        "list",
    ];
    let controller =
        ControllerProcess::start_unready(&control_plane, &kubeconfig, "etcd", &args).await;
    let mut polls = HealthzPolls::over(
        &controller,
        Duration::from_secs(5),
        Duration::from_millis(250),
    )
    .await;
    proxy.reset().expect("cut the link");
    proxy.restore().expect("restore the link");
    polls.add(
        HealthzPolls::over(
            &controller,
            outage_ends.saturating_duration_since(Instant::now()),
            Duration::from_millis(250),
        )
        .await,
    );
    let version = scene.client.apiserver_version().await;
    control_plane.thaw_etcd().expect("thaw etcd");

    assert!(
        version.is_ok(),
        "/version was expected to answer with etcd frozen: {version:?}"
    );
    polls.assert_never_failed("with etcd frozen", &controller);
    assert!(
        polls.noted_failing > 0,
        "the watches were expected to fail past the threshold: {polls:?}\n{}",
        controller.log_text()
    );
    // A list waiting on etcd ends in the API server's 504 after its request
    // timeout, or earlier in a dropped connection: both happen, depending
    // on timing, and both are an outage. (The 429 test covers the API
    // server's own overload statuses.)
    let log = controller.log_text();
    let answered_504 = log
        .lines()
        .any(|line| line.contains("watch failed") && line.contains("code: 504"));
    eprintln!(
        "during the outage /healthz said: {:?}; a list ended in a 504: {answered_504}",
        polls.last_note
    );
    scene.configmaps().companion_in_sync("colors").await;
    wait_healthz_ok(&controller).await;
}

/// API Priority and Fairness, the API server's own overload protection,
/// rejects the controller's watches with 429 while the API server answers
/// its other requests. The watches reconnect into the rejections and keep
/// failing well past the threshold; liveness stays 200, because restarting
/// would only add load. Once the priority level is gone, they converge.
///
/// A priority level with no seats still runs a request when it runs none,
/// so a second ServiceAccount holds its only slot: it lists ConfigMaps far
/// bigger than the socket buffers and never reads the answer.
#[tokio::test]
async fn liveness_stays_ok_while_the_api_server_rejects_the_watches_with_429() {
    let scene = Scene::new("fault-429").await;
    let control_plane = scene.control_plane;
    let namespace = scene.namespace.clone();
    let hog_namespace = testenv::fresh_namespace(&scene.client, "fault-429-hog")
        .await
        .expect("a namespace for the hog");
    common::kubectl_apply(&scene, &common::service_account(&namespace, "mirror"));
    let verbs = ["get", "list", "watch", "create", "update", "delete"];
    common::kubectl_apply(
        &scene,
        &common::role_for(&namespace, "mirror", "mirror", &verbs),
    );
    common::kubectl_apply(&scene, &common::service_account(&hog_namespace, "hog"));
    common::kubectl_apply(
        &scene,
        &common::role_for(&hog_namespace, "hog", "hog", &["list"]),
    );
    let hog_configmaps: Api<ConfigMap> = Api::namespaced(scene.client.clone(), &hog_namespace);
    let big = "x".repeat(900_000);
    for i in 0..30 {
        hog_configmaps
            .create(
                &PostParams::default(),
                &common::mk_unmanaged(&format!("big{i}"), &[("data", &big)]),
            )
            .await
            .expect("create a big ConfigMap");
    }

    let proxy = FaultProxy::start(control_plane.apiserver_address()).expect("start the proxy");
    let mirror_token = testenv::mint_token(&scene.client, &namespace, "mirror")
        .await
        .expect("a token");
    let kubeconfig = control_plane
        .log_dir()
        .join(format!("{namespace}-mirror-proxied.kubeconfig"));
    control_plane
        .write_token_kubeconfig_via(&proxy.url(), &mirror_token, &kubeconfig)
        .expect("write the kubeconfig");
    let controller = controller_via(
        &scene,
        &kubeconfig,
        "429",
        &["--watch-failure-threshold", "5s"],
    )
    .await;
    wait_healthz_ok(&controller).await;

    let level = namespace.as_str();
    common::kubectl_apply(
        &scene,
        &rejecting_priority_level(level, &namespace, &hog_namespace),
    );
    let flow_schema_uid = Api::<FlowSchema>::all(scene.client.clone())
        .get(level)
        .await
        .expect("the flow schema")
        .metadata
        .uid
        .expect("a uid");
    let http = reqwest::Client::builder()
        .add_root_certificate(
            reqwest::Certificate::from_pem(control_plane.ca_pem().as_bytes()).expect("the CA"),
        )
        .build()
        .expect("an HTTP client");
    let hog_token = testenv::mint_token(&scene.client, &hog_namespace, "hog")
        .await
        .expect("a token");
    let hog_list = format!(
        "{}/api/v1/namespaces/{hog_namespace}/configmaps",
        control_plane.server_url()
    );
    wait_for("the flow schema to classify the hog", PATIENCE, || async {
        let response = http
            .get(format!("{hog_list}?limit=1"))
            .bearer_auth(&hog_token)
            .send()
            .await
            .ok()?;
        let classified = response
            .headers()
            .get("x-kubernetes-pf-flowschema-uid")?
            .to_str()
            .ok()?;
        (classified == flow_schema_uid).then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{e:#}"));
    // Held, unread, until dropped: the priority level's only slot. The
    // level may be running another request at this moment (one of the
    // controller's watches starting), which rejects the hog's list too:
    // only a list that got the slot (200) holds it.
    let hog = wait_for("the hog's list to take the only slot", PATIENCE, || async {
        let response = http
            .get(&hog_list)
            .bearer_auth(&hog_token)
            .send()
            .await
            .ok()?;
        response.status().is_success().then_some(response)
    })
    .await
    .unwrap_or_else(|e| panic!("{e:#}"));
    let watch_url = format!(
        "{}/api/v1/namespaces/{namespace}/configmaps?watch=1&timeoutSeconds=1",
        control_plane.server_url()
    );
    wait_for("the priority level to reject watches", PATIENCE, || async {
        let response = http
            .get(&watch_url)
            .bearer_auth(&mirror_token)
            .send()
            .await
            .ok()?;
        (response.status().as_u16() == 429).then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{e:#}"));

    // The watches reconnect, into the rejections.
    proxy.reset().expect("cut the link");
    proxy.restore().expect("restore the link");
    let polls = HealthzPolls::over(
        &controller,
        Duration::from_secs(30),
        Duration::from_millis(250),
    )
    .await;
    let rejected = rejected_requests(&scene, level);
    drop(hog);
    delete_priority_level(&scene, level);

    polls.assert_never_failed("while the watches were rejected", &controller);
    let log = controller.log_text();
    let rejections_seen = log
        .lines()
        .filter(|line| line.contains("watch failed") && line.contains("code: 429"))
        .count();
    eprintln!(
        "the API server rejected {rejected} requests of the flow; the controller's watches saw {rejections_seen} rejections; /healthz said {:?}",
        polls.last_note
    );
    assert!(
        rejections_seen > 0,
        "the watches were expected to be rejected with 429\n{log}"
    );
    assert!(
        polls.noted_failing > 0,
        "the watches were expected to fail past the threshold: {polls:?}"
    );
    // A watch may wait out a backoff of up to 30 s before it tries again.
    wait_for(
        "the watches to reconnect",
        PATIENCE + Duration::from_secs(30),
        || async {
            let (status, body) = healthz(&controller).await;
            (status == 200 && body == "ok").then_some(())
        },
    )
    .await
    .unwrap_or_else(|e| panic!("{e:#}\n{}", controller.log_text()));
    scene
        .configmaps()
        .source_in_sync("colors", &[("a", "1")])
        .await;
}

/// A priority level without seats that rejects what it cannot run at once,
/// and a flow schema, both named `name`, that sends it the watches of
/// ServiceAccount `mirror` in `namespace` and the lists of ServiceAccount
/// `hog` in `hog_namespace`.
fn rejecting_priority_level(name: &str, namespace: &str, hog_namespace: &str) -> String {
    format!(
        r#"
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {{name: {name}}}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 0
    lendablePercent: 0
    borrowingLimitPercent: 0
    limitResponse: {{type: Reject}}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {{name: {name}}}
spec:
  priorityLevelConfiguration: {{name: {name}}}
  matchingPrecedence: 10
  distinguisherMethod: {{type: ByUser}}
  rules:
  - subjects: [{{kind: ServiceAccount, serviceAccount: {{name: mirror, namespace: {namespace}}}}}]
    resourceRules: [{{verbs: [watch], apiGroups: [""], resources: [configmaps], namespaces: ["*"]}}]
  - subjects: [{{kind: ServiceAccount, serviceAccount: {{name: hog, namespace: {hog_namespace}}}}}]
    resourceRules: [{{verbs: [list], apiGroups: [""], resources: [configmaps], namespaces: ["*"]}}]
"#
    )
}

fn delete_priority_level(scene: &Scene<'_>, name: &str) {
    common::kubectl_delete(scene, "flowschema,prioritylevelconfiguration", name);
}

/// Requests of flow schema `name` the API server rejected, by its metrics.
fn rejected_requests(scene: &Scene<'_>, name: &str) -> f64 {
    let out = scene
        .control_plane
        .kubectl()
        .args(["get", "--raw", "/metrics"])
        .output()
        .expect("kubectl get --raw /metrics");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    common::sum_metric(
        &String::from_utf8_lossy(&out.stdout),
        "apiserver_flowcontrol_rejected_requests_total",
        &format!("flow_schema=\"{name}\""),
    )
}

/// The API server unreachable from the start: the caches never sync, and
/// SIGTERM still stops the process within its bound, exit 0.
#[tokio::test]
async fn sigterm_before_the_caches_sync_exits_within_the_bound() {
    let scene = Scene::new("fault-term-unsynced").await;
    let (proxy, kubeconfig) = proxied(&scene, "unsynced");
    proxy.reset().expect("cut the link");
    let args = [
        "--namespace",
        scene.namespace.as_str(),
        "--shutdown-timeout",
        "3s",
    ];
    let mut controller =
        ControllerProcess::start_unready(scene.control_plane, &kubeconfig, "unsynced", &args).await;
    assert_eq!(controller.get("/readyz").await.expect("readyz").0, 503);
    controller.signal(Signal::Term);
    let status = controller
        .wait_exit(Duration::from_secs(3) + Duration::from_secs(10))
        .unwrap_or_else(|| panic!("no exit after SIGTERM\n{}", controller.log_text()));
    assert!(status.success(), "{status}");
}

/// A leader on a frozen link: releasing the Lease cannot get through, and
/// the stop is bounded all the same.
#[tokio::test]
async fn sigterm_of_a_partitioned_leader_exits_within_the_bound() {
    let scene = Scene::new("fault-term-frozen").await;
    let (proxy, kubeconfig) = proxied(&scene, "frozen");
    let mut args = scene.leader_election_args("frozen", LEASE_TIMINGS);
    args.extend(["--shutdown-timeout", "3s"]);
    let mut controller = controller_via(&scene, &kubeconfig, "frozen", &args).await;
    wait_leading(&controller).await;

    proxy.freeze().expect("freeze the link");
    controller.signal(Signal::Term);
    let status = controller
        .wait_exit(Duration::from_secs(3) + Duration::from_secs(10))
        .unwrap_or_else(|| panic!("no exit after SIGTERM\n{}", controller.log_text()));
    // Either it stopped as asked (0), or its renewals failed first (1).
    assert!(matches!(status.code(), Some(0 | 1)), "{status}");
    proxy.thaw().expect("thaw the link");
}

/// The first SIGINT waits for what can finish (here, a Lease release that
/// hangs on a frozen link, under long bounds); the second exits at once.
#[tokio::test]
async fn a_second_sigint_exits_at_once() {
    let scene = Scene::new("fault-int").await;
    let (proxy, kubeconfig) = proxied(&scene, "int");
    let mut args = scene.leader_election_args("int", LEASE_TIMINGS);
    args.extend(["--shutdown-timeout", "120s", "--api-timeout", "120s"]);
    let mut controller = controller_via(&scene, &kubeconfig, "int", &args).await;
    wait_leading(&controller).await;

    proxy.freeze().expect("freeze the link");
    controller.signal(Signal::Int);
    assert!(
        controller.wait_exit(Duration::from_secs(1)).is_none(),
        "the first SIGINT was expected to wait"
    );
    controller.signal(Signal::Int);
    let status = controller
        .wait_exit(PATIENCE)
        .unwrap_or_else(|| panic!("no exit after a second SIGINT\n{}", controller.log_text()));
    assert_eq!(status.code(), Some(130), "{status}");
    proxy.thaw().expect("thaw the link");
}

/// A leader cut off by a partition stops writing and exits; the standby,
/// connected directly, takes over; when the partition heals, the old
/// leader's held bytes reach the API server and change nothing.
#[tokio::test]
async fn a_partitioned_leader_yields_and_its_held_writes_change_nothing() {
    let scene = Scene::new("fault-split").await;
    let (proxy, kubeconfig) = proxied(&scene, "split");
    let mut old = controller_via(
        &scene,
        &kubeconfig,
        "old",
        &scene.leader_election_args("old", LEASE_TIMINGS),
    )
    .await;
    wait_leading(&old).await;
    let direct = scene.control_plane.kubeconfig_path().to_path_buf();
    let new = controller_via(
        &scene,
        &direct,
        "new",
        &scene.leader_election_args("new", LEASE_TIMINGS),
    )
    .await;
    scene
        .configmaps()
        .source_in_sync("colors", &[("a", "1")])
        .await;

    // The old leader may or may not have sent its write of "2" when the
    // link freezes; if it has not, the write is held by the partition.
    scene
        .configmaps()
        .patch("colors", json!({"data": {"a": "2"}}))
        .await;
    proxy.freeze().expect("freeze the link");
    scene
        .configmaps()
        .patch("colors", json!({"data": {"a": "3"}}))
        .await;

    let status = old
        .wait_exit(PATIENCE)
        .unwrap_or_else(|| panic!("the partitioned leader kept running\n{}", old.log_text()));
    assert_eq!(status.code(), Some(1), "{status}");
    wait_leading(&new).await;
    let settled = scene.configmaps().companion_in_sync("colors").await;
    let leases: Api<Lease> = Api::namespaced(scene.client.clone(), &scene.namespace);
    let lease_before = leases.get("configmap-mirror").await.expect("the lease");

    proxy.thaw().expect("thaw the link");
    drained(&proxy).await;
    let now = scene
        .configmaps()
        .get("colors-synced")
        .await
        .expect("the companion");
    assert_eq!(
        now.metadata.resource_version,
        settled.metadata.resource_version
    );
    assert_eq!(now.data, settled.data);
    let lease_after = leases.get("configmap-mirror").await.expect("the lease");
    assert_eq!(
        lease_after
            .spec
            .as_ref()
            .and_then(|s| s.holder_identity.as_deref()),
        Some("new")
    );
    let version = |lease: &Lease| {
        lease
            .metadata
            .resource_version
            .as_deref()
            .and_then(|v| v.parse::<u64>().ok())
    };
    assert!(
        version(&lease_after) >= version(&lease_before),
        "the lease went back"
    );
}

/// SIGKILL in the middle of a cold start over a few hundred sources: the
/// restarted controller converges every one of them.
#[tokio::test]
async fn a_cold_start_killed_midway_converges_after_a_restart() {
    const SOURCES: usize = 300;
    let scene = Scene::new("fault-cold").await;
    for i in 0..SOURCES {
        scene
            .configmaps()
            .create(&mk_source(&format!("s{i:03}"), &[("i", &i.to_string())]))
            .await;
    }
    let mut first = scene.configmaps().start_controller(&[]).await;
    first.writes_reaching(30.0).await;
    first.signal(Signal::Kill);
    assert!(first.wait_exit(PATIENCE).is_some());
    let written_before = count_companions(&scene).await;

    let second = scene.configmaps().start_controller(&[]).await;
    for i in 0..SOURCES {
        scene
            .configmaps()
            .companion_in_sync(&format!("s{i:03}"))
            .await;
    }
    eprintln!("{written_before} of {SOURCES} companions existed when the first run was killed");
    drop(second);
}

async fn count_companions(scene: &Scene<'_>) -> usize {
    let api: Api<ConfigMap> = scene.configmaps().api;
    let params = ListParams::default().labels("app.kubernetes.io/managed-by=configmap-mirror");
    api.list(&params)
        .await
        .expect("list companions")
        .items
        .len()
}

/// The kube-apiserver process stops and starts again on the same etcd:
/// what changes right after it is back converges, and health recovers.
#[tokio::test]
async fn an_api_server_restart_converges_what_changed_meanwhile() {
    let mut control_plane = ControlPlane::start(Options {
        etcd_unsafe_no_fsync: true,
        ..Options::default()
    })
    .unwrap_or_else(|e| panic!("{e:#}"));
    let (namespace, controller) = {
        let scene = Scene::on(&control_plane, "fault-restart").await;
        let controller = scene
            .configmaps()
            .start_controller(&["--watch-failure-threshold", "2s"])
            .await;
        scene
            .configmaps()
            .create(&mk_source("colors", &[("a", "1")]))
            .await;
        scene
            .configmaps()
            .create(&mk_source("shapes", &[("b", "1")]))
            .await;
        scene.configmaps().companion_in_sync("colors").await;
        scene.configmaps().companion_in_sync("shapes").await;
        (scene.namespace.clone(), controller)
    };

    control_plane.kill_apiserver().expect("kill kube-apiserver");
    tokio::time::sleep(Duration::from_secs(5)).await;
    let (status, body) = healthz(&controller).await;
    assert_eq!(
        status, 200,
        "liveness failed while the API server was down: {body}"
    );
    control_plane
        .start_apiserver()
        .expect("start kube-apiserver");

    let scene = Scene {
        control_plane: &control_plane,
        client: control_plane.client().await,
        namespace,
    };
    scene
        .configmaps()
        .patch(
            "colors",
            json!({"data": {"a": "changed after the restart"}}),
        )
        .await;
    scene.configmaps().delete("shapes-synced").await;
    scene.configmaps().companion_in_sync("colors").await;
    scene.configmaps().companion_in_sync("shapes").await;
    wait_healthz_ok(&controller).await;
}

/// Added latency on the leader's path only: its renewals become too slow,
/// it stops, and the standby takes over. By the API server's own audit
/// log, every write of the old leader was applied before the first write
/// of the new one.
#[tokio::test]
async fn a_slowed_leader_s_last_write_lands_before_the_new_leader_s_first() {
    let state = tempfile_dir("audit");
    let (control_plane, audit_log) = audited_control_plane(&state);
    let scene = Scene::on(&control_plane, "fault-slow").await;
    for account in ["old", "new"] {
        common::kubectl_apply(&scene, &common::service_account(&scene.namespace, account));
        common::kubectl_apply(&scene, &common::replica_role(&scene.namespace, account));
    }
    let proxy = FaultProxy::start(control_plane.apiserver_address()).expect("start the proxy");
    let old_kubeconfig = state.join("old.kubeconfig");
    let token = testenv::mint_token(&scene.client, &scene.namespace, "old")
        .await
        .expect("a token");
    control_plane
        .write_token_kubeconfig_via(&proxy.url(), &token, &old_kubeconfig)
        .expect("write the kubeconfig");
    let new_kubeconfig = scene.token_kubeconfig("new").await;
    let replica =
        |identity: &'static str| scene.leader_election_args(identity, ["6s", "3s", "500ms"]);
    let mut old = controller_via(&scene, &old_kubeconfig, "old", &replica("old")).await;
    wait_leading(&old).await;
    let new = controller_via(&scene, &new_kubeconfig, "new", &replica("new")).await;
    for i in 0..5 {
        scene
            .configmaps()
            .create(&mk_source(&format!("s{i}"), &[("v", "0")]))
            .await;
    }
    for i in 0..5 {
        scene.configmaps().companion_in_sync(&format!("s{i}")).await;
    }

    // Keep both replicas busy while leadership moves: new sources, whose
    // companions either replica could create (a create needs no
    // resourceVersion, so nothing but leadership orders them).
    proxy
        .set_latency(Duration::from_millis(1500))
        .expect("slow the link");
    let mut round = 0;
    let old_status = loop {
        round += 1;
        scene
            .configmaps()
            .create(&mk_source(&format!("r{round}"), &[("v", "1")]))
            .await;
        if let Some(status) = old.wait_exit(Duration::from_millis(200)) {
            break status;
        }
        assert!(
            round < 200,
            "the slowed leader kept leading\n{}",
            old.log_text()
        );
    };
    for extra in 1..=10 {
        scene
            .configmaps()
            .create(&mk_source(&format!("r{}", round + extra), &[("v", "1")]))
            .await;
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(old_status.code(), Some(1), "{old_status}");
    wait_leading(&new).await;
    for i in 0..5 {
        scene
            .configmaps()
            .patch(&format!("s{i}"), json!({"data": {"v": "last"}}))
            .await;
    }
    for i in 0..5 {
        scene.configmaps().companion_in_sync(&format!("s{i}")).await;
    }
    for r in 1..=round + 10 {
        scene.configmaps().companion_in_sync(&format!("r{r}")).await;
    }
    drained(&proxy).await;
    drop(proxy);

    let writes = applied_writes(&audit_log, |namespace| namespace == scene.namespace);
    assert_old_leader_wrote_first(&writes);
    drop(new);
}

/// Both leaders, the ServiceAccounts `old` and `new`, wrote; every write of
/// the old one was applied before the first of the new one was received.
fn assert_old_leader_wrote_first(writes: &[AppliedWrite]) {
    let by = |user: &str| -> Vec<&AppliedWrite> {
        writes.iter().filter(|w| w.user.ends_with(user)).collect()
    };
    let (old_writes, new_writes) = (by(":old"), by(":new"));
    assert!(
        !old_writes.is_empty() && !new_writes.is_empty(),
        "both leaders wrote: {writes:?}"
    );
    let old_last = old_writes.iter().map(|w| w.completed.as_str()).max();
    let new_first = new_writes.iter().map(|w| w.received.as_str()).min();
    eprintln!(
        "{} writes by the old leader, the last applied at {old_last:?}; {} by the new, the first received at {new_first:?}",
        old_writes.len(),
        new_writes.len()
    );
    assert!(
        old_last < new_first,
        "the leaders' writes interleave: {writes:?}"
    );
}

/// Writes to ConfigMaps, with who made them and when: enough to order
/// two leaders' writes as the API server applied them.
/// A control plane whose API server logs every ConfigMap write it applies,
/// with who made it and when it was received and completed.
fn audited_control_plane(state: &std::path::Path) -> (ControlPlane, PathBuf) {
    let policy = state.join("audit-policy.yaml");
    let audit_log = state.join("audit.log");
    std::fs::write(&policy, AUDIT_POLICY).expect("write the audit policy");
    let control_plane = ControlPlane::start(Options {
        etcd_unsafe_no_fsync: true,
        extra_apiserver_args: vec![
            format!("--audit-policy-file={}", policy.display()),
            format!("--audit-log-path={}", audit_log.display()),
        ],
        ..Options::default()
    })
    .unwrap_or_else(|e| panic!("{e:#}"));
    (control_plane, audit_log)
}

/// A slowed leader is writing a source's mirrors into many namespaces when
/// someone hands the Lease to the standby by hand. The fan-out stops: by the
/// API server's audit log, every mirror write of the old leader was applied
/// before the first of the new one, which finishes the job.
#[tokio::test]
async fn a_mirror_fan_out_stops_when_the_lease_is_handed_over() {
    const TARGETS: usize = 128;
    let state = tempfile_dir("fan-out");
    let (control_plane, audit_log) = audited_control_plane(&state);
    let scene = Scene::on(&control_plane, "fault-fan-out").await;
    for account in ["old", "new"] {
        common::kubectl_apply(&scene, &common::service_account(&scene.namespace, account));
        common::kubectl_apply(&scene, &cluster_admin(&scene.namespace, account));
    }
    let namespaces: Api<Namespace> = Api::all(scene.client.clone());
    let prefix = format!("{}-t", scene.namespace);
    for i in 0..TARGETS {
        let namespace = Namespace {
            metadata: ObjectMeta {
                name: Some(format!("{prefix}{i}")),
                labels: Some([("workshop.io/accept-mirrors".into(), "true".into())].into()),
                ..ObjectMeta::default()
            },
            ..Namespace::default()
        };
        namespaces
            .create(&PostParams::default(), &namespace)
            .await
            .expect("create a target namespace");
    }
    // Each replica on a slow link of its own: every write takes a second,
    // a renewal (a read and a write) well within half of what the renew
    // deadline leaves after the retry period, and a fan-out outlasts the
    // handover.
    let mut proxies = Vec::new();
    let mut kubeconfigs = Vec::new();
    for account in ["old", "new"] {
        let proxy = FaultProxy::start(control_plane.apiserver_address()).expect("start a proxy");
        proxy
            .set_latency(Duration::from_millis(500))
            .expect("slow the link");
        let kubeconfig = state.join(format!("{account}.kubeconfig"));
        let token = testenv::mint_token(&scene.client, &scene.namespace, account)
            .await
            .expect("a token");
        control_plane
            .write_token_kubeconfig_via(&proxy.url(), &token, &kubeconfig)
            .expect("write the kubeconfig");
        proxies.push(proxy);
        kubeconfigs.push(kubeconfig);
    }
    let replica =
        |identity: &'static str| scene.leader_election_args(identity, ["15s", "12s", "500ms"]);
    let mut old =
        ControllerProcess::start(&control_plane, &kubeconfigs[0], "old", &replica("old")).await;
    wait_leading(&old).await;
    let new =
        ControllerProcess::start(&control_plane, &kubeconfigs[1], "new", &replica("new")).await;

    let mut source = mk_source("shared", &[("v", "1")]);
    source
        .metadata
        .annotations
        .get_or_insert_default()
        .insert("workshop.io/mirror-to".into(), format!("{prefix}*"));
    scene.configmaps().create(&source).await;
    let all: Api<ConfigMap> = Api::all(scene.client.clone());
    let mirrors = ListParams::default().fields("metadata.name=shared");
    let count_mirrors = || async {
        all.list(&mirrors)
            .await
            .expect("list the mirrors")
            .items
            .iter()
            .filter(|cm| cm.metadata.namespace.as_deref() != Some(scene.namespace.as_str()))
            .count()
    };
    wait_for("the fan-out to begin", PATIENCE, || async {
        (count_mirrors().await > 0).then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{e:#}"));

    let leases: Api<Lease> = Api::namespaced(scene.client.clone(), &scene.namespace);
    let handover =
        json!({"spec": {"holderIdentity": "new", "renewTime": MicroTime(Timestamp::now())}});
    leases
        .patch(
            "configmap-mirror",
            &PatchParams::default(),
            &Patch::Merge(&handover),
        )
        .await
        .expect("hand the lease over");
    let status = old
        .wait_exit(PATIENCE)
        .unwrap_or_else(|| panic!("the old leader kept running\n{}", old.log_text()));
    assert_eq!(status.code(), Some(1), "{status}");
    wait_leading(&new).await;
    wait_for("every mirror", PATIENCE, || async {
        (count_mirrors().await == TARGETS).then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{e:#}"));
    drained(&proxies[0]).await;
    drop(proxies);

    let writes = applied_writes(&audit_log, |namespace| namespace.starts_with(&prefix));
    assert_old_leader_wrote_first(&writes);
    drop(new);
}

/// Everything, for a replica watching the whole cluster.
fn cluster_admin(namespace: &str, account: &str) -> String {
    format!(
        r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {{name: {namespace}-{account}}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}}
subjects: [{{kind: ServiceAccount, name: {account}, namespace: {namespace}}}]
"#
    )
}

/// The leader's renewals reach the API server at once, but their answers
/// come back late; then the link freezes. The renew deadline runs from when
/// the last successful renewal was sent, not from when its answer arrived,
/// so the old leader has stopped leading before the standby (which counts
/// the Lease's duration from when it saw that renewal) starts.
#[tokio::test]
async fn a_leader_answered_late_then_cut_off_stops_before_the_standby_starts() {
    const ANSWER_DELAY: Duration = Duration::from_millis(3500);
    let scene = Scene::new("fault-late").await;
    let (proxy, kubeconfig) = proxied(&scene, "late");
    // Two requests a renewal, each answered late, still fit in the
    // deadline: the renewal succeeds, slowly.
    let replica =
        |identity: &'static str| scene.leader_election_args(identity, ["10s", "8500ms", "500ms"]);
    let mut old = controller_via(&scene, &kubeconfig, "old", &replica("old")).await;
    wait_leading(&old).await;
    let direct = scene.control_plane.kubeconfig_path().to_path_buf();
    let new = controller_via(&scene, &direct, "new", &replica("new")).await;

    let leases: Api<Lease> = Api::namespaced(scene.client.clone(), &scene.namespace);
    let renewed = || async {
        leases
            .get("configmap-mirror")
            .await
            .expect("the lease")
            .metadata
            .resource_version
    };
    let before = renewed().await;
    proxy
        .set_response_latency(ANSWER_DELAY)
        .expect("delay the answers");
    // A renewal that lands from now on is answered late; freeze the link
    // once that answer is through, while the next renewal waits for its own.
    wait_for("a renewal to land", PATIENCE, || async {
        (renewed().await != before).then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{e:#}"));
    tokio::time::sleep(ANSWER_DELAY + Duration::from_secs(1)).await;
    proxy.freeze().expect("freeze the link");

    let status = old
        .wait_exit(PATIENCE)
        .unwrap_or_else(|| panic!("the cut-off leader kept running\n{}", old.log_text()));
    assert_eq!(status.code(), Some(1), "{status}");
    wait_leading(&new).await;
    let stopped = logged_at(&old, "lost the lease")
        .unwrap_or_else(|| panic!("no loss logged\n{}", old.log_text()));
    let started = logged_at(&new, "became leader")
        .unwrap_or_else(|| panic!("no start logged\n{}", new.log_text()));
    eprintln!("the old leader stopped at {stopped:?}, the new one started at {started:?}");
    assert!(
        stopped < started,
        "two leaders: the old one stopped at {stopped:?}, the new one started at {started:?}"
    );
}

/// When a log line containing `needle` was first written, from the
/// timestamp the line starts with.
fn logged_at(controller: &ControllerProcess, needle: &str) -> Option<LogTime> {
    let text = controller.log_text();
    let line = text.lines().find(|line| line.contains(needle))?;
    LogTime::parse(line.split_whitespace().next()?)
}

/// An RFC 3339 UTC timestamp (`2026-01-02T03:04:05.123456Z`), comparable
/// whatever the number of fractional digits.
#[derive(Debug, PartialEq, PartialOrd)]
struct LogTime {
    date: String,
    second_of_day: f64,
}

impl LogTime {
    fn parse(stamp: &str) -> Option<LogTime> {
        let (date, time) = stamp.strip_suffix('Z')?.split_once('T')?;
        let mut parts = time.splitn(3, ':');
        let hours: f64 = parts.next()?.parse().ok()?;
        let minutes: f64 = parts.next()?.parse().ok()?;
        let seconds: f64 = parts.next()?.parse().ok()?;
        Some(LogTime {
            date: date.to_owned(),
            second_of_day: hours * 3600.0 + minutes * 60.0 + seconds,
        })
    }
}

const AUDIT_POLICY: &str = r#"apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived", "ResponseStarted"]
rules:
- level: Metadata
  resources: [{group: "", resources: ["configmaps"]}]
  verbs: ["create", "update", "patch", "delete"]
- level: None
"#;

#[derive(Debug)]
#[allow(dead_code, reason = "verb and name are shown in failure messages")]
struct AppliedWrite {
    user: String,
    verb: String,
    name: String,
    received: String,
    completed: String,
}

/// Successful ConfigMap writes in the namespaces `wanted` picks, from the
/// audit log.
fn applied_writes(audit_log: &std::path::Path, wanted: impl Fn(&str) -> bool) -> Vec<AppliedWrite> {
    let text = std::fs::read_to_string(audit_log).expect("read the audit log");
    text.lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|event| {
            event["stage"] == "ResponseComplete"
                && event["objectRef"]["namespace"]
                    .as_str()
                    .is_some_and(&wanted)
                && event["responseStatus"]["code"]
                    .as_u64()
                    .is_some_and(|code| (200..300).contains(&code))
        })
        .map(|event| AppliedWrite {
            user: event["user"]["username"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            verb: event["verb"].as_str().unwrap_or_default().to_owned(),
            name: event["objectRef"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            received: event["requestReceivedTimestamp"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            completed: event["stageTimestamp"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        })
        .collect()
}

/// A fresh directory under the build output for one test's files.
fn tempfile_dir(tag: &str) -> PathBuf {
    let dir =
        PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("create a directory for the test");
    dir
}

/// A link that goes half-open while a large answer streams: the write of a
/// copy near 1 MiB reaches the API server and gets its answer's headers,
/// then nothing more. The call must end within `--api-timeout`, so the
/// reconcile fails and is retried, rather than hang and freeze that
/// source's copies for good while liveness stays 200.
#[tokio::test]
async fn a_write_whose_answer_stalls_after_its_headers_fails_within_the_api_timeout() {
    let scene = Scene::new("fault-body").await;
    let (proxy, kubeconfig) = proxied(&scene, "body");
    let controller = controller_via(&scene, &kubeconfig, "body", &["--api-timeout", "3s"]).await;
    proxy
        .stall_responses_to_uploads(512 * 1024, 16 * 1024)
        .expect("stall the answers to large writes");
    let blob = "x".repeat(900 * 1024);
    scene
        .configmaps()
        .create(&mk_source("big", &[("blob", &blob)]))
        .await;

    wait_for(
        "the stalled write to fail its reconcile",
        PATIENCE,
        || async {
            let errors = controller
                .metric("controller_runtime_reconcile_errors_total", "")
                .await;
            (errors >= 1.0).then_some(())
        },
    )
    .await
    .unwrap_or_else(|e| panic!("{e:#}\n{}", controller.log_text()));
    assert!(
        controller.log_text().contains("transient API error"),
        "{}",
        controller.log_text()
    );
    proxy.release_responses().expect("release the answers");
    scene.configmaps().companion_in_sync("big").await;
    scene
        .configmaps()
        .patch("big", json!({"data": {"blob": "small now"}}))
        .await;
    scene.configmaps().companion_in_sync("big").await;
}
