//! The ClusterMirror API as the API server serves it: the CRD printed by
//! `configmap-mirror crd` installs, its CEL rules refuse each bad object
//! with a message naming what to change, a good object is stored as
//! written, and `kubectl get cmir` shows the printer columns.
//!
//! The CRD is cluster-wide, and other topics delete theirs: these run on a
//! control plane of their own.

use std::{
    io::Write,
    process::{Command, Stdio},
};

use configmap_mirror::{
    api::{ClusterMirror, ClusterMirrorStatus},
    contract::NEVER_CARRIED,
};
use k8s_openapi::{
    apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
    apimachinery::pkg::apis::meta::v1::{Condition, Time},
    jiff::Timestamp,
};
use kube::{
    Api, Client, CustomResourceExt, Resource,
    api::{Patch, PatchParams, PostParams},
};
use serde_json::{Value, json};
use testenv::{ControlPlane, LazyControlPlane, wait_for};
use tokio::sync::OnceCell;

use crate::common::PATIENCE;

mod mirror;
mod shaped_copies;

fn control_plane() -> &'static ControlPlane {
    static API_PLANE: LazyControlPlane = LazyControlPlane::new();
    API_PLANE.get()
}

/// The API, with the CRD installed once, as `configmap-mirror crd |
/// kubectl apply -f -` installs it. A client per test: each test has a
/// runtime of its own, which a client's connections die with.
async fn cluster_mirrors() -> Api<ClusterMirror> {
    static INSTALLED: OnceCell<()> = OnceCell::const_new();
    INSTALLED
        .get_or_init(|| async {
            let plane = control_plane();
            let printed = Command::new(env!("CARGO_BIN_EXE_configmap-mirror"))
                .arg("crd")
                .output()
                .expect("run configmap-mirror crd");
            assert!(printed.status.success(), "configmap-mirror crd failed");
            let mut apply = plane
                .kubectl()
                .args(["apply", "--server-side", "-f", "-"])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("run kubectl");
            apply
                .stdin
                .take()
                .expect("kubectl's stdin")
                .write_all(&printed.stdout)
                .expect("write the CRD to kubectl");
            let applied = apply.wait_with_output().expect("kubectl apply");
            assert!(
                applied.status.success(),
                "the API server refused the CRD: {}",
                String::from_utf8_lossy(&applied.stderr)
            );
            wait_established(&plane.client().await).await;
        })
        .await;
    Api::all(control_plane().client().await)
}

/// Waits until the API server serves ClusterMirrors.
pub async fn wait_established(client: &Client) {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    wait_for("the ClusterMirror CRD to be established", PATIENCE, || {
        let crds = crds.clone();
        async move {
            let crd = crds.get(ClusterMirror::crd_name()).await.ok()?;
            let conditions = crd.status?.conditions?;
            conditions
                .iter()
                .any(|c| c.type_ == "Established" && c.status == "True")
                .then_some(())
        }
    })
    .await
    .expect("the CRD is established");
}

/// A ClusterMirror `name` with this `target` (JSON, as a user writes it).
fn cluster_mirror(name: &str, target: Value) -> ClusterMirror {
    // Spelled out: the manifest a user writes, the contract pinned.
    serde_json::from_value(json!({
        "apiVersion": "mirror.workshop.io/v1alpha1",
        "kind": "ClusterMirror",
        "metadata": {"name": name},
        "spec": {
            "source": {"kind": "Secret", "namespace": "configmap-mirror", "name": "corp-ca"},
            "target": target,
        },
    }))
    .expect("a ClusterMirror")
}

/// The API server's refusal of `object`, as its message; panics if the
/// object is stored, or refused for another cause than validation.
async fn refusal(api: &Api<ClusterMirror>, object: &ClusterMirror) -> String {
    let name = object.metadata.name.clone().unwrap_or_default();
    match api.create(&PostParams::default(), object).await {
        Ok(_) => panic!("the API server accepted {name}: {:?}", object.spec.target),
        Err(kube::Error::Api(status)) if status.code == 422 => status.message,
        Err(error) => panic!("{name}: refused for another cause: {error}"),
    }
}

async fn accepted(api: &Api<ClusterMirror>, object: &ClusterMirror) -> ClusterMirror {
    let name = object.metadata.name.clone().unwrap_or_default();
    api.create(&PostParams::default(), object)
        .await
        .unwrap_or_else(|error| panic!("the API server refused {name}: {error}"))
}

/// A key each entry of the never-carried list refuses: the key itself, or
/// one under its prefix.
fn a_key_of(entry: &str) -> String {
    match entry.strip_suffix('*') {
        Some(prefix) => format!("{prefix}example"),
        None => entry.to_owned(),
    }
}

#[tokio::test]
async fn copy_labels_and_annotations_may_not_set_the_controller_s_keys_nor_another_tool_s() {
    let api = cluster_mirrors().await;
    for field in ["labels", "annotations"] {
        for (i, entry) in NEVER_CARRIED.iter().enumerate() {
            let key = a_key_of(entry);
            let object = cluster_mirror(
                &format!("keys-{field}-{i}"),
                json!({"namespaceSelector": {}, field: {"team": "platform", key.clone(): "x"}}),
            );
            let message = refusal(&api, &object).await;
            assert!(
                message.contains(&format!("spec.target.{field}"))
                    && message.contains("may not set the controller's own keys"),
                "{key} in {field}: {message}"
            );
        }
    }
    for key in ["workshop.io/cluster-mirror", "app.kubernetes.io/managed-by"] {
        let object = cluster_mirror(
            "own-key",
            json!({"namespaceSelector": {}, "labels": {key: "x"}}),
        );
        refusal(&api, &object).await;
    }
    // A cli-utils inventory: its data lists the objects kpt prunes.
    let inventory = cluster_mirror(
        "inventory-id",
        json!({"namespaceSelector": {},
               "annotations": {"cli-utils.sigs.k8s.io/inventory-id": "apps"}}),
    );
    refusal(&api, &inventory).await;
    let allowed = cluster_mirror(
        "keys-allowed",
        json!({"namespaceSelector": {},
               "labels": {"team": "platform", "app.kubernetes.io/part-of": "ca"},
               "annotations": {"example.com/owner": "platform"}}),
    );
    accepted(&api, &allowed).await;
}

#[tokio::test]
async fn namespaces_entries_must_be_names_or_globs() {
    let api = cluster_mirrors().await;
    for (i, entry) in ["Team-A", "team_a", "", "-team", "team-", "a.b", "team a"]
        .into_iter()
        .enumerate()
    {
        let object = cluster_mirror(
            &format!("namespaces-{i}"),
            json!({"namespaceSelector": {}, "namespaces": ["payments", entry]}),
        );
        let message = refusal(&api, &object).await;
        assert!(
            message.contains("spec.target.namespaces"),
            "{entry:?}: {message}"
        );
    }
    let too_long = "a".repeat(64);
    let object = cluster_mirror(
        "namespaces-long",
        json!({"namespaceSelector": {}, "namespaces": [too_long]}),
    );
    refusal(&api, &object).await;
    let object = cluster_mirror(
        "namespaces-allowed",
        json!({"namespaceSelector": {}, "namespaces": ["payments", "team-*", "*-prod", "*", "a-*-b"]}),
    );
    accepted(&api, &object).await;
}

#[tokio::test]
async fn a_selector_requirement_has_values_exactly_when_its_operator_needs_them() {
    let api = cluster_mirrors().await;
    let cases = [
        (json!({"key": "env", "operator": "In"}), ".values"),
        (
            json!({"key": "env", "operator": "NotIn", "values": []}),
            ".values",
        ),
        (
            json!({"key": "env", "operator": "Exists", "values": ["prod"]}),
            ".values",
        ),
        (
            json!({"key": "env", "operator": "DoesNotExist", "values": ["prod"]}),
            ".values",
        ),
        (
            json!({"key": "env", "operator": "Equals", "values": ["prod"]}),
            ".operator",
        ),
    ];
    for (i, (requirement, field)) in cases.into_iter().enumerate() {
        let object = cluster_mirror(
            &format!("selector-{i}"),
            json!({"namespaceSelector": {"matchExpressions": [
                {"key": "tier", "operator": "Exists"},
                requirement.clone(),
            ]}}),
        );
        let message = refusal(&api, &object).await;
        assert!(
            message.contains(&format!(
                "spec.target.namespaceSelector.matchExpressions[1]{field}"
            )),
            "{requirement}: {message}"
        );
    }
    let object = cluster_mirror(
        "selector-allowed",
        json!({"namespaceSelector": {
            "matchLabels": {"env": "prod"},
            "matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["web"]},
                {"key": "zone", "operator": "NotIn", "values": ["a", "b"]},
                {"key": "team", "operator": "Exists"},
                {"key": "legacy", "operator": "DoesNotExist", "values": []},
            ],
        }}),
    );
    accepted(&api, &object).await;
}

#[tokio::test]
async fn a_name_is_at_most_63_characters_as_it_becomes_a_label_value() {
    let api = cluster_mirrors().await;
    let object = cluster_mirror(&"n".repeat(64), json!({"namespaceSelector": {}}));
    let message = refusal(&api, &object).await;
    assert!(message.contains("at most 63 characters"), "{message}");
    let object = cluster_mirror(&"n".repeat(63), json!({"namespaceSelector": {}}));
    accepted(&api, &object).await;
}

#[tokio::test]
async fn a_good_cluster_mirror_is_stored_as_written() {
    let api = cluster_mirrors().await;
    let object = cluster_mirror(
        "corp-ca",
        json!({
            "name": "corp-ca.pem",
            "namespaceSelector": {"matchLabels": {"env": "prod"}},
            "namespaces": ["team-*"],
            "labels": {"team": "platform"},
            "annotations": {"example.com/owner": "platform"},
        }),
    );
    let created = accepted(&api, &object).await;
    assert_eq!(created.spec, object.spec);
    // The spec's required parts: the source, the target, its selector.
    for (name, spec) in [
        ("no-source", json!({"target": {"namespaceSelector": {}}})),
        (
            "no-selector",
            json!({"source": {"kind": "Secret", "namespace": "configmap-mirror", "name": "corp-ca"},
                   "target": {}}),
        ),
        (
            "pod-source",
            json!({"source": {"kind": "Pod", "namespace": "configmap-mirror", "name": "corp-ca"},
                   "target": {"namespaceSelector": {}}}),
        ),
    ] {
        let raw: Api<kube::api::DynamicObject> =
            Api::all_with(api.clone().into_client(), &ClusterMirror::api_resource());
        // Spelled out: the manifest a user writes, the contract pinned.
        let object = serde_json::from_value(json!({
            "apiVersion": "mirror.workshop.io/v1alpha1",
            "kind": "ClusterMirror",
            "metadata": {"name": name},
            "spec": spec,
        }))
        .expect("an object");
        match raw.create(&PostParams::default(), &object).await {
            Err(kube::Error::Api(status)) if status.code == 422 => {}
            other => panic!("{name}: not refused as invalid: {other:?}"),
        }
    }
}

#[tokio::test]
async fn kubectl_get_cmir_shows_the_printer_columns() {
    let api = cluster_mirrors().await;
    let object = cluster_mirror("columns", json!({"namespaceSelector": {}}));
    accepted(&api, &object).await;
    let status = ClusterMirrorStatus {
        observed_generation: Some(1),
        selected: 412,
        synced: 409,
        failed: 3,
        conditions: vec![Condition {
            type_: "Ready".into(),
            status: "False".into(),
            reason: "PartiallySynced".into(),
            message: "3 namespaces failed".into(),
            observed_generation: Some(1),
            last_transition_time: Time(Timestamp::now()),
        }],
        ..ClusterMirrorStatus::default()
    };
    api.patch_status(
        "columns",
        &PatchParams::apply("cluster-mirror-api-test").force(),
        &Patch::Apply(json!({
            "apiVersion": ClusterMirror::api_version(&()),
            "kind": ClusterMirror::kind(&()),
            "status": status,
        })),
    )
    .await
    .expect("write the status");
    let out = control_plane()
        .kubectl()
        .args(["get", "cmir", "columns"])
        .output()
        .expect("run kubectl get cmir");
    assert!(
        out.status.success(),
        "kubectl get cmir: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let table = String::from_utf8_lossy(&out.stdout);
    let rows: Vec<Vec<&str>> = table
        .lines()
        .map(|line| line.split_whitespace().collect())
        .collect();
    assert_eq!(
        rows.first().map(Vec::as_slice),
        Some(
            &[
                "NAME", "KIND", "SOURCE", "SELECTED", "SYNCED", "FAILED", "READY", "AGE"
            ][..]
        ),
        "{table}"
    );
    assert_eq!(
        rows.get(1).map(|row| &row[..7]),
        Some(&["columns", "Secret", "corp-ca", "412", "409", "3", "False"][..]),
        "{table}"
    );
}
