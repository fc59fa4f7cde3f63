//! The writers of the one ClusterMirror loop: one for each kind of copy
//! this install mirrors, each that kind's context (its caches, plan and
//! writes) and the queue of its copies' prunes. A request goes to the
//! writer of its copies' kind, with its source read from the cache of the
//! source's own kind (`source`).

use std::sync::Arc;

use futures::channel::mpsc;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::runtime::reflector::ObjectRef;

use crate::{
    api::SourceKind,
    decisions::cluster_mirror::{Request, status::Blocked},
    decisions::scope::Scope,
    kind::MirroredKind,
    reconcile::context::Context,
    reconcile::error::Error,
};

use super::{
    caches::ClusterMirrorCaches,
    source,
    sync::{self, Found},
};

/// One kind's writer.
pub struct Writer<K: MirroredKind> {
    pub ctx: Arc<Context<K>>,
    /// Where a copy of this kind that a ClusterMirror may no longer want
    /// goes, to be judged by the kind's prune.
    pub prune: mpsc::UnboundedSender<ObjectRef<K>>,
}

impl<K: MirroredKind> Writer<K> {
    /// Sends each copy of this kind for which `whose` is true to its prune.
    fn prune_copies(&self, whose: &impl Fn(&ObjectMeta) -> bool) {
        for copy in self.ctx.caches.copies.state() {
            if whose(copy.meta()) {
                let _ = self.prune.unbounded_send(ObjectRef::from(copy.as_ref()));
            }
        }
    }
}

/// The kinds of copy an install mirrors: at least one.
pub enum Writers {
    ConfigMaps(Writer<ConfigMap>),
    Secrets(Writer<Secret>),
    Both(Writer<ConfigMap>, Writer<Secret>),
}

/// A context of the loop: what it does besides writing copies (its queue,
/// retries, metrics, Events and status writes) is the same in each kind's.
pub enum AnyContext<'a> {
    ConfigMap(&'a Arc<Context<ConfigMap>>),
    Secret(&'a Arc<Context<Secret>>),
}

/// Runs `$body` with `$ctx` bound to the context `$writers.any()` gives,
/// whichever its kind.
macro_rules! with_any_context {
    ($writers:expr, $ctx:ident => $body:expr) => {
        match $writers.any() {
            $crate::reconcile::cluster_mirror::writers::AnyContext::ConfigMap($ctx) => $body,
            $crate::reconcile::cluster_mirror::writers::AnyContext::Secret($ctx) => $body,
        }
    };
}
pub(super) use with_any_context;

impl Writers {
    /// The writers of the kinds given: None without any.
    pub fn of(
        configmaps: Option<Writer<ConfigMap>>,
        secrets: Option<Writer<Secret>>,
    ) -> Option<Writers> {
        match (configmaps, secrets) {
            (Some(configmaps), Some(secrets)) => Some(Writers::Both(configmaps, secrets)),
            (Some(configmaps), None) => Some(Writers::ConfigMaps(configmaps)),
            (None, Some(secrets)) => Some(Writers::Secrets(secrets)),
            (None, None) => None,
        }
    }

    pub fn configmaps(&self) -> Option<&Writer<ConfigMap>> {
        match self {
            Writers::ConfigMaps(configmaps) | Writers::Both(configmaps, _) => Some(configmaps),
            Writers::Secrets(_) => None,
        }
    }

    pub fn secrets(&self) -> Option<&Writer<Secret>> {
        match self {
            Writers::Secrets(secrets) | Writers::Both(_, secrets) => Some(secrets),
            Writers::ConfigMaps(_) => None,
        }
    }

    /// The context the loop's own work runs in: the ConfigMaps', when
    /// this install mirrors them, whose caches the loop waits for.
    pub fn any(&self) -> AnyContext<'_> {
        match self {
            Writers::ConfigMaps(configmaps) | Writers::Both(configmaps, _) => {
                AnyContext::ConfigMap(&configmaps.ctx)
            }
            Writers::Secrets(secrets) => AnyContext::Secret(&secrets.ctx),
        }
    }

    /// Whether this install reports on the ClusterMirrors whose copies are
    /// of `kind`: a Secret's while it mirrors Secrets; every other one
    /// (another kind, one not known, a spec that does not read, Secrets'
    /// while Secrets are not mirrored) while it mirrors ConfigMaps, as
    /// `--kinds` documents.
    pub fn reports_on(&self, kind: Option<SourceKind>) -> bool {
        match kind {
            Some(SourceKind::Secret) if self.secrets().is_some() => true,
            _ => self.configmaps().is_some(),
        }
    }

    /// Sends every copy, of each kind, for which `whose` is true to its
    /// kind's prune.
    pub fn prune_copies(&self, whose: impl Fn(&ObjectMeta) -> bool) {
        if let Some(configmaps) = self.configmaps() {
            configmaps.prune_copies(&whose);
        }
        if let Some(secrets) = self.secrets() {
            secrets.prune_copies(&whose);
        }
    }

    /// Compares (and unless suspended, writes) the copies `request` asks
    /// for, by the writer of their kind, from its source as read from the
    /// cache of the source's kind.
    pub async fn sync(
        &self,
        request: &Request,
        scope: Scope,
        caches: &ClusterMirrorCaches,
    ) -> Result<Found, Error> {
        let (kind, copies) = (request.kind, request.copy_kind());
        match (kind, copies, self.configmaps(), self.secrets()) {
            (SourceKind::ConfigMap, SourceKind::ConfigMap, Some(w), _) => {
                let read = source::configmap(request, caches, &w.ctx);
                sync::sync(request, read, scope, caches, &w.ctx).await
            }
            (SourceKind::Secret, SourceKind::Secret, _, Some(w)) => {
                let read = ready(&w.ctx).and_then(|()| source::secret(request, caches, &w.ctx));
                sync::sync(request, read, scope, caches, &w.ctx).await
            }
            (SourceKind::Secret, SourceKind::ConfigMap, Some(w), Some(_)) => {
                let read = source::secret_as_configmap(request, caches, &w.ctx);
                sync::sync(request, read, scope, caches, &w.ctx).await
            }
            (SourceKind::Secret, _, Some(w), _) => {
                Ok(sync::blocked(request, Blocked::SecretsDisabled, caches, &w.ctx).await)
            }
            // Reached by no ClusterMirror this install reports on
            // (`reports_on`); kept, as `SecretsDisabled` would be false of
            // any other kind.
            _ => Ok(Found::invalid(
                request.generation,
                format!("{} copies are not mirrored", copies.as_str()),
            )),
        }
    }
}

/// Whether `ctx`'s caches, which the loop does not wait for unless they
/// are the ones it runs in, are complete.
fn ready<K: MirroredKind>(ctx: &Context<K>) -> Result<(), source::Unreadable> {
    match ctx.caches.is_ready() {
        true => Ok(()),
        false => Err(source::Unreadable::Failed(Error::Stale(format!(
            "the {}s' caches are not listed yet",
            K::kind(&())
        )))),
    }
}
