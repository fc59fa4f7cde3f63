use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::{
    ByteString,
    api::core::v1::{ConfigMap, Secret},
    apimachinery::pkg::apis::meta::v1::ObjectMeta,
    jiff::{SignedDuration, Timestamp},
};

use super::contested::CONTESTED_RECENTLY;
use super::*;
use crate::{
    api::SourceKind,
    contract::{MANAGED_BY_LABEL, MANAGER_NAME, SOURCE_SELECTOR_ANNOTATION},
    decisions::consent::{ACCEPT_MIRRORS_FROM_ANNOTATION, Consent, NamespaceFacts},
    decisions::selector::Selector,
    decisions::targets::{self, MIRROR_TO_ANNOTATION, Targets, wants_mirror},
    kind::{MirroredKind, secret::SecretDigestKey},
    test_fixtures::{
        mk_configmap, mk_consenting_labels, mk_desired_companion, mk_desired_mirror, mk_install,
        mk_map, mk_mirrored_source, mk_source, with_annotations,
    },
};

fn rules() -> Rules {
    let consent = |kind, selector| {
        Consent::new(
            kind,
            Selector::parse(selector).unwrap(),
            ["kube-system".to_owned()],
        )
    };
    Rules {
        install: Install {
            reserved_names: targets::reserved_names(&["reserved".to_owned()]),
            ..mk_install()
        },
        configmaps: consent(SourceKind::ConfigMap, "workshop.io/accept-mirrors=true"),
        secrets: consent(SourceKind::Secret, "workshop.io/accept-secret-mirrors=true"),
        secret_rules: Default::default(),
        kinds: vec!["ConfigMap"],
        cluster_mirror_sources: vec!["admin".into()],
        cluster_consent: crate::decisions::cluster_mirror::cluster_consent(
            &["kube-system".into()],
            &["admin".into()],
        ),
        cluster_mirror_class: String::new(),
    }
}

fn namespace(name: &str, labels: &[(&str, &str)], accept_from: Option<&str>) -> NamespaceFacts {
    NamespaceFacts {
        name: name.into(),
        labels: mk_map(labels),
        accept_from: accept_from.map(str::to_owned),
        grants: crate::decisions::grants::NamespaceGrants::none(),
    }
}

fn consenting(name: &str) -> NamespaceFacts {
    NamespaceFacts {
        name: name.into(),
        labels: mk_consenting_labels(),
        accept_from: None,
        grants: crate::decisions::grants::NamespaceGrants::none(),
    }
}

/// As the controller writes them.
fn companion_of<K: MirroredKind>(source: &K, key: &dyn ChecksumKey<K>) -> K {
    stored(mk_desired_companion(source, key).unwrap())
}

fn mirror_in<K: MirroredKind>(source: &K, namespace: &str, key: &dyn ChecksumKey<K>) -> K {
    stored(mk_desired_mirror(source, namespace, key).unwrap())
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

mod cluster_mirrors;
mod copies_and_namespaces;
mod mirrors;
mod secrets;
mod sources;

#[test]
fn a_row_tells_of_a_condition_by_the_table_s_verdict_and_warning() {
    use crate::contract::condition::Condition;
    for condition in Condition::ALL.iter().copied() {
        let row = condition.row();
        let verdict = Verdict::of_condition(condition).map(Verdict::as_str);
        assert_eq!(verdict, row.verdict, "{condition:?}");
        if let (Some(verdict), Some(reason)) = (row.verdict, row.reason) {
            let (told, why) = Verdict::told(condition, "why");
            assert_eq!(told.as_str(), verdict);
            assert_eq!(why, format!("why (Warning {reason})"));
        }
    }
}
