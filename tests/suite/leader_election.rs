//! Two replicas, one Lease: only the holder writes, and the other takes
//! over when the holder stops, dies, or loses the Lease.

use crate::common;

use std::time::{Duration, Instant};

use common::{ControllerProcess, LEASE, LEASE_TIMINGS, Scene, mk_source};
use k8s_openapi::{
    api::coordination::v1::Lease, apimachinery::pkg::apis::meta::v1::MicroTime, jiff::Timestamp,
};
use kube::{
    Api,
    api::{Patch, PatchParams},
};
use serde_json::json;
use testenv::Signal;

/// The lease duration and retry period of [`LEASE_TIMINGS`].
const LEASE_DURATION: Duration = Duration::from_secs(6);
const RETRY_PERIOD: Duration = Duration::from_millis(500);

async fn replica(scene: &Scene<'_>, identity: &str) -> ControllerProcess {
    replica_with(scene, identity, LEASE_TIMINGS).await
}

/// A replica with this lease duration, renew deadline and retry period.
async fn replica_with(scene: &Scene<'_>, identity: &str, timings: [&str; 3]) -> ControllerProcess {
    scene
        .configmaps()
        .start_controller(&scene.leader_election_args(identity, timings))
        .await
}

async fn leading(controller: &ControllerProcess) -> bool {
    controller.metric("leader_election_master_status", "").await == 1.0
}

/// Like [`leading`], and false for a replica that has exited.
async fn leads(controller: &ControllerProcess) -> bool {
    match controller.get("/metrics").await {
        Ok((_, text)) => common::sum_metric(&text, "leader_election_master_status", "") == 1.0,
        Err(_) => false,
    }
}

/// Samples both replicas for `window`, failing if both ever lead at once.
async fn never_both_lead(a: &ControllerProcess, b: &ControllerProcess, window: Duration) {
    let end = Instant::now() + window;
    while Instant::now() < end {
        let (a_leads, b_leads) = tokio::join!(leads(a), leads(b));
        assert!(
            !(a_leads && b_leads),
            "both replicas lead at once\n--- a ---\n{}\n--- b ---\n{}",
            a.log_text(),
            b.log_text()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn wait_leading(controller: &ControllerProcess) {
    testenv::wait_for("a replica to lead", common::PATIENCE, || async {
        leads(controller).await.then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{e:#}\n{}", controller.log_text()));
}

async fn two_replicas(scene: &Scene<'_>) -> (ControllerProcess, ControllerProcess) {
    scene
        .two_replicas(async |identity| replica(scene, identity).await)
        .await
}

#[tokio::test]
async fn exactly_one_replica_leads_and_only_it_writes() {
    let scene = Scene::new("le-one").await;
    let (leader, standby) = two_replicas(&scene).await;
    testenv::wait_for("the leader to report leading", common::PATIENCE, || async {
        leading(&leader).await.then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{e:#}"));
    assert!(!leading(&standby).await);
    assert_eq!(
        standby.get("/readyz").await.expect("readyz").0,
        200,
        "a synced standby is ready"
    );

    for i in 0..5 {
        scene
            .configmaps()
            .create(&mk_source(&format!("s{i}"), &[("i", "x")]))
            .await;
    }
    for i in 0..5 {
        scene.configmaps().companion_in_sync(&format!("s{i}")).await;
    }
    scene.configmaps().delete("s0-synced").await;
    scene.configmaps().companion_in_sync("s0").await;
    assert_eq!(leader.writes_reaching(6.0).await, 6.0);
    assert_eq!(standby.writes().await, 0.0, "the standby wrote");
}

#[tokio::test]
async fn a_terminated_leader_releases_the_lease_and_the_standby_converges_what_changed_meanwhile() {
    let scene = Scene::new("le-term").await;
    let (leader, standby) = two_replicas(&scene).await;
    let leader_id = scene.lease_holder().await.expect("a holder");
    scene
        .configmaps()
        .source_in_sync("colors", &[("a", "1")])
        .await;

    let status = leader.stop();
    assert!(status.success(), "SIGTERM exits 0: {status}");
    scene
        .configmaps()
        .patch(
            "colors",
            json!({"data": {"a": "changed while handing over"}}),
        )
        .await;
    // Released, not expired: the standby takes it at its next try, well
    // before the lease duration.
    scene
        .wait_lease_holder(LEASE_DURATION, |h| h != leader_id)
        .await;
    scene.configmaps().companion_in_sync("colors").await;
    assert!(standby.writes_reaching(1.0).await >= 1.0);
}

#[tokio::test]
async fn a_killed_leader_is_replaced_once_its_lease_expires() {
    let scene = Scene::new("le-kill").await;
    let (mut leader, standby) = two_replicas(&scene).await;
    let leader_id = scene.lease_holder().await.expect("a holder");

    leader.signal(Signal::Kill);
    assert!(leader.wait_exit(common::PATIENCE).is_some());
    scene
        .configmaps()
        .create(&mk_source("colors", &[("a", "1")]))
        .await;
    let bound = LEASE_DURATION + RETRY_PERIOD + Duration::from_secs(3);
    scene.wait_lease_holder(bound, |h| h != leader_id).await;
    scene.configmaps().companion_in_sync("colors").await;
    assert_eq!(standby.writes_reaching(1.0).await, 1.0);
}

#[tokio::test]
async fn a_leader_that_cannot_renew_stops_and_exits_non_zero() {
    let scene = Scene::new("le-lost").await;
    let mut leader = replica(&scene, "replica-a").await;
    scene
        .wait_lease_holder(common::PATIENCE, |h| h == "replica-a")
        .await;
    wait_leading(&leader).await;

    // Someone else keeps the Lease fresh: every renewal attempt fails.
    let leases: Api<Lease> = Api::namespaced(scene.client.clone(), &scene.namespace);
    let deadline = Instant::now() + common::PATIENCE;
    let status = loop {
        let now = MicroTime(Timestamp::now());
        let patch = json!({"spec": {"holderIdentity": "intruder", "renewTime": now}});
        leases
            .patch(LEASE, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .expect("take the lease");
        if let Some(status) = leader.wait_exit(Duration::from_millis(300)) {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "the leader kept running without its lease"
        );
    };
    assert_eq!(status.code(), Some(1), "{status}");
    assert!(leader.log_text().contains("lost the lease"));
}

#[tokio::test]
async fn a_lease_handed_to_the_standby_by_hand_never_makes_two_leaders() {
    let scene = Scene::new("le-edit").await;
    let (mut leader, standby) = two_replicas(&scene).await;
    wait_leading(&leader).await;
    let standby_id = if scene.lease_holder().await.as_deref() == Some("replica-a") {
        "replica-b"
    } else {
        "replica-a"
    };

    let leases: Api<Lease> = Api::namespaced(scene.client.clone(), &scene.namespace);
    let patch =
        json!({"spec": {"holderIdentity": standby_id, "renewTime": MicroTime(Timestamp::now())}});
    leases
        .patch(LEASE, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("hand the lease over");
    never_both_lead(&leader, &standby, LEASE_DURATION * 2).await;
    wait_leading(&standby).await;
    let status = leader
        .wait_exit(common::PATIENCE)
        .expect("the old leader exits");
    assert_eq!(status.code(), Some(1), "{status}");
    assert!(leader.log_text().contains("it is now held by"));
    scene
        .configmaps()
        .source_in_sync("colors", &[("a", "1")])
        .await;
}

#[tokio::test]
async fn a_deleted_lease_never_makes_two_leaders() {
    let scene = Scene::new("le-delete").await;
    let (leader, standby) = two_replicas(&scene).await;
    wait_leading(&leader).await;

    // The leader is paused, so the standby is the one to find the Lease
    // missing and create it; the leader resumes within its deadline.
    let leases: Api<Lease> = Api::namespaced(scene.client.clone(), &scene.namespace);
    leader.signal(Signal::Stop);
    leases
        .delete(LEASE, &Default::default())
        .await
        .expect("delete the lease");
    let recreated = testenv::wait_for("the standby to create the lease", common::PATIENCE, || {
        scene.lease_holder()
    })
    .await;
    leader.signal(Signal::Cont);
    recreated.unwrap_or_else(|e| panic!("{e:#}"));
    never_both_lead(&leader, &standby, LEASE_DURATION * 2).await;
    let either = testenv::wait_for("a leader", common::PATIENCE, || async {
        (leads(&leader).await || leads(&standby).await).then_some(())
    })
    .await;
    either.unwrap_or_else(|e| panic!("{e:#}"));
    scene
        .configmaps()
        .source_in_sync("colors", &[("a", "1")])
        .await;
}

/// A candidate with a shorter lease duration than the leader's must wait
/// for the leader's, as the Lease states it: a leader that stalls for
/// longer than the candidate's own duration, but within its own renew
/// deadline, is still the only leader when it resumes.
#[tokio::test]
async fn a_candidate_honours_the_lease_duration_the_lease_states() {
    let scene = Scene::new("le-durations").await;
    let long = replica_with(&scene, "long", ["20s", "10s", "1s"]).await;
    scene
        .wait_lease_holder(common::PATIENCE, |h| h == "long")
        .await;
    wait_leading(&long).await;
    let short = replica(&scene, "short").await;

    long.signal(Signal::Stop);
    // Past the candidate's own 6 s, within the leader's 10 s deadline.
    tokio::time::sleep(Duration::from_secs(8)).await;
    let short_led = leads(&short).await;
    let holder_then = scene.lease_holder().await;
    long.signal(Signal::Cont);
    assert!(
        !short_led,
        "the candidate took over before the stored duration"
    );
    assert_eq!(holder_then.as_deref(), Some("long"));
    never_both_lead(&long, &short, Duration::from_secs(3)).await;
    assert!(leads(&long).await, "{}", long.log_text());
}

/// Waits until /readyz is 503 and names `reason`; returns its text.
async fn unready_for(controller: &ControllerProcess, reason: &str) -> String {
    testenv::wait_for(
        &format!("/readyz to name {reason:?}"),
        common::PATIENCE,
        || async {
            let (status, text) = controller.get("/readyz").await.ok()?;
            (status == 503 && text.contains("leader election") && text.contains(reason))
                .then_some(text)
        },
    )
    .await
    .unwrap_or_else(|e| panic!("{e:#}\n{}", controller.log_text()))
}

/// The warning the controller logs at its default level, with the reason.
fn warned_about(controller: &ControllerProcess, reason: &str) -> bool {
    controller.log_text().lines().any(|line| {
        line.contains("WARN") && line.contains("leader election") && line.contains(reason)
    })
}

const ELECTION_FAILING: &str = "configmap_mirror_leader_election_failing";

/// A Lease namespace that does not exist: no replica can ever lead, and
/// the operator sees why, in the log, in /readyz and in a metric.
#[tokio::test]
async fn a_lease_in_a_namespace_that_does_not_exist_is_reported() {
    let scene = Scene::new("le-no-namespace").await;
    let kubeconfig = scene.control_plane.kubeconfig_path().to_path_buf();
    let missing = format!("{}-missing", scene.namespace);
    let args = [
        "--namespace",
        &scene.namespace,
        "--leader-elect",
        "--leader-election-namespace",
        &missing,
        "--leader-election-identity",
        "replica-a",
    ];
    let controller =
        ControllerProcess::start_unready(scene.control_plane, &kubeconfig, &scene.namespace, &args)
            .await;
    unready_for(&controller, "not found").await;
    assert!(
        warned_about(&controller, "not found"),
        "{}",
        controller.log_text()
    );
    assert_eq!(controller.metric(ELECTION_FAILING, "").await, 1.0);
    assert_eq!(
        controller.metric("leader_election_master_status", "").await,
        0.0
    );
    let (status, _) = controller.get("/healthz").await.expect("healthz");
    assert_eq!(status, 200, "a restart cannot create the namespace");
}

/// A token without rights on Leases: reported the same way, and once the
/// rights are granted the replica leads and mirrors, with nothing left to
/// report.
#[tokio::test]
async fn a_token_without_lease_rights_is_reported_until_granted() {
    let scene = Scene::new("le-no-rights").await;
    let verbs = ["get", "list", "watch", "create", "update", "delete"];
    common::kubectl_apply(
        &scene,
        &common::service_account(&scene.namespace, "replica"),
    );
    common::kubectl_apply(
        &scene,
        &common::role_for(&scene.namespace, "replica", "configmaps-only", &verbs),
    );
    let kubeconfig = scene.token_kubeconfig("replica").await;
    let mut args = vec!["--namespace", scene.namespace.as_str()];
    args.extend(scene.leader_election_args("replica-a", LEASE_TIMINGS));
    let controller =
        ControllerProcess::start_unready(scene.control_plane, &kubeconfig, &scene.namespace, &args)
            .await;
    unready_for(&controller, "forbidden").await;
    assert!(
        warned_about(&controller, "forbidden"),
        "{}",
        controller.log_text()
    );
    assert_eq!(controller.metric(ELECTION_FAILING, "").await, 1.0);

    common::kubectl_apply(&scene, &common::replica_role(&scene.namespace, "replica"));
    testenv::wait_for("the replica to lead", common::PATIENCE, || async {
        leading(&controller).await.then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{e:#}\n{}", controller.log_text()));
    let (status, text) = controller.get("/readyz").await.expect("readyz");
    assert_eq!(status, 200, "{text}");
    assert_eq!(controller.metric(ELECTION_FAILING, "").await, 0.0);
    scene
        .configmaps()
        .source_in_sync("colors", &[("a", "1")])
        .await;
}
