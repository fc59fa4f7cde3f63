//! Decisions made from a stale cache never reach the cluster: a write
//! reads its source afresh and gives up if the source no longer decides
//! what the cached one did, and a delete names the very version it was
//! decided on.
//!
//! Each test makes the cache stale deterministically: the controller starts
//! as a standby (the test holds the Lease), so its caches fill while it
//! writes nothing; then its open connections are frozen (its watches hear
//! nothing more), the cluster changes, and the Lease is released. The new
//! leader's first comparison decides from the cache as it was, and its
//! calls reach the API server on new connections.

use crate::common;

use std::path::PathBuf;

use common::{ControllerProcess, LEASE, LEASE_TIMINGS, PATIENCE, Scene, mk_source};
use configmap_mirror::contract::MANAGED_BY_LABEL;
use k8s_openapi::{
    api::coordination::v1::{Lease, LeaseSpec},
    apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta},
    jiff::Timestamp,
};
use kube::{
    Api,
    api::{Patch, PatchParams, PostParams},
};
use serde_json::json;
use testenv::{FaultProxy, wait_for};

/// Someone else holds the Lease, for as long as the test needs.
async fn hold_lease(scene: &Scene<'_>) {
    let now = MicroTime(Timestamp::now());
    let lease = Lease {
        metadata: ObjectMeta {
            name: Some(LEASE.into()),
            ..ObjectMeta::default()
        },
        spec: Some(LeaseSpec {
            holder_identity: Some("someone-else".into()),
            lease_duration_seconds: Some(3600),
            acquire_time: Some(now.clone()),
            renew_time: Some(now),
            ..LeaseSpec::default()
        }),
    };
    Api::<Lease>::namespaced(scene.client.clone(), &scene.namespace)
        .create(&PostParams::default(), &lease)
        .await
        .expect("create the Lease");
}

/// Releases the Lease as a stopping leader does: no holder, one second.
async fn release_lease(scene: &Scene<'_>) {
    let now = MicroTime(Timestamp::now());
    let patch = json!({"spec": {
        "holderIdentity": "",
        "leaseDurationSeconds": 1,
        "acquireTime": now,
        "renewTime": now,
    }});
    Api::<Lease>::namespaced(scene.client.clone(), &scene.namespace)
        .patch(LEASE, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("release the Lease");
}

/// A standby controller of this test's namespace, through a fault proxy,
/// its caches synced. A short call timeout lets its calls leave a frozen
/// connection for a new one soon.
async fn standby_via_proxy(scene: &Scene<'_>) -> (FaultProxy, ControllerProcess) {
    let control_plane = scene.control_plane;
    let proxy = FaultProxy::start(control_plane.apiserver_address()).expect("start the proxy");
    let kubeconfig: PathBuf = control_plane
        .log_dir()
        .join(format!("{}-proxied.kubeconfig", scene.namespace));
    control_plane
        .write_admin_kubeconfig_via(&proxy.url(), &kubeconfig)
        .expect("write the kubeconfig");
    let mut args = vec![
        "--namespace",
        scene.namespace.as_str(),
        "--api-timeout",
        "2s",
    ];
    args.extend(scene.leader_election_args("replica", LEASE_TIMINGS));
    let controller =
        ControllerProcess::start(control_plane, &kubeconfig, &scene.namespace, &args).await;
    (proxy, controller)
}

/// Waits until `done` holds of the controller's log or `happened` of the
/// cluster, whichever first; true if the log said so.
async fn log_or_cluster(
    controller: &ControllerProcess,
    what: &str,
    done: impl Fn(&str) -> bool,
    happened: impl AsyncFn() -> bool,
) -> bool {
    wait_for(what, PATIENCE, || async {
        if done(&controller.log_text()) {
            return Some(true);
        }
        happened().await.then_some(false)
    })
    .await
    .unwrap_or_else(|e| panic!("{e:#}\n{}", controller.log_text()))
}

#[tokio::test]
async fn a_source_unlabeled_while_the_watches_were_frozen_gets_no_companion_of_its_new_content() {
    let scene = Scene::new("stale-unlabeled").await;
    hold_lease(&scene).await;
    scene
        .configmaps()
        .create(&mk_source("colors", &[("a", "1")]))
        .await;
    let (proxy, controller) = standby_via_proxy(&scene).await;
    // Cached: a managed source with no companion yet.

    proxy.freeze_open_connections().expect("freeze the watches");
    scene
        .configmaps()
        .patch(
            "colors",
            json!({"metadata": {"labels": {common::SOURCE_LABEL: null}}, "data": {"a": "2"}}),
        )
        .await;
    release_lease(&scene).await;

    let refused = log_or_cluster(
        &controller,
        "the controller to find its cached source stale, or to write a companion",
        |log| log.contains("changed since it was cached: it no longer matches the source selector"),
        async || scene.configmaps().get("colors-synced").await.is_some(),
    )
    .await;
    let companion = scene.configmaps().get("colors-synced").await;
    assert!(
        refused && companion.is_none(),
        "a companion was written for a source that is no longer managed: {:?}",
        companion.and_then(|c| c.data)
    );
    proxy.thaw_open_connections().expect("thaw");
}

#[tokio::test]
async fn a_companion_claimed_while_the_watches_were_frozen_is_not_pruned() {
    let scene = Scene::new("stale-claimed").await;
    let first = scene.configmaps().start_controller(&[]).await;
    scene
        .configmaps()
        .source_in_sync("colors", &[("a", "1")])
        .await;
    assert!(first.stop().success());
    hold_lease(&scene).await;
    // No longer managed: its companion is to be pruned, once someone leads.
    scene.configmaps().unlabel("colors").await;
    let (proxy, controller) = standby_via_proxy(&scene).await;

    proxy.freeze_open_connections().expect("freeze the watches");
    // An admin claims the companion: the same object (same uid), no longer
    // ours. The cache still holds it as it was.
    scene
        .configmaps()
        .api
        .patch(
            "colors-synced",
            &PatchParams::default(),
            &Patch::Merge(&json!({"metadata": {
                "labels": {MANAGED_BY_LABEL: null, "owner": "admin"},
                "ownerReferences": null,
            }})),
        )
        .await
        .expect("claim the companion");
    release_lease(&scene).await;

    let refused = log_or_cluster(
        &controller,
        "the controller's delete to be refused, or the claimed object deleted",
        |log| {
            log.lines().any(|line| {
                line.contains("could not prune copy") && line.contains("the cache was stale")
            })
        },
        async || scene.configmaps().get("colors-synced").await.is_none(),
    )
    .await;
    assert!(
        refused && scene.configmaps().get("colors-synced").await.is_some(),
        "the claimed object was deleted on what the cache said of it before the claim"
    );
    proxy.thaw_open_connections().expect("thaw");
}
