//! A copy's and a namespace's verdicts.

use super::*;

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
        successor: None,
    }
}

#[test]
fn a_copy_says_whose_it_is_and_whether_it_is_wanted() {
    let rules = rules();
    let source = mk_mirrored_source("in");
    let mirror = mirror_in(&source, "in", &());
    let rows = explain_copy(
        &copy_scene(mirror.clone(), Some(source.clone()), Some(consenting("in"))),
        &rules,
        &(),
    );
    assert_eq!(rows[0].verdict, Verdict::InSync);
    assert_eq!(rows[0].source.as_deref(), Some("ns/colors"));
    assert_eq!(rows[1].verdict, Verdict::Managed);

    let withdrawn = namespace("in", &[], None);
    let rows = explain_copy(
        &copy_scene(mirror.clone(), Some(source.clone()), Some(withdrawn)),
        &rules,
        &(),
    );
    assert_eq!(rows[0].verdict, Verdict::Unwanted);
    assert!(rows[0].detail.contains("refuses"), "{}", rows[0].detail);

    let rows = explain_copy(
        &copy_scene(mirror.clone(), None, Some(consenting("in"))),
        &rules,
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
        &rules,
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
        &rules,
        &(),
    );
    assert_eq!(rows[0].verdict, Verdict::Unmarked);
}

#[test]
fn an_object_of_someone_else_at_a_companion_s_name_is_not_a_copy() {
    let rules = rules();
    let source = mk_source("colors", &[("a", "1")]);
    let mut theirs = mk_configmap("ns", "colors-synced");
    theirs.metadata.labels = Some(mk_map(&[(MANAGED_BY_LABEL, "helm")]));
    assert!(is_copy(&theirs, &rules, true));
    assert!(!is_copy(&source, &rules, true));
    let rows = explain_copy(&copy_scene(theirs, Some(source), None), &rules, &());
    assert_eq!(rows[0].verdict, Verdict::NotACopy);
    assert!(rows[0].detail.contains("helm"), "{}", rows[0].detail);
    assert_eq!(rows[0].source.as_deref(), Some("ns/colors"));
}

#[test]
fn a_namespace_says_what_it_accepts_and_which_sources_it_refuses() {
    let rules = rules();
    let picky = namespace(
        "picky",
        &[("workshop.io/accept-mirrors", "true")],
        Some("platform-*"),
    );
    let rows = consent_rows(&picky, &rules);
    assert_eq!(rows[0].verdict, Verdict::Accepts);
    assert_eq!(rows[1].verdict, Verdict::DoesNotAccept);
    assert_eq!(rows[2].verdict, Verdict::FromListed);
    let mut broken = picky.clone();
    broken.accept_from = Some("Bad_Name".into());
    assert_eq!(
        consent_rows(&broken, &rules)[2].verdict,
        Verdict::InvalidAcceptMirrorsFrom
    );
    assert_eq!(
        consent_rows(&consenting("kube-system"), &rules)[0].verdict,
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
    let rows = explain_namespace(&picky, &scene, &rules, &());
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
    let rules = rules();
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
    let rows = explain_namespace(&consenting("in"), &scene, &rules, &());
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
    let rows = explain_source(&scene, &rules(), &());
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

#[test]
fn a_namespace_s_consent_row_names_the_grant_that_lets_a_kind_in_or_says_grants_are_unknown() {
    use crate::decisions::grants::{Grant, NamespaceGrants};
    let rules = rules();
    let spec = serde_json::json!({"from": [{"namespace": "platform-*", "kinds": ["Secret"]}]});
    let broken = serde_json::json!({"from": []});
    let granted = NamespaceFacts {
        grants: NamespaceGrants::known(vec![
            Grant::parse("from-platform", Some(&spec)),
            Grant::parse("typo", Some(&broken)),
        ]),
        ..namespace("team-b", &[], None)
    };
    let rows = consent_rows(&granted, &rules);
    assert_eq!(
        rows[0].verdict,
        Verdict::DoesNotAccept,
        "no ConfigMap let in"
    );
    assert!(
        rows[0].detail.contains("MirrorGrant typo lets nothing in"),
        "{}",
        rows[0].detail
    );
    assert_eq!(rows[1].verdict, Verdict::AcceptsByGrant);
    assert!(
        rows[1]
            .detail
            .contains("MirrorGrant from-platform lets Secret mirrors in from platform-*"),
        "{}",
        rows[1].detail
    );
    let unknown = NamespaceFacts {
        grants: NamespaceGrants::NotKnown,
        ..namespace("team-b", &[], None)
    };
    assert_eq!(
        consent_rows(&unknown, &rules)[0].verdict,
        Verdict::GrantsNotKnown
    );
}
