//! The key of Secret copies' checksums: one per install, never one a tenant
//! could choose, the same in every replica whatever happens to its Secret,
//! and not needed to remove copies that are no longer wanted.
//!
//! No assertion here prints a Secret's data or a key: keys are compared
//! through `SecretDigestKey`, whose Debug form is redacted.

use std::collections::BTreeMap;

use configmap_mirror::{
    contract::{CHECKSUM_ANNOTATION, MANAGED_BY_LABEL, MANAGER_NAME, MIRROR_OF_ANNOTATION},
    kind::{MirroredKind, secret::SecretDigestKey},
};
use k8s_openapi::{
    ByteString,
    api::core::v1::{ConfigMap, Namespace, Secret},
    apimachinery::pkg::apis::meta::v1::ObjectMeta,
};
use kube::{Api, ResourceExt};
use serde_json::json;
use testenv::wait_for;

use crate::common::{
    Apart, ControllerProcess, KEY_SECRET, LEASE_TIMINGS, Objects, PATIENCE, Runs, SOURCE_LABEL,
    Scene, TestKind, World,
};
use crate::secrets::{BOTH_KINDS, mk_secret};

/// A Secret at the key's name holding `key` in its `key` entry.
fn key_secret(name: &str, key: &[u8]) -> Secret {
    Secret {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([(
            "key".to_owned(),
            ByteString(key.to_vec()),
        )])),
        ..Secret::default()
    }
}

/// The key a Secret holds, if it is one.
fn key_in(secret: &Secret) -> Option<SecretDigestKey> {
    let bytes = secret.data.as_ref()?.get("key")?;
    SecretDigestKey::from_bytes(&bytes.0)
}

/// A merge patch setting the key's bytes.
fn key_patch(key: &[u8]) -> serde_json::Value {
    json!({"data": {"key": serde_json::to_value(ByteString(key.to_vec())).expect("base64")}})
}

/// The controller of `scene`'s namespace with Secrets on, not waiting for
/// it to be ready (it is not while its key is refused).
async fn start_unready(scene: &Scene<'_>, extra: &[&str]) -> ControllerProcess {
    let kubeconfig = scene.control_plane.kubeconfig_path().to_path_buf();
    let mut args = vec!["--namespace", scene.namespace.as_str(), BOTH_KINDS];
    args.extend_from_slice(extra);
    ControllerProcess::start_unready(scene.control_plane, &kubeconfig, &scene.namespace, &args)
        .await
}

/// Waits until `/readyz` is 503 and says `why`; returns what it says.
async fn unready_because(controller: &ControllerProcess, why: &str) -> String {
    wait_for(&format!("/readyz to say {why:?}"), PATIENCE, || async {
        let (status, text) = controller.get("/readyz").await.ok()?;
        (status == 503 && text.contains(why)).then_some(text)
    })
    .await
    .unwrap_or_else(|e| panic!("{e:#}\n{}", controller.log_text()))
}

async fn wait_ready(controller: &ControllerProcess) {
    wait_for("/readyz to be 200", PATIENCE, || async {
        (controller.get("/readyz").await.ok()?.0 == 200).then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{e:#}\n{}", controller.log_text()));
}

#[tokio::test]
async fn a_planted_key_that_looks_like_a_copy_or_a_mirror_is_refused_and_never_used() {
    let looks_like_a_copy = {
        let mut secret = key_secret(KEY_SECRET, &[0x11; 32]);
        secret.metadata.labels = Some(BTreeMap::from([(
            MANAGED_BY_LABEL.to_owned(),
            MANAGER_NAME.to_owned(),
        )]));
        secret
    };
    let looks_like_a_mirror = {
        let mut secret = key_secret(KEY_SECRET, &[0x22; 32]);
        secret.metadata.annotations = Some(BTreeMap::from([(
            MIRROR_OF_ANNOTATION.to_owned(),
            "tenant/configmap-mirror-digest-key".to_owned(),
        )]));
        secret
    };
    let cases = [
        (
            "key-copy",
            looks_like_a_copy,
            "carries the label app.kubernetes.io/managed-by=configmap-mirror",
        ),
        (
            "key-mirror",
            looks_like_a_mirror,
            "carries the annotation workshop.io/mirror-of",
        ),
        (
            "key-short",
            key_secret(KEY_SECRET, &[0x33; 31]),
            "holds no entry \"key\" of exactly 32 bytes",
        ),
    ];
    for (tag, planted, why) in cases {
        let scene = Scene::new(tag).await;
        let secrets = Objects::<Secret>::of(&scene);
        let planted = secrets.create(&planted).await;
        let controller = start_unready(&scene, &[]).await;
        secrets
            .create(&mk_secret("db", "Opaque", &[("password", "p")]))
            .await;

        let said = format!(
            "secrets: the digest key {}/{KEY_SECRET} is refused: it {why}",
            scene.namespace
        );
        unready_because(&controller, &said).await;
        assert!(
            controller.log_text().contains(why),
            "{tag}: the log says why\n{}",
            controller.log_text()
        );
        // The source was reconciled, and waits for a key.
        let waited = controller
            .metric_reaching(
                "controller_runtime_terminal_reconcile_errors_total",
                "",
                1.0,
            )
            .await;
        assert!(waited >= 1.0, "{tag}: the source's reconcile ran");
        assert_eq!(
            secrets.get("db-synced").await.map(|s| s.name_any()),
            None,
            "{tag}: a copy was written with a refused key"
        );
        let left = secrets.get(KEY_SECRET).await.expect("the refused key");
        assert_eq!(
            left.resource_version(),
            planted.resource_version(),
            "{tag}: the refused key's Secret was changed"
        );

        // Deleted by a person: a key is made, and Secrets are mirrored.
        secrets.delete(KEY_SECRET).await;
        secrets.companion_in_sync("db").await;
        let made = secrets.get(KEY_SECRET).await.expect("a new key");
        assert_ne!(made.uid(), planted.uid(), "{tag}");
        assert!(
            !made.labels().contains_key(MANAGED_BY_LABEL),
            "{tag}: a key is no copy"
        );
        wait_ready(&controller).await;
    }
}

/// Replicas `replica-a` and `replica-b` with Secrets on; (leader, standby).
async fn two_replicas(scene: &Scene<'_>) -> (ControllerProcess, ControllerProcess) {
    scene
        .two_replicas(async |identity| {
            let mut args = vec![BOTH_KINDS];
            args.extend(scene.leader_election_args(identity, LEASE_TIMINGS));
            scene.configmaps().start_controller(&args).await
        })
        .await
}

/// The resyncs' verdicts on Secret sources by `controller` so far:
/// (found in sync, queued).
async fn resync_verdicts(controller: &ControllerProcess) -> (f64, f64) {
    let series = "configmap_mirror_resync_objects_total";
    (
        controller
            .metric(series, "loop=\"sync\",result=\"in_sync\"")
            .await,
        controller
            .metric(series, "loop=\"sync\",result=\"queued\"")
            .await,
    )
}

/// Stops `leader`; waits until `standby` leads and has compared every
/// source, and checks that it found each copy in sync: it uses the same
/// key. Its first comparison as leader follows no change, so a copy it
/// queued would be one it was about to write again.
async fn hand_over(leader: ControllerProcess, standby: &ControllerProcess, sources: f64) {
    let (in_sync_before, queued_before) = resync_verdicts(standby).await;
    assert!(leader.stop().success());
    wait_for("the standby to lead", PATIENCE, || async {
        (standby.metric("leader_election_master_status", "").await == 1.0).then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{e:#}\n{}", standby.log_text()));
    let (in_sync, queued) = wait_for("the new leader's resync", PATIENCE, || async {
        let (in_sync, queued) = resync_verdicts(standby).await;
        (in_sync + queued >= in_sync_before + queued_before + sources).then_some((in_sync, queued))
    })
    .await
    .unwrap_or_else(|e| panic!("{e:#}\n{}", standby.log_text()));
    assert_eq!(
        (in_sync - in_sync_before, queued - queued_before),
        (sources, 0.0),
        "the new leader found every copy in sync"
    );
    assert_eq!(standby.writes().await, 0.0, "the new leader rewrote copies");
}

#[tokio::test]
async fn a_deleted_key_is_made_again_once_and_a_leader_handover_rewrites_no_copy() {
    let scene = Scene::new("key-deleted").await;
    let secrets = Objects::<Secret>::of(&scene);
    let (leader, standby) = two_replicas(&scene).await;
    secrets
        .create(&mk_secret("db", "Opaque", &[("password", "p")]))
        .await;
    secrets.companion_in_sync("db").await;
    let first = secrets.get(KEY_SECRET).await.expect("the key");

    secrets.delete(KEY_SECRET).await;
    let made = wait_for("a new key", PATIENCE, || async {
        let key = secrets.get(KEY_SECRET).await?;
        (key.uid() != first.uid()).then_some(key)
    })
    .await
    .unwrap_or_else(|e| panic!("{e:#}\n{}", leader.log_text()));
    let copy = secrets.companion_in_sync("db").await;
    let created = |c: &ControllerProcess| c.log_text().matches("digest key created").count();
    assert_eq!(
        created(&leader) + created(&standby),
        2,
        "one key made at the start and one after the deletion, by either replica"
    );

    hand_over(leader, &standby, 1.0).await;
    let after = secrets.get("db-synced").await.expect("the copy");
    assert_eq!(after.resource_version(), copy.resource_version());
    let key = secrets.get(KEY_SECRET).await.expect("the key");
    assert_eq!(key.uid(), made.uid(), "no other key was made");
}

#[tokio::test]
async fn an_edited_key_is_used_by_every_replica_and_each_copy_is_rewritten_once() {
    let scene = Scene::new("key-edited").await;
    let secrets = Objects::<Secret>::of(&scene);
    let (leader, standby) = two_replicas(&scene).await;
    for name in ["db", "api"] {
        secrets
            .create(&mk_secret(name, "Opaque", &[("password", name)]))
            .await;
        secrets.companion_in_sync(name).await;
    }
    let before = secrets.digest_key().await;

    secrets.patch(KEY_SECRET, key_patch(&[0x5a; 32])).await;
    let edited = SecretDigestKey::from_bytes(&[0x5a; 32]).expect("a key");
    assert_ne!(before, edited);
    let mut copies = Vec::new();
    for name in ["db", "api"] {
        // Reads the key from its Secret: in sync under the edited key.
        copies.push(secrets.companion_in_sync(name).await);
    }
    assert_eq!(
        leader.writes_reaching(4.0).await,
        4.0,
        "two creates, then one write of each copy under the new key"
    );

    hand_over(leader, &standby, 2.0).await;
    for copy in copies {
        let now = secrets.get(&copy.name_any()).await.expect("the copy");
        assert_eq!(now.resource_version(), copy.resource_version());
        assert_eq!(
            now.annotations().get(CHECKSUM_ANNOTATION),
            copy.annotations().get(CHECKSUM_ANNOTATION)
        );
    }
}

mod installs;
mod refused_key;
