use super::*;
use crate::test_fixtures::{SUFFIX, mk_binary, mk_map};

#[test]
fn companion_is_named_after_its_source_with_the_suffix() {
    assert_eq!(companion_name("colors", SUFFIX), "colors-synced");
    assert_eq!(companion_name("x-synced", SUFFIX), "x-synced-synced");
}

#[test]
fn source_name_is_recovered_from_a_companion_name() {
    assert_eq!(
        source_name_of("colors-synced", SUFFIX).as_deref(),
        Some("colors")
    );
    assert_eq!(source_name_of("colors", SUFFIX), None);
    assert_eq!(source_name_of("-synced", SUFFIX), None);
}

#[test]
fn checksum_ignores_the_order_keys_were_written_in() {
    let mut forward = BTreeMap::new();
    forward.insert("a".to_owned(), "1".to_owned());
    forward.insert("b".to_owned(), "2".to_owned());
    let mut backward = BTreeMap::new();
    backward.insert("b".to_owned(), "2".to_owned());
    backward.insert("a".to_owned(), "1".to_owned());
    assert_eq!(
        checksum(Some(&forward), None),
        checksum(Some(&backward), None)
    );
}

#[test]
fn checksum_is_a_stable_sha256_hex_of_the_canonical_encoding() {
    // Pinned so that a change to the encoding, which would make every
    // running controller rewrite every companion, cannot go unnoticed.
    let sum = checksum(Some(&mk_map(&[("color", "blue")])), None);
    assert_eq!(sum.len(), 64);
    assert!(sum.chars().all(|c| c.is_ascii_hexdigit()));
    let mut hasher = Sha256::new();
    hasher.update(b"d");
    hasher.update(1u64.to_be_bytes());
    hasher.update(5u64.to_be_bytes());
    hasher.update(b"color");
    hasher.update(4u64.to_be_bytes());
    hasher.update(b"blue");
    hasher.update(b"b");
    hasher.update(0u64.to_be_bytes());
    assert_eq!(sum, hex::encode(hasher.finalize()));
}

#[test]
fn checksum_tells_apart_contents_that_concatenate_alike() {
    let split_one_way = mk_map(&[("ab", "c")]);
    let split_other_way = mk_map(&[("a", "bc")]);
    assert_ne!(
        checksum(Some(&split_one_way), None),
        checksum(Some(&split_other_way), None)
    );
}

#[test]
fn checksum_keeps_data_and_binary_data_apart() {
    let as_text = mk_map(&[("k", "v")]);
    let as_bytes = mk_binary(&[("k", b"v")]);
    assert_ne!(
        checksum(Some(&as_text), None),
        checksum(None, Some(&as_bytes))
    );
}

#[test]
fn checksum_of_empty_maps_equals_checksum_of_absent_maps() {
    assert_eq!(
        checksum(Some(&BTreeMap::new()), Some(&BTreeMap::new())),
        checksum(None, None)
    );
}

#[test]
fn the_controller_s_own_keys_are_never_carried() {
    for own in [
        MANAGED_BY_LABEL,
        CHECKSUM_ANNOTATION,
        MIRROR_OF_ANNOTATION,
        MIRROR_OF_UID_ANNOTATION,
        SOURCE_SELECTOR_ANNOTATION,
        CARRIED_LABELS_ANNOTATION,
        CARRIED_ANNOTATIONS_ANNOTATION,
    ] {
        assert!(never_carried(own), "{own}");
    }
    assert!(never_carried(&format!("{CONTROLLER_KEY_PREFIX}anything")));
    assert!(never_carried("argocd.argoproj.io/secret-type"));
    assert!(!never_carried("app.kubernetes.io/name"));
    assert!(!never_carried("reloader.stakater.com/match"));
}

#[test]
fn the_label_contract_lists_every_key_never_carried() {
    let labels = include_str!("../../docs/user/labels.md");
    for entry in NEVER_CARRIED {
        assert!(
            labels.contains(&format!("`{entry}`")),
            "docs/user/labels.md lacks `{entry}`"
        );
    }
}

/// The chart's admission policy refuses the never-carried keys on copies
/// from its own copy of the list: the two must not drift apart.
#[test]
fn the_chart_s_never_carried_list_is_the_controller_s() {
    let helpers = include_str!("../../charts/configmap-mirror/templates/_helpers.tpl");
    let start = r#"{{- define "configmap-mirror.neverCarriedBuiltIn" -}}"#;
    let (_, list) = helpers
        .split_once(start)
        .expect("the chart defines the list");
    let (list, _) = list.split_once("{{- end }}").expect("the list ends");
    let chart: Vec<&str> = list.lines().filter(|line| !line.is_empty()).collect();
    assert_eq!(chart, NEVER_CARRIED, "templates/_helpers.tpl differs");
}
