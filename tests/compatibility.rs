//! The controller on every Kubernetes release it supports: the oldest and
//! the newest of `hack/compat-versions`, and the pinned release with the
//! WatchList feature gate off, as any cluster may run it. Each runs the
//! same journey on a control plane of its own: label, heal, update,
//! mirroring, a leader's death, unlabel, and a source deleted with the
//! controller stopped, which the garbage collector alone cleans up.

use test_support as common;

use common::{ControllerProcess, LEASE_TIMINGS, PATIENCE, Scene, mk_source};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::{
    Api,
    api::{Patch, PatchParams},
};
use serde_json::json;
use testenv::{ControlPlane, Options, Signal, wait_for};
use tokio::sync::{Mutex, MutexGuard};

const WATCH_LIST_OFF: &str = "--feature-gates=WatchList=false";
const FELL_BACK: &str = "this watch lists instead";
const CONSENT: &str = "workshop.io/accept-mirrors";

/// One control plane at a time: the machine running the suite is small.
async fn exclusive() -> MutexGuard<'static, ()> {
    static ONE_AT_A_TIME: Mutex<()> = Mutex::const_new(());
    ONE_AT_A_TIME.lock().await
}

fn start_release(version: Option<&str>, apiserver_args: &[&str]) -> ControlPlane {
    let bin_dir = version.map(|v| testenv::bin_dir_for(v).unwrap_or_else(|e| panic!("{e:#}")));
    ControlPlane::start(Options {
        bin_dir,
        etcd_unsafe_no_fsync: true,
        extra_apiserver_args: apiserver_args.iter().map(|a| (*a).to_owned()).collect(),
        ..Options::default()
    })
    .unwrap_or_else(|e| panic!("{e:#}"))
}

fn compat_version(role: &str) -> String {
    testenv::compat_version(role).unwrap_or_else(|e| panic!("{e:#}"))
}

#[tokio::test]
async fn the_oldest_supported_release() {
    let _turn = exclusive().await;
    let control_plane = start_release(Some(&compat_version("oldest")), &[]);
    let replicas = journey(&control_plane).await;
    // WatchList is off by default on this release: every watch fell back.
    assert!(replicas.contains(FELL_BACK), "{replicas}");
}

#[tokio::test]
async fn the_newest_supported_release() {
    let _turn = exclusive().await;
    let control_plane = start_release(Some(&compat_version("newest")), &[]);
    journey(&control_plane).await;
}

#[tokio::test]
async fn the_pinned_release_with_watch_list_off() {
    let _turn = exclusive().await;
    let control_plane = start_release(None, &[WATCH_LIST_OFF]);
    let replicas = journey(&control_plane).await;
    assert!(replicas.contains(FELL_BACK), "{replicas}");
}

/// The other side of the health rule: forced to stream, every watch is
/// refused by an API server that answers. A restart can fix a
/// misconfiguration, so liveness fails, and readiness says why.
#[tokio::test]
async fn watches_refused_by_an_answering_api_server_fail_liveness() {
    let _turn = exclusive().await;
    let control_plane = start_release(None, &[WATCH_LIST_OFF]);
    let scene = Scene::on(&control_plane, "compat-wedged").await;
    let kubeconfig = control_plane.kubeconfig_path().to_path_buf();
    let args = [
        "--namespace",
        scene.namespace.as_str(),
        "--initial-list",
        "stream",
        "--watch-failure-threshold",
        "2s",
    ];
    let controller =
        ControllerProcess::start_unready(&control_plane, &kubeconfig, "wedged", &args).await;
    let (status, why) = wait_for("/healthz to fail", PATIENCE, || async {
        let (status, body) = controller.get("/healthz").await.ok()?;
        (status == 503).then_some((status, body))
    })
    .await
    .unwrap_or_else(|e| panic!("{e:#}\n{}", controller.log_text()));
    assert_eq!(status, 503);
    assert!(why.contains("sendInitialEvents"), "{why}");
    let (status, why) = controller.get("/readyz").await.expect("readyz");
    assert_eq!(status, 503);
    assert!(
        why.contains("sources cache not synced") && why.contains("sendInitialEvents"),
        "{why}"
    );
    assert!(controller.stop().success());
}

/// Runs the journey on `control_plane`; returns both replicas' logs.
async fn journey(control_plane: &ControlPlane) -> String {
    let scene = Scene::on(control_plane, "compat").await;
    let target = consenting_namespace(&scene).await;
    let (mut leader, standby) = two_replicas(&scene).await;

    // Label: a companion, and a mirror in the consenting namespace.
    let mut source = mk_source("colors", &[("a", "1")]);
    source.metadata.annotations =
        Some([("workshop.io/mirror-to".to_owned(), target.clone())].into());
    scene.configmaps().create(&source).await;
    scene.configmaps().companion_in_sync("colors").await;
    mirror_holds(&scene, &target, "1").await;

    // Heal and update.
    scene.configmaps().delete("colors-synced").await;
    scene.configmaps().companion_in_sync("colors").await;
    scene
        .configmaps()
        .patch("colors", json!({"data": {"a": "2"}}))
        .await;
    scene.configmaps().companion_in_sync("colors").await;
    mirror_holds(&scene, &target, "2").await;

    // The leader dies; the standby takes over and heals.
    leader.signal(Signal::Kill);
    assert!(leader.wait_exit(PATIENCE).is_some());
    scene.configmaps().delete("colors-synced").await;
    scene.configmaps().companion_in_sync("colors").await;
    assert!(standby.writes_reaching(1.0).await >= 1.0);

    // Unlabel: the companion and the mirror go.
    scene.configmaps().unlabel("colors").await;
    scene.configmaps().wait_gone("colors-synced").await;
    wait_for("the mirror to go", PATIENCE, || async {
        let api: Api<ConfigMap> = Api::namespaced(scene.client.clone(), &target);
        matches!(api.get_opt("colors").await, Ok(None)).then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{e:#}"));

    // A source deleted while no controller runs: the garbage collector
    // follows the owner reference on its own.
    scene
        .configmaps()
        .source_in_sync("shapes", &[("b", "1")])
        .await;
    let logs = format!("{}\n{}", leader.log_text(), standby.log_text());
    assert!(standby.stop().success());
    scene.configmaps().delete("shapes").await;
    scene.configmaps().wait_gone("shapes-synced").await;
    logs
}

async fn consenting_namespace(scene: &Scene<'_>) -> String {
    let name = testenv::fresh_namespace(&scene.client, "compat-target")
        .await
        .expect("create a namespace");
    let api: Api<Namespace> = Api::all(scene.client.clone());
    let patch = json!({"metadata": {"labels": {CONSENT: "true"}}});
    api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("label the namespace");
    name
}

async fn mirror_holds(scene: &Scene<'_>, namespace: &str, value: &str) {
    let api: Api<ConfigMap> = Api::namespaced(scene.client.clone(), namespace);
    wait_for(
        &format!("the mirror in {namespace} to hold {value}"),
        PATIENCE,
        || async {
            let mirror = api.get_opt("colors").await.ok()??;
            let data = mirror.data?;
            (data.get("a").map(String::as_str) == Some(value)).then_some(())
        },
    )
    .await
    .unwrap_or_else(|e| panic!("{e:#}"));
}

/// Two cluster-wide replicas; returns (leader, standby).
async fn two_replicas(scene: &Scene<'_>) -> (ControllerProcess, ControllerProcess) {
    scene
        .two_replicas(async |identity| {
            let kubeconfig = scene.control_plane.kubeconfig_path().to_path_buf();
            let mut args = scene.leader_election_args(identity, LEASE_TIMINGS);
            args.extend(["--slow-retry", "1s"]);
            ControllerProcess::start(scene.control_plane, &kubeconfig, identity, &args).await
        })
        .await
}
