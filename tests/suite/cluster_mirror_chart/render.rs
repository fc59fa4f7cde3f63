//! The chart's ClusterMirror parts as `helm template` renders them, without
//! a cluster: the CRD and its annotation, the roles, the source namespaces
//! and the class the controller and the policy are given.

use configmap_mirror::api::{ClusterMirror, mirror_grant::MirrorGrant};
use kube::CustomResourceExt;
use serde_json::{Value, json};

use crate::common::rendered;

fn named<'a>(objects: &'a [Value], kind: &str, name: &str) -> Option<&'a Value> {
    objects
        .iter()
        .find(|o| o["kind"] == kind && o["metadata"]["name"] == name)
}

#[test]
fn crds_enabled_and_keep_decide_the_crd_and_its_annotation() {
    for crd in [ClusterMirror::crd_name(), MirrorGrant::crd_name()] {
        crd_follows_the_values(crd);
    }
}

fn crd_follows_the_values(crd: &str) {
    let objects = rendered(&[]);
    let kept = named(&objects, "CustomResourceDefinition", crd).expect("the CRD by default");
    assert_eq!(
        kept["metadata"]["annotations"]["helm.sh/resource-policy"],
        "keep"
    );
    let objects = rendered(&["--set", "crds.keep=false"]);
    let plain = named(&objects, "CustomResourceDefinition", crd).expect("the CRD");
    assert!(plain["metadata"]["annotations"].is_null(), "{plain}");
    let objects = rendered(&["--set", "crds.enabled=false"]);
    assert!(named(&objects, "CustomResourceDefinition", crd).is_none());
}

#[test]
fn the_editor_role_is_aggregated_nowhere_and_the_viewer_role_into_view() {
    let objects = rendered(&[]);
    let editor = named(
        &objects,
        "ClusterRole",
        "r-configmap-mirror-clustermirror-editor",
    )
    .expect("the editor role");
    let labels = editor["metadata"]["labels"].as_object().expect("labels");
    assert!(
        !labels.keys().any(|key| key.contains("aggregate-to")),
        "{labels:?}"
    );
    let viewer = named(
        &objects,
        "ClusterRole",
        "r-configmap-mirror-clustermirror-viewer",
    )
    .expect("the viewer role");
    assert_eq!(
        viewer["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-view"],
        "true"
    );
    assert_eq!(viewer["rules"][0]["verbs"], json!(["get", "list", "watch"]));
    let objects = rendered(&[
        "--set",
        "clusterMirror.editorRole=false",
        "--set",
        "clusterMirror.viewerRole=false",
    ]);
    assert!(!objects.iter().any(|o| {
        o["metadata"]["name"]
            .as_str()
            .is_some_and(|name| name.contains("clustermirror-"))
    }));
}

/// A MirrorGrant lets other namespaces write into its own: the built-in
/// `admin` role may edit grants, `edit` may not; `view` reads them.
#[test]
fn the_grant_roles_aggregate_into_admin_and_view_only_and_can_be_left_out() {
    let objects = rendered(&[]);
    let role = |name: &str| {
        named(
            &objects,
            "ClusterRole",
            &format!("r-configmap-mirror-mirrorgrant-{name}"),
        )
        .unwrap_or_else(|| panic!("the {name} role"))
        .clone()
    };
    let aggregated = |role: &Value| -> Vec<String> {
        let labels = role["metadata"]["labels"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        let mut into: Vec<String> = labels
            .into_iter()
            .filter(|(key, value)| key.contains("aggregate-to") && value == "true")
            .map(|(key, _)| key)
            .collect();
        into.sort();
        into
    };
    let editor = role("editor");
    assert_eq!(
        aggregated(&editor),
        ["rbac.authorization.k8s.io/aggregate-to-admin"]
    );
    assert_eq!(editor["rules"][0]["resources"], json!(["mirrorgrants"]));
    let viewer = role("viewer");
    assert_eq!(
        aggregated(&viewer),
        ["rbac.authorization.k8s.io/aggregate-to-view"]
    );
    assert_eq!(viewer["rules"][0]["verbs"], json!(["get", "list", "watch"]));
    let objects = rendered(&["--set", "mirrorGrant.aggregateToDefaultRoles=false"]);
    assert!(!objects.iter().any(|o| {
        o["metadata"]["name"]
            .as_str()
            .is_some_and(|name| name.contains("mirrorgrant-"))
    }));
}

#[test]
fn the_source_namespaces_default_to_the_release_s() {
    let args = |values: &[&str]| {
        let objects = rendered(values);
        let deployment = named(&objects, "Deployment", "r-configmap-mirror")
            .expect("the Deployment")
            .clone();
        deployment["spec"]["template"]["spec"]["containers"][0]["args"].clone()
    };
    let flag = |args: &Value| {
        args.as_array()
            .expect("args")
            .iter()
            .filter_map(Value::as_str)
            .filter(|arg| arg.starts_with("--cluster-mirror-source-namespaces"))
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        flag(&args(&[])),
        ["--cluster-mirror-source-namespaces=home"]
    );
    assert_eq!(
        flag(&args(&[
            "--set",
            "clusterMirror.sourceNamespaces={platform,certs}"
        ])),
        ["--cluster-mirror-source-namespaces=platform,certs"]
    );
}

#[test]
fn the_class_is_the_controller_s_and_the_policy_s() {
    let class_flags = |objects: &[Value]| {
        let deployment =
            named(objects, "Deployment", "r-configmap-mirror").expect("the Deployment");
        let args = deployment["spec"]["template"]["spec"]["containers"][0]["args"].clone();
        let args: Vec<String> = serde_json::from_value(args).expect("args");
        args.into_iter()
            .filter(|arg| arg.starts_with("--cluster-mirror-class"))
            .collect::<Vec<_>>()
    };
    let matched = |objects: &[Value]| {
        let policy = named(
            objects,
            "ValidatingAdmissionPolicy",
            "r-configmap-mirror-clustermirror-source",
        )
        .expect("the ClusterMirror policy");
        policy["spec"]["matchConditions"][0]["expression"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    let policy = ["--set", "admissionPolicy.enabled=true"];
    let default = rendered(&policy);
    assert!(class_flags(&default).is_empty(), "the binary's default");
    assert_eq!(
        matched(&default),
        "object.spec.?className.orValue('') == ''"
    );
    let platform = rendered(&[&policy[..], &["--set", "clusterMirror.class=platform"]].concat());
    assert_eq!(class_flags(&platform), ["--cluster-mirror-class=platform"]);
    assert_eq!(
        matched(&platform),
        "object.spec.?className.orValue('') == 'platform'"
    );
}
