//! Which namespaces may receive a kind's mirrors, and from where. Pure.
//!
//! Asking is the source's part (`targets`); consenting is the namespace's,
//! and the controller's configuration bounds both:
//! - a namespace accepts a kind when its labels match that kind's consent
//!   selector (`--accept-mirrors-selector` for ConfigMaps,
//!   `--accept-secret-mirrors-selector` for Secrets), so consent to one
//!   kind never lets the other in;
//! - it may name the source namespaces it accepts from, in the annotation
//!   `workshop.io/accept-mirrors-from` (names and `*` globs, as
//!   `workshop.io/mirror-to`); a malformed list accepts nothing;
//! - a namespace whose labels do not consent may still consent by a
//!   MirrorGrant in it that names the kind and the source's namespace
//!   (`grants`); until the grants are known, it is neither written nor
//!   emptied;
//! - a protected namespace (`--protected-namespaces`, and always the
//!   install's own) is never a target, whatever its labels or grants say.

use std::{collections::BTreeMap, fmt, sync::Arc};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::api::SourceKind;
use crate::decisions::{
    grants::{GrantsNotKnown, NamespaceGrants},
    patterns,
    selector::Selector,
};

/// On a Namespace: the source namespaces whose mirrors it accepts.
pub const ACCEPT_MIRRORS_FROM_ANNOTATION: &str = "workshop.io/accept-mirrors-from";

/// What consent reads of a namespace: its name, labels, the source
/// namespaces it accepts from, and the grants it holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NamespaceFacts {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub accept_from: Option<String>,
    pub grants: NamespaceGrants,
}

impl NamespaceFacts {
    /// What the Namespace object says; its grants not known.
    pub fn of(namespace: &ObjectMeta) -> NamespaceFacts {
        NamespaceFacts {
            name: namespace.name.clone().unwrap_or_default(),
            labels: namespace.labels.clone().unwrap_or_default(),
            accept_from: namespace
                .annotations
                .as_ref()
                .and_then(|a| a.get(ACCEPT_MIRRORS_FROM_ANNOTATION))
                .cloned(),
            grants: NamespaceGrants::NotKnown,
        }
    }

    pub fn with_grants(self, grants: NamespaceGrants) -> NamespaceFacts {
        NamespaceFacts { grants, ..self }
    }
}

/// Keeps of a namespace's metadata what the cache needs: its name, uid,
/// version, labels and the annotation consent reads. Other annotations
/// (a `last-applied-configuration` can be kilobytes) would cost memory in
/// every namespace and tell nothing.
/// A list over its length is kept cut short, still over it: refused
/// alike, it costs every namespace no more than the limit.
pub fn slim_namespace(namespace: &mut ObjectMeta) {
    namespace.managed_fields = None;
    if let Some(annotations) = namespace.annotations.as_mut() {
        annotations.retain(|key, _| key == ACCEPT_MIRRORS_FROM_ANNOTATION);
        annotations.values_mut().for_each(patterns::cut_over_long);
    }
}

/// Why a namespace receives no mirror of a source it is asked for by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NamespaceRefusal {
    /// It is the source's own namespace, which holds the companion.
    SourceNamespace,
    /// Protected: never a target, whatever its labels.
    Protected,
    /// Its labels do not match this kind's consent selector.
    NotConsenting,
    /// Its `workshop.io/accept-mirrors-from` does not name the source's
    /// namespace.
    SourceNamespaceNotAccepted,
    /// Its `workshop.io/accept-mirrors-from` cannot be read: it accepts
    /// nothing until it is fixed.
    MalformedAcceptFrom(String),
    /// Its labels do not consent, and its grants are not known yet (not
    /// listed, or not readable): it is neither written nor emptied.
    GrantsNotKnown,
}

/// How a namespace consents to a kind's mirrors from a source namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admission {
    /// Its labels match the kind's consent selector, and its
    /// `workshop.io/accept-mirrors-from` (if any) names the source's
    /// namespace.
    ByLabels,
    /// The MirrorGrant of this name in it names the kind and the source's
    /// namespace (the first by name, of several).
    ByGrant(String),
}

impl fmt::Display for NamespaceRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NamespaceRefusal::SourceNamespace => f.write_str("it is the source's own namespace"),
            NamespaceRefusal::Protected => f.write_str("it is a protected namespace"),
            NamespaceRefusal::NotConsenting => {
                f.write_str("its labels do not consent to mirrors of this kind")
            }
            NamespaceRefusal::SourceNamespaceNotAccepted => write!(
                f,
                "its {ACCEPT_MIRRORS_FROM_ANNOTATION} does not name the source's namespace"
            ),
            NamespaceRefusal::MalformedAcceptFrom(why) => {
                write!(f, "it accepts nothing until fixed: {why}")
            }
            NamespaceRefusal::GrantsNotKnown => {
                f.write_str("its labels do not consent, and its MirrorGrants are not known yet")
            }
        }
    }
}

/// One kind's consent rules.
#[derive(Debug, Clone)]
pub struct Consent {
    /// The kind consented to: that of the mirrors a namespace receives.
    kind: SourceKind,
    /// The namespaces whose labels match accept this kind's mirrors.
    pub selector: Selector,
    /// Never targets, of any kind.
    protected: Arc<[String]>,
}

impl Consent {
    pub fn new(
        kind: SourceKind,
        selector: Selector,
        protected: impl IntoIterator<Item = String>,
    ) -> Consent {
        let mut protected: Vec<String> = protected
            .into_iter()
            .map(|name| name.trim().to_owned())
            .filter(|name| !name.is_empty())
            .collect();
        protected.sort();
        protected.dedup();
        Consent {
            kind,
            selector,
            protected: protected.into(),
        }
    }

    pub fn kind(&self) -> SourceKind {
        self.kind
    }

    pub fn is_protected(&self, namespace: &str) -> bool {
        self.protected.iter().any(|p| p == namespace)
    }

    pub fn protected(&self) -> &[String] {
        &self.protected
    }

    /// Whether `namespace` takes this kind's mirrors of a source in
    /// `source_namespace`, and why not. Protection is checked first: it is
    /// the one a namespace's own labels and grants cannot change.
    pub fn verdict(
        &self,
        source_namespace: &str,
        namespace: &NamespaceFacts,
    ) -> Result<(), NamespaceRefusal> {
        self.admission(source_namespace, namespace).map(|_| ())
    }

    /// [`Consent::verdict`], saying how the namespace consents: by its
    /// labels, or by which grant.
    pub fn admission(
        &self,
        source_namespace: &str,
        namespace: &NamespaceFacts,
    ) -> Result<Admission, NamespaceRefusal> {
        if namespace.name == source_namespace {
            return Err(NamespaceRefusal::SourceNamespace);
        }
        if self.is_protected(&namespace.name) {
            return Err(NamespaceRefusal::Protected);
        }
        let by_labels = match self.selector.matches(&namespace.labels) {
            true => accepts_from(namespace, source_namespace),
            false => Err(NamespaceRefusal::NotConsenting),
        };
        let Err(refusal) = by_labels else {
            return Ok(Admission::ByLabels);
        };
        match namespace.grants.letting_in(self.kind, source_namespace) {
            Ok(Some(grant)) => Ok(Admission::ByGrant(grant.name().to_owned())),
            Ok(None) => Err(refusal),
            Err(GrantsNotKnown) => Err(NamespaceRefusal::GrantsNotKnown),
        }
    }

    /// The cheap part of the verdict, independent of any source: whether
    /// the namespace could take this kind's mirrors from anywhere.
    pub fn admits(&self, namespace: &NamespaceFacts) -> bool {
        !self.is_protected(&namespace.name)
            && (self.selector.matches(&namespace.labels) || namespace.grants.let_in_any(self.kind))
    }
}

/// Whether the namespace's `workshop.io/accept-mirrors-from` names
/// `source_namespace`; absent, it accepts any namespace.
fn accepts_from(
    namespace: &NamespaceFacts,
    source_namespace: &str,
) -> Result<(), NamespaceRefusal> {
    let Some(list) = namespace.accept_from.as_deref() else {
        return Ok(());
    };
    let patterns = patterns::parse_patterns(ACCEPT_MIRRORS_FROM_ANNOTATION, list)
        .map_err(NamespaceRefusal::MalformedAcceptFrom)?;
    match patterns
        .iter()
        .any(|pattern| pattern.matches(source_namespace))
    {
        true => Ok(()),
        false => Err(NamespaceRefusal::SourceNamespaceNotAccepted),
    }
}

#[cfg(test)]
mod tests;
