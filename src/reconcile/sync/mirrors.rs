//! A source's mirrors in other namespaces: which namespaces get one, the
//! writes, and how their outcomes become one condition of the source.

use k8s_openapi::api::core::v1::ObjectReference;
use kube::ResourceExt;

use crate::{
    contract::{cluster_mirror_of, warning},
    decisions::cluster_mirror::{Origin, Request},
    decisions::consent::{NamespaceFacts, NamespaceRefusal},
    decisions::copy_request::CopyRequest,
    decisions::mirror_name::mirror_name,
    decisions::scope::Scope,
    decisions::targets::Targets,
    kind::MirroredKind,
    reconcile::context::Context,
    reconcile::fan_out::{self, Outcomes},
    reconcile::source_read::Source,
    reconcile::{error::Error, soonest::soonest},
};

/// One copy in each namespace the source asks for and that consents, of
/// those `scope` names: all of them, or for a reconcile woken by changes in
/// a few namespaces alone, those (the source's other mirrors are as its
/// last reconcile, which succeeded, left them: `decisions::scope`). The
/// mirrors no longer wanted are removed by the prune loop.
pub(super) async fn sync_mirrors<K: MirroredKind>(
    source: &Source<'_, K>,
    scope: &Scope,
    ctx: &Context<K>,
) -> Result<(), Error> {
    let cached = source.cached;
    let Some(targets) = mirror_targets(cached, ctx)? else {
        return Ok(());
    };
    // A malformed name leaves every mirror as it is, as malformed targets
    // do; the companion, which keeps `<name><suffix>`, is written all the same.
    let name = mirror_name(cached.meta()).map_err(Error::InvalidMirrorName)?;
    if ctx
        .install
        .reserved_names
        .iter()
        .any(|reserved| reserved == name)
    {
        let name = name.to_owned();
        return Err(Error::ReservedName { name });
    }
    let source_namespace = cached.namespace().unwrap_or_default();
    let request = &CopyRequest::SOURCE_MIRRORS;
    // What refuses the request refuses it whole, before any namespace is
    // looked at. A source quietly not copied (a copy itself, or being
    // deleted) writes no mirror, so no ClusterMirror's claim refuses it one.
    let answered = match source.answered(request, &ctx.install) {
        Ok(answered) => Some(answered),
        Err(refusal) => match Error::of_refusal(refusal) {
            Some(error) => return Err(error),
            None => None,
        },
    };
    let claims = ClusterMirrorClaims::of(name, ctx);
    let mut wanted = Vec::new();
    let mut claimed = Vec::new();
    for (checked, namespace) in candidates(&targets, scope, ctx).into_iter().enumerate() {
        fan_out::let_others_run(checked).await;
        if !accepts(&source_namespace, &namespace, ctx) || answered.is_none() {
            continue;
        }
        match claims.by(&namespace) {
            Some(cluster_mirror) => {
                let error = Error::NameClaimed {
                    name: format!("{}/{name}", namespace.name),
                    cluster_mirror,
                };
                claimed.push((namespace.name, error));
            }
            None => wanted.push(namespace.name),
        }
    }
    let mut outcomes = match &answered {
        Some(answered) => fan_out::fan_out(source, answered, wanted, ctx).await,
        None => Outcomes::default(),
    };
    outcomes.failed.extend(claimed);
    // Protected namespaces are told of by a reconcile that looks at all.
    let protected = match scope {
        Scope::Everything => protected_targets(&targets, &source_namespace, ctx),
        Scope::Namespaces(_) => Vec::new(),
    };
    mirror_outcome(outcomes, protected)
}

/// The namespaces of `scope` that `targets` asks for and that admit the
/// kind. A namespace the source does not ask for, or that does not
/// consent, needs nothing here: its mirror, if any, is the prune loop's.
fn candidates<K: MirroredKind>(
    targets: &Targets,
    scope: &Scope,
    ctx: &Context<K>,
) -> Vec<NamespaceFacts> {
    match scope {
        Scope::Everything => ctx.caches.admitting_targets(targets, &ctx.consent),
        Scope::Namespaces(namespaces) => namespaces
            .iter()
            .filter_map(|namespace| ctx.caches.namespace_facts(namespace))
            .filter(|facts| {
                ctx.consent.admits(facts) && targets.includes(&facts.name, &facts.labels)
            })
            .collect(),
    }
}

/// Whether a namespace that admits the kind and is asked for accepts
/// mirrors from the source's namespace.
fn accepts<K: MirroredKind>(
    source_namespace: &str,
    namespace: &NamespaceFacts,
    ctx: &Context<K>,
) -> bool {
    match ctx.consent.verdict(source_namespace, namespace) {
        Ok(()) => true,
        Err(NamespaceRefusal::MalformedAcceptFrom(why)) => {
            warn_namespace(ctx, namespace, &why);
            false
        }
        Err(_) => false,
    }
}

/// The protected namespaces `targets` asks for that consent to the kind:
/// they would receive a mirror but for their protection, which the source's
/// owner should hear of. (Asked for by a glob but not consenting, they
/// would receive nothing anyway: no news.)
fn protected_targets<K: MirroredKind>(
    targets: &Targets,
    source_namespace: &str,
    ctx: &Context<K>,
) -> Vec<String> {
    ctx.consent
        .protected()
        .iter()
        .filter(|name| name.as_str() != source_namespace)
        .filter_map(|name| ctx.caches.namespace_facts(name))
        .filter(|ns| {
            targets.includes(&ns.name, &ns.labels) && ctx.consent.selector.matches(&ns.labels)
        })
        .map(|ns| ns.name)
        .collect()
}

/// Tells a namespace, once per value, that its list of accepted source
/// namespaces cannot be read, so it accepts nothing.
fn warn_namespace<K: MirroredKind>(ctx: &Context<K>, namespace: &NamespaceFacts, why: &str) {
    let value = namespace.accept_from.as_deref().unwrap_or_default();
    let exists = |name: &str| ctx.caches.namespace_facts(name).is_some();
    if !ctx
        .namespace_warnings
        .is_new(&namespace.name, value, exists)
    {
        return;
    }
    tracing::error!(namespace = %namespace.name, %why, "namespace accepts no mirrors until its annotation is fixed");
    let regarding = ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Namespace".into()),
        name: Some(namespace.name.clone()),
        ..ObjectReference::default()
    };
    ctx.events.warning_about(
        regarding,
        warning::INVALID_ACCEPT_MIRRORS_FROM,
        format!("{why}; this namespace accepts no mirrors until it is fixed"),
    );
}

/// Where the source asks to be mirrored; None when it does not, or when
/// this controller watches one namespace only.
pub(super) fn mirror_targets<K: MirroredKind>(
    source: &K,
    ctx: &Context<K>,
) -> Result<Option<Targets>, Error> {
    if ctx.caches.namespaces.is_none() {
        return Ok(None);
    }
    Targets::of(source.meta()).map_err(Error::InvalidTargets)
}

/// The ClusterMirrors of this kind that want the name of a source's
/// mirrors for their copies: a ClusterMirror outranks a source's own
/// mirrors, so a source never writes a mirror where one of them claims
/// the name, whether the name is free (between the delete and the create
/// of an immutable copy, say), holds the source's own mirror (the
/// ClusterMirror takes it over) or the ClusterMirror's copy. A claim takes
/// effect only where the ClusterMirror writes (`Request::claims`): a
/// suspended or blocked one leaves the source's mirror in sync.
pub(crate) struct ClusterMirrorClaims<'a, K: MirroredKind> {
    requests: Vec<std::sync::Arc<Request>>,
    ctx: &'a Context<K>,
}

impl<'a, K: MirroredKind> ClusterMirrorClaims<'a, K> {
    pub(crate) fn of(name: &str, ctx: &'a Context<K>) -> ClusterMirrorClaims<'a, K> {
        let Some(cluster_mirrors) = &ctx.cluster_mirrors else {
            return ClusterMirrorClaims {
                requests: Vec::new(),
                ctx,
            };
        };
        let requests = cluster_mirrors
            .mirrors
            .requests()
            .into_iter()
            // Only this install's class: another install's ClusterMirror is
            // that install's to write, and takes no name from this one.
            // A Mirror claims no name: it keeps one it holds.
            .filter(|request| {
                request.origin == Origin::ClusterMirror
                    && request.copy_kind() == K::SOURCE_KIND
                    && request.target_name == name
                    && request.served_by(&cluster_mirrors.install.class)
            })
            .collect();
        ClusterMirrorClaims { requests, ctx }
    }

    /// The ClusterMirror that claims the name of the source's mirrors in
    /// `namespace`, if one does.
    pub(crate) fn by(&self, namespace: &NamespaceFacts) -> Option<String> {
        let cluster_mirrors = self.ctx.cluster_mirrors.as_ref()?;
        let claims = |request: &&std::sync::Arc<Request>| {
            let held = self.ctx.caches.copy(&namespace.name, &request.target_name);
            let holds = held.is_some_and(|copy| {
                cluster_mirror_of(copy.object().meta()) == Some(request.name.as_str())
            });
            let writing = cluster_mirrors.writes(request);
            request.claims(namespace, &cluster_mirrors.consent, writing, holds)
        };
        (self.requests.iter().find(claims)).map(|request| request.name.clone())
    }
}

/// All names taken become one condition (reported once), and so do the
/// protected namespaces asked for; a namespace being deleted needs no
/// mirror; of what is left, the failure to be retried soonest stands for
/// the rest, with every condition a person must hear of (`soonest`).
fn mirror_outcome(outcomes: Outcomes, protected: Vec<String>) -> Result<(), Error> {
    let mut taken = Vec::new();
    let mut claimed = Vec::new();
    let mut others = Vec::new();
    for (_, error) in outcomes.failed {
        match error {
            Error::NameTaken { name } => taken.push(name),
            Error::NameClaimed {
                name,
                cluster_mirror,
            } => claimed.push((name, cluster_mirror)),
            error => others.push(Err(error)),
        }
    }
    taken.sort();
    claimed.sort();
    if !taken.is_empty() || !claimed.is_empty() {
        let names = taken;
        others.insert(0, Err(Error::MirrorNameTaken { names, claimed }));
    }
    if !protected.is_empty() {
        others.push(Err(Error::MirrorNamespaceProtected {
            namespaces: protected,
        }));
    }
    soonest(others)
}

#[cfg(test)]
mod tests;
