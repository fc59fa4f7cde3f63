use kube::{CustomResourceExt, Resource};
use serde_json::json;

use super::{Mirror, stored::StoredMirror};
use crate::api::{ClusterMirror, DeletionPolicy, SourceKind};

#[test]
fn the_crd_has_the_fixed_names_namespace_scope_and_the_columns_of_cmir() {
    let crd = Mirror::crd();
    assert_eq!(
        crd.metadata.name.as_deref(),
        Some("mirrors.mirror.workshop.io")
    );
    assert_eq!(crd.spec.scope, "Namespaced");
    assert_eq!(crd.spec.names.kind, "Mirror");
    assert_eq!(crd.spec.names.short_names, Some(vec!["mir".to_owned()]));
    assert_eq!(Mirror::api_version(&()), "mirror.workshop.io/v1alpha1");
    let columns = |crd: &k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition| {
        let version = &crd.spec.versions[0];
        assert!(version.subresources.as_ref().is_some_and(|s| s.status.is_some()));
        (version.additional_printer_columns.iter().flatten())
            .map(|c| (c.name.clone(), c.json_path.clone(), c.priority))
            .collect::<Vec<_>>()
    };
    assert_eq!(columns(&crd), columns(&ClusterMirror::crd()));
}

#[test]
fn a_target_that_names_and_selects_nothing_is_refused_by_a_rule() {
    let crd = serde_json::to_value(Mirror::crd()).unwrap();
    let target = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
        ["target"];
    let rules = target["x-kubernetes-validations"].as_array().unwrap();
    assert!(
        rules.iter().any(|r| r["rule"]
            .as_str()
            .is_some_and(|rule| rule.contains("has(self.namespaceSelector)"))),
        "{rules:?}"
    );
    let source = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
        ["source"]["properties"];
    assert!(
        source.get("namespace").is_none(),
        "no namespace field: {source}"
    );
}

#[test]
fn the_issue_s_example_reads_as_a_request_from_its_own_namespace() {
    let object = json!({
        "apiVersion": "mirror.workshop.io/v1alpha1",
        "kind": "Mirror",
        "metadata": {"name": "team-ca", "namespace": "team-a"},
        "spec": {
            "source": {"kind": "Secret", "name": "team-ca"},
            "target": {
                "namespaces": ["team-b", "team-c-*"],
                "name": "ca", "kind": "ConfigMap", "keys": [{"key": "ca.crt"}],
            },
            "deletionPolicy": "Orphan",
        },
    });
    let StoredMirror(stored) = serde_json::from_value(object).unwrap();
    let spec = stored.spec.as_ref().unwrap();
    assert_eq!(spec.source.namespace, "team-a");
    assert_eq!(spec.source.kind, SourceKind::Secret);
    assert_eq!(spec.copy_kind(), SourceKind::ConfigMap);
    assert_eq!(spec.copy_name(), "ca");
    assert_eq!(
        spec.target.namespace_selector,
        Default::default(),
        "no selector: only the names narrow"
    );
    assert_eq!(stored.deletion_policy(), DeletionPolicy::Orphan);
    assert_eq!(stored.metadata.namespace.as_deref(), Some("team-a"));
}

#[test]
fn a_spec_that_does_not_read_keeps_its_kind_and_deletion_policy() {
    let object = json!({
        "metadata": {"name": "m", "namespace": "team-a"},
        "spec": {
            "source": {"kind": "Secret", "name": "s", "namespace": "elsewhere"},
            "target": {"namespaces": ["b"]},
            "deletionPolicy": "Orphan",
        },
    });
    let StoredMirror(stored) = serde_json::from_value(object).unwrap();
    let unreadable = stored.spec.as_ref().unwrap_err();
    assert!(unreadable.why.contains("namespace"), "{}", unreadable.why);
    assert_eq!(unreadable.kind, Some(SourceKind::Secret));
    assert_eq!(stored.deletion_policy(), DeletionPolicy::Orphan);
}
