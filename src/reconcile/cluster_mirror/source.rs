//! The source a ClusterMirror's reconcile copies, as cached and checked
//! as the controller checks every source, and the key its copies are
//! checksummed under; a Secret whose keys are published as ConfigMaps is
//! checked as a Secret, then read as the ConfigMap that holds those keys.

use std::sync::Arc;

use crate::{
    cluster::cluster_sources::ClusterSources,
    decisions::cluster_mirror::{Request, status::Blocked},
    decisions::secret_published::secret_published,
    kind::MirroredKind,
    reconcile::context::Context,
};

use super::caches::ClusterMirrorCaches;

/// The key the request's copies are checksummed under: the kind's, or
/// for a Secret's keys published as ConfigMaps, the Secrets'.
pub(super) fn copies_key<K: MirroredKind>(
    request: &Request,
    cluster_mirrors: &ClusterMirrorCaches<K>,
    ctx: &Context<K>,
) -> Option<K::DigestKey> {
    match (&cluster_mirrors.published, request.publishes_secret()) {
        (Some(published), true) => K::published_key(published.key.current()?),
        // Never the kind's own key for a Secret's keys.
        (None, true) => None,
        (_, false) => K::current_key(&ctx.digest_key),
    }
}

/// The request's source as cached, and the exact keys of
/// `spec.target.keys` it lacks; else what blocks the whole request. A
/// Secret whose keys are published is read as the ConfigMap that holds
/// them (`secret_published`), once the Secret itself passed every check.
pub(super) fn cached_source<K: MirroredKind>(
    request: &Request,
    cluster_mirrors: &ClusterMirrorCaches<K>,
    ctx: &Context<K>,
) -> Result<(Arc<K>, Vec<String>), Blocked> {
    let reserved = &ctx.install.reserved_names;
    match (&cluster_mirrors.published, request.publishes_secret()) {
        (Some(published), true) => {
            let (secret, missing) =
                checked_source(request, &published.sources, &published.rules, reserved)?;
            let as_configmap = secret_published(&secret, &request.shape);
            // Only the ConfigMap loop is given Secrets to publish.
            let source = K::from_configmap(as_configmap).ok_or(Blocked::SecretsDisabled)?;
            Ok((Arc::new(source), missing))
        }
        _ => checked_source(
            request,
            &cluster_mirrors.sources,
            &ctx.source_rules,
            reserved,
        ),
    }
}

/// The request's source of kind `S` as cached in `sources`, and the exact
/// keys it lacks; else what blocks the whole request.
fn checked_source<S: MirroredKind>(
    request: &Request,
    sources: &ClusterSources<S>,
    rules: &S::SourceRules,
    reserved_names: &[String],
) -> Result<(Arc<S>, Vec<String>), Blocked> {
    let cached = sources.get(&request.source_namespace, &request.source_name);
    let allowed = sources.allows(&request.source_namespace);
    let keys = cached.as_deref().map(|source| request.keys_missing(source));
    let why_blocked = request
        .blocked(allowed, cached.as_deref(), rules, reserved_names)
        .or_else(|| keys.as_ref()?.as_ref().err().cloned());
    match (why_blocked, cached, keys) {
        (None, Some(cached), Some(Ok(missing))) => Ok((cached, missing)),
        // A missing source is blocked: the second arm never falls back.
        (why, ..) => Err(why.unwrap_or(Blocked::SourceNotFound)),
    }
}
