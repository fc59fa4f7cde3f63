//! The one ClusterMirror loop, on what every kind knows of the
//! ClusterMirrors and a writer for each kind of copy the install mirrors.

use std::sync::Arc;

use futures::{FutureExt, StreamExt, channel::mpsc, future::BoxFuture, stream};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use tokio::sync::watch;

use crate::{
    cluster::cluster_sources::ClusterSources,
    decisions::cluster_mirror::cluster_consent,
    index::wakeups::ClusterWake,
    kind::secret::{SecretSourceRules, SharedDigestKey},
    reconcile::cluster_mirror::{
        self, ClusterMirrorLoop, Inputs,
        caches::{ClusterMirrorCaches, SecretSources},
        writers::Writers,
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
    Some(Arc::new(ClusterMirrorCaches::new(
        mirrors,
        configmaps,
        secrets,
        consent,
        shared.cluster_mirror_install.clone(),
        shared.concurrency,
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
    let (mut wakes, mut resyncs) = (Vec::new(), Vec::new());
    let mut taken = |wakes_of: mpsc::UnboundedReceiver<ClusterWake>, resync| {
        wakes.push(wakes_of.boxed());
        resyncs.push(resyncs_of(resync));
    };
    let configmaps = configmaps.map(|kind| {
        taken(kind.cluster_wakes, kind.resync);
        kind.writer
    });
    let secrets = secrets.map(|kind| {
        taken(kind.cluster_wakes, kind.resync);
        kind.writer
    });
    let writers = Writers::of(configmaps, secrets)?;
    let inputs = Inputs {
        changes: caches.mirrors.subscribe(),
        sources: stream::select_all(sources).boxed(),
        from_watches: stream::select_all(wakes).boxed(),
        resyncs: stream::select_all(resyncs).boxed(),
    };
    let this = Arc::new(ClusterMirrorLoop { caches, writers });
    let stop = shared.shutdown.requested();
    let run = cluster_mirror::run(this, inputs, shared.concurrency, async move {
        stop.await;
    });
    Some(run.boxed())
}

/// Each change of `resync`.
fn resyncs_of(resync: watch::Receiver<u64>) -> stream::BoxStream<'static, ()> {
    stream::unfold(resync, |mut resync| async move {
        resync.changed().await.ok()?;
        Some(((), resync))
    })
    .boxed()
}
