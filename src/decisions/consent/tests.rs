use super::*;

fn consent() -> Consent {
    Consent::new(
        SourceKind::ConfigMap,
        Selector::parse("workshop.io/accept-mirrors=true").unwrap(),
        ["kube-system".to_owned(), " ".to_owned()],
    )
}

fn mk_labels() -> BTreeMap<String, String> {
    BTreeMap::from([("workshop.io/accept-mirrors".into(), "true".into())])
}

fn namespace(name: &str, consents: bool, accept_from: Option<&str>) -> NamespaceFacts {
    let labels = match consents {
        true => mk_labels(),
        false => BTreeMap::new(),
    };
    NamespaceFacts {
        name: name.into(),
        labels,
        accept_from: accept_from.map(str::to_owned),
        grants: crate::decisions::grants::NamespaceGrants::none(),
    }
}

#[test]
fn a_consenting_namespace_accepts_any_source_namespace_unless_it_names_some() {
    let consent = consent();
    assert_eq!(
        consent.verdict("home", &namespace("team-a", true, None)),
        Ok(())
    );
    let picky = namespace("team-a", true, Some("home, platform-*"));
    assert_eq!(consent.verdict("home", &picky), Ok(()));
    assert_eq!(consent.verdict("platform-x", &picky), Ok(()));
    assert_eq!(
        consent.verdict("tenant", &picky),
        Err(NamespaceRefusal::SourceNamespaceNotAccepted)
    );
}

#[test]
fn a_malformed_accept_from_accepts_nothing_and_says_why() {
    let refusal = consent()
        .verdict("home", &namespace("team-a", true, Some("home,,Bad_Name")))
        .unwrap_err();
    let NamespaceRefusal::MalformedAcceptFrom(why) = refusal else {
        panic!("{refusal:?}");
    };
    assert!(why.contains(ACCEPT_MIRRORS_FROM_ANNOTATION), "{why}");
    let too_many = (0..=patterns::MAX_PATTERNS)
        .map(|i| format!("n{i}"))
        .collect::<Vec<_>>()
        .join(",");
    assert!(matches!(
        consent().verdict("n1", &namespace("team-a", true, Some(&too_many))),
        Err(NamespaceRefusal::MalformedAcceptFrom(_))
    ));
}

#[test]
fn a_protected_namespace_refuses_whatever_its_labels_say() {
    let consent = consent();
    assert_eq!(
        consent.verdict("home", &namespace("kube-system", true, Some("*"))),
        Err(NamespaceRefusal::Protected)
    );
    assert!(!consent.admits(&namespace("kube-system", true, None)));
    assert_eq!(consent.protected(), ["kube-system".to_owned()]);
}

#[test]
fn a_cached_namespace_keeps_only_what_consent_reads() {
    let mut namespace = ObjectMeta {
        name: Some("team-a".into()),
        labels: Some(BTreeMap::from([("team".into(), "a".into())])),
        annotations: Some(BTreeMap::from([
            (ACCEPT_MIRRORS_FROM_ANNOTATION.into(), "home".into()),
            (
                "kubectl.kubernetes.io/last-applied-configuration".into(),
                "{}".into(),
            ),
        ])),
        ..ObjectMeta::default()
    };
    let before = NamespaceFacts::of(&namespace);
    slim_namespace(&mut namespace);
    assert_eq!(NamespaceFacts::of(&namespace), before);
    assert_eq!(namespace.annotations.map(|a| a.len()), Some(1));
}

#[test]
fn a_cached_list_over_its_length_is_cut_short_and_still_accepts_nothing() {
    let long = format!("home,{}", "x".repeat(256 * 1024));
    let mut cached = ObjectMeta {
        name: Some("team-a".into()),
        labels: Some(mk_labels()),
        annotations: Some(BTreeMap::from([(
            ACCEPT_MIRRORS_FROM_ANNOTATION.into(),
            long.clone(),
        )])),
        ..ObjectMeta::default()
    };
    slim_namespace(&mut cached);
    let facts = NamespaceFacts::of(&cached).with_grants(NamespaceGrants::none());
    let kept = facts.accept_from.as_deref().unwrap_or_default();
    assert_eq!(kept.len(), patterns::MAX_PATTERNS_LEN + 1);
    assert!(long.starts_with(kept));
    let refusal = consent().verdict("home", &facts).unwrap_err();
    assert_eq!(
        refusal,
        NamespaceRefusal::MalformedAcceptFrom(format!(
            "{ACCEPT_MIRRORS_FROM_ANNOTATION} is over the limit of 8192 bytes"
        ))
    );
}

fn granting(name: &str, from: &str, kinds: &[&str]) -> NamespaceFacts {
    let grant = crate::decisions::grants::Grant::parse(
        "g",
        Some(&serde_json::json!({"from": [{"namespace": from, "kinds": kinds}]})),
    );
    NamespaceFacts {
        grants: NamespaceGrants::known(vec![grant]),
        ..namespace(name, false, None)
    }
}

#[test]
fn a_grant_admits_the_kind_it_names_from_the_namespaces_it_names() {
    let consent = consent();
    let granted = granting("team-b", "team-*", &["ConfigMap"]);
    assert!(consent.admits(&granted));
    assert_eq!(
        consent.admission("team-a", &granted),
        Ok(Admission::ByGrant("g".into()))
    );
    assert_eq!(
        consent.admission("other", &granted),
        Err(NamespaceRefusal::NotConsenting),
        "a namespace the grant does not name"
    );
    let secrets_only = granting("team-b", "*", &["Secret"]);
    assert!(
        !consent.admits(&secrets_only),
        "a grant of Secrets lets no ConfigMap in"
    );
    assert_eq!(
        consent.verdict("team-a", &secrets_only),
        Err(NamespaceRefusal::NotConsenting)
    );
    let labelled = NamespaceFacts {
        labels: mk_labels(),
        ..granting("team-b", "*", &["ConfigMap"])
    };
    assert_eq!(
        consent.admission("team-a", &labelled),
        Ok(Admission::ByLabels)
    );
}

#[test]
fn a_grant_opens_neither_a_protected_namespace_nor_the_source_s_own() {
    let consent = consent();
    let system = granting("kube-system", "*", &["ConfigMap"]);
    assert!(!consent.admits(&system));
    assert_eq!(
        consent.verdict("team-a", &system),
        Err(NamespaceRefusal::Protected)
    );
    assert_eq!(
        consent.verdict("team-b", &granting("team-b", "*", &["ConfigMap"])),
        Err(NamespaceRefusal::SourceNamespace)
    );
}

#[test]
fn grants_not_known_neither_admit_nor_refuse_a_namespace_its_labels_do_not_admit() {
    let consent = consent();
    let unknown = NamespaceFacts {
        grants: NamespaceGrants::NotKnown,
        ..namespace("team-b", false, None)
    };
    assert!(!consent.admits(&unknown));
    assert_eq!(
        consent.verdict("team-a", &unknown),
        Err(NamespaceRefusal::GrantsNotKnown)
    );
    let labelled = NamespaceFacts {
        grants: NamespaceGrants::NotKnown,
        ..namespace("team-b", true, None)
    };
    assert_eq!(
        consent.verdict("team-a", &labelled),
        Ok(()),
        "labels suffice"
    );
}

#[test]
fn the_labels_must_match_this_kinds_selector() {
    let secrets = Consent::new(
        SourceKind::Secret,
        Selector::parse("workshop.io/accept-secret-mirrors=true").unwrap(),
        [],
    );
    let configmaps_only = namespace("team-a", true, None);
    assert_eq!(
        secrets.verdict("home", &configmaps_only),
        Err(NamespaceRefusal::NotConsenting)
    );
    assert!(!secrets.admits(&configmaps_only));
    assert_eq!(
        consent().verdict("home", &namespace("home", true, None)),
        Err(NamespaceRefusal::SourceNamespace)
    );
}
