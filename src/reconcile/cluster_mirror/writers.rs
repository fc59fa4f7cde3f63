//! The writers of the one ClusterMirror loop: one for each kind of copy
//! this install mirrors, each that kind's context (its caches, plan and
//! writes) and the queue of its copies' prunes. A request goes to the
//! writer its route names (`decisions::cluster_mirror::routes`), with its
//! source read from the cache of the source's own kind (`source`).

use std::sync::Arc;

use futures::channel::mpsc;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::runtime::reflector::ObjectRef;

use crate::{
    api::SourceKind,
    decisions::cluster_mirror::Request,
    decisions::cluster_mirror::routes::{MirroredKinds, Route},
    decisions::cluster_mirror::status::Blocked,
    decisions::consent::NamespaceFacts,
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

    /// How many kinds are written.
    pub fn count(&self) -> u16 {
        match self {
            Writers::Both(..) => 2,
            Writers::ConfigMaps(_) | Writers::Secrets(_) => 1,
        }
    }

    /// The kinds written.
    pub fn kinds(&self) -> MirroredKinds {
        MirroredKinds {
            configmaps: self.configmaps().is_some(),
            secrets: self.secrets().is_some(),
        }
    }

    /// What consent reads of `namespace`, from the caches of `kind`'s
    /// writer; None when it is gone or not written into.
    pub fn namespace_facts(&self, kind: SourceKind, namespace: &str) -> Option<NamespaceFacts> {
        match kind {
            SourceKind::ConfigMap => self.configmaps()?.ctx.caches.namespace_facts(namespace),
            SourceKind::Secret => self.secrets()?.ctx.caches.namespace_facts(namespace),
        }
    }

    /// Whether the caches of `kind`'s writer have completed their list:
    /// before, its copies would all look missing.
    pub fn caches_listed(&self, kind: SourceKind) -> bool {
        match kind {
            SourceKind::ConfigMap => (self.configmaps()).is_some_and(|w| w.ctx.caches.is_ready()),
            SourceKind::Secret => (self.secrets()).is_some_and(|w| w.ctx.caches.is_ready()),
        }
    }

    /// Sends every copy of `kind` (None: of each kind) for which `whose`
    /// is true to its kind's prune.
    pub fn prune_copies(&self, kind: Option<SourceKind>, whose: impl Fn(&ObjectMeta) -> bool) {
        let of = |this: SourceKind| kind.is_none_or(|kind| kind == this);
        if let Some(configmaps) = self.configmaps().filter(|_| of(SourceKind::ConfigMap)) {
            configmaps.prune_copies(&whose);
        }
        if let Some(secrets) = self.secrets().filter(|_| of(SourceKind::Secret)) {
            secrets.prune_copies(&whose);
        }
    }

    /// Compares (and unless suspended, writes) the copies `request` asks
    /// for, by the writer its route names, from its source as read from
    /// the cache of the source's kind.
    pub async fn sync(
        &self,
        request: &Request,
        scope: Scope,
        caches: &ClusterMirrorCaches,
    ) -> Result<Found, Error> {
        let route = self.kinds().route(request.kind, request.copy_kind());
        match (route, self.configmaps(), self.secrets()) {
            (Route::ConfigMapsAsConfigMaps, Some(w), _) => {
                let read = source::configmap(request, caches, &w.ctx);
                sync::sync(request, read, scope, caches, &w.ctx).await
            }
            (Route::SecretsAsSecrets, _, Some(w)) => {
                let read = source::secret(request, caches, &w.ctx);
                sync::sync(request, read, scope, caches, &w.ctx).await
            }
            (Route::SecretKeysAsConfigMaps, Some(w), _) => {
                let read = source::secret_as_configmap(request, caches, &w.ctx);
                sync::sync(request, read, scope, caches, &w.ctx).await
            }
            (Route::SecretsDisabled, Some(w), _) => {
                Ok(sync::blocked(request, Blocked::SecretsDisabled, caches, &w.ctx).await)
            }
            // Reached by no request this install reports on
            // (`MirroredKinds::reporter`).
            _ => Ok(Found::invalid(
                request.generation,
                format!("{} copies are not mirrored", request.copy_kind().as_str()),
            )),
        }
    }
}
