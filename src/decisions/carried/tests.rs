use super::*;
use crate::test_fixtures::mk_map;

fn source(labels: &[(&str, &str)], annotations: &[(&str, &str)]) -> ObjectMeta {
    ObjectMeta {
        labels: Some(mk_map(labels)),
        annotations: Some(mk_map(annotations)),
        ..ObjectMeta::default()
    }
}

const SELECTOR_KEYS: &[String] = &[];
const BUILT_IN: NeverCarried = NeverCarried::BUILT_IN;

/// `copy` carrying what `source`'s lists select.
fn carry(
    copy: ObjectMeta,
    source: &ObjectMeta,
    lists: &Lists,
    never: &NeverCarried,
    source_label_keys: &[String],
) -> ObjectMeta {
    Carried::Listed { source, lists }.onto(copy, never, source_label_keys)
}

/// What `source`'s lists ask for that `never` refuses.
fn refused(source: &ObjectMeta, lists: &Lists, never: &NeverCarried) -> Option<String> {
    Carried::Listed { source, lists }.refused(never)
}

#[test]
fn listed_keys_and_prefixes_are_carried_with_a_record() {
    let source = source(
        &[
            ("team", "a"),
            ("app.kubernetes.io/name", "web"),
            ("other", "x"),
        ],
        &[
            (COPY_LABELS_ANNOTATION, "app.kubernetes.io/name, team"),
            (
                COPY_ANNOTATIONS_ANNOTATION,
                "reloader.stakater.com/*,example.com/owner",
            ),
            ("reloader.stakater.com/match", "true"),
            ("example.com/owner", "ops"),
            ("example.com/other", "no"),
        ],
    );
    let lists = Lists::of(&source).unwrap();
    let copy = carry(
        ObjectMeta::default(),
        &source,
        &lists,
        &BUILT_IN,
        SELECTOR_KEYS,
    );
    assert_eq!(
        copy.labels,
        Some(mk_map(&[("app.kubernetes.io/name", "web"), ("team", "a")]))
    );
    let annotations = copy.annotations.unwrap();
    assert_eq!(annotations["reloader.stakater.com/match"], "true");
    assert_eq!(annotations["example.com/owner"], "ops");
    assert!(!annotations.contains_key("example.com/other"));
    assert_eq!(
        annotations[CARRIED_LABELS_ANNOTATION],
        "app.kubernetes.io/name,team"
    );
    assert_eq!(
        annotations[CARRIED_ANNOTATIONS_ANNOTATION],
        "example.com/owner,reloader.stakater.com/match"
    );
}

#[test]
fn the_controller_s_keys_the_selector_s_and_last_applied_are_never_carried() {
    let source = source(
        &[("workshop.io/managed", "true"), ("tier", "gold")],
        &[
            (COPY_LABELS_ANNOTATION, "*"),
            (COPY_ANNOTATIONS_ANNOTATION, "*"),
            (LAST_APPLIED, "{}"),
            ("workshop.io/mirror-to", "x"),
        ],
    );
    let lists = Lists::of(&source).unwrap();
    let copy = carry(
        ObjectMeta::default(),
        &source,
        &lists,
        &BUILT_IN,
        &["tier".to_owned()],
    );
    assert_eq!(copy.labels, Some(BTreeMap::new()));
    assert_eq!(copy.annotations, Some(BTreeMap::new()), "no record either");
}

#[test]
fn a_source_without_lists_adds_nothing() {
    let source = source(&[("team", "a")], &[]);
    let copy = carry(
        ObjectMeta::default(),
        &source,
        &Lists::of(&source).unwrap(),
        &BUILT_IN,
        SELECTOR_KEYS,
    );
    assert!(copy.labels.unwrap().is_empty() && copy.annotations.unwrap().is_empty());
}

#[test]
fn malformed_lists_are_refused_with_their_name() {
    for (key, list) in [
        (COPY_LABELS_ANNOTATION, "team,,app"),
        (COPY_LABELS_ANNOTATION, "te*am"),
        (COPY_ANNOTATIONS_ANNOTATION, "bad key"),
        (COPY_ANNOTATIONS_ANNOTATION, "Not_A.Domain/x"),
        (COPY_ANNOTATIONS_ANNOTATION, &"k,".repeat(MAX_ENTRIES + 1)),
    ] {
        let why = Lists::of(&source(&[], &[(key, list)])).unwrap_err();
        assert!(why.contains(key), "{why}");
    }
}

#[test]
fn the_record_names_what_was_carried() {
    let copy = ObjectMeta {
        annotations: Some(mk_map(&[
            (CARRIED_LABELS_ANNOTATION, "a,b"),
            (CARRIED_ANNOTATIONS_ANNOTATION, "c"),
        ])),
        ..ObjectMeta::default()
    };
    let (labels, annotations) = recorded(&copy);
    assert_eq!(labels, ["a", "b"]);
    assert_eq!(
        annotations,
        [
            "c",
            CARRIED_LABELS_ANNOTATION,
            CARRIED_ANNOTATIONS_ANNOTATION
        ]
    );
}

#[test]
fn keys_by_which_tools_claim_an_object_are_never_carried_even_under_a_star() {
    let source = source(
        &[
            ("app.kubernetes.io/managed-by", "Helm"),
            ("app.kubernetes.io/instance", "web"),
            ("app.kubernetes.io/name", "web"),
            ("kustomize.toolkit.fluxcd.io/name", "apps"),
            ("applyset.kubernetes.io/part-of", "applyset-x"),
        ],
        &[
            (COPY_LABELS_ANNOTATION, "*"),
            (COPY_ANNOTATIONS_ANNOTATION, "*"),
            ("argocd.argoproj.io/tracking-id", "app:/ConfigMap:ns/x"),
            ("meta.helm.sh/release-name", "web"),
            ("cert-manager.io/certificate-name", "web"),
            ("example.com/owner", "ops"),
        ],
    );
    let lists = Lists::of(&source).unwrap();
    let copy = carry(
        ObjectMeta::default(),
        &source,
        &lists,
        &BUILT_IN,
        SELECTOR_KEYS,
    );
    assert_eq!(
        copy.labels,
        Some(mk_map(&[("app.kubernetes.io/name", "web")]))
    );
    let annotations = copy.annotations.unwrap();
    assert_eq!(annotations["example.com/owner"], "ops");
    assert_eq!(
        annotations[CARRIED_LABELS_ANNOTATION],
        "app.kubernetes.io/name"
    );
    assert_eq!(
        annotations[CARRIED_ANNOTATIONS_ANNOTATION],
        "example.com/owner"
    );
}

#[test]
fn refused_keys_asked_for_are_named_once_per_list() {
    let source = source(
        &[
            ("workshop.io/managed", "true"),
            ("app.kubernetes.io/managed-by", "Helm"),
            ("app.kubernetes.io/name", "web"),
        ],
        &[
            (
                COPY_LABELS_ANNOTATION,
                "app.kubernetes.io/*,app.kubernetes.io/instance",
            ),
            (COPY_ANNOTATIONS_ANNOTATION, "*"),
            ("argocd.argoproj.io/tracking-id", "t"),
            (LAST_APPLIED, "{}"),
        ],
    );
    assert_eq!(
        refused(&source, &Lists::of(&source).unwrap(), &BUILT_IN).as_deref(),
        Some(
            "workshop.io/copy-labels asks for app.kubernetes.io/instance, \
             app.kubernetes.io/managed-by; workshop.io/copy-annotations asks for \
             argocd.argoproj.io/tracking-id"
        ),
        "named exactly, or matched on the source; the controller's own keys and \
         last-applied, which any source may have, only silently"
    );
    let harmless = source_with_lists("app.kubernetes.io/name", "example.com/*");
    assert_eq!(
        refused(&harmless, &Lists::of(&harmless).unwrap(), &BUILT_IN),
        None
    );
}

fn source_with_lists(labels: &str, annotations: &str) -> ObjectMeta {
    source(
        &[("app.kubernetes.io/name", "web")],
        &[
            (COPY_LABELS_ANNOTATION, labels),
            (COPY_ANNOTATIONS_ANNOTATION, annotations),
        ],
    )
}

#[test]
fn the_cache_keeps_refused_keys_the_lists_match_so_that_they_can_be_named() {
    let source = source(
        &[
            ("app.kubernetes.io/instance", "web"),
            ("workshop.io/managed", "true"),
        ],
        &[
            (COPY_LABELS_ANNOTATION, "*"),
            (COPY_ANNOTATIONS_ANNOTATION, "*"),
            (LAST_APPLIED, "{\"big\": \"record\"}"),
        ],
    );
    let lists = Lists::of(&source).unwrap();
    let [labels, annotations] = selected_of(&source, &lists);
    assert_eq!(labels, mk_map(&[("app.kubernetes.io/instance", "web")]));
    assert!(annotations.is_empty(), "{annotations:?}");
    let cached = ObjectMeta {
        labels: Some(labels),
        ..source.clone()
    };
    assert_eq!(
        refused(&cached, &lists, &BUILT_IN),
        refused(&source, &lists, &BUILT_IN)
    );
}

#[test]
fn a_copy_an_earlier_release_gave_the_source_s_managed_by_is_detached() {
    let helm_labeled = ObjectMeta {
        labels: Some(mk_map(&[(MANAGED_BY_LABEL, "Helm")])),
        annotations: Some(mk_map(&[(
            CARRIED_LABELS_ANNOTATION,
            "app.kubernetes.io/managed-by,app.kubernetes.io/name",
        )])),
        ..ObjectMeta::default()
    };
    assert!(detached(&helm_labeled));
    let carried_other = ObjectMeta {
        annotations: Some(mk_map(&[(
            CARRIED_LABELS_ANNOTATION,
            "app.kubernetes.io/name",
        )])),
        ..ObjectMeta::default()
    };
    assert!(!detached(&carried_other));
    assert!(!detached(&ObjectMeta::default()));
}

#[test]
fn every_key_never_carried_is_a_key_or_a_prefix_as_lists_take_them() {
    for entry in crate::contract::NEVER_CARRIED {
        assert!(Allowlist::parse("list", entry).is_ok(), "{entry}");
    }
}

#[test]
fn keys_never_carry_adds_are_never_carried_and_named_when_asked_for() {
    let source = source(
        &[
            ("example.com/team", "a"),
            ("example.com/tier", "1"),
            ("team", "a"),
        ],
        &[
            (COPY_LABELS_ANNOTATION, "team,example.com/*"),
            ("example.com/team", "a"),
        ],
    );
    let lists = Lists::of(&source).unwrap();
    let never = NeverCarried::new(&["example.com/team".to_owned(), " ".to_owned()]);
    let copy = carry(
        ObjectMeta::default(),
        &source,
        &lists,
        &never,
        SELECTOR_KEYS,
    );
    let labels = copy.labels.unwrap_or_default();
    assert_eq!(
        labels,
        mk_map(&[("example.com/tier", "1"), ("team", "a")]),
        "only the added key is left off"
    );
    let why = refused(&source, &lists, &never).unwrap_or_default();
    assert!(why.contains("example.com/team"), "{why}");
    assert_eq!(refused(&source, &lists, &BUILT_IN), None);
    let prefixes = NeverCarried::new(&["example.com/*".to_owned()]);
    assert!(prefixes.contains("example.com/tier") && prefixes.added_names("example.com/x"));
    assert!(prefixes.contains("argocd.argoproj.io/instance"));
    assert!(!prefixes.added_names("argocd.argoproj.io/instance"));
}

#[test]
fn a_clustermirror_setting_keys_never_carried_is_told_which_by_field() {
    let labels = mk_map(&[("example.com/team", "a"), ("tier", "1")]);
    let annotations = mk_map(&[("argocd.argoproj.io/instance", "x"), ("note", "n")]);
    let given = Carried::Given {
        labels: &labels,
        annotations: &annotations,
    };
    let never = NeverCarried::new(&["example.com/*".to_owned()]);
    assert_eq!(
        given.refused(&never).as_deref(),
        Some(
            "spec.target.labels sets example.com/team; spec.target.annotations sets \
             argocd.argoproj.io/instance: never carried by this install (--never-carry, or the \
             built-in list)"
        )
    );
    let fine = mk_map(&[("tier", "1")]);
    let harmless = Carried::Given {
        labels: &fine,
        annotations: &fine,
    };
    assert_eq!(harmless.refused(&never), None);
}

#[test]
fn a_clustermirror_s_labels_and_annotations_are_carried_with_a_record_but_keys_never_carried() {
    let labels = mk_map(&[("tier", "1"), ("team", "a"), (MANAGED_BY_LABEL, "x")]);
    let annotations = mk_map(&[("note", "n")]);
    let given = Carried::Given {
        labels: &labels,
        annotations: &annotations,
    };
    let copy = given.onto(ObjectMeta::default(), &BUILT_IN, &["team".to_owned()]);
    assert_eq!(copy.labels, Some(mk_map(&[("tier", "1")])));
    let annotations = copy.annotations.unwrap();
    assert_eq!(annotations[CARRIED_LABELS_ANNOTATION], "tier");
    assert_eq!(annotations[CARRIED_ANNOTATIONS_ANNOTATION], "note");
}
