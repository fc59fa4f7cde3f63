use serde_json::json;

use crate::api::{DeletionPolicy, SourceKind, StoredClusterMirror};

use super::*;
use crate::contract::{
    CLUSTER_MIRROR_LABEL, MANAGED_BY_LABEL, MIRROR_OF_UID_ANNOTATION, SOURCE_SELECTOR_ANNOTATION,
};
use crate::decisions::cache_form::CachedCopy;
use crate::decisions::desired_copy::desired;
use crate::decisions::install::Install;
use crate::decisions::plan::{self, Write};
use crate::test_fixtures::{mk_install, mk_map, mk_namespace, mk_source};
use k8s_openapi::api::core::v1::ConfigMap;

mod classes;
mod fate;
mod takeover;

fn mk_request(spec: serde_json::Value) -> Request {
    let meta = ObjectMeta {
        name: Some("corp-ca".into()),
        uid: Some("cm-uid".into()),
        generation: Some(3),
        ..ObjectMeta::default()
    };
    Request::of(&StoredClusterMirror::read(meta, Some(&spec), None)).unwrap()
}

/// What `Request::of` says of the spec `spec` (None: absent).
fn why_not(spec: Option<serde_json::Value>) -> String {
    let object = StoredClusterMirror::read(ObjectMeta::default(), spec.as_ref(), None);
    Request::of(&object).unwrap_err()
}

fn prod_teams() -> Request {
    mk_request(json!({
        "source": {"kind": "ConfigMap", "namespace": "ns", "name": "colors"},
        "target": {
            "name": "shared",
            "namespaceSelector": {"matchLabels": {"env": "prod"}},
            "namespaces": ["team-*"],
            "labels": {"tier": "platform", "workshop.io/managed": "true"},
            "annotations": {"note": "from the platform team"},
        },
    }))
}

/// The settings of an install whose source selector is `selector`.
fn install_of(selector: &str) -> Install {
    Install {
        selector: selector.into(),
        ..mk_install()
    }
}

/// The request's copy of `source` in `namespace`, as the install of
/// `selector` writes it.
fn copy_of(request: &Request, source: &ConfigMap, namespace: &str, selector: &str) -> ConfigMap {
    let bound = request.bound_source(source);
    let asked = request.copy_request(None);
    desired(&bound, &asked, namespace, &install_of(selector), &()).unwrap()
}

/// The label-driven mirror of `source` in `team-a`, as the install of
/// `selector` writes it.
fn mirror_of_by(source: &ConfigMap, selector: &str) -> ConfigMap {
    let asked = CopyRequest::SOURCE_MIRRORS;
    desired(source, &asked, "team-a", &install_of(selector), &()).unwrap()
}

fn consent() -> Consent {
    cluster_consent(&["kube-system".into()], &["ns".into(), "admin".into()])
}

fn prod(name: &str) -> NamespaceFacts {
    mk_namespace(name, mk_map(&[("env", "prod")]))
}

#[test]
fn the_selector_and_the_globs_must_both_ask_and_protection_wins() {
    let request = prod_teams();
    assert!(request.selects(&prod("team-a"), &consent()));
    assert!(
        !request.selects(&prod("web"), &consent()),
        "no glob names it"
    );
    assert!(!request.selects(&mk_namespace("team-b", mk_map(&[])), &consent()));
    let everywhere = mk_request(json!({
        "source": {"kind": "ConfigMap", "namespace": "ns", "name": "colors"},
        "target": {"namespaceSelector": {}},
    }));
    assert_eq!(
        everywhere.target_name, "colors",
        "the source's name by default"
    );
    for never in ["kube-system", "ns", "admin"] {
        assert!(!everywhere.selects(&prod(never), &consent()), "{never}");
    }
    assert!(everywhere.selects(&mk_namespace("anything", mk_map(&[])), &consent()));
}

#[test]
fn a_namespace_leaving_the_selection_concerns_the_request_that_counted_it() {
    let request = prod_teams();
    let (selected, left) = (prod("team-a"), mk_namespace("team-a", mk_map(&[])));
    assert!(request.concerned_by(Some(&selected), Some(&left)), "left");
    assert!(request.concerned_by(Some(&left), Some(&selected)), "joined");
    assert!(request.concerned_by(Some(&selected), None), "deleted");
    assert!(request.concerned_by(None, Some(&selected)), "created");
    assert!(!request.concerned_by(Some(&left), Some(&left)));
    assert!(!request.concerned_by(None, Some(&prod("web"))), "no glob");
    assert!(!request.concerned_by(None, None));
}

#[test]
fn a_spec_that_cannot_be_read_says_what() {
    let missing = json!({"source": {"kind": "Secret", "namespace": "ns"}, "target": {"namespaceSelector": {}}});
    let why = why_not(Some(missing));
    assert!(why.contains("spec") && why.contains("`name`"), "{why}");
    let bad_glob = json!({
        "source": {"kind": "Secret", "namespace": "ns", "name": "a"},
        "target": {"namespaceSelector": {}, "namespaces": ["Team_A"]},
    });
    assert!(why_not(Some(bad_glob)).contains("Team_A"));
    assert_eq!(why_not(None), "it has no spec");
}

#[test]
fn a_copy_is_wanted_only_where_its_clustermirror_still_selects_it() {
    let request = prod_teams();
    let copy = copy_of(
        &request,
        &mk_source("colors", &[("a", "1")]),
        "team-a",
        "sel=1",
    );
    assert!(request.wants(&copy.metadata, &prod("team-a"), &consent()));
    assert!(!request.wants(
        &copy.metadata,
        &mk_namespace("team-a", mk_map(&[])),
        &consent()
    ));
    let mut renamed = copy.metadata.clone();
    renamed.name = Some("old-name".into());
    assert!(
        !request.wants(&renamed, &prod("team-a"), &consent()),
        "the target name changed"
    );
}
