//! Secrets, mirrored once `--kinds` names them: the ConfigMap contract
//! (companion, owner, healing, cleanup), typed Secrets, the keyed digest,
//! the refused service-account token, and no value leaving the Secret.

use std::collections::BTreeMap;

use configmap_mirror::{
    contract::{CHECKSUM_ANNOTATION, MANAGED_BY_LABEL, MANAGER_NAME},
    kind::{MirroredKind, SourceId},
};
use k8s_openapi::{
    ByteString,
    api::core::v1::{ConfigMap, Secret},
};
use kube::{Api, ResourceExt, api::ListParams};
use serde_json::json;
use sha2::{Digest, Sha256};
use testenv::wait_for;

use crate::common::{self, Objects, PATIENCE, SOURCE_LABEL, Scene, TestKind, mk_source};

pub const BOTH_KINDS: &str = "--kinds=configmaps,secrets";

pub fn mk_secret(name: &str, type_: &str, data: &[(&str, &str)]) -> Secret {
    let mut secret = Secret::with_data(name, data, true);
    secret.type_ = Some(type_.into());
    secret
}

const TLS: &str = "kubernetes.io/tls";

fn typed_sources() -> Vec<Secret> {
    vec![
        mk_secret("cert", TLS, &[("tls.crt", "crt-1"), ("tls.key", "key-1")]),
        mk_secret(
            "pull",
            "kubernetes.io/dockerconfigjson",
            &[(
                ".dockerconfigjson",
                r#"{"auths":{"local":{"auth":"dTpw"}}}"#,
            )],
        ),
        mk_secret(
            "login",
            "kubernetes.io/basic-auth",
            &[("username", "u"), ("password", "p")],
        ),
        mk_secret("empty", "Opaque", &[]),
    ]
}

#[tokio::test]
async fn typed_secrets_are_copied_kept_and_removed_like_configmaps() {
    let scene = Scene::new("secrets").await;
    let secrets = Objects::<Secret>::of(&scene);
    let controller = secrets.start_controller(&[]).await;
    for source in typed_sources() {
        secrets.create(&source).await;
    }
    for name in ["cert", "pull", "login", "empty"] {
        secrets.companion_in_sync(name).await;
    }

    // A renewed certificate: the data replaced, as cert-manager does.
    secrets
        .patch(
            "cert",
            json!({"data": {"tls.crt": b64("crt-2"), "tls.key": b64("key-2")}}),
        )
        .await;
    let renewed = secrets.companion_in_sync("cert").await;
    assert_eq!(renewed.data.unwrap_or_default()["tls.crt"].0, b"crt-2");

    // Healing: a deleted copy comes back, an edited one is restored.
    secrets.delete("login-synced").await;
    secrets.companion_in_sync("login").await;
    secrets
        .patch("pull-synced", json!({"data": {"extra": b64("x")}}))
        .await;
    secrets.companion_in_sync("pull").await;

    // Unlabeled: its copy goes. Deleted: its copy goes with it.
    secrets
        .patch(
            "empty",
            json!({"metadata": {"labels": {SOURCE_LABEL: null}}}),
        )
        .await;
    secrets.wait_gone("empty-synced").await;
    secrets.delete("cert").await;
    secrets.wait_gone("cert-synced").await;
    assert_eq!(
        controller
            .metric("configmap_mirror_managed_sources", "kind=\"Secret\"")
            .await,
        2.0
    );
    assert_eq!(
        controller
            .metric("controller_runtime_reconcile_errors_total", "")
            .await,
        0.0
    );
}

#[tokio::test]
async fn a_copy_of_another_type_is_recreated_with_the_source_s_type() {
    let scene = Scene::new("secret-type").await;
    let secrets = Objects::<Secret>::of(&scene);
    let _controller = secrets.start_controller(&[]).await;
    let key = secrets.digest_key().await;
    let data = [("tls.crt", "c"), ("tls.key", "k")];
    let mut site = mk_secret("site", TLS, &data);
    site.metadata.labels = None;
    let site = secrets.create(&site).await;
    // An untouched copy of this source whose owner reference was removed
    // (our label, the checksum of what it holds as a copy of this source,
    // no owner): adoptable, but typed Opaque, which the API server will
    // not change in place.
    let mut orphan = mk_secret("site-synced", "Opaque", &data);
    orphan.metadata.labels = Some(BTreeMap::from([(
        MANAGED_BY_LABEL.into(),
        MANAGER_NAME.into(),
    )]));
    let hash = orphan.content_hash();
    let checksum = Secret::checksum(&hash, &SourceId::of(&site.metadata), &key).into_owned();
    orphan.metadata.annotations = Some(BTreeMap::from([(CHECKSUM_ANNOTATION.into(), checksum)]));
    let orphan = secrets.create(&orphan).await;

    secrets
        .patch(
            "site",
            json!({"metadata": {"labels": {SOURCE_LABEL: "true"}}}),
        )
        .await;
    let copy = secrets.companion_in_sync("site").await;
    assert_eq!(copy.type_.as_deref(), Some(TLS));
    assert_ne!(
        copy.uid(),
        orphan.uid(),
        "recreated: the type cannot change"
    );
    scene.wait_event("site", "CompanionRecreated").await;
}

#[tokio::test]
async fn a_service_account_token_is_never_a_source() {
    let scene = Scene::new("secret-token").await;
    let secrets = Objects::<Secret>::of(&scene);
    let controller = secrets.start_controller(&[]).await;
    let mut token = mk_secret("token", "kubernetes.io/service-account-token", &[]);
    token.metadata.annotations = Some(BTreeMap::from([(
        "kubernetes.io/service-account.name".into(),
        "default".into(),
    )]));
    secrets.create(&token).await;
    let warning = scene.wait_event("token", "SourceNotCopyable").await;
    assert!(
        warning
            .note
            .unwrap_or_default()
            .contains("service-account token"),
        "the Warning says why"
    );
    // Reconciled, refused and never retried: still no copy, one Warning.
    controller
        .metric_reaching(
            "controller_runtime_terminal_reconcile_errors_total",
            "",
            1.0,
        )
        .await;
    assert_eq!(secrets.get("token-synced").await, None);
    assert_eq!(scene.events("token", "SourceNotCopyable").await.len(), 1);
}

#[tokio::test]
async fn a_configmap_and_a_secret_of_one_name_are_independent() {
    let scene = Scene::new("secret-twins").await;
    let secrets = Objects::<Secret>::of(&scene);
    let _controller = secrets.start_controller(&[]).await;
    scene
        .configmaps()
        .create(&mk_source("twin", &[("a", "1")]))
        .await;
    secrets
        .create(&mk_secret("twin", "Opaque", &[("a", "2")]))
        .await;
    scene.configmaps().companion_in_sync("twin").await;
    let secret_copy = secrets.companion_in_sync("twin").await;

    scene.configmaps().delete("twin-synced").await;
    scene.configmaps().companion_in_sync("twin").await;
    let untouched = secrets.get("twin-synced").await.expect("the Secret copy");
    assert_eq!(untouched.resource_version(), secret_copy.resource_version());

    secrets
        .patch(
            "twin",
            json!({"metadata": {"labels": {SOURCE_LABEL: null}}}),
        )
        .await;
    secrets.wait_gone("twin-synced").await;
    let configmaps: Api<ConfigMap> = scene.configmaps().api;
    assert!(configmaps.get_opt("twin-synced").await.unwrap().is_some());
}

#[tokio::test]
async fn two_installs_record_different_digests_of_one_value() {
    let (first, second) = (Scene::new("digest-a").await, Scene::new("digest-b").await);
    let mut digests = Vec::new();
    for scene in [&first, &second] {
        let secrets = Objects::<Secret>::of(scene);
        let _controller = secrets.start_controller(&[]).await;
        secrets
            .create(&mk_secret("password", "Opaque", &[("password", "hunter2")]))
            .await;
        let copy = secrets.companion_in_sync("password").await;
        digests.push(copy.annotations()[CHECKSUM_ANNOTATION].clone());
    }
    assert_ne!(digests[0], digests[1]);
    let plain = hex::encode(Sha256::digest(b"hunter2"));
    for digest in &digests {
        assert!(!digest.contains(&plain), "{digest}");
    }
}

#[tokio::test]
async fn two_secrets_of_one_value_have_different_checksums() {
    let scene = Scene::new("digest-twins").await;
    let secrets = Objects::<Secret>::of(&scene);
    let _controller = secrets.start_controller(&[]).await;
    let mut checksums = Vec::new();
    for name in ["one", "two"] {
        secrets
            .create(&mk_secret(name, "Opaque", &[("password", "hunter2")]))
            .await;
        let copy = secrets.companion_in_sync(name).await;
        checksums.push(copy.annotations()[CHECKSUM_ANNOTATION].clone());
    }
    assert_ne!(checksums[0], checksums[1]);
}

#[tokio::test]
async fn another_copy_s_checksum_on_a_tenant_s_copy_tells_nothing_of_its_value() {
    let scene = Scene::new("digest-oracle").await;
    let secrets = Objects::<Secret>::of(&scene);
    let controller = secrets.start_controller(&[]).await;
    secrets
        .create(&mk_secret("victim", "Opaque", &[("password", "hunter2")]))
        .await;
    secrets
        .create(&mk_secret("tenant", "Opaque", &[("password", "mine")]))
        .await;
    let victims = secrets.companion_in_sync("victim").await;
    let victims_checksum = victims.annotations()[CHECKSUM_ANNOTATION].clone();
    secrets.companion_in_sync("tenant").await;

    // The tenant puts the victim's checksum and a guess of its value onto
    // their own copy: the right guess, then a wrong one.
    for (turn, guess) in ["hunter2", "a wrong guess"].into_iter().enumerate() {
        secrets
            .patch(
                "tenant-synced",
                json!({
                    "metadata": {"annotations": {CHECKSUM_ANNOTATION: victims_checksum}},
                    "data": {"password": b64(guess)},
                }),
            )
            .await;
        secrets.companion_in_sync("tenant").await;
        // Each write of the copy is logged with why it was made.
        wait_for("the write to be logged", PATIENCE, || async {
            (controller.log_text().matches("tenant-synced (").count() > turn).then_some(())
        })
        .await
        .unwrap_or_else(|e| panic!("{e:#}\n{}", controller.log_text()));
    }
    let log = controller.log_text();
    let told = |what: &str| log.matches(&format!("tenant-synced ({what})")).count();
    assert_eq!(
        (told("drifted"), told("source changed")),
        (2, 0),
        "the right guess was treated apart from the wrong one"
    );
}

#[tokio::test]
async fn no_secret_value_leaves_the_secret() {
    let scene = Scene::new("secret-leak").await;
    let secrets = Objects::<Secret>::of(&scene);
    let canary = format!("canary-{}", scene.namespace);
    let controller = scene
        .start_controller_with_env(&[BOTH_KINDS], &[("RUST_LOG", "debug")])
        .await;
    let with_canary = |name: &str, which: &str| {
        mk_secret(name, "Opaque", &[("value", &format!("{canary}-{which}"))])
    };
    // Created, changed, healed, refused by name, and deleted: every path
    // that logs, counts or raises an Event about a Secret.
    secrets.create(&with_canary("source", "a")).await;
    secrets.companion_in_sync("source").await;
    secrets
        .patch(
            "source",
            json!({"data": {"value": b64(&format!("{canary}-b"))}}),
        )
        .await;
    secrets.companion_in_sync("source").await;
    secrets
        .patch(
            "source-synced",
            json!({"data": {"value": b64(&format!("{canary}-c"))}}),
        )
        .await;
    secrets.companion_in_sync("source").await;
    let mut foreign = with_canary("taken-synced", "d");
    foreign.metadata.labels = None;
    secrets.create(&foreign).await;
    secrets.create(&with_canary("taken", "e")).await;
    scene.wait_event("taken", "CompanionNameTaken").await;
    secrets.delete("source").await;
    secrets.wait_gone("source-synced").await;

    let key = secrets.digest_key().await;
    let mut told = controller.log_text();
    told.push_str(&controller.get("/metrics").await.expect("metrics").1);
    told.push_str(&controller.get("/readyz").await.expect("readyz").1);
    let events: Api<k8s_openapi::api::events::v1::Event> =
        Api::namespaced(scene.client.clone(), &scene.namespace);
    for event in events.list(&ListParams::default()).await.expect("events") {
        told.push_str(&serde_json::to_string(&event).expect("an Event as JSON"));
    }
    assert!(told.contains("CompanionNameTaken"), "the sample is real");
    for which in ["a", "b", "c", "d", "e"] {
        let value = format!("{canary}-{which}");
        // As text, base64, hex, and as Debug prints bytes.
        let debug = format!("{:?}", value.as_bytes());
        for (form, text) in [value.clone(), b64(&value), hex::encode(&value), debug]
            .iter()
            .enumerate()
        {
            // Names the value and the form, not the value itself.
            assert!(
                !told.contains(text),
                "Secret value {which} was told, form {form}"
            );
        }
    }
    let key_forms = [
        b64_bytes(key.bytes()),
        hex::encode(key.bytes()),
        format!("{:?}", key.bytes()),
    ];
    for form in key_forms {
        assert!(!told.contains(&form), "the digest key was told");
    }
}

/// `text` as a Secret's data holds it.
pub(crate) fn b64(text: &str) -> String {
    b64_bytes(text.as_bytes())
}

fn b64_bytes(bytes: &[u8]) -> String {
    serde_json::to_value(ByteString(bytes.to_vec()))
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .expect("base64 of bytes")
}

#[tokio::test]
async fn without_secret_rights_readyz_says_so_and_configmaps_are_still_mirrored() {
    let scene = Scene::new("secret-rights").await;
    let verbs = ["get", "list", "watch", "create", "update", "delete"];
    common::kubectl_apply(&scene, &common::service_account(&scene.namespace, "mirror"));
    common::kubectl_apply(
        &scene,
        &common::role_for(&scene.namespace, "mirror", "configmaps-only", &verbs),
    );
    let kubeconfig = scene.token_kubeconfig("mirror").await;
    let args = ["--namespace", scene.namespace.as_str(), BOTH_KINDS];
    let controller = common::ControllerProcess::start_unready(
        scene.control_plane,
        &kubeconfig,
        &scene.namespace,
        &args,
    )
    .await;
    let reason = wait_for("/readyz to name the Secret problem", PATIENCE, || async {
        let (status, text) = controller.get("/readyz").await.ok()?;
        (status == 503 && text.contains("secrets: cannot read the digest key")).then_some(text)
    })
    .await
    .unwrap_or_else(|e| panic!("{e:#}\n{}", controller.log_text()));
    assert!(reason.contains("forbidden"), "{reason}");
    assert!(
        controller
            .log_text()
            .contains("Secrets are not mirrored until this is fixed"),
        "{}",
        controller.log_text()
    );
    scene
        .configmaps()
        .source_in_sync("still", &[("a", "1")])
        .await;

    // Granted: Secrets are mirrored, without a restart.
    common::kubectl_apply(
        &scene,
        &common::secrets_role(&scene.namespace, "mirror", "secrets"),
    );
    let secrets = Objects::<Secret>::of(&scene);
    secrets
        .create(&mk_secret("late", "Opaque", &[("a", "1")]))
        .await;
    secrets.companion_in_sync("late").await;
    let (status, text) = controller.get("/readyz").await.expect("readyz");
    assert_eq!(status, 200, "{text}");
}
