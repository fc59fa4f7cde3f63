//! Where a ClusterMirror or a Mirror stands with one namespace: who asks
//! decides whose consent it needs. Pure.

use crate::decisions::consent::{Admission, Consent, NamespaceFacts, NamespaceRefusal};

use super::Request;

/// Who made a request, which decides whose consent it needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// A platform team's ClusterMirror: its selector is the consent, and
    /// only protected namespaces are closed to it.
    ClusterMirror,
    /// A tenant's Mirror, in the namespace of its source: a namespace
    /// receives its copies only if it consents to that kind from there.
    /// `named` are the namespaces `target.namespaces` names exactly, each
    /// a failure when it refuses.
    Mirror { named: Vec<String> },
}

/// Where a request stands with one namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selection {
    /// It receives a copy (a Mirror's: consented to, as said).
    Selected(Option<Admission>),
    /// Not asked for, or asked for only by a glob or a selector and
    /// refused: not counted.
    NotSelected,
    /// Named exactly by a Mirror, and refused: a failure, counted.
    Refused(NamedRefusal),
    /// A Mirror's namespace whose consent is not known yet (its grants
    /// not listed): no copy is written there, and one there is kept.
    Undecided,
}

/// Why a namespace a Mirror names exactly receives no copy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NamedRefusal {
    /// Protected: never written, whatever it consents to.
    Protected,
    /// It does not consent to the kind from the Mirror's namespace (or
    /// does not exist: the status tells them apart no more than the API
    /// server does to whoever may not list namespaces).
    NotConsenting,
}

impl NamedRefusal {
    /// The failure's reason, as listed in the status.
    pub fn reason(&self) -> &'static str {
        match self {
            NamedRefusal::Protected => crate::api::cluster_mirror::reason::NAMESPACE_PROTECTED,
            NamedRefusal::NotConsenting => crate::api::cluster_mirror::reason::NOT_CONSENTING,
        }
    }

    /// What the failure says.
    pub fn message(&self) -> String {
        match self {
            NamedRefusal::Protected => "it is a protected namespace: never written".to_owned(),
            NamedRefusal::NotConsenting => "it does not consent to copies of this kind from the \
                 Mirror's namespace: its labels or a MirrorGrant in it must let them in"
                .to_owned(),
        }
    }
}

impl Selection {
    /// Whether a copy there is kept: wanted, or its consent not known.
    pub fn keeps(&self) -> bool {
        matches!(self, Selection::Selected(_) | Selection::Undecided)
    }
}

impl Request {
    /// Where the request stands with `namespace`. A ClusterMirror selects
    /// what it asks for but the protected namespaces (`consent`'s, see
    /// [`cluster_consent`]) and its source's own. A Mirror (`consent` is
    /// that of its copies' kind) selects what it asks for that consents
    /// to that kind from its namespace. One it names exactly and is refused
    /// by is a failure, whatever its selector says of it: its status tells
    /// nothing of a namespace's labels. One it reaches by a glob or its
    /// selector alone is then just not selected.
    ///
    /// [`cluster_consent`]: super::cluster_consent
    pub fn selection(&self, namespace: &NamespaceFacts, consent: &Consent) -> Selection {
        if namespace.name == self.source_namespace {
            return Selection::NotSelected;
        }
        let asked = self.asks_for(namespace);
        let named = match &self.origin {
            Origin::ClusterMirror => {
                return match asked && !consent.is_protected(&namespace.name) {
                    true => Selection::Selected(None),
                    false => Selection::NotSelected,
                };
            }
            Origin::Mirror { named } => named.contains(&namespace.name),
        };
        let refused = match consent.admission(&self.source_namespace, namespace) {
            Ok(admission) if asked => return Selection::Selected(Some(admission)),
            Err(NamespaceRefusal::GrantsNotKnown) if asked => return Selection::Undecided,
            Ok(_) | Err(NamespaceRefusal::GrantsNotKnown) => return Selection::NotSelected,
            Err(NamespaceRefusal::Protected) => NamedRefusal::Protected,
            Err(_) => NamedRefusal::NotConsenting,
        };
        match named {
            true => Selection::Refused(refused),
            false => Selection::NotSelected,
        }
    }

    /// Whose consent its copies need, of `cluster` (the protected
    /// namespaces', see [`cluster_consent`]) and `copies_kind` (that of
    /// its copies' kind): a ClusterMirror needs the first, a Mirror the
    /// second.
    ///
    /// [`cluster_consent`]: super::cluster_consent
    pub fn consent<'a>(&self, cluster: &'a Consent, copies_kind: &'a Consent) -> &'a Consent {
        match self.origin {
            Origin::ClusterMirror => cluster,
            Origin::Mirror { .. } => copies_kind,
        }
    }

    /// Whether it may copy from its source's namespace, given whether
    /// ClusterMirror sources may come from there: a Mirror's source is in
    /// its own namespace, which it may always copy from.
    pub fn may_copy_from_its_namespace(&self, allowed_for_cluster_mirrors: bool) -> bool {
        match self.origin {
            Origin::ClusterMirror => allowed_for_cluster_mirrors,
            Origin::Mirror { .. } => true,
        }
    }

    /// The namespaces it names exactly, for a Mirror: each one absent is
    /// a failure too, `NotConsenting`, as one there that does not consent,
    /// so that its status tells nothing of which namespaces exist.
    pub fn named(&self) -> &[String] {
        match &self.origin {
            Origin::ClusterMirror => &[],
            Origin::Mirror { named } => named,
        }
    }
}

#[cfg(test)]
mod tests;
