//! Which namespaces a ClusterMirror's or a Mirror's reconcile writes
//! into, and which refuse it where that is a failure its status lists.

use kube::runtime::reflector::ObjectRef;

use crate::{
    api::cluster_mirror::reason,
    decisions::cluster_mirror::{NamedRefusal, Origin, Request, Selection, status::Failure},
    decisions::consent::{Consent, NamespaceFacts},
    kind::MirroredKind,
    reconcile::context::Context,
    reconcile::fan_out,
    reconcile::sync::mirrors::ClusterMirrorClaims,
};

use super::caches::ClusterMirrorCaches;

/// Whose consent a request's copies need: a ClusterMirror's, only that
/// of the protected namespaces; a Mirror's, that of its copies' kind.
pub(super) fn consent_for<'a, K: MirroredKind>(
    request: &Request,
    cluster_mirrors: &'a ClusterMirrorCaches,
    ctx: &'a Context<K>,
) -> &'a Consent {
    request.consent(&cluster_mirrors.consent, &ctx.consent)
}

/// The ClusterMirror that claims a Mirror's copies' name in `namespace`,
/// if one does: a ClusterMirror outranks a Mirror, once it writes
/// (`Request::claims`).
pub(super) fn claimed_by<K: MirroredKind>(
    request: &Request,
    namespace: &NamespaceFacts,
    ctx: &Context<K>,
) -> Option<String> {
    match request.origin {
        Origin::ClusterMirror => None,
        Origin::Mirror { .. } => ClusterMirrorClaims::of(&request.target_name, ctx).by(namespace),
    }
}

/// The namespaces a request selects, sorted, and those that refuse it
/// where that is a failure: a namespace a Mirror names exactly that does
/// not consent or is protected, or where a ClusterMirror claims its
/// copies' name.
pub(super) struct Selected {
    pub(super) namespaces: Vec<String>,
    pub(super) refused: Vec<Failure>,
}

impl Selected {
    /// How many namespaces its status counts as selected.
    pub(super) fn count(&self) -> usize {
        self.namespaces.len() + self.refused.len()
    }
}

/// What the request selects, of the namespaces not being deleted.
pub(super) async fn selected<K: MirroredKind>(
    request: &Request,
    cluster_mirrors: &ClusterMirrorCaches,
    ctx: &Context<K>,
) -> Selected {
    let mut selected = Selected {
        namespaces: Vec::new(),
        refused: Vec::new(),
    };
    let Some(store) = &ctx.caches.namespaces else {
        return selected;
    };
    let consent = consent_for(request, cluster_mirrors, ctx);
    // Read once: which ClusterMirrors may claim the name, whatever the
    // namespace.
    let claims = match request.origin {
        Origin::ClusterMirror => None,
        Origin::Mirror { .. } => Some(ClusterMirrorClaims::of(&request.target_name, ctx)),
    };
    for (checked, namespace) in store.state().iter().enumerate() {
        fan_out::let_others_run(checked).await;
        if namespace.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let facts = ctx.caches.facts_of(&namespace.metadata);
        let refused = match request.selection(&facts, consent) {
            Selection::Selected(_) => match claims.as_ref().and_then(|c| c.by(&facts)) {
                None => {
                    selected.namespaces.push(facts.name);
                    continue;
                }
                Some(cluster_mirror) => (
                    reason::NAME_TAKEN,
                    format!(
                        "{} is claimed by ClusterMirror {cluster_mirror}, which outranks a Mirror",
                        request.target_name
                    ),
                ),
            },
            Selection::Refused(why) => (why.reason(), why.message()),
            Selection::NotSelected | Selection::Undecided => continue,
        };
        selected.refused.push(Failure {
            namespace: facts.name,
            reason: refused.0,
            message: refused.1,
            retried: false,
        });
    }
    // Each namespace named exactly and absent (or being deleted) is a
    // failure as one that does not consent.
    let there: std::collections::HashSet<&str> = (selected.namespaces.iter())
        .chain(selected.refused.iter().map(|failure| &failure.namespace))
        .map(String::as_str)
        .collect();
    let absent: Vec<Failure> = (request.named().iter())
        .filter(|name| **name != request.source_namespace && !there.contains(name.as_str()))
        .filter(|name| {
            store
                .get(&ObjectRef::new(name))
                .is_none_or(|n| n.metadata.deletion_timestamp.is_some())
        })
        .map(|name| {
            let refusal = NamedRefusal::NotConsenting;
            Failure {
                namespace: name.clone(),
                reason: refusal.reason(),
                message: refusal.message(),
                retried: false,
            }
        })
        .collect();
    selected.refused.extend(absent);
    selected
        .refused
        .sort_by(|a, b| a.namespace.cmp(&b.namespace));
    selected.namespaces.sort();
    selected
}
