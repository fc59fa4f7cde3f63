use serde_json::json;

use crate::api::DeletionPolicy;

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
mod takeover;

fn mk_request(spec: serde_json::Value) -> Request {
    let meta = ObjectMeta {
        name: Some("corp-ca".into()),
        uid: Some("cm-uid".into()),
        generation: Some(3),
        ..ObjectMeta::default()
    };
    Request::of(&meta, Some(&spec)).unwrap()
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
    let asked = request.copy_in(namespace);
    desired(&bound, &asked, &install_of(selector), &()).unwrap()
}

/// The label-driven mirror of `source` in `team-a`, as the install of
/// `selector` writes it.
fn mirror_of_by(source: &ConfigMap, selector: &str) -> ConfigMap {
    let asked = Asked::Mirror {
        namespace: "team-a",
    };
    desired(source, &asked, &install_of(selector), &()).unwrap()
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
    let meta = ObjectMeta::default();
    let missing = json!({"source": {"kind": "Secret", "namespace": "ns"}, "target": {"namespaceSelector": {}}});
    let why = Request::of(&meta, Some(&missing)).unwrap_err();
    assert!(why.contains("spec") && why.contains("`name`"), "{why}");
    let bad_glob = json!({
        "source": {"kind": "Secret", "namespace": "ns", "name": "a"},
        "target": {"namespaceSelector": {}, "namespaces": ["Team_A"]},
    });
    assert!(
        Request::of(&meta, Some(&bad_glob))
            .unwrap_err()
            .contains("Team_A")
    );
    assert!(Request::of(&meta, None).is_err());
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

fn prune_rules<'a>(kind: &'a str, reserved: &'a [String], consent: &'a Consent) -> PruneRules<'a> {
    PruneRules {
        kind,
        selector: "sel=1",
        reserved_names: reserved,
        consent,
    }
}

fn seen(request: Option<&Request>, deletion: Option<Witnessed>) -> Seen<'_> {
    Seen {
        listed: true,
        exists: request.is_some(),
        request,
        deletion,
    }
}

#[test]
fn a_suspended_clustermirror_keeps_every_copy_whatever_its_spec_becomes() {
    let request = prod_teams();
    let copy = copy_of(
        &request,
        &mk_source("colors", &[("a", "1")]),
        "team-a",
        "sel=1",
    );
    let consent = consent();
    let reserved = ["shared".to_owned()];
    let unselected = mk_namespace("team-a", mk_map(&[]));
    let mut suspended = request.clone();
    suspended.suspend = true;
    suspended.kind = "Secret".into();
    suspended.source_name = "other".into();
    suspended.target_name = "renamed".into();
    let fate = |request: &Request, reserved: &[String]| {
        copy_fate(
            &copy.metadata,
            Some(&unselected),
            &prune_rules("ConfigMap", reserved, &consent),
            &seen(Some(request), None),
        )
    };
    assert_eq!(fate(&suspended, &reserved), CopyFate::Keep);
    let mut resumed = suspended.clone();
    resumed.suspend = false;
    assert_eq!(fate(&resumed, &[]), CopyFate::Unwanted);
    let selected = copy_fate(
        &copy.metadata,
        Some(&prod("team-a")),
        &prune_rules("ConfigMap", &reserved, &consent),
        &seen(Some(&request), None),
    );
    assert_eq!(selected, CopyFate::Unwanted, "a name reserved later");
}

#[test]
fn only_a_deletion_seen_with_its_crd_live_removes_copies_and_an_absence_orphans_them() {
    let request = prod_teams();
    let copy = copy_of(
        &request,
        &mk_source("colors", &[("a", "1")]),
        "team-a",
        "sel=1",
    );
    assert_eq!(bound_cluster_mirror_uid(&copy.metadata), Some("cm-uid"));
    let consent = consent();
    let rules = prune_rules("ConfigMap", &[], &consent);
    let fate = |seen: Seen<'_>| copy_fate(&copy.metadata, Some(&prod("team-a")), &rules, &seen);
    let witnessed = |policy, crd_live| Witnessed { policy, crd_live };
    assert_eq!(fate(seen(None, None)), CopyFate::Orphaned, "absent, unseen");
    assert_eq!(
        fate(seen(None, Some(witnessed(DeletionPolicy::Delete, None)))),
        CopyFate::Deleted(DeletionPolicy::Delete)
    );
    assert_eq!(
        fate(seen(
            None,
            Some(witnessed(DeletionPolicy::Orphan, Some(true)))
        )),
        CopyFate::Deleted(DeletionPolicy::Orphan)
    );
    assert_eq!(
        fate(seen(
            None,
            Some(witnessed(DeletionPolicy::Delete, Some(false)))
        )),
        CopyFate::Orphaned,
        "gone with its CRD"
    );
    let unlisted = Seen {
        listed: false,
        ..seen(None, None)
    };
    assert_eq!(fate(unlisted), CopyFate::Keep);
    let unreadable = Seen {
        exists: true,
        ..seen(None, None)
    };
    assert_eq!(fate(unreadable), CopyFate::Keep, "there, if unreadable");
    let mut other_install = copy.metadata.clone();
    other_install
        .annotations
        .as_mut()
        .unwrap()
        .insert(SOURCE_SELECTOR_ANNOTATION.into(), "sel=2".into());
    let theirs = copy_fate(
        &other_install,
        Some(&prod("team-a")),
        &rules,
        &seen(None, None),
    );
    assert_eq!(theirs, CopyFate::Keep);
}

#[test]
fn a_released_copy_keeps_its_content_and_the_labels_it_was_given_and_loses_every_mark() {
    let request = prod_teams();
    let mut copy = copy_of(
        &request,
        &mk_source("colors", &[("a", "1")]),
        "team-a",
        "sel=1",
    );
    copy.metadata
        .annotations
        .as_mut()
        .unwrap()
        .insert("workshop.io/future".into(), "x".into());
    copy.metadata
        .labels
        .as_mut()
        .unwrap()
        .insert(MANAGED_BY_LABEL.into(), "configmap-mirror".into());
    let data = copy.data.clone();
    release(&mut copy.metadata);
    let keys: Vec<&String> = copy
        .metadata
        .labels
        .iter()
        .flatten()
        .chain(copy.metadata.annotations.iter().flatten())
        .map(|(key, _)| key)
        .collect();
    assert_eq!(keys, ["tier", "note"], "only what the spec asked for");
    assert_eq!(copy.data, data, "the content is not touched");
    assert_eq!(copy.metadata.name.as_deref(), Some("shared"));
}
