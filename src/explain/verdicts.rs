//! `explain`'s verdicts, built from objects already read: no I/O.
//!
//! Every verdict comes from the functions the controller decides with:
//! whether an object is a source ([`desired`] and the kind's
//! `source_refusal`), which namespaces it asks for and which consent
//! ([`Targets`], [`wants_mirror`], [`Consent::verdict`]), whose an object
//! at a copy's name is and what write it would need ([`plan::plan`]), and
//! whether a copy is still wanted ([`copy_verdict::copy_verdict`]). This module
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
    contract::condition::Condition,
    contract::{
        CHECKSUM_ANNOTATION, CopyRole, MANAGED_BY_LABEL, MANAGER_NAME, SOURCE_SELECTOR_ANNOTATION,
        annotation, cluster_mirror_of, companion_name, is_managed_by_us, mirror_of, object_key,
        warning,
    },
    decisions::cache_form::CachedCopy,
    decisions::carried::Lists,
    decisions::consent::{
        ACCEPT_MIRRORS_FROM_ANNOTATION, Consent, NamespaceFacts, NamespaceRefusal,
    },
    decisions::copy_request::CopyRequest,
    decisions::copy_verdict::{self, CopyVerdict, Unwanted},
    decisions::desired_copy::{Refusal, desired, never_a_source},
    decisions::grants::NamespaceGrants,
    decisions::install::Install,
    decisions::key_shape::{annotated_shape, checksum::CopyForm},
    decisions::mirror_name::mirror_name,
    decisions::ownership::{claimed_source, outranked_mirror},
    decisions::patterns,
    decisions::plan::{self, Difference, NameTaken, Write},
    decisions::request_key::RequestKey,
    decisions::secret_published::{SecretAs, secret_published_naming_the_rest},
    decisions::selector::Selector,
    decisions::targets::{
        MIRROR_TO_ANNOTATION, MIRROR_TO_SELECTOR_ANNOTATION, Targets, wants_mirror,
    },
    kind::SourceId,
    kind::secret::SecretSourceRules,
    kind::{ChecksumKey, MirroredKind, secret::DIGEST_PREFIX},
};

/// What the install decides with: its flags, parsed as the controller
/// parses them. Besides the settings every copy is decided with, the rules
/// the controller keeps per kind (and for ClusterMirrors), here for both
/// kinds at once.
#[derive(Debug, Clone)]
pub struct Rules {
    pub install: Install,
    pub configmaps: Consent,
    pub secrets: Consent,
    /// The Secrets refused as sources besides the built-in types: the
    /// types the install adds, and its own Secrets (its digest key).
    pub secret_rules: SecretSourceRules,
    /// The kinds the install mirrors (`--kinds`), as rows name them.
    pub kinds: Vec<&'static str>,
    /// The namespaces ClusterMirror sources may come from.
    pub cluster_mirror_sources: Vec<String>,
    /// Where no ClusterMirror writes: the protected namespaces and
    /// `cluster_mirror_sources`.
    pub cluster_consent: Consent,
    /// The class of the ClusterMirrors the install serves.
    pub cluster_mirror_class: String,
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
    fn consent(rules: &Rules) -> &Consent;
    fn other_consent(rules: &Rules) -> &Consent;
    /// What the install refuses as sources of this kind.
    fn source_rules(rules: &Rules) -> Self::SourceRules;
    /// The other kind, as rows name it.
    const OTHER: &'static str;
    /// The key explain compares contents with.
    fn comparison_key() -> Self::DigestKey;
    /// The key explain compares a copy of this kind holding a Secret's
    /// content with: the key follows the content, not the copy's kind.
    fn secret_content_key() -> Box<dyn ChecksumKey<Self>>;
    /// How a Secret's content, with the keys a shape copies, is read as an
    /// object of this kind; None for a kind that publishes none.
    const FROM_SECRET: Option<SecretAs<Self>>;
}

impl Explained for ConfigMap {
    const NAME: &'static str = "ConfigMap";
    const KEYED: Option<&'static str> = None;
    const OTHER: &'static str = "Secret";

    fn consent(rules: &Rules) -> &Consent {
        &rules.configmaps
    }

    fn other_consent(rules: &Rules) -> &Consent {
        &rules.secrets
    }

    fn source_rules(_: &Rules) {}

    fn comparison_key() {}

    fn secret_content_key() -> Box<dyn ChecksumKey<ConfigMap>> {
        Box::new(Secret::comparison_key())
    }

    const FROM_SECRET: Option<SecretAs<Self>> = Some(secret_published_naming_the_rest);
}

impl Explained for Secret {
    const NAME: &'static str = "Secret";
    const KEYED: Option<&'static str> = Some(DIGEST_PREFIX);
    const OTHER: &'static str = "ConfigMap";

    fn consent(rules: &Rules) -> &Consent {
        &rules.secrets
    }

    fn other_consent(rules: &Rules) -> &Consent {
        &rules.configmaps
    }

    fn source_rules(rules: &Rules) -> SecretSourceRules {
        rules.secret_rules.clone()
    }

    /// Any key compares contents alike; a random one makes whatever
    /// digest explain computes worthless outside this process.
    fn comparison_key() -> Self::DigestKey {
        let bytes: [u8; crate::kind::secret::SecretDigestKey::LEN] = rand::random();
        let key = crate::kind::secret::SecretDigestKey::from_bytes(&bytes);
        key.unwrap_or_else(|| unreachable!("the length is the key's"))
    }

    fn secret_content_key() -> Box<dyn ChecksumKey<Secret>> {
        Box::new(Self::comparison_key())
    }

    const FROM_SECRET: Option<SecretAs<Self>> = None;
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
    /// The ClusterMirror or Mirror a row is about, or whose copy it is
    /// about.
    pub request: Option<RequestKey>,
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
pub fn companion_source_name(name: &str, rules: &Rules) -> Option<String> {
    crate::contract::source_name_of(name, &rules.install.suffix)
}

pub(super) fn labels(meta: &ObjectMeta) -> &BTreeMap<String, String> {
    static EMPTY: BTreeMap<String, String> = BTreeMap::new();
    meta.labels.as_ref().unwrap_or(&EMPTY)
}

/// Why a source whose `workshop.io/mirror-name` cannot be a name has no
/// mirror written.
pub(crate) fn invalid_mirror_name(why: &str) -> (Verdict, String) {
    Verdict::told(
        Condition::InvalidMirrorName,
        format!("{why}: no mirror is written, and those written before stay, until it is fixed"),
    )
}

/// The row saying whether the install manages `source`.
fn source_row<K: Explained>(source: &K, managed: &Managed<K>, rules: &Rules) -> Row {
    let (verdict, detail) = match managed {
        Managed::No(verdict, detail) => (*verdict, detail.clone()),
        Managed::Yes {
            companion: Err(why),
        } => (Verdict::NameTooLong, why.clone()),
        Managed::Yes { companion: Ok(_) } => {
            let matches = managed_detail(source.meta(), rules);
            let shape = annotated_shape(source.meta()).unwrap_or_default();
            let detail = match keys::keys_held(source, &shape, CopyForm::default()) {
                Some((held, _)) => format!("{matches}; {held}"),
                None => matches,
            };
            (Verdict::Managed, detail)
        }
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
    let namespace = meta.namespace.as_deref().unwrap_or_default();
    let name = meta.name.as_deref().unwrap_or_default();
    row_at::<K>(what, namespace, name, source, verdict, detail)
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
        request: None,
        verdict,
        detail,
    }
}

mod cluster_mirror;
mod compare;
mod contested;
mod copy;
mod keys;
mod managed;
use managed::{Managed, managed};
mod namespace;
mod orphan;
mod refusal;
mod source;
mod what;
mod whose;

use compare::compare;
pub use contested::{Warning, contested_copies};
use refusal::{managed_detail, refusal};
pub use what::*;
use whose::copy_row;
pub use whose::whose;

pub use cluster_mirror::{ClusterMirrorScene, class_words, explain_cluster_mirror, in_namespace};
use copy::copy_itself;
pub use copy::{CopyScene, explain_copy, is_copy};
pub use namespace::{NamespaceScene, consent_rows, explain_namespace, sources_asking};
pub use orphan::{orphan_row, orphan_rows};
pub use source::{
    Namespaces, SourceScene, companion_of, explain_source, mirror_namespaces, named_namespaces,
};

#[cfg(test)]
mod tests;
