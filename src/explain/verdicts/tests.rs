use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::{
    ByteString,
    api::core::v1::{ConfigMap, Secret},
    apimachinery::pkg::apis::meta::v1::ObjectMeta,
    jiff::{SignedDuration, Timestamp},
};

use super::*;
use crate::{
    contract::{MANAGED_BY_LABEL, MANAGER_NAME, SOURCE_SELECTOR_ANNOTATION},
    decisions::consent::{ACCEPT_MIRRORS_FROM_ANNOTATION, Consent, NamespaceFacts},
    decisions::desired::{desired_companion, desired_mirror, finished},
    decisions::selector::Selector,
    decisions::targets::{self, MIRROR_TO_ANNOTATION, Targets, wants_mirror},
    kind::{MirroredKind, secret::SecretDigestKey},
    test_fixtures::{
        SUFFIX, mk_configmap, mk_consenting_labels, mk_map, mk_mirrored_source, mk_source,
        source_keys, with_annotations,
    },
};

const SELECTOR: &str = "workshop.io/managed=true";

fn install() -> Install {
    let consent = |selector| {
        Consent::new(
            Selector::parse(selector).unwrap(),
            ["kube-system".to_owned()],
        )
    };
    Install {
        selector: SELECTOR.into(),
        source_selector: Selector::parse(SELECTOR).unwrap(),
        source_label_keys: source_keys(),
        suffix: SUFFIX.into(),
        configmaps: consent("workshop.io/accept-mirrors=true"),
        secrets: consent("workshop.io/accept-secret-mirrors=true"),
        reserved_names: targets::reserved_names(&["reserved".to_owned()]),
        refused_secret_types: Default::default(),
    }
}

fn namespace(name: &str, labels: &[(&str, &str)], accept_from: Option<&str>) -> NamespaceFacts {
    NamespaceFacts {
        name: name.into(),
        labels: mk_map(labels),
        accept_from: accept_from.map(str::to_owned),
    }
}

fn consenting(name: &str) -> NamespaceFacts {
    NamespaceFacts {
        name: name.into(),
        labels: mk_consenting_labels(),
        accept_from: None,
    }
}

/// As the controller writes them.
fn companion_of<K: MirroredKind>(source: &K, key: &K::DigestKey) -> K {
    let companion = desired_companion(source, SUFFIX, key).unwrap();
    stored(finished(companion, source, SELECTOR, &source_keys()).unwrap())
}

fn mirror_in<K: MirroredKind>(source: &K, namespace: &str, key: &K::DigestKey) -> K {
    let mirror = desired_mirror(source, namespace, key).unwrap();
    stored(finished(mirror, source, SELECTOR, &source_keys()).unwrap())
}

fn stored<K: MirroredKind>(mut object: K) -> K {
    object.meta_mut().uid = Some("copy-uid".into());
    object.meta_mut().resource_version = Some("42".into());
    object
}

fn scene<K: MirroredKind>(
    source: K,
    namespaces: Vec<NamespaceFacts>,
    companion: Option<K>,
    at_name: Vec<(&str, Option<K>)>,
) -> SourceScene<K> {
    SourceScene {
        source,
        preview: false,
        companion: Ok(companion),
        namespaces: Namespaces {
            known: namespaces,
            ..Namespaces::default()
        },
        at_name: at_name
            .into_iter()
            .map(|(ns, object)| (ns.to_owned(), Ok(object)))
            .collect(),
        copies: Some(Vec::new()),
        contested: BTreeSet::new(),
    }
}

fn verdict(rows: &[Row], what: What, namespace: &str) -> Verdict {
    rows.iter()
        .find(|row| row.what == what && row.namespace == namespace)
        .unwrap_or_else(|| panic!("no {what:?} row for {namespace:?} in {rows:#?}"))
        .verdict
}

#[test]
fn each_namespace_a_source_asks_for_gets_the_controller_s_verdict() {
    let install = install();
    let source = mk_mirrored_source("*");
    let namespaces = vec![
        namespace("ns", &[("workshop.io/accept-mirrors", "true")], None),
        consenting("in"),
        consenting("gone"),
        namespace("refusing", &[], None),
        namespace(
            "secrets-only",
            &[("workshop.io/accept-secret-mirrors", "true")],
            None,
        ),
        namespace(
            "picky",
            &[("workshop.io/accept-mirrors", "true")],
            Some("platform"),
        ),
        namespace(
            "typo",
            &[("workshop.io/accept-mirrors", "true")],
            Some("ns,,Bad"),
        ),
        consenting("kube-system"),
        consenting("taken"),
    ];
    let theirs = mk_configmap("taken", "colors");
    let scene = scene(
        source.clone(),
        namespaces.clone(),
        Some(companion_of(&source, &())),
        vec![
            ("in", Some(mirror_in(&source, "in", &()))),
            ("gone", None),
            ("taken", Some(theirs)),
        ],
    );
    let rows = explain_source(&scene, &install, &());
    assert_eq!(verdict(&rows, What::Source, "ns"), Verdict::Managed);
    assert_eq!(verdict(&rows, What::Companion, "ns"), Verdict::InSync);
    for (namespace, expected) in [
        ("ns", Verdict::SourceNamespace),
        ("in", Verdict::InSync),
        ("gone", Verdict::Missing),
        ("refusing", Verdict::NotConsenting),
        ("secrets-only", Verdict::KindNotAccepted),
        ("picky", Verdict::SourceNamespaceNotAccepted),
        ("typo", Verdict::InvalidAcceptMirrorsFrom),
        ("kube-system", Verdict::Protected),
        ("taken", Verdict::NameTaken),
    ] {
        assert_eq!(
            verdict(&rows, What::Mirror, namespace),
            expected,
            "{namespace}"
        );
    }
    // Where a mirror should be is what the controller's own test says.
    let targets = Targets::of(&source.metadata).unwrap().unwrap();
    for facts in &namespaces {
        let should = wants_mirror(&targets, "ns", facts, &install.configmaps);
        let said = verdict(&rows, What::Mirror, &facts.name);
        let refused = matches!(
            said,
            Verdict::SourceNamespace
                | Verdict::NotConsenting
                | Verdict::KindNotAccepted
                | Verdict::SourceNamespaceNotAccepted
                | Verdict::InvalidAcceptMirrorsFrom
                | Verdict::Protected
        );
        assert_eq!(should, !refused, "{}: {said:?}", facts.name);
    }
    assert_eq!(
        mirror_namespaces(&source, &scene.namespaces, &install),
        ["in", "gone", "taken"]
    );
}

#[test]
fn a_name_or_glob_matching_no_namespace_is_said() {
    let source = mk_mirrored_source("missing,team-*,in");
    let scene = scene(
        source.clone(),
        vec![consenting("in")],
        None,
        vec![("in", None)],
    );
    let rows = explain_source(&scene, &install(), &());
    assert_eq!(
        verdict(&rows, What::Mirror, "missing"),
        Verdict::NoSuchNamespace
    );
    assert_eq!(
        verdict(&rows, What::Mirror, "team-*"),
        Verdict::NoSuchNamespace
    );
    assert_eq!(verdict(&rows, What::Companion, "ns"), Verdict::Missing);
    assert_eq!(verdict(&rows, What::Mirror, "in"), Verdict::Missing);
}

#[test]
fn a_source_the_install_does_not_manage_says_why_and_nothing_else() {
    let install = install();
    let mut unlabeled = mk_mirrored_source("*");
    unlabeled.metadata.labels = None;
    let mut copy = mk_mirrored_source("*");
    copy.metadata
        .labels
        .get_or_insert_with(BTreeMap::new)
        .insert(MANAGED_BY_LABEL.into(), MANAGER_NAME.into());
    let bad_list = with_annotations(
        mk_mirrored_source("*"),
        &[("workshop.io/copy-labels", "ok,,")],
    );
    for (source, expected) in [
        (unlabeled, Verdict::NotSelected),
        (copy, Verdict::IsACopy),
        (bad_list, Verdict::InvalidCopyList),
    ] {
        let rows = explain_source(
            &scene(source, vec![consenting("in")], None, vec![]),
            &install,
            &(),
        );
        assert_eq!(rows.len(), 1, "{rows:#?}");
        assert_eq!(rows[0].verdict, expected);
    }
}

#[test]
fn a_service_account_token_is_refused_as_the_kind_refuses_it() {
    let mut token = secret("token", &[("token", "value")]);
    token.type_ = Some("kubernetes.io/service-account-token".into());
    let rows = explain_source(&scene(token, vec![], None, vec![]), &install(), &key());
    assert_eq!(rows[0].verdict, Verdict::RefusedType);
    assert!(
        rows[0].detail.contains("SourceNotCopyable"),
        "{}",
        rows[0].detail
    );
}

#[test]
fn a_name_too_long_for_a_companion_still_has_its_mirrors() {
    let long = "a".repeat(250);
    let mut source = mk_mirrored_source("in");
    source.metadata.name = Some(long.clone());
    let scene = scene(
        source.clone(),
        vec![consenting("in")],
        None,
        vec![("in", None)],
    );
    let rows = explain_source(&scene, &install(), &());
    assert_eq!(rows[0].verdict, Verdict::NameTooLong);
    assert!(rows.iter().all(|row| row.what != What::Companion));
    assert_eq!(verdict(&rows, What::Mirror, "in"), Verdict::Missing);
}

#[test]
fn a_reserved_name_is_never_mirrored() {
    let mut source = mk_mirrored_source("in");
    source.metadata.name = Some("reserved".into());
    let scene = scene(source.clone(), vec![consenting("in")], None, vec![]);
    let install = install();
    assert!(mirror_namespaces(&source, &scene.namespaces, &install).is_empty());
    let rows = explain_source(&scene, &install, &());
    assert_eq!(verdict(&rows, What::Mirror, "in"), Verdict::ReservedName);
}

#[test]
fn malformed_targets_keep_the_mirrors_written_before() {
    let source = mk_mirrored_source("team_a,,");
    let old_source = mk_mirrored_source("in");
    let mut scene = scene(source.clone(), vec![consenting("in")], None, vec![]);
    scene.copies = Some(vec![mirror_in(&old_source, "in", &()).metadata]);
    let rows = explain_source(&scene, &install(), &());
    assert_eq!(verdict(&rows, What::Mirror, ""), Verdict::InvalidTargets);
    assert_eq!(verdict(&rows, What::Mirror, "in"), Verdict::InvalidTargets);
}

#[test]
fn a_mirror_where_the_source_no_longer_asks_is_unwanted() {
    let source = mk_mirrored_source("in");
    let mut scene = scene(
        source.clone(),
        vec![consenting("in"), consenting("old")],
        None,
        vec![("in", Some(mirror_in(&source, "in", &())))],
    );
    scene.copies = Some(vec![
        mirror_in(&source, "in", &()).metadata,
        mirror_in(&source, "old", &()).metadata,
    ]);
    let rows = explain_source(&scene, &install(), &());
    assert_eq!(verdict(&rows, What::Mirror, "in"), Verdict::InSync);
    assert_eq!(verdict(&rows, What::Mirror, "old"), Verdict::Unwanted);
}

#[test]
fn a_preview_shows_who_would_receive_before_the_annotation_is_written() {
    let source = mk_source("colors", &[("a", "1")]);
    let preview = Preview {
        mirror_to: Some("in,refusing".into()),
        mirror_to_selector: None,
    };
    let previewed = preview.apply(&source);
    let namespaces = Namespaces {
        known: vec![consenting("in"), namespace("refusing", &[], None)],
        ..Namespaces::default()
    };
    let install = install();
    assert_eq!(mirror_namespaces(&previewed, &namespaces, &install), ["in"]);
    let mut scene = scene(previewed, namespaces.known, None, vec![("in", None)]);
    scene.preview = true;
    let rows = explain_source(&scene, &install, &());
    assert_eq!(verdict(&rows, What::Mirror, "in"), Verdict::WouldReceive);
    assert_eq!(
        verdict(&rows, What::Mirror, "refusing"),
        Verdict::NotConsenting
    );
    assert!(mirror_namespaces(&source, &scene.namespaces, &install).is_empty());
}

#[test]
fn a_companion_behind_its_source_differs_from_one_edited_by_hand() {
    let install = install();
    let old = mk_source("colors", &[("a", "old")]);
    let new = mk_source("colors", &[("a", "new")]);
    let behind = scene(new.clone(), vec![], Some(companion_of(&old, &())), vec![]);
    let rows = explain_source(&behind, &install, &());
    assert_eq!(
        verdict(&rows, What::Companion, "ns"),
        Verdict::SourceChanged
    );
    let mut edited = companion_of(&new, &());
    edited.data = Some(mk_map(&[("a", "hacked")]));
    let rows = explain_source(
        &scene(new.clone(), vec![], Some(edited), vec![]),
        &install,
        &(),
    );
    assert_eq!(verdict(&rows, What::Companion, "ns"), Verdict::Drifted);
    let mut frozen = companion_of(&old, &());
    frozen.immutable = Some(true);
    let rows = explain_source(&scene(new, vec![], Some(frozen), vec![]), &install, &());
    assert_eq!(verdict(&rows, What::Companion, "ns"), Verdict::MustRecreate);
}

#[test]
fn a_contested_copy_out_of_place_is_said_to_be_contested() {
    let source = mk_source("colors", &[("a", "1")]);
    let mut edited = companion_of(&source, &());
    edited.data = Some(mk_map(&[("a", "theirs")]));
    let mut scene = scene(source, vec![], Some(edited), vec![]);
    let now = Timestamp::now();
    let warnings = vec![Warning {
        regarding: "ns/colors".into(),
        reason: "CopyContested".into(),
        message: "ns/colors-synced was rewritten by someone else 5 times within a minute; restoring it slowly from now on".into(),
        count: 1,
        last_seen: Some(now - SignedDuration::from_mins(2)),
    }];
    scene.contested = contested_copies(&warnings, now);
    let rows = explain_source(&scene, &install(), &());
    assert_eq!(verdict(&rows, What::Companion, "ns"), Verdict::Contested);
    let later = now + CONTESTED_RECENTLY;
    assert!(contested_copies(&warnings, later).is_empty());
}

fn key() -> SecretDigestKey {
    SecretDigestKey::from_bytes(&[7; SecretDigestKey::LEN]).unwrap()
}

fn secret(name: &str, data: &[(&str, &str)]) -> Secret {
    Secret {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("ns".into()),
            uid: Some("uid-1".into()),
            labels: Some(mk_map(&[("workshop.io/managed", "true")])),
            annotations: Some(mk_map(&[(MIRROR_TO_ANNOTATION, "in")])),
            ..ObjectMeta::default()
        },
        type_: Some("Opaque".into()),
        data: Some(
            data.iter()
                .map(|(k, v)| ((*k).to_owned(), ByteString(v.as_bytes().to_vec())))
                .collect(),
        ),
        ..Secret::default()
    }
}

#[test]
fn a_secret_copy_s_keyed_checksum_is_not_claimed_checked() {
    let install = install();
    let source = secret("db", &[("password", "hunter2")]);
    let in_secrets = namespace("in", &[("workshop.io/accept-secret-mirrors", "true")], None);
    // Written by the install under its key, which explain does not hold.
    let install_key = key();
    let explain_key = Secret::comparison_key();
    let companion = companion_of(&source, &install_key);
    let mirror = mirror_in(&source, "in", &install_key);
    let rows = explain_source(
        &scene(
            source.clone(),
            vec![in_secrets.clone()],
            Some(companion.clone()),
            vec![("in", Some(mirror))],
        ),
        &install,
        &explain_key,
    );
    assert_eq!(
        verdict(&rows, What::Companion, "ns"),
        Verdict::InSyncUnverified
    );
    assert_eq!(
        verdict(&rows, What::Mirror, "in"),
        Verdict::InSyncUnverified
    );
    assert!(
        rows[1].detail.contains("unknown (keyed)"),
        "{}",
        rows[1].detail
    );

    let mut changed = companion.clone();
    changed.data = secret("db", &[("password", "other")]).data;
    let rows = explain_source(
        &scene(source.clone(), vec![], Some(changed), vec![]),
        &install,
        &explain_key,
    );
    assert_eq!(verdict(&rows, What::Companion, "ns"), Verdict::Differs);

    let mut relabeled = companion;
    relabeled.metadata.labels = None;
    let rows = explain_source(
        &scene(source, vec![], Some(relabeled), vec![]),
        &install,
        &explain_key,
    );
    assert_eq!(verdict(&rows, What::Companion, "ns"), Verdict::Drifted);
}

#[test]
fn no_row_about_a_secret_holds_its_value() {
    let install = install();
    let source = secret("db", &[("password", "hunter2")]);
    let mut drifted = companion_of(&source, &key());
    drifted.data = secret("db", &[("password", "swordfish")]).data;
    let mut scene = scene(source.clone(), vec![], Some(drifted), vec![]);
    scene.namespaces.list_error = Some("forbidden".into());
    let rows = explain_source(&scene, &install, &Secret::comparison_key());
    let text = format!("{rows:?}");
    for value in ["hunter2", "swordfish", "aHVudGVyMg", "c3dvcmRmaXNo"] {
        assert!(!text.contains(value), "a row holds a Secret's value");
    }
}

fn copy_scene<K: MirroredKind>(
    copy: K,
    source: Option<K>,
    namespace: Option<NamespaceFacts>,
) -> CopyScene<K> {
    CopyScene {
        copy,
        source: Some(Ok(source)),
        namespace: Ok(namespace),
        contested: BTreeSet::new(),
    }
}

#[test]
fn a_copy_says_whose_it_is_and_whether_it_is_wanted() {
    let install = install();
    let source = mk_mirrored_source("in");
    let mirror = mirror_in(&source, "in", &());
    let rows = explain_copy(
        &copy_scene(mirror.clone(), Some(source.clone()), Some(consenting("in"))),
        &install,
        &(),
    );
    assert_eq!(rows[0].verdict, Verdict::InSync);
    assert_eq!(rows[0].source.as_deref(), Some("ns/colors"));
    assert_eq!(rows[1].verdict, Verdict::Managed);

    let withdrawn = namespace("in", &[], None);
    let rows = explain_copy(
        &copy_scene(mirror.clone(), Some(source.clone()), Some(withdrawn)),
        &install,
        &(),
    );
    assert_eq!(rows[0].verdict, Verdict::Unwanted);
    assert!(rows[0].detail.contains("refuses"), "{}", rows[0].detail);

    let rows = explain_copy(
        &copy_scene(mirror.clone(), None, Some(consenting("in"))),
        &install,
        &(),
    );
    assert_eq!(rows[0].verdict, Verdict::Unwanted);

    let mut other = mirror.clone();
    other
        .metadata
        .annotations
        .get_or_insert_with(BTreeMap::new)
        .insert(SOURCE_SELECTOR_ANNOTATION.into(), "team=b".into());
    let rows = explain_copy(
        &copy_scene(other, Some(source.clone()), Some(consenting("in"))),
        &install,
        &(),
    );
    assert_eq!(rows[0].verdict, Verdict::OtherInstall);
    assert!(rows[0].detail.contains("team=b"), "{}", rows[0].detail);

    let mut unmarked = mirror;
    if let Some(annotations) = unmarked.metadata.annotations.as_mut() {
        annotations.remove(SOURCE_SELECTOR_ANNOTATION);
    }
    let mut unlabeled = source.clone();
    unlabeled.metadata.labels = None;
    let rows = explain_copy(
        &copy_scene(unmarked, Some(unlabeled), Some(consenting("in"))),
        &install,
        &(),
    );
    assert_eq!(rows[0].verdict, Verdict::Unmarked);
}

#[test]
fn an_object_of_someone_else_at_a_companion_s_name_is_not_a_copy() {
    let install = install();
    let source = mk_source("colors", &[("a", "1")]);
    let mut theirs = mk_configmap("ns", "colors-synced");
    theirs.metadata.labels = Some(mk_map(&[(MANAGED_BY_LABEL, "helm")]));
    assert!(is_copy(&theirs, &install, true));
    assert!(!is_copy(&source, &install, true));
    let rows = explain_copy(&copy_scene(theirs, Some(source), None), &install, &());
    assert_eq!(rows[0].verdict, Verdict::NotACopy);
    assert!(rows[0].detail.contains("helm"), "{}", rows[0].detail);
    assert_eq!(rows[0].source.as_deref(), Some("ns/colors"));
}

#[test]
fn a_namespace_says_what_it_accepts_and_which_sources_it_refuses() {
    let install = install();
    let picky = namespace(
        "picky",
        &[("workshop.io/accept-mirrors", "true")],
        Some("platform-*"),
    );
    let rows = consent_rows(&picky, &install);
    assert_eq!(rows[0].verdict, Verdict::Accepts);
    assert_eq!(rows[1].verdict, Verdict::DoesNotAccept);
    assert_eq!(rows[2].verdict, Verdict::FromListed);
    let mut broken = picky.clone();
    broken.accept_from = Some("Bad_Name".into());
    assert_eq!(
        consent_rows(&broken, &install)[2].verdict,
        Verdict::InvalidAcceptMirrorsFrom
    );
    assert_eq!(
        consent_rows(&consenting("kube-system"), &install)[0].verdict,
        Verdict::ProtectedNamespace
    );

    let mut platform = mk_mirrored_source("picky");
    platform.metadata.namespace = Some("platform-a".into());
    let mut tenant = mk_mirrored_source("pick*");
    tenant.metadata.namespace = Some("tenant".into());
    tenant.metadata.name = Some("tenant-config".into());
    let unrelated = mk_mirrored_source("elsewhere");
    let sources = vec![
        platform.metadata.clone(),
        tenant.metadata.clone(),
        unrelated.metadata.clone(),
    ];
    let scene = NamespaceScene::<ConfigMap> {
        mirrors: Ok(Vec::new()),
        sources: Ok(sources),
        at_name: BTreeMap::from([("colors".to_owned(), Ok(None))]),
    };
    let rows = explain_namespace(&picky, &scene, &install, &());
    assert_eq!(rows.len(), 2, "{rows:#?}");
    let of = |source: &str| {
        rows.iter()
            .find(|row| row.source.as_deref() == Some(source))
            .unwrap_or_else(|| panic!("no row for {source}"))
            .verdict
    };
    assert_eq!(of("platform-a/colors"), Verdict::Missing);
    assert_eq!(
        of("tenant/tenant-config"),
        Verdict::SourceNamespaceNotAccepted
    );
    assert!(rows[1].detail.contains(ACCEPT_MIRRORS_FROM_ANNOTATION));
}

#[test]
fn a_namespace_s_mirrors_are_explained_as_copies() {
    let install = install();
    let source = mk_mirrored_source("in");
    let mut stale = mirror_in(&source, "in", &());
    stale.data = Some(mk_map(&[("a", "hacked")]));
    let scene = NamespaceScene::<ConfigMap> {
        mirrors: Ok(vec![copy_scene(
            stale,
            Some(source.clone()),
            Some(consenting("in")),
        )]),
        sources: Ok(vec![source.metadata.clone()]),
        at_name: BTreeMap::new(),
    };
    let rows = explain_namespace(&consenting("in"), &scene, &install, &());
    assert_eq!(rows.len(), 1, "one row per source: {rows:#?}");
    assert_eq!(rows[0].verdict, Verdict::Drifted);
}

#[test]
fn namespaces_that_cannot_be_read_are_said_so() {
    let source = mk_mirrored_source("named,team-*,ns");
    let mut scene = scene(source, vec![], None, vec![]);
    scene.namespaces.list_error = Some("forbidden: cannot list namespaces".into());
    scene
        .namespaces
        .unreadable
        .insert("named".into(), "forbidden: cannot get it".into());
    scene
        .namespaces
        .unreadable
        .insert("ns".into(), "forbidden: cannot get it".into());
    let rows = explain_source(&scene, &install(), &());
    assert_eq!(verdict(&rows, What::Mirror, "ns"), Verdict::SourceNamespace);
    assert_eq!(verdict(&rows, What::Mirror, "named"), Verdict::CannotRead);
    assert_eq!(verdict(&rows, What::Mirror, "*"), Verdict::CannotRead);
    assert!(
        rows.iter()
            .all(|row| row.verdict != Verdict::NoSuchNamespace),
        "{rows:#?}"
    );
    assert_eq!(
        named_namespaces(&mk_mirrored_source("named,team-*")),
        ["named"]
    );
}
