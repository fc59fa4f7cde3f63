use kube::core::ObjectList;
use serde_json::json;

use super::*;

fn stored(object: Value) -> StoredClusterMirror {
    serde_json::from_value(object).unwrap()
}

#[test]
fn a_list_with_an_unreadable_clustermirror_still_reads_every_one() {
    let list = json!({
        "apiVersion": "mirror.workshop.io/v1alpha1",
        "kind": "ClusterMirrorList",
        "metadata": {"resourceVersion": "7"},
        "items": [
            {"metadata": {"name": "newer"}, "spec": {"source": {"kind": "Job"}, "target": {}}},
            {"metadata": {"name": "good"}, "spec": {
                "source": {"kind": "ConfigMap", "namespace": "ns", "name": "colors"},
                "target": {"namespaceSelector": {}},
            }},
        ],
    });
    let list: ObjectList<StoredClusterMirror> = serde_json::from_value(list).unwrap();
    let [newer, good] = &list.items[..] else {
        panic!("two items: {:?}", list.items);
    };
    let why = &newer.spec.as_ref().unwrap_err().why;
    assert!(why.starts_with("spec: ") && why.contains("Job"), "{why}");
    assert_eq!(newer.copy_kind(), None, "a kind it does not know");
    assert_eq!(good.spec.as_ref().unwrap().source.name, "colors");
    assert_eq!(good.copy_kind(), Some(SourceKind::ConfigMap));
}

#[test]
fn an_unreadable_spec_still_says_its_class_kind_and_deletion_policy() {
    let object = stored(json!({
        "metadata": {"name": "corp-ca"},
        "spec": {
            "className": "platform",
            "deletionPolicy": "Orphan",
            "source": {"kind": "Secret", "namespace": "ns"},
            "target": {"namespaceSelector": {}},
        },
    }));
    assert!(object.spec.is_err(), "the source has no name");
    assert_eq!(object.class(), "platform");
    assert_eq!(object.copy_kind(), Some(SourceKind::Secret));
    assert_eq!(object.deletion_policy(), DeletionPolicy::Orphan);
    let bare = stored(json!({"metadata": {}, "spec": {"className": 7, "source": {}}}));
    assert_eq!(bare.class(), "", "a class that is no string names none");
    assert_eq!(bare.deletion_policy(), DeletionPolicy::Delete);
}

#[test]
fn a_field_this_version_does_not_know_makes_the_spec_unreadable() {
    let spec = json!({
        "className": "platform",
        "source": {"kind": "Secret", "namespace": "ns", "name": "corp-ca"},
        "target": {"namespaceSelector": {}, "keys": [{"key": "ca.crt"}]},
    });
    let readable = stored(json!({"metadata": {"name": "a"}, "spec": spec}));
    assert!(readable.spec.is_ok(), "{:?}", readable.spec);
    // A newer version's field may ask for less than the spec without it.
    for (at, field) in [
        ("", "copyAll"),
        ("/source", "uid"),
        ("/target", "publishAs"),
        ("/target/keys/0", "ifPresent"),
    ] {
        let mut newer = spec.clone();
        newer
            .pointer_mut(at)
            .unwrap()
            .as_object_mut()
            .unwrap()
            .insert(field.into(), json!(["k"]));
        let object = stored(json!({"metadata": {"name": "a"}, "spec": newer}));
        let why = &object.spec.as_ref().unwrap_err().why;
        assert!(why.contains(&format!("unknown field `{field}`")), "{why}");
        assert_eq!(object.class(), "platform");
        assert_eq!(object.copy_kind(), Some(SourceKind::Secret));
    }
}

#[test]
fn a_missing_spec_and_a_null_one_say_so() {
    let missing = stored(json!({"metadata": {"name": "a"}}));
    assert_eq!(missing.spec.unwrap_err().why, "it has no spec");
    let null = stored(json!({"metadata": {"name": "a"}, "spec": null}));
    let why = null.spec.unwrap_err().why;
    assert!(why.starts_with("spec: invalid type: null"), "{why}");
}

#[test]
fn a_status_it_cannot_read_is_replaced_but_its_observed_generation_is_read() {
    let readable = stored(json!({
        "metadata": {"name": "a"},
        "status": {"observedGeneration": 4, "selected": 2, "synced": 1, "failed": 1},
    }));
    assert_eq!(readable.stored_status().map(|s| s.synced), Some(1));
    assert_eq!(readable.observed_generation(), Some(4));
    let unreadable = stored(json!({
        "metadata": {"name": "a"},
        "status": {"observedGeneration": 5, "selected": "many"},
    }));
    assert_eq!(unreadable.stored_status(), None);
    assert_eq!(unreadable.observed_generation(), Some(5));
    assert!(unreadable.status.is_some(), "a status is there");
    let none = stored(json!({"metadata": {"name": "a"}}));
    assert_eq!((&none.status, none.observed_generation()), (&None, None));
}

#[test]
fn its_resource_is_the_clustermirror_s() {
    assert_eq!(
        StoredClusterMirror::url_path(&(), None),
        ClusterMirror::url_path(&(), None)
    );
    assert_eq!(
        StoredClusterMirror::api_version(&()),
        ClusterMirror::api_version(&())
    );
    assert_eq!(StoredClusterMirror::kind(&()), "ClusterMirror");
}

#[test]
fn a_secret_published_as_configmaps_is_copied_as_a_configmap() {
    let published = stored(json!({
        "metadata": {"name": "corp-ca"},
        "spec": {
            "source": {"kind": "Secret", "namespace": "ns", "name": "corp-tls"},
            "target": {"namespaceSelector": {}, "kind": "ConfigMap", "keys": [{"key": "ca.crt"}]},
        },
    }));
    assert_eq!(published.copy_kind(), Some(SourceKind::ConfigMap));
    let copied = stored(json!({
        "metadata": {"name": "corp-tls"},
        "spec": {
            "source": {"kind": "Secret", "namespace": "ns", "name": "corp-tls"},
            "target": {"namespaceSelector": {}, "kind": "Secret"},
        },
    }));
    assert_eq!(copied.copy_kind(), Some(SourceKind::Secret));
}
