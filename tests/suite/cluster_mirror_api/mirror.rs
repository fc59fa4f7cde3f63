//! The Mirror API as the API server serves it: a Mirror must name or
//! select its namespaces (an empty target would be taken for every
//! namespace), and its source has no namespace field to point elsewhere.

use configmap_mirror::api::mirror::Mirror;
use kube::{
    Api, CustomResourceExt,
    api::{DynamicObject, PostParams},
};
use serde_json::{Value, json};
use testenv::wait_for;

use super::cluster_mirrors;
use crate::common::PATIENCE;

/// What the API server says to a Mirror `name` in `default` with this
/// `spec`: Ok with the object stored, else its refusal's message.
async fn create(name: &str, spec: Value) -> Result<DynamicObject, String> {
    // The same `configmap-mirror crd` output installs the Mirror CRD.
    let client = cluster_mirrors().await.into_client();
    let api: Api<DynamicObject> = Api::namespaced_with(client, "default", &Mirror::api_resource());
    wait_for("the Mirror CRD to serve", PATIENCE, || async {
        api.list(&Default::default()).await.ok().map(drop)
    })
    .await
    .expect("the Mirror CRD serves");
    let object: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "mirror.workshop.io/v1alpha1",
        "kind": "Mirror",
        "metadata": {"name": name},
        "spec": spec,
    }))
    .expect("a Mirror");
    match api.create(&PostParams::default(), &object).await {
        Ok(stored) => Ok(stored),
        Err(kube::Error::Api(status)) if status.code == 422 => Err(status.message),
        Err(error) => panic!("{name}: refused for another cause: {error}"),
    }
}

fn source() -> Value {
    json!({"kind": "Secret", "name": "team-ca"})
}

#[tokio::test]
async fn a_mirror_must_name_or_select_its_namespaces() {
    for (name, target) in [
        ("nothing-asked", json!({})),
        ("empty-list", json!({"namespaces": []})),
        ("name-only", json!({"name": "ca"})),
    ] {
        let refused = create(name, json!({"source": source(), "target": target})).await;
        let message = refused.expect_err(name);
        assert!(
            message.contains("give namespaces, namespaceSelector or both"),
            "{name}: {message}"
        );
    }
    for (name, target) in [
        ("named", json!({"namespaces": ["team-b", "team-c-*"]})),
        ("selected", json!({"namespaceSelector": {}})),
        (
            "both",
            json!({"namespaces": ["team-b"], "namespaceSelector": {"matchLabels": {"a": "b"}}}),
        ),
    ] {
        let stored = create(name, json!({"source": source(), "target": target})).await;
        assert!(stored.is_ok(), "{name}: {stored:?}");
    }
}

/// A `namespace` given anyway is not in the schema: the API server drops
/// it, and the Mirror copies from its own namespace.
#[tokio::test]
async fn a_mirror_s_source_has_no_namespace_to_point_elsewhere() {
    let source = json!({"kind": "Secret", "name": "team-ca", "namespace": "kube-system"});
    let spec = json!({"source": source, "target": {"namespaces": ["team-b"]}});
    let stored = create("elsewhere", spec).await.expect("stored");
    assert_eq!(
        stored.data["spec"]["source"],
        json!({"kind": "Secret", "name": "team-ca"}),
        "the namespace is not stored"
    );
}
