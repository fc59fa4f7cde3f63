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
    let copy = carry(ObjectMeta::default(), &source, &lists, SELECTOR_KEYS);
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
    let copy = carry(ObjectMeta::default(), &source, &lists, &["tier".to_owned()]);
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
