//! Two replicas, one Lease: only the holder writes, and the other takes
//! over when the holder stops, dies, or loses the Lease.

mod common;

use std::time::Duration;

use common::{Mirror, Scene, mk_source};
use k8s_openapi::{
    api::coordination::v1::Lease, apimachinery::pkg::apis::meta::v1::MicroTime, jiff::Timestamp,
};
use kube::{
    Api,
    api::{Patch, PatchParams},
};
use serde_json::json;
use testenv::Signal;

const LEASE: &str = "configmap-mirror";
const LEASE_DURATION: Duration = Duration::from_secs(4);
const RETRY_PERIOD: Duration = Duration::from_millis(500);

async fn replica(scene: &Scene<'_>, identity: &str) -> Mirror {
    scene
        .start_mirror(&[
            "--leader-elect",
            "--leader-election-namespace",
            &scene.namespace,
            "--leader-election-identity",
            identity,
            "--lease-duration",
            "4s",
            "--renew-deadline",
            "3s",
            "--retry-period",
            "500ms",
        ])
        .await
}

async fn holder(scene: &Scene<'_>) -> Option<String> {
    let leases: Api<Lease> = Api::namespaced(scene.client.clone(), &scene.namespace);
    let lease = leases.get_opt(LEASE).await.ok()??;
    lease.spec?.holder_identity.filter(|h| !h.is_empty())
}

async fn wait_holder(
    scene: &Scene<'_>,
    timeout: Duration,
    wanted: impl Fn(&str) -> bool,
) -> String {
    testenv::wait_for("the lease holder", timeout, || async {
        holder(scene).await.filter(|h| wanted(h))
    })
    .await
    .unwrap_or_else(|e| panic!("{e:#}"))
}

async fn leading(mirror: &Mirror) -> bool {
    mirror.metric("leader_election_master_status", "").await == 1.0
}

/// Starts replicas a and b; returns (leader, standby).
async fn two_replicas(scene: &Scene<'_>) -> (Mirror, Mirror) {
    let a = replica(scene, "replica-a").await;
    let b = replica(scene, "replica-b").await;
    let first = wait_holder(scene, common::PATIENCE, |_| true).await;
    if first == "replica-a" { (a, b) } else { (b, a) }
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
            .create(&mk_source(&format!("s{i}"), &[("i", "x")]))
            .await;
    }
    for i in 0..5 {
        scene.companion_in_sync(&format!("s{i}")).await;
    }
    scene.delete("s0-synced").await;
    scene.companion_in_sync("s0").await;
    assert_eq!(leader.writes_reaching(6.0).await, 6.0);
    assert_eq!(standby.writes().await, 0.0, "the standby wrote");
}

#[tokio::test]
async fn a_terminated_leader_releases_the_lease_and_the_standby_converges_what_changed_meanwhile() {
    let scene = Scene::new("le-term").await;
    let (leader, standby) = two_replicas(&scene).await;
    let leader_id = holder(&scene).await.expect("a holder");
    scene.create(&mk_source("colors", &[("a", "1")])).await;
    scene.companion_in_sync("colors").await;

    let status = leader.stop();
    assert!(status.success(), "SIGTERM exits 0: {status}");
    scene
        .patch_json(
            "colors",
            json!({"data": {"a": "changed while handing over"}}),
        )
        .await;
    // Released, not expired: the standby takes it at its next try, well
    // before the lease duration.
    wait_holder(&scene, LEASE_DURATION, |h| h != leader_id).await;
    scene.companion_in_sync("colors").await;
    assert!(standby.writes_reaching(1.0).await >= 1.0);
}

#[tokio::test]
async fn a_killed_leader_is_replaced_once_its_lease_expires() {
    let scene = Scene::new("le-kill").await;
    let (mut leader, standby) = two_replicas(&scene).await;
    let leader_id = holder(&scene).await.expect("a holder");

    leader.signal(Signal::Kill);
    assert!(leader.wait_exit(common::PATIENCE).is_some());
    scene.create(&mk_source("colors", &[("a", "1")])).await;
    let bound = LEASE_DURATION + RETRY_PERIOD + Duration::from_secs(2);
    wait_holder(&scene, bound, |h| h != leader_id).await;
    scene.companion_in_sync("colors").await;
    assert_eq!(standby.writes_reaching(1.0).await, 1.0);
}

#[tokio::test]
async fn a_leader_that_cannot_renew_stops_and_exits_non_zero() {
    let scene = Scene::new("le-lost").await;
    let mut leader = replica(&scene, "replica-a").await;
    wait_holder(&scene, common::PATIENCE, |h| h == "replica-a").await;

    // Someone else keeps the Lease fresh: every renewal attempt fails.
    let leases: Api<Lease> = Api::namespaced(scene.client.clone(), &scene.namespace);
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
    };
    assert_eq!(status.code(), Some(1), "{status}");
    assert!(leader.log_text().contains("lost the lease"));
}
