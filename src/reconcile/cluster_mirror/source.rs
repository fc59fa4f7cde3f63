//! The source a ClusterMirror's reconcile copies: read from the cache of
//! its own kind and checked as the controller checks every source, then
//! handed to the writer of the copy's kind with the key its copies are
//! checksummed under. The key follows where the content came from: a
//! Secret's content is keyed, whichever kind its copy is.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{ConfigMap, Secret};

use crate::{
    cluster::cluster_sources::ClusterSources,
    decisions::cluster_mirror::{Request, status::Blocked},
    decisions::secret_published::SecretAs,
    decisions::secret_published::secret_published,
    kind::{ChecksumKey, MirroredKind, secret::SecretDigestKey},
    reconcile::context::Context,
    reconcile::error::Error,
};

use super::caches::{ClusterMirrorCaches, SecretSources};

/// A request's source as the writer of its copies' kind takes it.
pub(super) struct Readable<K: MirroredKind> {
    /// The source as cached, as an object of the copies' kind.
    pub(super) cached: Arc<K>,
    /// The exact keys of `spec.target.keys` it lacks.
    pub(super) missing: Vec<String>,
    /// The key its copies are checksummed under.
    pub(super) key: Box<dyn ChecksumKey<K>>,
    /// How the source's content, read afresh, becomes the copies' kind,
    /// when it is a Secret's and they are ConfigMaps.
    pub(super) from_secret: Option<SecretAs<K>>,
}

/// Why a request's source gives no copy now.
pub(super) enum Unreadable {
    /// Until a person changes something: told in the status.
    Blocked(Blocked),
    /// For a while: retried.
    Failed(Error),
}

/// A ConfigMap's, for ConfigMap copies.
pub(super) fn configmap(
    request: &Request,
    caches: &ClusterMirrorCaches,
    ctx: &Context<ConfigMap>,
) -> Result<Readable<ConfigMap>, Unreadable> {
    let Some(sources) = &caches.configmaps else {
        return Err(Unreadable::Failed(not_watched(request)));
    };
    let (cached, missing) = checked_source(request, sources, &(), &ctx.install.reserved_names)?;
    Ok(Readable {
        cached,
        missing,
        key: Box::new(()),
        from_secret: None,
    })
}

/// A Secret's, for Secret copies.
pub(super) fn secret(
    request: &Request,
    caches: &ClusterMirrorCaches,
    ctx: &Context<Secret>,
) -> Result<Readable<Secret>, Unreadable> {
    let (cached, missing, key) = checked_secret(request, caches, ctx)?;
    Ok(Readable {
        cached,
        missing,
        key: Box::new(key),
        from_secret: None,
    })
}

/// A Secret's chosen keys, for the ConfigMaps that publish them: the
/// Secret passes every check as a Secret, and is then read as the
/// ConfigMap that holds only those keys (`secret_published`).
pub(super) fn secret_as_configmap(
    request: &Request,
    caches: &ClusterMirrorCaches,
    ctx: &Context<ConfigMap>,
) -> Result<Readable<ConfigMap>, Unreadable> {
    let (secret, missing, key) = checked_secret(request, caches, ctx)?;
    Ok(Readable {
        cached: Arc::new(secret_published(&secret, &request.shape)),
        missing,
        key: Box::new(key),
        from_secret: Some(secret_published),
    })
}

/// The request's Secret as cached and checked, the exact keys it lacks,
/// and the install's key, under which every copy of its content is
/// checksummed.
fn checked_secret<K: MirroredKind>(
    request: &Request,
    caches: &ClusterMirrorCaches,
    ctx: &Context<K>,
) -> Result<(Arc<Secret>, Vec<String>, SecretDigestKey), Unreadable> {
    let secrets = secrets(request, caches)?;
    let reserved = &ctx.install.reserved_names;
    let (secret, missing) = checked_source(request, &secrets.sources, &secrets.rules, reserved)?;
    let key = secrets.key.current().ok_or(Error::NoDigestKey);
    Ok((secret, missing, key.map_err(Unreadable::Failed)?))
}

/// The Secrets ClusterMirrors may copy. Their cache is listed: the loop
/// reconciles no request before the caches it reads are
/// (`ClusterMirrorLoop::listed`).
fn secrets<'c>(
    request: &Request,
    caches: &'c ClusterMirrorCaches,
) -> Result<&'c SecretSources, Unreadable> {
    (caches.secrets.as_ref()).ok_or_else(|| Unreadable::Failed(not_watched(request)))
}

/// Never met: a request is routed only to a writer whose sources the
/// install watches (`decisions::cluster_mirror::routes`).
fn not_watched(request: &Request) -> Error {
    Error::Stale(format!(
        "the {}s ClusterMirrors may copy are not watched",
        request.kind.as_str()
    ))
}

/// The request's source of kind `S` as cached in `sources`, and the exact
/// keys it lacks; else what blocks the whole request.
fn checked_source<S: MirroredKind>(
    request: &Request,
    sources: &ClusterSources<S>,
    rules: &S::SourceRules,
    reserved_names: &[String],
) -> Result<(Arc<S>, Vec<String>), Unreadable> {
    let cached = sources.get(&request.source_namespace, &request.source_name);
    let allowed = request.may_copy_from_its_namespace(sources.allows(&request.source_namespace));
    let keys = cached.as_deref().map(|source| request.keys_missing(source));
    let why_blocked = request
        .blocked(allowed, cached.as_deref(), rules, reserved_names)
        .or_else(|| keys.as_ref()?.as_ref().err().cloned());
    match (why_blocked, cached, keys) {
        (None, Some(cached), Some(Ok(missing))) => Ok((cached, missing)),
        // A missing source is blocked: the second arm never falls back.
        (why, ..) => Err(Unreadable::Blocked(why.unwrap_or(Blocked::SourceNotFound))),
    }
}
