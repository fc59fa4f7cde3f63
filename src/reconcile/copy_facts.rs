//! What the caches say of everything a copy's verdict asks about (its
//! source, its namespace, the copy at another name, its ClusterMirror),
//! and the verdict they give: the one the prune loop carries out, and the
//! one by which the ClusterMirror loop counts orphans.

use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::{
    decisions::consent::NamespaceFacts,
    decisions::copy_verdict::{self, ClusterMirrorFacts, CopyFacts, CopyVerdict, PruneRules, Seen},
    decisions::desired_copy::never_a_source,
    decisions::request_key::RequestKey,
    kind::MirroredKind,
    reconcile::context::Context,
};

/// The verdict on a cached copy, from the caches, where a refused source
/// is no managed source, so its copies go.
pub fn verdict<K: MirroredKind>(copy: &K, ctx: &Context<K>) -> CopyVerdict {
    let cached = Cached(ctx);
    copy_verdict::copy_verdict(copy.meta(), &ctx.install, &ctx.consent, &cached, &cached)
}

/// The caches of a reconcile's context, as a copy's verdict reads them.
struct Cached<'c, K: MirroredKind>(&'c Context<K>);

impl<K: MirroredKind> CopyFacts<K> for Cached<'_, K> {
    type Source<'f>
        = Arc<K>
    where
        Self: 'f;

    /// The source in the cache, unless it is never a source: such an
    /// object wants no copies, and those written before it was refused go.
    fn managed_source(&self, namespace: &str, name: &str) -> Option<Arc<K>> {
        (self.0.caches.source(namespace, name))
            .filter(|source| never_a_source(source.as_ref(), &self.0.source_rules).is_none())
    }

    fn namespace(&self, namespace: &str) -> Option<NamespaceFacts> {
        self.0.caches.namespace_facts(namespace)
    }

    fn copy_at(&self, namespace: &str, name: &str) -> Option<ObjectMeta> {
        let copy = self.0.caches.copy(namespace, name)?;
        Some(copy.object().meta().clone())
    }
}

impl<K: MirroredKind> ClusterMirrorFacts for Cached<'_, K> {
    /// Keep when this install has no ClusterMirrors (one namespace only),
    /// or when that ClusterMirror or Mirror is of another install's class.
    /// A Mirror's copies are judged by the consent of their kind, a
    /// ClusterMirror's by the protected namespaces alone.
    fn cluster_mirror_fate(
        &self,
        copy: &ObjectMeta,
        key: &RequestKey,
        fate: impl FnOnce(&Seen<'_>, &PruneRules<'_>) -> CopyVerdict,
    ) -> CopyVerdict {
        let ctx = self.0;
        let Some(cluster_mirrors) = &ctx.cluster_mirrors else {
            return CopyVerdict::Keep;
        };
        let exists = cluster_mirrors.mirrors.object(key).is_some();
        let request = cluster_mirrors.mirrors.request(key);
        // A copy of a ClusterMirror another install serves is that install's.
        if request
            .as_ref()
            .is_some_and(|r| !r.served_by(&cluster_mirrors.install.class))
        {
            return CopyVerdict::Keep;
        }
        let rules = PruneRules {
            kind: K::SOURCE_KIND,
            install: &ctx.install,
            consent: match key.is_mirror() {
                true => &ctx.consent,
                false => &cluster_mirrors.consent,
            },
        };
        let seen = Seen {
            listed: cluster_mirrors.mirrors.is_listed(key.kind()),
            exists,
            request: request.as_deref(),
            deletion: cluster_mirrors.mirrors.deletion_of(key, copy),
        };
        fate(&seen, &rules)
    }
}
