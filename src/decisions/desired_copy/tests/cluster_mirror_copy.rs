//! A ClusterMirror's copy: the same decision as a source's own copies, with
//! what the ClusterMirror's spec says in place of the source's lists.

use super::*;
use crate::decisions::copy_request::ShapeAsked;

static EVERY_KEY: KeyShape = KeyShape::EVERY_KEY;

/// What the ClusterMirror `corp-ca` (uid `cm-uid`) asks of its copies.
fn corp_ca<'a>(
    labels: &'a BTreeMap<String, String>,
    annotations: &'a BTreeMap<String, String>,
) -> CopyRequest<'a> {
    CopyRequest {
        asker: Asker::ClusterMirror {
            name: "corp-ca",
            deletion: None,
        },
        shape: ShapeAsked::Given {
            shape: &EVERY_KEY,
            form: CopyForm::default(),
        },
        name: NameAsked::Given("shared"),
        carried: CarriedAsked::Given {
            labels,
            annotations,
        },
    }
}

/// `source` as `corp-ca` binds its copies to it.
fn bound(mut source: ConfigMap) -> ConfigMap {
    source.metadata.uid = Some("uid-1.cm-uid".into());
    source
}

#[test]
fn a_copy_names_its_source_and_its_clustermirror_and_carries_only_allowed_keys() {
    let labels = mk_map(&[("tier", "platform"), ("workshop.io/managed", "true")]);
    let annotations = mk_map(&[("note", "from the platform team")]);
    let source = bound(mk_source("colors", &[("a", "1")]));
    let install = Install {
        selector: "sel=1".into(),
        ..mk_install()
    };
    let copy = desired(
        &source,
        &corp_ca(&labels, &annotations),
        "team-a",
        &install,
        &(),
    )
    .unwrap();
    let meta = &copy.metadata;
    assert_eq!(meta.name.as_deref(), Some("shared"));
    assert_eq!(meta.namespace.as_deref(), Some("team-a"));
    assert_eq!(meta.owner_references, None);
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
    assert_eq!(annotations[CHECKSUM_ANNOTATION], content_checksum(&source));
    assert_eq!(annotations["note"], "from the platform team");
    assert_eq!(annotations[CARRIED_LABELS_ANNOTATION], "tier");
    assert_eq!(annotations[CARRIED_ANNOTATIONS_ANNOTATION], "note");
    assert_eq!(copy.data, Some(mk_map(&[("a", "1")])));
}

#[test]
fn a_clustermirror_s_copy_ignores_the_source_s_own_lists_even_malformed() {
    let empty = BTreeMap::new();
    let listing = bound(listing_source());
    let copy = desired(
        &listing,
        &corp_ca(&empty, &empty),
        "team-a",
        &mk_install(),
        &(),
    )
    .unwrap();
    let labels = copy.metadata.labels.unwrap();
    assert!(!labels.contains_key("team"));
    let annotations = copy.metadata.annotations.unwrap();
    assert!(!annotations.contains_key("note"));
    assert!(!annotations.contains_key(CARRIED_LABELS_ANNOTATION));
    assert!(!annotations.contains_key(CARRIED_ANNOTATIONS_ANNOTATION));
    let malformed = bound(with_annotations(
        mk_source("colors", &[]),
        &[(COPY_LABELS_ANNOTATION, "not a key")],
    ));
    assert!(
        desired(
            &malformed,
            &corp_ca(&empty, &empty),
            "team-a",
            &mk_install(),
            &()
        )
        .is_ok()
    );
}

#[test]
fn every_copy_is_refused_alike_for_a_source_that_is_a_copy_or_being_deleted() {
    let empty = BTreeMap::new();
    let companion = mk_companion_of(&mk_source("colors", &[]));
    let mut deleted = mk_source("colors", &[]);
    deleted.metadata.deletion_timestamp = Some(
        k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(k8s_openapi::jiff::Timestamp::now()),
    );
    let asks = [
        CopyRequest::COMPANION,
        CopyRequest::SOURCE_MIRRORS,
        corp_ca(&empty, &empty),
    ];
    for asked in asks {
        let of = |source| desired(source, &asked, "team-a", &mk_install(), &());
        assert_eq!(of(&companion), Err(Refusal::SourceIsCompanion), "{asked:?}");
        assert_eq!(of(&deleted), Err(Refusal::BeingDeleted), "{asked:?}");
    }
}
