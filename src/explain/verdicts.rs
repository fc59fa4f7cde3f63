//! `explain`'s verdicts, built from objects already read: no I/O.
//!
//! Every verdict comes from the functions the controller decides with:
//! whether an object is a source ([`desired_companion`] and the kind's
//! `source_refusal`), which namespaces it asks for and which consent
//! ([`Targets`], [`wants_mirror`], [`Consent::verdict`]), whose an object
//! at a copy's name is and what write it would need ([`plan::plan`]), and
//! whether a copy is still wanted ([`wanted::copy_verdict`]). This module
//! only says, for each, why.
//!
//! A Secret copy's checksum is keyed with the install's digest key, which
//! explain does not read. So for Secrets the checksum annotation is taken
//! to be right when it has the keyed form, and the comparison is made
//! under a key of explain's own: it tells apart content and metadata, and
//! says honestly that the checksum itself could not be checked.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::{
    api::core::v1::{ConfigMap, Secret},
    apimachinery::pkg::apis::meta::v1::ObjectMeta,
    jiff::{SignedDuration, Timestamp},
};

use crate::{
    contract::{
        CHECKSUM_ANNOTATION, CopyRole, MANAGED_BY_LABEL, MANAGER_NAME, SOURCE_SELECTOR_ANNOTATION,
        annotation, companion_name, is_managed_by_us, mirror_of, object_key, warning,
    },
    decisions::cache_form::CachedCopy,
    decisions::carried::Lists,
    decisions::consent::{
        ACCEPT_MIRRORS_FROM_ANNOTATION, Consent, NamespaceFacts, NamespaceRefusal,
    },
    decisions::desired::never_a_source,
    decisions::desired::{Refusal, desired_companion, desired_mirror, finished},
    decisions::ownership::claimed_source,
    decisions::patterns,
    decisions::plan::{self, Difference, NameTaken, Write},
    decisions::selector::Selector,
    decisions::targets::{
        MIRROR_TO_ANNOTATION, MIRROR_TO_SELECTOR_ANNOTATION, Targets, wants_mirror,
    },
    decisions::wanted::{self, CopyVerdict},
    kind::SourceId,
    kind::secret::RefusedSecretTypes,
    kind::{MirroredKind, secret::DIGEST_PREFIX},
};

/// What the install decides with: its flags, parsed as the controller
/// parses them.
#[derive(Debug, Clone)]
pub struct Install {
    /// The source selector as configured: copies are marked with it.
    pub selector: String,
    pub source_selector: Selector,
    pub source_label_keys: Vec<String>,
    pub suffix: String,
    pub configmaps: Consent,
    pub secrets: Consent,
    pub reserved_names: Vec<String>,
    /// Secret types refused as sources besides the built-in ones.
    pub refused_secret_types: RefusedSecretTypes,
}

/// What explain needs to know of a kind besides what the controller does.
pub trait Explained: MirroredKind {
    /// As rows and `--kind` name it.
    const NAME: &'static str;
    /// The prefix of a keyed checksum, for a kind whose checksums are keyed
    /// with the install's key; None for a kind whose checksum anyone can
    /// recompute.
    const KEYED: Option<&'static str>;

    /// This kind's consent rules, and the other kind's.
    fn consent(install: &Install) -> &Consent;
    fn other_consent(install: &Install) -> &Consent;
    /// What the install refuses as sources of this kind.
    fn source_rules(install: &Install) -> Self::SourceRules;
    /// The other kind, as rows name it.
    const OTHER: &'static str;
    /// The key explain compares contents with.
    fn comparison_key() -> Self::DigestKey;
}

impl Explained for ConfigMap {
    const NAME: &'static str = "ConfigMap";
    const KEYED: Option<&'static str> = None;
    const OTHER: &'static str = "Secret";

    fn consent(install: &Install) -> &Consent {
        &install.configmaps
    }

    fn other_consent(install: &Install) -> &Consent {
        &install.secrets
    }

    fn source_rules(_: &Install) {}

    fn comparison_key() {}
}

impl Explained for Secret {
    const NAME: &'static str = "Secret";
    const KEYED: Option<&'static str> = Some(DIGEST_PREFIX);
    const OTHER: &'static str = "ConfigMap";

    fn consent(install: &Install) -> &Consent {
        &install.secrets
    }

    fn other_consent(install: &Install) -> &Consent {
        &install.configmaps
    }

    fn source_rules(install: &Install) -> RefusedSecretTypes {
        install.refused_secret_types.clone()
    }

    /// Any key compares contents alike; a random one makes whatever
    /// digest explain computes worthless outside this process.
    fn comparison_key() -> Self::DigestKey {
        let bytes: [u8; crate::kind::secret::SecretDigestKey::LEN] = rand::random();
        let key = crate::kind::secret::SecretDigestKey::from_bytes(&bytes);
        key.unwrap_or_else(|| unreachable!("the length is the key's"))
    }
}

/// What a row is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum What {
    Source,
    Companion,
    Mirror,
    /// A namespace's consent to one kind.
    Consent,
    /// A namespace's `workshop.io/accept-mirrors-from`.
    AcceptFrom,
}

impl What {
    pub fn as_str(self) -> &'static str {
        match self {
            What::Source => "source",
            What::Companion => "companion",
            What::Mirror => "mirror",
            What::Consent => "consent",
            What::AcceptFrom => "accept-from",
        }
    }
}

/// Declares the verdicts: each one's name in the output, and whether it
/// means "in place".
macro_rules! verdicts {
    ($($variant:ident => $name:literal, $ok:literal;)*) => {
        /// Each verdict explain gives. Their names are the JSON output's
        /// vocabulary: documented, never renamed.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
        pub enum Verdict {
            $($variant,)*
        }

        impl Verdict {
            #[cfg(test)]
            pub const ALL: &[Verdict] = &[$(Verdict::$variant,)*];

            pub fn as_str(self) -> &'static str {
                match self {
                    $(Verdict::$variant => $name,)*
                }
            }

            /// Whether the row is as asked: a managed source, a copy in
            /// place (or, in a preview, one that would be written), the
            /// source's own namespace (it holds the companion), and what a
            /// namespace's consent is (its choice, not a fault).
            pub fn ok(self) -> bool {
                match self {
                    $(Verdict::$variant => $ok,)*
                }
            }
        }
    };
}

verdicts! {
    // Whether this install manages a source.
    Managed => "managed", true;
    NotFound => "not-found", false;
    NotSelected => "not-selected", false;
    RefusedType => "refused-type", false;
    IsACopy => "is-a-copy", false;
    BeingDeleted => "being-deleted", false;
    NameTooLong => "name-too-long", false;
    InvalidCopyList => "invalid-copy-list", false;
    // A copy, where it should be.
    InSync => "in-sync", true;
    InSyncUnverified => "in-sync-unverified", true;
    WouldReceive => "would-receive", true;
    Missing => "missing", false;
    SourceChanged => "source-changed", false;
    Drifted => "drifted", false;
    Differs => "differs", false;
    MustRecreate => "must-recreate", false;
    NameTaken => "name-taken", false;
    Contested => "contested", false;
    // A namespace asked for that receives no mirror.
    SourceNamespace => "source-namespace", true;
    Protected => "protected", false;
    NotConsenting => "not-consenting", false;
    KindNotAccepted => "kind-not-accepted", false;
    SourceNamespaceNotAccepted => "source-namespace-not-accepted", false;
    InvalidAcceptMirrorsFrom => "invalid-accept-mirrors-from", false;
    ReservedName => "reserved-name", false;
    InvalidTargets => "invalid-targets", false;
    NoSuchNamespace => "no-such-namespace", false;
    // A copy seen from its own side.
    NotACopy => "not-a-copy", false;
    OtherInstall => "other-install", false;
    Unmarked => "unmarked", false;
    Unwanted => "unwanted", false;
    NoSource => "no-source", false;
    // A namespace's consent.
    Accepts => "accepts", true;
    DoesNotAccept => "does-not-accept", true;
    ProtectedNamespace => "protected-namespace", true;
    FromAny => "from-any", true;
    FromListed => "from-listed", true;
    // Anything that could not be read.
    CannotRead => "cannot-read", false;
}

/// One line of the answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub what: What,
    /// `ConfigMap` or `Secret`.
    pub kind: &'static str,
    pub namespace: String,
    pub name: String,
    /// For a copy: `namespace/name` of its source.
    pub source: Option<String>,
    pub verdict: Verdict,
    pub detail: String,
}

/// What was read, or why it could not be.
pub type Read<T> = Result<T, String>;

/// A preview's mirror annotations: each given one replaces the source's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Preview {
    pub mirror_to: Option<String>,
    pub mirror_to_selector: Option<String>,
}

impl Preview {
    /// `source` with the previewed annotations written.
    pub fn apply<K: MirroredKind>(&self, source: &K) -> K {
        let mut source = source.clone();
        let annotations = source
            .meta_mut()
            .annotations
            .get_or_insert_with(BTreeMap::new);
        for (key, value) in [
            (MIRROR_TO_ANNOTATION, &self.mirror_to),
            (MIRROR_TO_SELECTOR_ANNOTATION, &self.mirror_to_selector),
        ] {
            if let Some(value) = value {
                annotations.insert(key.to_owned(), value.clone());
            }
        }
        source
    }
}

/// The source a companion-shaped name belongs to, if its name has that
/// shape: explain reads such an object as a copy of that source.
pub fn companion_source_name(name: &str, install: &Install) -> Option<String> {
    crate::contract::source_name_of(name, &install.suffix)
}

pub(super) fn labels(meta: &ObjectMeta) -> &BTreeMap<String, String> {
    static EMPTY: BTreeMap<String, String> = BTreeMap::new();
    meta.labels.as_ref().unwrap_or(&EMPTY)
}

/// Whether the install manages a source, as the controller decides it.
enum Managed<K> {
    /// Not a source of this install: nothing of it is written.
    No(Verdict, String),
    /// A source: its finished companion, or why it can have none (its
    /// mirrors are written anyway).
    Yes { companion: Result<K, String> },
}

fn managed<K: Explained>(source: &K, install: &Install, key: &K::DigestKey) -> Managed<K> {
    let meta = source.meta();
    if !install.source_selector.matches(labels(meta)) {
        return Managed::No(
            Verdict::NotSelected,
            format!(
                "its labels do not match the source selector {}: this install ignores it",
                install.selector
            ),
        );
    }
    if let Err(why) = Lists::of(meta) {
        return Managed::No(
            Verdict::InvalidCopyList,
            format!(
                "{why}: nothing of it is written until it is fixed (Warning {})",
                warning::INVALID_COPY_LIST
            ),
        );
    }
    if let Some(reason) = never_a_source(source, &K::source_rules(install)) {
        return Managed::No(
            Verdict::RefusedType,
            format!(
                "{reason}: never copied (Warning {})",
                warning::SOURCE_NOT_COPYABLE
            ),
        );
    }
    let companion = match desired_companion(source, &install.suffix, key) {
        Ok(companion) => companion,
        Err(Refusal::NameTooLong { name, len }) => {
            return Managed::Yes {
                companion: Err(format!(
                    "its companion's name {name} would be {len} characters long, over the limit of 253: it has no companion (Warning {}); its mirrors are written",
                    warning::COMPANION_NAME_TOO_LONG
                )),
            };
        }
        Err(Refusal::SourceIsCompanion) => {
            return Managed::No(
                Verdict::IsACopy,
                format!(
                    "it carries {MANAGED_BY_LABEL}={MANAGER_NAME}, the label of a copy: a copy is never a source"
                ),
            );
        }
        Err(Refusal::BeingDeleted) => {
            return Managed::No(
                Verdict::BeingDeleted,
                "it is being deleted: no copy is written for it".into(),
            );
        }
        Err(Refusal::Incomplete) => {
            return Managed::No(Verdict::NotFound, "it is not stored yet".into());
        }
    };
    Managed::Yes {
        companion: finished(
            companion,
            source,
            &install.selector,
            &install.source_label_keys,
        ),
    }
}

/// The row saying whether the install manages `source`.
fn source_row<K: Explained>(source: &K, managed: &Managed<K>, install: &Install) -> Row {
    let (verdict, detail) = match managed {
        Managed::No(verdict, detail) => (*verdict, detail.clone()),
        Managed::Yes {
            companion: Err(why),
        } => (Verdict::NameTooLong, why.clone()),
        Managed::Yes { companion: Ok(_) } => (
            Verdict::Managed,
            format!("it matches the source selector {}", install.selector),
        ),
    };
    row::<K>(What::Source, source.meta(), None, verdict, detail)
}

fn row<K: Explained>(
    what: What,
    meta: &ObjectMeta,
    source: Option<String>,
    verdict: Verdict,
    detail: String,
) -> Row {
    Row {
        what,
        kind: K::NAME,
        namespace: meta.namespace.clone().unwrap_or_default(),
        name: meta.name.clone().unwrap_or_default(),
        source,
        verdict,
        detail,
    }
}

fn row_at<K: Explained>(
    what: What,
    namespace: &str,
    name: &str,
    source: Option<String>,
    verdict: Verdict,
    detail: String,
) -> Row {
    Row {
        what,
        kind: K::NAME,
        namespace: namespace.to_owned(),
        name: name.to_owned(),
        source,
        verdict,
        detail,
    }
}

/// How the copy `actual` compares with the `desired` copy of `source`:
/// what the controller's plan would write, in words.
fn compare<K: Explained>(
    desired: K,
    actual: &K,
    source: &ObjectMeta,
    install: &Install,
    key: &K::DigestKey,
) -> (Verdict, String) {
    let actual = match K::KEYED {
        Some(prefix) => with_checksum_assumed(actual, source, prefix, key),
        None => actual.clone(),
    };
    let copy = CachedCopy::of(&actual);
    let content_same = Some(
        copy.checksum_as_copy_of(&SourceId::of(source), key)
            .as_ref(),
    ) == annotation(desired.meta(), CHECKSUM_ANNOTATION);
    match plan::plan(desired, Some(&copy), source, &install.source_label_keys, key) {
        Err(NameTaken) => (
            Verdict::NameTaken,
            format!("the name is taken by {}; it is left untouched", whose(actual.meta(), install)),
        ),
        Ok(Write::Nothing) if K::KEYED.is_some() => (
            Verdict::InSyncUnverified,
            "in sync: unknown (keyed): its content and metadata are the source's; its checksum is keyed with the install's digest key, which explain does not read".into(),
        ),
        Ok(Write::Nothing) => (
            Verdict::InSync,
            "its content and checksum are the source's".into(),
        ),
        Ok(Write::Replace { why, .. }) => match (K::KEYED.is_some(), content_same, why) {
            (true, false, _) => (
                Verdict::Differs,
                "its content is not the source's".into(),
            ),
            (_, _, Difference::SourceChanged) => (
                Verdict::SourceChanged,
                "it holds an earlier content of the source: the controller updates it".into(),
            ),
            _ => (
                Verdict::Drifted,
                "it was edited (its content, or the labels, annotations or owner the controller sets): the controller restores it".into(),
            ),
        },
        Ok(Write::DeleteToRecreate { .. }) => (
            Verdict::MustRecreate,
            "its content must change and the API server refuses that in place (immutable, or another type): the controller deletes and recreates it".into(),
        ),
        Ok(Write::Create(_)) => (Verdict::Missing, "it does not exist".into()),
    }
}

/// `copy` with its checksum annotation, when it has the keyed form, taken
/// for right: recomputed under explain's own key.
fn with_checksum_assumed<K: MirroredKind>(
    copy: &K,
    source: &ObjectMeta,
    prefix: &str,
    key: &K::DigestKey,
) -> K {
    let mut copy = copy.clone();
    let digest = K::checksum(&copy.content_hash(), &SourceId::of(source), key).into_owned();
    if let Some(checksum) = copy
        .meta_mut()
        .annotations
        .as_mut()
        .and_then(|annotations| annotations.get_mut(CHECKSUM_ANNOTATION))
        && checksum.starts_with(prefix)
    {
        *checksum = digest;
    }
    copy
}

/// Whose an object at a copy's name is, in words.
pub fn whose(meta: &ObjectMeta, install: &Install) -> String {
    match labels(meta).get(MANAGED_BY_LABEL) {
        None => format!("an object of someone else (no {MANAGED_BY_LABEL} label)"),
        Some(manager) if manager != MANAGER_NAME => {
            format!("an object of another tool ({MANAGED_BY_LABEL}={manager})")
        }
        Some(_) => match annotation(meta, SOURCE_SELECTOR_ANNOTATION) {
            Some(selector) if selector != install.selector => {
                format!("a copy of another install (source selector {selector})")
            }
            _ => match mirror_of(meta) {
                Some((namespace, name)) => format!("the mirror of {namespace}/{name}"),
                None => match meta.owner_references.iter().flatten().next() {
                    Some(owner) => format!("an object owned by {} {}", owner.kind, owner.name),
                    None => "a copy whose source cannot be proven".into(),
                },
            },
        },
    }
}

/// A copy's row once compared, with a recent contest said.
fn copy_row<K: Explained>(
    what: What,
    namespace: &str,
    name: &str,
    source: &ObjectMeta,
    (verdict, detail): (Verdict, String),
    contested: &BTreeSet<String>,
) -> Row {
    let copy_key = format!("{namespace}/{name}");
    let (verdict, detail) = match (contested.contains(&copy_key), verdict.ok()) {
        (true, false) => (
            Verdict::Contested,
            format!(
                "someone else keeps rewriting it ({}): the controller restores it slowly; {detail}",
                warning::COPY_CONTESTED
            ),
        ),
        (true, true) => (
            verdict,
            format!(
                "{detail}; it was contested recently ({})",
                warning::COPY_CONTESTED
            ),
        ),
        (false, _) => (verdict, detail),
    };
    row_at::<K>(
        what,
        namespace,
        name,
        Some(object_key(source)),
        verdict,
        detail,
    )
}

/// Why a namespace that a source asks for receives no mirror, in the
/// words of a row; None when it should hold one.
fn refusal<K: Explained>(
    targets: &Targets,
    source: &ObjectMeta,
    namespace: &NamespaceFacts,
    install: &Install,
) -> Option<(Verdict, String)> {
    let consent = K::consent(install);
    let source_namespace = source.namespace.as_deref().unwrap_or_default();
    if wants_mirror(targets, source_namespace, namespace, consent) {
        return None;
    }
    Some(match consent.verdict(source_namespace, namespace) {
        Err(NamespaceRefusal::SourceNamespace) => (
            Verdict::SourceNamespace,
            "the source's own namespace: it holds the companion".into(),
        ),
        Err(NamespaceRefusal::Protected) => (
            Verdict::Protected,
            format!(
                "{}; never mirrored into (Warning {} on the source when its labels consent)",
                NamespaceRefusal::Protected,
                warning::MIRROR_NAMESPACE_PROTECTED
            ),
        ),
        Err(NamespaceRefusal::NotConsenting)
            if K::other_consent(install)
                .selector
                .matches(&namespace.labels) =>
        {
            (
                Verdict::KindNotAccepted,
                format!(
                    "it accepts {} mirrors only: {} mirrors need labels matching {}",
                    K::OTHER,
                    K::NAME,
                    consent.selector
                ),
            )
        }
        Err(NamespaceRefusal::NotConsenting) => (
            Verdict::NotConsenting,
            format!(
                "it does not consent: {} mirrors need labels matching {}",
                K::NAME,
                consent.selector
            ),
        ),
        Err(NamespaceRefusal::SourceNamespaceNotAccepted) => (
            Verdict::SourceNamespaceNotAccepted,
            format!(
                "its {ACCEPT_MIRRORS_FROM_ANNOTATION} ({}) does not name {source_namespace}",
                namespace.accept_from.as_deref().unwrap_or_default()
            ),
        ),
        Err(NamespaceRefusal::MalformedAcceptFrom(why)) => (
            Verdict::InvalidAcceptMirrorsFrom,
            format!(
                "it accepts nothing until fixed: {why} (Warning {} on the Namespace)",
                warning::INVALID_ACCEPT_MIRRORS_FROM
            ),
        ),
        Ok(()) => (
            Verdict::NotConsenting,
            "it does not take this source's mirror".into(),
        ),
    })
}

/// A Warning Event, as explain shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    /// What it is about: `namespace/name`, or a Namespace's name.
    pub regarding: String,
    pub reason: String,
    pub message: String,
    pub count: i32,
    pub last_seen: Option<Timestamp>,
}

/// How long after its last Warning a copy still counts as contested.
pub const CONTESTED_RECENTLY: SignedDuration = SignedDuration::from_mins(10);

/// The copies (`namespace/name`) a `CopyContested` Warning seen within
/// [`CONTESTED_RECENTLY`] of `now` names.
pub fn contested_copies(warnings: &[Warning], now: Timestamp) -> BTreeSet<String> {
    warnings
        .iter()
        .filter(|w| w.reason == warning::COPY_CONTESTED)
        .filter(|w| {
            w.last_seen
                .is_some_and(|seen| now.duration_since(seen) <= CONTESTED_RECENTLY)
        })
        .filter_map(|w| {
            w.message
                .split_once(" was rewritten")
                .map(|(copy, _)| copy.to_owned())
        })
        .collect()
}

mod copy;
mod namespace;
mod source;

use copy::copy_itself;
pub use copy::{CopyScene, explain_copy, is_copy};
pub use namespace::{NamespaceScene, consent_rows, explain_namespace, sources_asking};
pub use source::{
    Namespaces, SourceScene, companion_of, explain_source, mirror_namespaces, named_namespaces,
};

#[cfg(test)]
mod tests;
