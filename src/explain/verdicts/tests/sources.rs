//! A source's verdicts: what it asks for, who receives, and why not.

use super::*;

#[test]
fn each_namespace_a_source_asks_for_gets_the_controller_s_verdict() {
    let rules = rules();
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
    let rows = explain_source(&scene, &rules, &());
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
        let should = wants_mirror(&targets, "ns", facts, &rules.configmaps);
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
        mirror_namespaces(&source, &scene.namespaces, &rules),
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
    let rows = explain_source(&scene, &rules(), &());
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
    let rules = rules();
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
            &rules,
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
    let rows = explain_source(&scene(token, vec![], None, vec![]), &rules(), &key());
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
    let rows = explain_source(&scene, &rules(), &());
    assert_eq!(rows[0].verdict, Verdict::NameTooLong);
    assert!(rows.iter().all(|row| row.what != What::Companion));
    assert_eq!(verdict(&rows, What::Mirror, "in"), Verdict::Missing);
}

#[test]
fn a_reserved_name_is_never_mirrored() {
    let mut source = mk_mirrored_source("in");
    source.metadata.name = Some("reserved".into());
    let scene = scene(source.clone(), vec![consenting("in")], None, vec![]);
    let rules = rules();
    assert!(mirror_namespaces(&source, &scene.namespaces, &rules).is_empty());
    let rows = explain_source(&scene, &rules, &());
    assert_eq!(verdict(&rows, What::Mirror, "in"), Verdict::ReservedName);
}

#[test]
fn malformed_targets_keep_the_mirrors_written_before() {
    let source = mk_mirrored_source("team_a,,");
    let old_source = mk_mirrored_source("in");
    let mut scene = scene(source.clone(), vec![consenting("in")], None, vec![]);
    scene.copies = Some(vec![mirror_in(&old_source, "in", &()).metadata]);
    let rows = explain_source(&scene, &rules(), &());
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
    let rows = explain_source(&scene, &rules(), &());
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
    let rules = rules();
    assert_eq!(mirror_namespaces(&previewed, &namespaces, &rules), ["in"]);
    let mut scene = scene(previewed, namespaces.known, None, vec![("in", None)]);
    scene.preview = true;
    let rows = explain_source(&scene, &rules, &());
    assert_eq!(verdict(&rows, What::Mirror, "in"), Verdict::WouldReceive);
    assert_eq!(
        verdict(&rows, What::Mirror, "refusing"),
        Verdict::NotConsenting
    );
    assert!(mirror_namespaces(&source, &scene.namespaces, &rules).is_empty());
}

#[test]
fn a_companion_behind_its_source_differs_from_one_edited_by_hand() {
    let rules = rules();
    let old = mk_source("colors", &[("a", "old")]);
    let new = mk_source("colors", &[("a", "new")]);
    let behind = scene(new.clone(), vec![], Some(companion_of(&old, &())), vec![]);
    let rows = explain_source(&behind, &rules, &());
    assert_eq!(
        verdict(&rows, What::Companion, "ns"),
        Verdict::SourceChanged
    );
    let mut edited = companion_of(&new, &());
    edited.data = Some(mk_map(&[("a", "hacked")]));
    let rows = explain_source(
        &scene(new.clone(), vec![], Some(edited), vec![]),
        &rules,
        &(),
    );
    assert_eq!(verdict(&rows, What::Companion, "ns"), Verdict::Drifted);
    let mut frozen = companion_of(&old, &());
    frozen.immutable = Some(true);
    let rows = explain_source(&scene(new, vec![], Some(frozen), vec![]), &rules, &());
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
    let rows = explain_source(&scene, &rules(), &());
    assert_eq!(verdict(&rows, What::Companion, "ns"), Verdict::Contested);
    let later = now + CONTESTED_RECENTLY;
    assert!(contested_copies(&warnings, later).is_empty());
}

#[test]
fn a_source_whose_copies_would_be_too_large_is_told_so_and_nothing_is_written() {
    let mut source = with_annotations(
        mk_mirrored_source("in"),
        &[(crate::contract::MIRROR_KEYS_ANNOTATION, "a,a=b,a=c")],
    );
    source.data = Some(mk_map(&[("a", &"x".repeat(500_000))]));
    let scene = scene(source, vec![consenting("in")], None, vec![("in", None)]);
    let rows = explain_source(&scene, &rules(), &());
    assert_eq!(rows[0].verdict, Verdict::CopyTooLarge);
    assert!(
        rows[0].detail.contains("1,500,000 bytes") && rows[0].detail.contains("CopyTooLarge"),
        "{}",
        rows[0].detail
    );
}
