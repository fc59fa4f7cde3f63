//! The rules of copies shaped for their consumers (`spec.target.keys`,
//! `excludeKeys`, `kind`, `type`), as the API server checks them: each
//! refuses what it must, with a message naming the field, and lets the
//! good form through. Sent as a user writes them (untyped), so that a
//! value the Rust types could not even hold is refused by the API server.

use kube::{
    Api,
    api::{DynamicObject, PostParams},
};
use serde_json::{Value, json};

use super::cluster_mirrors;
use configmap_mirror::api::ClusterMirror;
use kube::CustomResourceExt;

/// What the API server says to a ClusterMirror `name` copying a `kind`
/// source with this `target` (`namespaceSelector` added): Ok when it is
/// stored, else its refusal's message.
async fn create(name: &str, kind: &str, target: Value) -> Result<(), String> {
    let typed = cluster_mirrors().await;
    let api: Api<DynamicObject> =
        Api::all_with(typed.into_client(), &ClusterMirror::api_resource());
    let mut target = target;
    target["namespaceSelector"] = json!({});
    let object: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "mirror.workshop.io/v1alpha1",
        "kind": "ClusterMirror",
        "metadata": {"name": name},
        "spec": {
            "source": {"kind": kind, "namespace": "configmap-mirror", "name": "corp-tls"},
            "target": target,
        },
    }))
    .expect("an object");
    match api.create(&PostParams::default(), &object).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 422 => Err(status.message),
        Err(error) => panic!("{name}: refused for another cause: {error}"),
    }
}

/// Asserts that the API server refuses it, naming `field` and saying `why`.
async fn refused(name: &str, kind: &str, target: Value, field: &str, why: &str) {
    match create(name, kind, target.clone()).await {
        Ok(()) => panic!("{name}: the API server accepted {target}"),
        Err(message) => assert!(
            message.contains(field) && message.contains(why),
            "{name}: {target}: {message}"
        ),
    }
}

async fn accepted(name: &str, kind: &str, target: Value) {
    if let Err(message) = create(name, kind, target.clone()).await {
        panic!("{name}: the API server refused {target}: {message}");
    }
}

#[tokio::test]
async fn as_renames_an_exact_key_only_not_a_glob() {
    let glob = json!({"keys": [{"key": "tls.*", "as": "tls"}]});
    refused(
        "as-glob",
        "Secret",
        glob,
        "spec.target.keys[0].as",
        "exact key only",
    )
    .await;
    let exact = json!({"keys": [{"key": "ca.crt", "as": "root.pem"}, {"key": "tls.*"}]});
    accepted("as-exact", "Secret", exact).await;
}

#[tokio::test]
async fn two_entries_may_not_copy_into_one_key_name() {
    let why = "two entries copy into one key name";
    for (i, keys) in [
        json!([{"key": "a", "as": "c"}, {"key": "b", "as": "c"}]),
        json!([{"key": "a"}, {"key": "b", "as": "a"}]),
        json!([{"key": "a"}, {"key": "a"}]),
    ]
    .into_iter()
    .enumerate()
    {
        let target = json!({"keys": keys});
        refused(
            &format!("one-name-{i}"),
            "ConfigMap",
            target,
            "spec.target.keys",
            why,
        )
        .await;
    }
    let swapped = json!({"keys": [{"key": "a", "as": "b"}, {"key": "b", "as": "a"}, {"key": "*"}]});
    accepted("names-swapped", "ConfigMap", swapped).await;
}

#[tokio::test]
async fn keys_are_names_the_api_server_accepts_in_a_configmap_or_secret() {
    let long = "k".repeat(254);
    let cases = [
        (json!({"keys": [{"key": "a/b"}]}), "spec.target.keys[0].key"),
        (
            json!({"keys": [{"key": "a", "as": "a b"}]}),
            "spec.target.keys[0].as",
        ),
        (json!({"keys": [{"key": long}]}), "spec.target.keys[0].key"),
        (json!({"keys": [{"key": "."}]}), "spec.target.keys[0].key"),
        (
            json!({"keys": [{"key": "a", "as": ".."}]}),
            "spec.target.keys[0].as",
        ),
        (
            json!({"excludeKeys": ["x/y"]}),
            "spec.target.excludeKeys[0]",
        ),
    ];
    for (i, (target, field)) in cases.into_iter().enumerate() {
        let name = format!("bad-key-{i}");
        match create(&name, "ConfigMap", target.clone()).await {
            Ok(()) => panic!("{name}: the API server accepted {target}"),
            Err(message) => assert!(message.contains(field), "{target}: {message}"),
        }
    }
    let good = json!({
        "keys": [{"key": ".dockerconfigjson"}, {"key": "a_B-9.x", "as": "Y_z.-1"}, {"key": "*.pem"}],
        "excludeKeys": ["*.key", "tls.key"],
    });
    accepted("good-keys", "ConfigMap", good).await;
}

#[tokio::test]
async fn a_copy_s_kind_is_set_for_a_secret_source_only() {
    let why = "target.kind is for a Secret source only";
    for (i, kind) in ["ConfigMap", "Secret"].into_iter().enumerate() {
        let target = json!({"kind": kind, "keys": [{"key": "ca.crt"}]});
        refused(
            &format!("kind-of-configmap-{i}"),
            "ConfigMap",
            target,
            "spec.target.kind",
            why,
        )
        .await;
    }
    accepted("kind-secret", "Secret", json!({"kind": "Secret"})).await;
    accepted(
        "kind-configmap",
        "Secret",
        json!({"kind": "ConfigMap", "keys": [{"key": "ca.crt"}]}),
    )
    .await;
}

#[tokio::test]
async fn a_secret_published_as_a_configmap_names_exact_keys_only() {
    let why = "publishes only the exact keys";
    for (i, target) in [
        json!({"kind": "ConfigMap"}),
        json!({"kind": "ConfigMap", "keys": [{"key": "ca.crt"}, {"key": "tls.*"}]}),
        json!({"kind": "ConfigMap", "keys": [{"key": "*"}], "excludeKeys": ["tls.key"]}),
    ]
    .into_iter()
    .enumerate()
    {
        refused(
            &format!("public-glob-{i}"),
            "Secret",
            target,
            "spec.target.keys",
            why,
        )
        .await;
    }
    let exact = json!({"kind": "ConfigMap", "keys": [{"key": "ca.crt", "as": "root.pem"}]});
    accepted("public-exact", "Secret", exact).await;
}

#[tokio::test]
async fn an_opaque_type_is_for_a_secret_copy_only() {
    let why = "target.type is for a Secret copy only";
    let of_configmap = json!({"type": "Opaque"});
    refused(
        "opaque-configmap",
        "ConfigMap",
        of_configmap,
        "spec.target.type",
        why,
    )
    .await;
    let of_public = json!({"kind": "ConfigMap", "type": "Opaque", "keys": [{"key": "ca.crt"}]});
    refused(
        "opaque-public",
        "Secret",
        of_public,
        "spec.target.type",
        why,
    )
    .await;
    let other_type = json!({"type": "kubernetes.io/tls"});
    refused(
        "type-tls",
        "Secret",
        other_type,
        "spec.target.type",
        "Unsupported value",
    )
    .await;
    accepted(
        "opaque-secret",
        "Secret",
        json!({"type": "Opaque", "keys": [{"key": "ca.crt"}]}),
    )
    .await;
    accepted(
        "opaque-of-kind-secret",
        "Secret",
        json!({"kind": "Secret", "type": "Opaque"}),
    )
    .await;
}
