use kube::{CustomResourceExt, Resource};
use serde_json::json;

use super::*;

#[test]
fn the_crd_has_the_fixed_names_cluster_scope_and_a_status_subresource() {
    let crd = ClusterMirror::crd();
    assert_eq!(
        crd.metadata.name.as_deref(),
        Some("clustermirrors.mirror.workshop.io")
    );
    assert_eq!(crd.spec.group, "mirror.workshop.io");
    assert_eq!(crd.spec.scope, "Cluster");
    assert_eq!(crd.spec.names.kind, "ClusterMirror");
    assert_eq!(crd.spec.names.plural, "clustermirrors");
    assert_eq!(crd.spec.names.short_names, Some(vec!["cmir".to_owned()]));
    let [version] = &crd.spec.versions[..] else {
        panic!("one version: {:?}", crd.spec.versions);
    };
    assert_eq!(version.name, "v1alpha1");
    assert!(version.served && version.storage);
    assert!(
        version
            .subresources
            .as_ref()
            .is_some_and(|s| s.status.is_some())
    );
    let columns: Vec<&str> = version
        .additional_printer_columns
        .iter()
        .flatten()
        .map(|column| column.name.as_str())
        .collect();
    assert_eq!(
        columns,
        [
            "Kind", "Source", "Selected", "Synced", "Failed", "Ready", "Class", "Age"
        ]
    );
    // Only `kubectl get cmir -o wide` shows the class.
    let class = version.additional_printer_columns.iter().flatten();
    let class: Vec<_> = class.filter(|c| c.name == "Class").collect();
    assert_eq!(class[0].priority, Some(1));
    assert_eq!(
        ClusterMirror::api_version(&()),
        "mirror.workshop.io/v1alpha1"
    );
}

#[test]
fn the_issue_s_example_reads_and_defaults_what_it_leaves_out() {
    let object = json!({
        "apiVersion": "mirror.workshop.io/v1alpha1",
        "kind": "ClusterMirror",
        "metadata": {"name": "corp-ca"},
        "spec": {
            "source": {"kind": "Secret", "namespace": "configmap-mirror", "name": "corp-ca"},
            "target": {"namespaceSelector": {"matchLabels": {"env": "prod"}}, "namespaces": ["team-*"]},
        },
        "status": {
            "observedGeneration": 4, "selected": 412, "synced": 409, "failed": 3,
            "failures": [{"namespace": "team-q", "reason": "NameTaken", "message": "held"}],
        },
    });
    let mirror: ClusterMirror = serde_json::from_value(object).unwrap();
    assert_eq!(mirror.spec.source.kind, SourceKind::Secret);
    assert_eq!(mirror.spec.copy_name(), "corp-ca");
    assert!(!mirror.spec.suspend);
    assert!(mirror.spec.target.labels.is_empty());
    assert_eq!(
        mirror.spec.class(),
        "",
        "no class: served by the installs without one"
    );
    let status = mirror.status.unwrap();
    assert_eq!(
        (status.selected, status.synced, status.failed),
        (412, 409, 3)
    );
    assert_eq!(status.failures[0].reason, reason::NAME_TAKEN);
}

#[test]
fn a_target_name_names_the_copies() {
    let spec: ClusterMirrorSpec = serde_json::from_value(json!({
        "source": {"kind": "ConfigMap", "namespace": "platform", "name": "colors"},
        "target": {"name": "shared-colors", "namespaceSelector": {}},
        "suspend": true,
    }))
    .unwrap();
    assert_eq!(spec.copy_name(), "shared-colors");
    assert!(spec.suspend);
}

#[test]
fn a_class_name_reads_and_its_schema_takes_an_empty_one() {
    let spec: ClusterMirrorSpec = serde_json::from_value(json!({
        "className": "platform",
        "source": {"kind": "ConfigMap", "namespace": "platform", "name": "colors"},
        "target": {"namespaceSelector": {}},
    }))
    .unwrap();
    assert_eq!(spec.class(), "platform");
    let crd = serde_json::to_value(ClusterMirror::crd()).unwrap();
    let schema = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
    let class = &schema["properties"]["spec"]["properties"]["className"];
    assert_eq!(class["maxLength"], json!(rules::MAX_CLASS_LEN));
    let pattern = class["pattern"].as_str().unwrap();
    assert_eq!(pattern, format!("^$|{}", rules::OBJECT_NAME_PATTERN));
    assert_eq!(
        class.get("nullable"),
        None,
        "an explicit null is pruned, so that the admission policy reads it as the empty class"
    );
}

#[test]
fn a_kind_other_than_configmap_or_secret_is_refused() {
    let spec = serde_json::from_value::<ClusterMirrorSpec>(json!({
        "source": {"kind": "Pod", "namespace": "platform", "name": "colors"},
        "target": {"namespaceSelector": {}},
    }));
    assert!(spec.is_err());
}

#[test]
fn the_refused_copy_keys_are_the_never_carried_ones_and_the_controller_s() {
    let expression = rules::refused_key_expression("k");
    assert!(expression.contains("k.startsWith('workshop.io/')"));
    assert!(expression.contains("k == 'app.kubernetes.io/managed-by'"));
    for entry in crate::contract::NEVER_CARRIED {
        let key = entry.trim_end_matches('*');
        assert!(expression.contains(&format!("'{key}'")), "{entry}");
    }
}

#[test]
fn the_crd_carries_each_rule_where_it_applies() {
    let crd = serde_json::to_value(ClusterMirror::crd()).unwrap();
    let schema = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
    let rules_at = |at: &serde_json::Value| at["x-kubernetes-validations"].as_array().map(Vec::len);
    let target = &schema["properties"]["spec"]["properties"]["target"]["properties"];
    assert_eq!(rules_at(schema), Some(1), "the name's length");
    assert_eq!(rules_at(&target["labels"]), Some(1));
    assert_eq!(rules_at(&target["annotations"]), Some(1));
    assert_eq!(rules_at(&target["namespaces"]), Some(1));
    let requirement = &target["namespaceSelector"]["properties"]["matchExpressions"]["items"];
    assert_eq!(rules_at(requirement), Some(3));
    let spec = &schema["properties"]["spec"];
    assert_eq!(rules_at(spec), Some(2), "target.kind and target.type");
    let target_object = &spec["properties"]["target"];
    assert_eq!(
        rules_at(target_object),
        Some(1),
        "a ConfigMap of exact keys"
    );
    assert_eq!(rules_at(&target["keys"]), Some(1), "one entry per name");
    assert_eq!(rules_at(&target["keys"]["items"]), Some(3));
    assert_eq!(
        target["excludeKeys"]["items"]["pattern"],
        json!(rules::KEY_OR_GLOB_PATTERN)
    );
    for optional in [
        &target["kind"],
        &target["type"],
        &target["keys"]["items"]["properties"]["as"],
    ] {
        assert_eq!(optional.get("nullable"), None, "an explicit null is pruned");
    }
    let conditions = &schema["properties"]["status"]["properties"]["conditions"];
    assert_eq!(conditions["x-kubernetes-list-map-keys"], json!(["type"]));
}
