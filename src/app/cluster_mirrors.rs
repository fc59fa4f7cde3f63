//! The one ClusterMirror loop, on what every kind knows of the
//! ClusterMirrors and a writer for each kind of copy the install mirrors.

use std::sync::Arc;

use futures::{FutureExt, StreamExt, future::BoxFuture, stream};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};

use crate::{
    api::SourceKind,
    cluster::cluster_sources::ClusterSources,
    decisions::cluster_mirror::cluster_consent,
    index::wakeups::ClusterWake,
    kind::MirroredKind,
    kind::secret::{SecretSourceRules, SharedDigestKey},
    reconcile::cluster_mirror::{
        self, ClusterMirrorLoop, Inputs,
        caches::{ClusterMirrorCaches, SecretSources},
        loop_context::LoopContext,
        writers::{Writer, Writers},
    },
};

use super::kinds::{Shared, Started};

/// What every kind knows of the ClusterMirrors, when this install mirrors
/// into other namespaces: their cache, and each mirrored source kind's
/// objects they may copy (for Secrets, with the install's key and the
/// Secrets that are never sources).
pub fn caches(
    shared: &Shared,
    configmaps: Option<ClusterSources<ConfigMap>>,
    secrets: Option<(ClusterSources<Secret>, &SharedDigestKey, &SecretSourceRules)>,
) -> Option<Arc<ClusterMirrorCaches>> {
    let mirrors = shared.cluster_mirrors.clone()?;
    let secrets = secrets.map(|(sources, key, rules)| SecretSources {
        sources,
        key: key.clone(),
        rules: rules.clone(),
    });
    let consent = cluster_consent(&shared.protected, &shared.cluster_mirror_sources);
    let kinds = u16::from(configmaps.is_some()) + u16::from(secrets.is_some());
    Some(Arc::new(ClusterMirrorCaches::new(
        mirrors,
        configmaps,
        secrets,
        consent,
        shared.cluster_mirror_install.clone(),
        loop_concurrency(shared, kinds),
    )))
}

/// The ClusterMirror loop, when `caches` are there, on the writers of
/// the kinds started; it runs until a stop is asked for.
pub fn run(
    shared: &Shared,
    caches: Option<Arc<ClusterMirrorCaches>>,
    configmaps: Option<Started<ConfigMap>>,
    secrets: Option<Started<Secret>>,
) -> Option<BoxFuture<'static, ()>> {
    let caches = caches?;
    let mut sources = Vec::new();
    if let Some(configmaps) = &caches.configmaps {
        sources.push(configmaps.subscribe().boxed());
    }
    if let Some(secrets) = &caches.secrets {
        sources.push(secrets.sources.subscribe().boxed());
    }
    let (mut wakes, mut compare_all) = (Vec::new(), Vec::new());
    let configmaps = configmaps.map(|kind| kind.into_loop(&mut wakes, &mut compare_all));
    let secrets = secrets.map(|kind| kind.into_loop(&mut wakes, &mut compare_all));
    let ctx = match (&configmaps, &secrets) {
        (Some(writer), _) => LoopContext::of(&writer.ctx),
        (None, Some(writer)) => LoopContext::of(&writer.ctx),
        (None, None) => return None,
    };
    let writers = Writers::of(configmaps, secrets)?;
    let inputs = Inputs {
        changes: caches.mirrors.subscribe(),
        sources: stream::select_all(sources).boxed(),
        from_watches: stream::select_all(wakes).boxed(),
        compare_all: stream::select_all(compare_all).boxed(),
    };
    let concurrency = loop_concurrency(shared, writers.count());
    let this = Arc::new(ClusterMirrorLoop {
        caches,
        ctx,
        writers,
    });
    let stop = shared.shutdown.requested();
    let run = cluster_mirror::run(this, inputs, concurrency, async move {
        stop.await;
    });
    Some(run.boxed())
}

/// As many reconciles at once as each kind's loop had while there was one
/// per kind: `--concurrency` for each kind of copy written.
fn loop_concurrency(shared: &Shared, kinds: u16) -> u16 {
    shared.concurrency.saturating_mul(kinds.max(1))
}

impl<K: MirroredKind> Started<K> {
    /// Its writer; what its watches tell the loop, and when all must be
    /// compared (its caches listed, then each resync), go to `wakes` and
    /// `compare_all`, told by its kind.
    fn into_loop(
        self,
        wakes: &mut Vec<stream::BoxStream<'static, (SourceKind, ClusterWake)>>,
        compare_all: &mut Vec<stream::BoxStream<'static, SourceKind>>,
    ) -> Writer<K> {
        let kind = K::SOURCE_KIND;
        wakes.push(self.cluster_wakes.map(move |wake| (kind, wake)).boxed());
        let caches = self.writer.ctx.caches.clone();
        let listed = stream::once(async move { caches.wait_ready().await });
        let resyncs = stream::unfold(self.resync, |mut resync| async move {
            resync.changed().await.ok()?;
            Some(((), resync))
        });
        compare_all.push(listed.chain(resyncs).map(move |()| kind).boxed());
        self.writer
    }
}
