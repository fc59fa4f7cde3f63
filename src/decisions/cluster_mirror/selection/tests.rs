use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::json;

use super::*;
use crate::api::mirror::stored::StoredMirror;
use crate::api::{StoredClusterMirror, cluster_mirror::reason};
use crate::decisions::grants::{Grant, NamespaceGrants};
use crate::test_fixtures::{mk_consent, mk_consenting_labels, mk_map, mk_namespace};

/// A Mirror in `team-a` of the ConfigMap `ca`, asking for `target`.
fn mirror(target: serde_json::Value) -> Request {
    let meta = ObjectMeta {
        name: Some("ca".into()),
        namespace: Some("team-a".into()),
        uid: Some("m-uid".into()),
        ..ObjectMeta::default()
    };
    let spec = json!({"source": {"kind": "ConfigMap", "name": "ca"}, "target": target});
    let StoredMirror(stored) = StoredMirror::read(meta, Some(&spec), None);
    Request::of(&stored).unwrap()
}

/// A ClusterMirror `ca` copying into every namespace.
fn cluster_mirror() -> Request {
    let meta = ObjectMeta {
        name: Some("ca".into()),
        ..ObjectMeta::default()
    };
    let spec = json!({
        "source": {"kind": "ConfigMap", "namespace": "platform", "name": "ca"},
        "target": {"namespaceSelector": {}},
    });
    Request::of(&StoredClusterMirror::read(meta, Some(&spec), None)).unwrap()
}

fn consenting(name: &str) -> NamespaceFacts {
    mk_namespace(name, mk_consenting_labels())
}

fn closed(name: &str) -> NamespaceFacts {
    mk_namespace(name, mk_map(&[]))
}

/// A namespace whose labels do not consent, with one grant letting
/// ConfigMaps in from `from`.
fn granting(name: &str, from: &str) -> NamespaceFacts {
    let spec = json!({"from": [{"namespace": from, "kinds": ["ConfigMap"]}]});
    let grant = Grant::parse("from-a", Some(&spec));
    closed(name).with_grants(NamespaceGrants::known(vec![grant]))
}

#[test]
fn a_mirror_is_read_as_a_request_from_its_own_namespace_naming_its_exact_targets() {
    let request = mirror(json!({"namespaces": ["team-b", "team-c-*"]}));
    assert_eq!(request.source_namespace, "team-a");
    assert_eq!(
        request.origin,
        Origin::Mirror {
            named: vec!["team-b".into()]
        }
    );
    assert_eq!(request.key().to_string(), "mirror/team-a/ca");
}

#[test]
fn a_mirror_selects_only_namespaces_that_consent_by_labels_or_a_grant() {
    let request = mirror(json!({"namespaces": ["team-*"]}));
    let consent = mk_consent();
    assert_eq!(
        request.selection(&consenting("team-b"), &consent),
        Selection::Selected(Some(Admission::ByLabels))
    );
    assert_eq!(
        request.selection(&granting("team-c", "team-a"), &consent),
        Selection::Selected(Some(Admission::ByGrant("from-a".into())))
    );
    for refusing in [closed("team-d"), granting("team-e", "team-z")] {
        assert_eq!(
            request.selection(&refusing, &consent),
            Selection::NotSelected,
            "reached by a glob only: {}",
            refusing.name
        );
    }
    assert_eq!(
        request.selection(&consenting("other"), &consent),
        Selection::NotSelected,
        "not asked for"
    );
    assert_eq!(
        request.selection(&consenting("team-a"), &consent),
        Selection::NotSelected,
        "its own namespace, which the glob matches, is never written"
    );
}

#[test]
fn a_namespace_named_exactly_that_refuses_is_a_failure_with_its_reason() {
    let request = mirror(json!({"namespaces": ["team-b", "kube-system"]}));
    let consent = mk_consent();
    let Selection::Refused(why) = request.selection(&closed("team-b"), &consent) else {
        panic!("a failure")
    };
    assert_eq!(why.reason(), reason::NOT_CONSENTING);
    assert!(why.message().contains("MirrorGrant"), "{}", why.message());
    let Selection::Refused(why) = request.selection(&consenting("kube-system"), &consent) else {
        panic!("a failure")
    };
    assert_eq!(why.reason(), reason::NAMESPACE_PROTECTED);
    assert!(!request.selects(&consenting("kube-system"), &consent));
}

#[test]
fn consent_not_known_yet_writes_nothing_and_keeps_what_is_there() {
    let request = mirror(json!({"namespaces": ["team-b"]}));
    let unknown = closed("team-b").with_grants(NamespaceGrants::NotKnown);
    let selection = request.selection(&unknown, &mk_consent());
    assert_eq!(selection, Selection::Undecided);
    assert!(selection.keeps());
    assert!(!request.selects(&unknown, &mk_consent()));
    assert!(request.claims(&unknown, &mk_consent(), true, true), "held");
    assert!(!request.claims(&unknown, &mk_consent(), true, false));
}

#[test]
fn a_selector_narrows_the_names_and_selects_alone_when_given_alone() {
    let both = mirror(json!({
        "namespaces": ["team-b", "team-c"],
        "namespaceSelector": {"matchLabels": {"env": "prod"}},
    }));
    let mut prod = mk_consenting_labels();
    prod.insert("env".into(), "prod".into());
    let consent = mk_consent();
    assert!(both.selects(&mk_namespace("team-b", prod.clone()), &consent));
    assert_eq!(
        both.selection(&consenting("team-c"), &consent),
        Selection::NotSelected,
        "named, but not selected by the selector"
    );
    assert!(
        matches!(
            both.selection(&closed("team-c"), &consent),
            Selection::Refused(NamedRefusal::NotConsenting)
        ),
        "named and refusing: a failure, whatever its labels, which the status does not tell"
    );
    let selector = mirror(json!({"namespaceSelector": {"matchLabels": {"env": "prod"}}}));
    assert!(selector.selects(&mk_namespace("anywhere", prod), &consent));
}

#[test]
fn a_change_of_grants_alone_concerns_mirrors_and_no_clustermirror() {
    let before = closed("team-b");
    let after = granting("team-b", "team-a");
    let request = mirror(json!({"namespaces": ["team-b"]}));
    assert!(request.concerned_by(Some(&before), Some(&after)));
    let cluster = cluster_mirror();
    assert!(!cluster.concerned_by(Some(&before), Some(&after)));
    let relabelled = mk_namespace("team-b", mk_map(&[("env", "prod")]));
    assert!(cluster.concerned_by(Some(&before), Some(&relabelled)));
}

#[test]
fn a_clustermirror_asks_no_consent_but_that_of_protection() {
    let request = cluster_mirror();
    let consent = mk_consent();
    assert_eq!(
        request.selection(&closed("team-b"), &consent),
        Selection::Selected(None)
    );
    assert_eq!(
        request.selection(&closed("kube-system"), &consent),
        Selection::NotSelected
    );
}
