//! Which install serves a ClusterMirror, and what its spec may not ask of the
//! install's own keys.

use super::*;

#[test]
fn a_clustermirror_is_served_by_the_install_of_its_class_alone() {
    let none = prod_teams();
    assert_eq!(none.class_name, "");
    assert!(none.served_by(""));
    assert!(!none.served_by("platform"));
    let spec = json!({
        "className": "platform",
        "source": {"kind": "ConfigMap", "namespace": "ns", "name": "colors"},
        "target": {"namespaceSelector": {}},
    });
    let platform = mk_request(spec);
    assert!(platform.served_by("platform") && !platform.served_by(""));
}

#[test]
fn a_key_of_the_source_selector_on_the_copies_is_refused() {
    let request = mk_request(json!({
        "source": {"kind": "ConfigMap", "namespace": "ns", "name": "colors"},
        "target": {"namespaceSelector": {}, "labels": {"team": "a", "tier": "1"}},
    }));
    let why = request.sets_selector_keys(&["team".into()]).unwrap();
    assert!(why.contains("spec.target.labels sets team"), "{why}");
    assert!(!why.contains("tier"), "{why}");
    assert_eq!(request.sets_selector_keys(&["env".into()]), None);
}

#[test]
fn a_spec_the_install_refuses_whole_is_not_accepted_and_says_why() {
    let spec = json!({
        "source": {"kind": "ConfigMap", "namespace": "ns", "name": "colors"},
        "target": {"namespaceSelector": {}, "labels": {"workshop.io/managed": "true"}},
    });
    let object = StoredClusterMirror::read(ObjectMeta::default(), Some(&spec), None);
    let install = crate::test_fixtures::mk_install();
    let why = Request::accepted(&object, &install)
        .err()
        .unwrap_or_default();
    assert!(why.contains("workshop.io/managed"), "{why}");
    let request = mk_request(spec);
    assert_eq!(request.refused_by(&install), Some(why));
    let plain = mk_request(json!({
        "source": {"kind": "ConfigMap", "namespace": "ns", "name": "colors"},
        "target": {"namespaceSelector": {}, "labels": {"tier": "1"}},
    }));
    assert_eq!(plain.refused_by(&install), None);
    let unreadable = StoredClusterMirror::read(ObjectMeta::default(), None, None);
    assert!(Request::accepted(&unreadable, &install).is_err(), "no spec");
}

#[test]
fn a_copy_another_install_wrote_for_the_same_clustermirror_is_taken_over_in_place() {
    let request = prod_teams();
    let source = mk_source("colors", &[("a", "1")]);
    let bound = request.bound_source(&source);
    let desired = |selector| copy_of(&request, &source, "team-a", selector);
    let before = desired("sel=old");
    let planned = plan::plan(
        desired("sel=new"),
        Some(&CachedCopy::of(&before)),
        &bound.metadata,
        &[],
        &(),
    );
    let Ok(Write::Replace { copy, .. }) = planned else {
        panic!("a replace of the same object: {planned:?}");
    };
    assert_eq!(
        copy.metadata.annotations.unwrap()[SOURCE_SELECTOR_ANNOTATION],
        "sel=new"
    );
}
