use serde_json::json;

use crate::api::{DeletionPolicy, SourceKind, StoredClusterMirror};

use super::*;
use crate::contract::{MIRROR_OF_ANNOTATION, MIRROR_OF_UID_ANNOTATION, SOURCE_SELECTOR_ANNOTATION};
use crate::decisions::cache_form::CachedCopy;
use crate::decisions::plan::{self, Write};
use crate::test_fixtures::{mk_map, mk_namespace, mk_source};
use k8s_openapi::api::core::v1::ConfigMap;

mod classes;
mod fate;

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
fn a_copy_names_its_source_and_its_clustermirror_and_carries_only_allowed_keys() {
    let request = prod_teams();
    let bound = request.bound_source(&mk_source("colors", &[("a", "1")]));
    let copy = request
        .desired_copy(&bound, "team-a", &(), "sel=1")
        .unwrap();
    let meta = &copy.metadata;
    assert_eq!(meta.name.as_deref(), Some("shared"));
    assert_eq!(meta.namespace.as_deref(), Some("team-a"));
    let labels = meta.labels.as_ref().unwrap();
    assert_eq!(
        labels.get(CLUSTER_MIRROR_LABEL).map(String::as_str),
        Some("corp-ca")
    );
    assert_eq!(labels.get("tier").map(String::as_str), Some("platform"));
    assert!(
        !labels.contains_key("workshop.io/managed"),
        "a controller key is never set"
    );
    assert!(
        !labels.contains_key("team"),
        "the source's own labels stay home"
    );
    let annotations = meta.annotations.as_ref().unwrap();
    assert_eq!(annotations[MIRROR_OF_ANNOTATION], "ns/colors");
    assert_eq!(annotations[MIRROR_OF_UID_ANNOTATION], "uid-1.cm-uid");
    assert_eq!(annotations[SOURCE_SELECTOR_ANNOTATION], "sel=1");
    assert_eq!(annotations["note"], "from the platform team");
    assert_eq!(annotations[CARRIED_LABELS_ANNOTATION], "tier");
    assert_eq!(copy.data, Some(mk_map(&[("a", "1")])));
}

#[test]
fn a_copy_is_wanted_only_where_its_clustermirror_still_selects_it() {
    let request = prod_teams();
    let bound = request.bound_source(&mk_source("colors", &[("a", "1")]));
    let copy = request
        .desired_copy(&bound, "team-a", &(), "sel=1")
        .unwrap();
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

/// The source `colors`, as bound to the ClusterMirror `corp-ca`, and the
/// copy it wants in `team-a`, named as the label path would name a mirror.
fn colors_wanted_in_team_a() -> (ConfigMap, ConfigMap, ConfigMap) {
    let request = prod_teams();
    let source = mk_source("colors", &[("a", "1")]);
    let bound = request.bound_source(&source);
    let mut desired = request
        .desired_copy(&bound, "team-a", &(), "sel=1")
        .unwrap();
    desired.metadata.name = Some("colors".into());
    (source, bound, desired)
}

/// The one write that makes `existing` the `desired` copy of `source`.
fn plan_over(
    desired: &ConfigMap,
    existing: &ConfigMap,
    source: &ConfigMap,
) -> Result<Write<ConfigMap>, plan::NameTaken> {
    let existing = CachedCopy::of(existing);
    plan::plan(desired.clone(), Some(&existing), &source.metadata, &[], &())
}

#[test]
fn a_clustermirror_takes_over_this_install_s_own_label_driven_mirror_only() {
    let (source, bound, desired) = colors_wanted_in_team_a();
    let unmarked = crate::decisions::desired_copy::desired_mirror(&source, "team-a", &()).unwrap();
    let ours = crate::decisions::desired_copy::mark_install(unmarked.clone(), "sel=1");
    match plan_over(&desired, &ours, &bound) {
        Ok(Write::Replace { copy, why }) => {
            assert_eq!(why, plan::Difference::TakenOver);
            assert_eq!(cluster_mirror_of(&copy.metadata), Some("corp-ca"));
            assert_eq!(
                copy.metadata.annotations.as_ref().unwrap()[MIRROR_OF_UID_ANNOTATION],
                "uid-1.cm-uid"
            );
        }
        other => panic!("this install's label-driven mirror is taken over: {other:?}"),
    }
    let mut frozen = ours.clone();
    frozen.immutable = Some(true);
    assert!(
        matches!(
            plan_over(&desired, &frozen, &bound),
            Ok(Write::DeleteToRecreate { .. })
        ),
        "an immutable one is recreated"
    );
    let another_install = crate::decisions::desired_copy::mark_install(unmarked.clone(), "sel=2");
    for (existing, whose) in [
        (&unmarked, "an older release's, with no selector"),
        (&another_install, "another install's"),
    ] {
        assert_eq!(
            plan_over(&desired, existing, &bound),
            Err(plan::NameTaken),
            "{whose} label-driven mirror keeps its name"
        );
    }
}

#[test]
fn a_clustermirror_s_copy_is_taken_by_neither_another_clustermirror_nor_the_label_path() {
    let (source, bound, desired) = colors_wanted_in_team_a();
    let mut other = desired.clone();
    other
        .metadata
        .labels
        .as_mut()
        .unwrap()
        .insert(CLUSTER_MIRROR_LABEL.into(), "another".into());
    assert_eq!(
        plan_over(&desired, &other, &bound),
        Err(plan::NameTaken),
        "another ClusterMirror keeps its name"
    );
    assert_eq!(plan_over(&desired, &desired, &bound), Ok(Write::Nothing));
    let label_desired =
        crate::decisions::desired_copy::desired_mirror(&source, "team-a", &()).unwrap();
    assert_eq!(
        plan_over(&label_desired, &desired, &source),
        Err(plan::NameTaken),
        "the label path never takes a ClusterMirror's copy"
    );
}
