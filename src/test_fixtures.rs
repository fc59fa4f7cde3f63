//! The objects unit tests are built from. Each concept has one builder, so
//! that "a source" or "its companion" means the same in every test module,
//! and a test spells out only what it changes from them.

use std::collections::BTreeMap;

use k8s_openapi::{
    ByteString,
    api::core::v1::{ConfigMap, Secret},
    apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference},
};
use kube::core::Status;

use crate::{
    contract::MIRROR_OF_ANNOTATION,
    decisions::consent::{Consent, NamespaceFacts},
    decisions::copy_request::CopyRequest,
    decisions::desired_copy::{Refusal, desired},
    decisions::install::Install,
    decisions::selector::Selector,
    decisions::targets::MIRROR_TO_ANNOTATION,
    kind::{ChecksumKey, MirroredKind, SourceId},
};

/// The companion suffix of a default install.
pub(crate) const SUFFIX: &str = "-synced";

/// A string map (labels, annotations, data) from its entries.
pub(crate) fn mk_map(entries: &[(&str, &str)]) -> BTreeMap<String, String> {
    entries
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// A `binaryData` map from its entries.
pub(crate) fn mk_binary(entries: &[(&str, &[u8])]) -> BTreeMap<String, ByteString> {
    entries
        .iter()
        .map(|(k, v)| ((*k).to_owned(), ByteString(v.to_vec())))
        .collect()
}

/// A ConfigMap with a name and nothing else: nobody's copy, nobody's source.
pub(crate) fn mk_configmap(namespace: &str, name: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(namespace.into()),
            ..ObjectMeta::default()
        },
        ..ConfigMap::default()
    }
}

/// `cm` with these annotations added.
pub(crate) fn with_annotations(mut cm: ConfigMap, annotations: &[(&str, &str)]) -> ConfigMap {
    cm.metadata
        .annotations
        .get_or_insert_with(BTreeMap::new)
        .extend(mk_map(annotations));
    cm
}

/// The label keys of the default source selector (`workshop.io/managed=true`).
pub(crate) fn source_keys() -> Vec<String> {
    vec!["workshop.io/managed".into()]
}

/// The source selector of a default install.
pub(crate) const SELECTOR: &str = "workshop.io/managed=true";

/// The settings of a default install.
pub(crate) fn mk_install() -> Install {
    Install::new(
        SELECTOR.into(),
        Selector::parse(SELECTOR).unwrap(),
        SUFFIX.into(),
        &[],
        &[],
    )
}

/// The companion of `source`, as a default install decides it.
pub(crate) fn mk_desired_companion<K: MirroredKind>(
    source: &K,
    key: &dyn ChecksumKey<K>,
) -> Result<K, Refusal> {
    let namespace = source.meta().namespace.as_deref().unwrap_or_default();
    desired(
        source,
        &CopyRequest::COMPANION,
        namespace,
        &mk_install(),
        key,
    )
}

/// The mirror of `source` in `namespace`, as a default install decides it.
pub(crate) fn mk_desired_mirror<K: MirroredKind>(
    source: &K,
    namespace: &str,
    key: &dyn ChecksumKey<K>,
) -> Result<K, Refusal> {
    let request = &CopyRequest::SOURCE_MIRRORS;
    desired(source, request, namespace, &mk_install(), key)
}

/// A stored source in namespace `ns` (uid `uid-1`). Besides the selector's
/// label it carries a label and an annotation of its own, which no copy may
/// take over.
pub(crate) fn mk_source(name: &str, data: &[(&str, &str)]) -> ConfigMap {
    let mut source = with_annotations(mk_configmap("ns", name), &[("note", "hi")]);
    source.metadata.uid = Some("uid-1".into());
    source.metadata.labels = Some(mk_map(&[("workshop.io/managed", "true"), ("team", "blue")]));
    source.data = Some(mk_map(data));
    source
}

/// A stored Secret source in namespace `ns` holding `password`.
pub(crate) fn mk_secret_source(name: &str, uid: &str, password: &str) -> Secret {
    Secret {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("ns".into()),
            uid: Some(uid.into()),
            labels: Some(mk_map(&[("workshop.io/managed", "true")])),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([(
            "password".to_owned(),
            ByteString(password.as_bytes().to_vec()),
        )])),
        ..Secret::default()
    }
}

/// The identity of [`mk_source`] named `colors`.
pub(crate) fn colors_id() -> SourceId<'static> {
    SourceId {
        namespace: "ns",
        name: "colors",
        uid: "uid-1",
    }
}

/// [`mk_source`] (named `colors`, immutable) also carrying metadata of every
/// kind the reconcilers never read, so that a test sees what a cache drops.
pub(crate) fn mk_full_source(data: &[(&str, &str)]) -> ConfigMap {
    let mut source = with_annotations(
        mk_source("colors", data),
        &[
            (MIRROR_TO_ANNOTATION, "team-*"),
            ("kubectl.kubernetes.io/last-applied-configuration", "{..}"),
        ],
    );
    source.metadata.resource_version = Some("7".into());
    source.metadata.owner_references = Some(vec![OwnerReference::default()]);
    source.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    source.immutable = Some(true);
    source
}

/// A source (named `colors`) that asks for mirrors in the namespaces `to`.
pub(crate) fn mk_mirrored_source(to: &str) -> ConfigMap {
    with_annotations(
        mk_source("colors", &[("a", "1")]),
        &[(MIRROR_TO_ANNOTATION, to)],
    )
}

/// The companion of `source` as the API server stored it: as desired, with
/// a uid (`companion-uid`) and a resourceVersion (`42`) of its own, which a
/// write must name (delete by uid) or keep (replace only that version).
pub(crate) fn mk_companion_of(source: &ConfigMap) -> ConfigMap {
    let mut companion = mk_desired_companion(source, &()).unwrap();
    companion.metadata.uid = Some("companion-uid".into());
    companion.metadata.resource_version = Some("42".into());
    companion
}

/// An object in `namespace` whose annotation names `of` (`namespace/name`)
/// as its source, and which bears that source's name: all a mirror is to
/// whoever looks mirrors up by source.
pub(crate) fn mk_mirror(namespace: &str, of: &str) -> ConfigMap {
    let name = of.rsplit('/').next().unwrap_or(of);
    with_annotations(mk_configmap(namespace, name), &[(MIRROR_OF_ANNOTATION, of)])
}

/// The consent selector of a default install.
pub(crate) fn mk_consent() -> Consent {
    Consent::new(
        crate::api::SourceKind::ConfigMap,
        Selector::parse("workshop.io/accept-mirrors=true").unwrap(),
        ["kube-system".to_owned()],
    )
}

/// A namespace as consent reads it, accepting mirrors from anywhere.
pub(crate) fn mk_namespace(name: &str, labels: BTreeMap<String, String>) -> NamespaceFacts {
    NamespaceFacts {
        name: name.into(),
        labels,
        accept_from: None,
        grants: crate::decisions::grants::NamespaceGrants::none(),
    }
}

/// The labels of a namespace that gives [`mk_consent`].
pub(crate) fn mk_consenting_labels() -> BTreeMap<String, String> {
    mk_map(&[("workshop.io/accept-mirrors", "true")])
}

/// The error the client returns for an API server's status answer.
pub(crate) fn mk_api_error(code: u16, reason: &str, message: &str) -> kube::Error {
    kube::Error::Api(Status::failure(message, reason).with_code(code).boxed())
}
