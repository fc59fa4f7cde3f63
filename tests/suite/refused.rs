//! What is never a source, never carried onto a copy, and never told:
//! Secrets and ConfigMaps that other programs trust (bootstrap tokens, Helm
//! release records, configured types), the keys by which tools claim or
//! prune objects, and the messages of admission policies about Secrets.

use std::collections::BTreeMap;

use configmap_mirror::contract::{CARRIED_LABELS_ANNOTATION, MANAGED_BY_LABEL, MANAGER_NAME};
use k8s_openapi::api::{
    core::v1::{ConfigMap, Secret},
    events::v1::Event,
};
use kube::{Api, ResourceExt, api::PostParams};
use serde_json::{Value, json};
use testenv::wait_for;

use crate::common::{
    self, ControllerProcess, Objects, PATIENCE, Scene, TestKind, mk_source, with_json,
};
use crate::secrets::{BOTH_KINDS, mk_secret};

const TERMINAL: &str = "controller_runtime_terminal_reconcile_errors_total";
const COPY_LABELS: &str = "workshop.io/copy-labels";
const COPY_ANNOTATIONS: &str = "workshop.io/copy-annotations";

crate::for_each_kind!(
    a_helm_release_record_is_never_a_source,
    a_helm_installed_source_keeps_copies_the_controller_manages_and_prunes,
    gitops_keys_are_never_carried_and_the_source_is_told_once,
    a_copy_detached_by_an_earlier_release_is_taken_back_and_pruned,
);

/// How many times the Events listed were told: the Recorder folds repeats
/// of one Event into a series.
fn times(events: &[Event]) -> i32 {
    events
        .iter()
        .map(|e| e.series.as_ref().map_or(1, |s| s.count))
        .sum()
}

/// Waits until `object` has a `SourceNotCopyable` Warning, and returns its
/// note.
async fn refused_as_a_source(scene: &Scene<'_>, object: &str) -> String {
    let warning = scene.wait_event(object, "SourceNotCopyable").await;
    warning.note.unwrap_or_default()
}

/// A refused source is reconciled once, refused, and never retried: by then
/// it has no copy, and one Warning.
async fn never_copied<K: TestKind>(
    objects: &Objects<'_, K>,
    controller: &ControllerProcess,
    names: &[&str],
) {
    let refusals = names.len() as f64;
    controller.metric_reaching(TERMINAL, "", refusals).await;
    for name in names {
        let companion = format!("{name}-synced");
        assert!(
            objects.get(&companion).await.is_none(),
            "{companion} exists"
        );
        let warnings = objects.scene.events(name, "SourceNotCopyable").await;
        assert_eq!(
            times(&warnings),
            1,
            "{name}: one Warning\n{warnings:#?}\n{}",
            controller.log_text()
        );
    }
}

async fn a_helm_release_record_is_never_a_source<K: TestKind>() {
    let scene = Scene::new("helm-record").await;
    let objects = Objects::<K>::of(&scene);
    let controller = objects.start_controller(&[]).await;
    let release = [("release", "H4sIAAAAAAAA")];
    // As Helm's storage drivers name a record, and as they find one.
    objects
        .create(&K::with_data("sh.helm.release.v1.web.v1", &release, true))
        .await;
    let labels =
        json!({"metadata": {"labels": {"owner": "helm", "name": "web", "status": "deployed"}}});
    objects
        .create(&with_json(
            K::with_data("web-record", &release, true),
            labels,
        ))
        .await;
    // An ordinary source alongside is copied as always.
    objects.source("web-settings", &[("a", "1")], &[]).await;
    objects.companion_in_sync("web-settings").await;

    for name in ["sh.helm.release.v1.web.v1", "web-record"] {
        let note = refused_as_a_source(&scene, name).await;
        assert!(note.contains("Helm release record"), "{name}: {note}");
    }
    never_copied(
        &objects,
        &controller,
        &["sh.helm.release.v1.web.v1", "web-record"],
    )
    .await;
}

#[tokio::test]
async fn a_helm_2_release_record_is_never_a_source() {
    let scene = Scene::new("tiller-record").await;
    let objects = Objects::<ConfigMap>::of(&scene);
    let controller = objects.start_controller(&[]).await;
    // As Tiller's ConfigMap driver labels a record.
    let labels =
        json!({"metadata": {"labels": {"OWNER": "TILLER", "NAME": "web", "STATUS": "DEPLOYED"}}});
    objects
        .create(&with_json(
            ConfigMap::with_data("web.v1", &[("release", "H4sI")], true),
            labels,
        ))
        .await;
    objects.source("web-settings", &[("a", "1")], &[]).await;
    objects.companion_in_sync("web-settings").await;
    let note = refused_as_a_source(&scene, "web.v1").await;
    assert!(note.contains("OWNER=TILLER"), "{note}");
    assert!(
        controller.log_text().contains("OWNER=TILLER"),
        "the log says why"
    );
    never_copied(&objects, &controller, &["web.v1"]).await;
}

#[tokio::test]
async fn a_cli_utils_inventory_id_is_never_carried() {
    let scene = Scene::new("inventory-id").await;
    let objects = Objects::<ConfigMap>::of(&scene);
    let _controller = objects.start_controller(&[]).await;
    let inventory = json!({"metadata": {
        "labels": {"cli-utils.sigs.k8s.io/inventory-id": "apps", "team": "a"},
        "annotations": {
            COPY_LABELS: "team,cli-utils.sigs.k8s.io/inventory-id",
            COPY_ANNOTATIONS: "cli-utils.sigs.k8s.io/inventory-id,example.com/owner",
            "cli-utils.sigs.k8s.io/inventory-id": "apps",
            "example.com/owner": "ops",
        },
    }});
    objects
        .create(&with_json(
            ConfigMap::with_data("web", &[("a", "1")], true),
            inventory,
        ))
        .await;
    let warning = scene.wait_event("web", "CopyKeyRefused").await;
    let note = warning.note.unwrap_or_default();
    assert!(
        note.contains("cli-utils.sigs.k8s.io/inventory-id"),
        "{note}"
    );
    let companion = objects.companion_in_sync("web").await;
    assert_eq!(
        companion
            .annotations()
            .get("example.com/owner")
            .map(String::as_str),
        Some("ops")
    );
    assert_eq!(
        companion.labels().get("team").map(String::as_str),
        Some("a")
    );
    assert!(
        !companion
            .labels()
            .contains_key("cli-utils.sigs.k8s.io/inventory-id")
            && !companion
                .annotations()
                .contains_key("cli-utils.sigs.k8s.io/inventory-id"),
        "{:?} {:?}",
        companion.labels(),
        companion.annotations()
    );
}

#[tokio::test]
async fn a_bootstrap_token_is_never_a_source_and_its_earlier_copy_is_removed() {
    let scene = Scene::new("bootstrap-token").await;
    let objects = Objects::<Secret>::of(&scene);
    let data = [("token-id", "abcdef"), ("token-secret", "0123456789abcdef")];
    let token = objects
        .create(&mk_secret(
            "bootstrap-token-abcdef",
            "bootstrap.kubernetes.io/token",
            &data,
        ))
        .await;
    // The companion an earlier release wrote for it.
    let earlier = with_json(
        Secret::with_data("bootstrap-token-abcdef-synced", &data, false),
        json!({
            "type": "bootstrap.kubernetes.io/token",
            "metadata": {
                "labels": {MANAGED_BY_LABEL: MANAGER_NAME},
                "annotations": {"workshop.io/source-selector": "workshop.io/managed=true"},
                "ownerReferences": [owner_reference(&token)],
            },
        }),
    );
    objects.create(&earlier).await;

    let controller = objects.start_controller(&[]).await;
    let note = refused_as_a_source(&scene, "bootstrap-token-abcdef").await;
    assert!(
        note.contains("bootstrap.kubernetes.io/token"),
        "the Warning names the type: {note}"
    );
    objects.wait_gone("bootstrap-token-abcdef-synced").await;
    never_copied(&objects, &controller, &["bootstrap-token-abcdef"]).await;
}

#[tokio::test]
async fn a_helm_release_secret_is_never_a_source() {
    let scene = Scene::new("helm-secret").await;
    let objects = Objects::<Secret>::of(&scene);
    let controller = objects.start_controller(&[]).await;
    objects
        .create(&mk_secret(
            "web",
            "helm.sh/release.v1",
            &[("release", "H4sI")],
        ))
        .await;
    let note = refused_as_a_source(&scene, "web").await;
    assert!(note.contains("helm.sh/release.v1"), "{note}");
    never_copied(&objects, &controller, &["web"]).await;
}

#[tokio::test]
async fn a_type_listed_in_refused_secret_types_is_never_a_source() {
    let scene = Scene::new("refused-type").await;
    let objects = Objects::<Secret>::of(&scene);
    let controller = objects
        .start_controller(&["--refused-secret-types=example.com/kubeconfig"])
        .await;
    objects
        .create(&mk_secret(
            "remote",
            "example.com/kubeconfig",
            &[("config", "c")],
        ))
        .await;
    objects
        .create(&mk_secret(
            "login",
            "kubernetes.io/basic-auth",
            &[("password", "p")],
        ))
        .await;
    objects.companion_in_sync("login").await;
    let note = refused_as_a_source(&scene, "remote").await;
    assert!(
        note.contains("example.com/kubeconfig") && note.contains("--refused-secret-types"),
        "{note}"
    );
    never_copied(&objects, &controller, &["remote"]).await;
}

/// The controller reference a companion carries to `source`.
fn owner_reference<K: TestKind>(source: &K) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": K::kind(&()),
        "name": source.name_any(),
        "uid": source.uid().expect("a stored source"),
        "controller": true,
    })
}

fn labels_of<K: TestKind>(object: &K) -> BTreeMap<String, String> {
    object.labels().clone()
}

async fn a_helm_installed_source_keeps_copies_the_controller_manages_and_prunes<K: TestKind>() {
    let scene = Scene::new("helm-installed").await;
    let objects = Objects::<K>::of(&scene);
    let _controller = objects.start_controller(&[]).await;
    let helm_labels = json!({"metadata": {
        "labels": {
            "app.kubernetes.io/managed-by": "Helm",
            "app.kubernetes.io/instance": "web",
            "app.kubernetes.io/name": "web",
        },
        "annotations": {COPY_LABELS: "app.kubernetes.io/*"},
    }});
    objects
        .create(&with_json(
            K::with_data("web", &[("a", "1")], true),
            helm_labels,
        ))
        .await;

    let companion = objects.companion_in_sync("web").await;
    let labels = labels_of(&companion);
    assert_eq!(
        labels.get("app.kubernetes.io/name").map(String::as_str),
        Some("web")
    );
    assert!(
        !labels.contains_key("app.kubernetes.io/instance"),
        "{labels:?}"
    );
    let warning = scene.wait_event("web", "CopyKeyRefused").await;
    let note = warning.note.unwrap_or_default();
    assert!(
        note.contains("app.kubernetes.io/managed-by")
            && note.contains("app.kubernetes.io/instance"),
        "{note}"
    );

    // Still the controller's: followed, then pruned when the source goes.
    objects.set_data("web", &[("a", Some("2"))]).await;
    objects.companion_in_sync("web").await;
    objects.unlabel("web").await;
    objects.wait_gone("web-synced").await;
    assert_eq!(times(&scene.events("web", "CopyKeyRefused").await), 1);
}

async fn gitops_keys_are_never_carried_and_the_source_is_told_once<K: TestKind>() {
    let scene = Scene::new("gitops-keys").await;
    let objects = Objects::<K>::of(&scene);
    let controller = objects.start_controller(&[]).await;
    let tracked = json!({"metadata": {
        "labels": {"kustomize.toolkit.fluxcd.io/name": "apps", "team": "a"},
        "annotations": {
            COPY_LABELS: "team,kustomize.toolkit.fluxcd.io/*",
            COPY_ANNOTATIONS: "argocd.argoproj.io/*,example.com/*",
            "argocd.argoproj.io/tracking-id": "apps:/ConfigMap:ns/web",
            "argocd.argoproj.io/sync-options": "Prune=true",
            "example.com/owner": "ops",
        },
    }});
    objects
        .create(&with_json(
            K::with_data("web", &[("a", "1")], true),
            tracked,
        ))
        .await;
    let carried = |companion: &K| {
        let (labels, annotations) = (companion.labels(), companion.annotations());
        labels.get("team").map(String::as_str) == Some("a")
            && annotations.get("example.com/owner").map(String::as_str) == Some("ops")
    };
    wait_for("the allowed keys carried", PATIENCE, || async {
        objects.get("web-synced").await.filter(carried).map(drop)
    })
    .await
    .unwrap_or_else(|e| panic!("{e:#}"));
    let warning = scene.wait_event("web", "CopyKeyRefused").await;
    let note = warning.note.unwrap_or_default();
    for key in [
        "kustomize.toolkit.fluxcd.io/name",
        "argocd.argoproj.io/sync-options",
        "argocd.argoproj.io/tracking-id",
    ] {
        assert!(note.contains(key), "the Warning names {key}: {note}");
    }

    // Reconciled again (the source changed): still carried without them,
    // and not told again.
    objects.set_data("web", &[("a", Some("2"))]).await;
    let companion = objects.companion_in_sync("web").await;
    let keys: Vec<&String> = companion
        .labels()
        .keys()
        .chain(companion.annotations().keys())
        .collect();
    assert!(
        !keys
            .iter()
            .any(|k| k.starts_with("argocd.") || k.starts_with("kustomize.toolkit.")),
        "{keys:?}"
    );
    assert_eq!(times(&scene.events("web", "CopyKeyRefused").await), 1);
    assert_eq!(controller.log_text().matches("copy_key_refused").count(), 1);
}

async fn a_copy_detached_by_an_earlier_release_is_taken_back_and_pruned<K: TestKind>() {
    let scene = Scene::new("detached").await;
    let objects = Objects::<K>::of(&scene);
    let helm_labels = json!({"metadata": {
        "labels": {"app.kubernetes.io/managed-by": "Helm", "app.kubernetes.io/name": "web"},
        "annotations": {COPY_LABELS: "app.kubernetes.io/*"},
    }});
    let source = objects
        .create(&with_json(
            K::with_data("web", &[("a", "1")], true),
            helm_labels,
        ))
        .await;
    // As an earlier release wrote it: the source's managed-by carried over
    // the controller's, so that the copies' watch never saw it again.
    let detached = with_json(
        K::with_data("web-synced", &[("a", "1")], false),
        json!({"metadata": {
            "labels": {"app.kubernetes.io/managed-by": "Helm", "app.kubernetes.io/name": "web"},
            "annotations": {
                CARRIED_LABELS_ANNOTATION: "app.kubernetes.io/managed-by,app.kubernetes.io/name",
                "workshop.io/source-selector": "workshop.io/managed=true",
            },
            "ownerReferences": [owner_reference(&source)],
        }}),
    );
    objects.create(&detached).await;

    let _controller = objects.start_controller(&[]).await;
    let companion = objects.companion_in_sync("web").await;
    assert_eq!(
        companion
            .annotations()
            .get(CARRIED_LABELS_ANNOTATION)
            .map(String::as_str),
        Some("app.kubernetes.io/name")
    );
    objects.unlabel("web").await;
    objects.wait_gone("web-synced").await;
}

/// Refuses every copy (`*-synced`) of `resources` in `namespace`, saying
/// `message` (see [`common::refusing_policy`]).
fn refusing_copies(name: &str, namespace: &str, resources: &str, message: &str) -> String {
    common::refusing_policy(
        name,
        namespace,
        resources,
        "!object.metadata.name.endsWith('-synced')",
        message,
    )
}

/// The Warning about a refused copy of `source`, whichever the status.
async fn copy_refusal(scene: &Scene<'_>, source: &str) -> String {
    let event = wait_for(&format!("a refused copy of {source}"), PATIENCE, || async {
        let mut events = scene.events(source, "CompanionRejected").await;
        events.extend(scene.events(source, "CompanionForbidden").await);
        events.into_iter().next()
    })
    .await
    .unwrap_or_else(|e| panic!("{e:#}"));
    event.note.unwrap_or_default()
}

#[tokio::test]
async fn a_policy_refusing_a_secret_copy_is_named_without_the_secret_s_data() {
    let scene = Scene::new("vap-secret").await;
    let policy = format!("no-copies-{}", scene.namespace);
    let manifest = refusing_copies(
        &policy,
        &scene.namespace,
        "secrets",
        r#""'no copies; this one holds ' + string(object.data['password'])""#,
    );
    common::kubectl_apply(&scene, &manifest);
    let secrets: Api<Secret> = Api::namespaced(scene.client.clone(), &scene.namespace);
    let mut probe = mk_secret("probe-synced", "Opaque", &[("password", "probe")]);
    probe.metadata.labels = None;
    common::refusal_enforced(&secrets, &probe).await;

    let controller = scene.configmaps().start_controller(&[BOTH_KINDS]).await;
    let canary = format!("canary-{}", scene.namespace);
    secrets
        .create(
            &PostParams::default(),
            &mk_secret("db", "Opaque", &[("password", &canary)]),
        )
        .await
        .expect("create the source");
    let note = copy_refusal(&scene, "db").await;
    let log = controller.log_text();
    assert!(
        note.contains(&policy),
        "the Warning names the policy: {note}"
    );
    assert!(log.contains(&policy), "the log names the policy");
    for (what, told) in [("the Warning", &note), ("the log", &log)] {
        for (form, text) in [canary.clone(), crate::secrets::b64(&canary)]
            .iter()
            .enumerate()
        {
            // Names the form, never the value.
            assert!(
                !told.contains(text),
                "{what} holds the Secret's data, form {form}"
            );
        }
    }
    common::delete_policy(&scene, &policy);
}

#[tokio::test]
async fn a_long_denial_of_a_configmap_copy_is_cut() {
    const END: &str = "END-OF-THE-DENIAL";
    let scene = Scene::new("vap-long").await;
    let policy = format!("long-denial-{}", scene.namespace);
    let long = format!("'refused: {} {END}'", "abcdefghij".repeat(150));
    let manifest = refusing_copies(
        &policy,
        &scene.namespace,
        "configmaps",
        &format!("\"{long}\""),
    );
    common::kubectl_apply(&scene, &manifest);
    common::refusal_enforced(
        &scene.configmaps().api,
        &common::mk_unmanaged("probe-synced", &[]),
    )
    .await;

    let controller = scene.configmaps().start_controller(&[]).await;
    scene
        .configmaps()
        .create(&mk_source("settings", &[("a", "1")]))
        .await;
    let note = copy_refusal(&scene, "settings").await;
    assert!(
        note.contains(&policy) && note.contains("refused: abcdefghij"),
        "{note}"
    );
    assert!(!note.contains(END), "{note}");
    assert!(note.len() < 600, "a note of {} bytes", note.len());
    let log = controller.log_text();
    assert!(
        log.contains("refused: abcdefghij"),
        "the log tells the start"
    );
    assert!(!log.contains(END), "the log holds the whole denial");
    common::delete_policy(&scene, &policy);
}

#[tokio::test]
async fn a_policy_refusing_the_digest_key_never_has_the_key_told() {
    const MARKER: &str = "THE-KEY-IS:";
    let scene = Scene::new("vap-key").await;
    let policy = format!("no-key-{}", scene.namespace);
    let manifest = common::refusing_policy(
        &policy,
        &scene.namespace,
        "secrets",
        "object.metadata.name != 'configmap-mirror-digest-key'",
        &format!(r#""'{MARKER}' + string(object.data['key'])""#),
    );
    common::kubectl_apply(&scene, &manifest);
    let secrets: Api<Secret> = Api::namespaced(scene.client.clone(), &scene.namespace);
    let mut probe = mk_secret("configmap-mirror-digest-key", "Opaque", &[("key", "probe")]);
    probe.metadata.labels = None;
    common::refusal_enforced(&secrets, &probe).await;

    let args = ["--namespace", scene.namespace.as_str(), BOTH_KINDS];
    let kubeconfig = scene.control_plane.kubeconfig_path().to_path_buf();
    let controller =
        ControllerProcess::start_unready(scene.control_plane, &kubeconfig, &scene.namespace, &args)
            .await;
    let readyz = wait_for("/readyz to say why Secrets wait", PATIENCE, || async {
        let (status, text) = controller.get("/readyz").await.ok()?;
        (status == 503 && text.contains("cannot create the digest key")).then_some(text)
    })
    .await
    .unwrap_or_else(|e| panic!("{e:#}"));
    let log = controller.log_text();
    assert!(
        readyz.contains(&policy),
        "/readyz names the policy: {readyz}"
    );
    // Names where, never the key.
    assert!(
        !readyz.contains(MARKER),
        "/readyz tells the denial's message"
    );
    assert!(!log.contains(MARKER), "the log tells the denial's message");
    common::delete_policy(&scene, &policy);
}
