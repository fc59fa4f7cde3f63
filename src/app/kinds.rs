//! One controller pair per mirrored kind, on what every kind shares: one
//! client, one namespace cache, one retry state, one metrics registry and
//! one leader.

use std::sync::Arc;

use futures::{FutureExt, Stream, channel::mpsc, future::BoxFuture};
use k8s_openapi::api::core::v1::Secret;
use kube::Client;
use tokio::sync::watch;

use crate::{
    cluster::cluster_mirrors::ClusterMirrors,
    cluster::digest_key::{self, KeySecret},
    cluster::events::EventPublisher,
    cluster::watches::{self, Namespaces, WatchSettings},
    decisions::consent::Consent,
    decisions::install::Install,
    index::caches::Caches,
    index::wakeups::ClusterWake,
    kind::MirroredKind,
    kind::secret::{SecretSourceRules, SharedDigestKey},
    ops::config::InitialList,
    ops::health::Health,
    ops::leader::Leadership,
    ops::metrics::Metrics,
    ops::shutdown::Shutdown,
    reconcile::backoff::{Backoffs, RetryPolicy},
    reconcile::cluster_mirror::{
        self,
        caches::{ClusterMirrorCaches, InstallClass},
        writers::Writer,
    },
    reconcile::contest::Contests,
    reconcile::context::Context,
    reconcile::controller,
    reconcile::copy_budget::ByteBudget,
    reconcile::pending::PendingScopes,
    reconcile::source_read::coalesced::{self, FreshReads},
    reconcile::worker_share::WorkerShares,
};

/// What the kinds share.
#[derive(Clone)]
pub struct Shared {
    pub kube_config: kube::Config,
    pub client: Client,
    pub settings: WatchSettings,
    pub namespaces: Namespaces,
    pub health: Arc<Health>,
    pub metrics: Arc<Metrics>,
    pub backoffs: Arc<Backoffs>,
    pub events: EventPublisher,
    pub install: Install,
    pub retry_policy: RetryPolicy,
    pub leadership: Leadership,
    pub shutdown: Shutdown,
    pub concurrency: u16,
    /// The copies in flight, by bytes, shared by every kind's reconciles.
    pub copy_budget: Arc<ByteBudget>,
    /// The sources read and held, by bytes, shared likewise.
    pub read_budget: Arc<ByteBudget>,
    /// The ClusterMirrors, when this install mirrors into other namespaces.
    pub cluster_mirrors: Option<ClusterMirrors>,
    /// Where their sources may come from, and where nothing is written.
    pub cluster_mirror_sources: Vec<String>,
    /// Which of them this install serves, and how it names itself.
    pub cluster_mirror_install: InstallClass,
    pub protected: Vec<String>,
}

/// What one started kind gives the ClusterMirror loop: the writer its
/// copies are made by, what its watches tell that loop, and its resyncs.
pub struct Started<K: MirroredKind> {
    pub writer: Writer<K>,
    pub cluster_wakes: mpsc::UnboundedReceiver<ClusterWake>,
    pub resync: watch::Receiver<u64>,
}

/// What runs a kind's watches and controllers until a stop is asked for
/// and its in-flight reconciles are done; an error if its watches end
/// first.
pub type Run = BoxFuture<'static, anyhow::Result<()>>;

/// Starts kind `K`'s watches and controllers. Each item of `new_keys` (a
/// new digest key) compares every source again. `cluster_mirrors`, when
/// this install mirrors into other namespaces, is what every kind knows
/// of the ClusterMirrors.
pub fn start<K: MirroredKind>(
    shared: Shared,
    consent: Consent,
    key: K::KeyHandle,
    source_rules: K::SourceRules,
    new_keys: impl Stream<Item = ()> + Send + 'static,
    cluster_mirrors: Option<Arc<ClusterMirrorCaches>>,
) -> anyhow::Result<(Started<K>, Run)> {
    let backoffs = shared.backoffs.clone();
    let (caches, mut wakeups, watches) = watches::watch::<K, _>(
        &shared.kube_config,
        shared.settings.clone(),
        &shared.install,
        consent.clone(),
        &shared.namespaces,
        new_keys,
        shared.health.clone(),
        shared.metrics.clone(),
        Arc::new(move |uid: &str| backoffs.forget(uid)),
    )?;
    let (concurrency, leadership, shutdown) = (
        shared.concurrency,
        shared.leadership.clone(),
        shared.shutdown.clone(),
    );
    let ctx = context(shared, caches, consent, key, source_rules, cluster_mirrors);
    count_orphans_of_cluster_mirrors(&ctx);
    let (more_prunes, prunes) = mpsc::unbounded();
    // Taken whether or not there is a ClusterMirror loop to hear them, so
    // that without one they are dropped, not queued.
    let cluster_wakes = std::mem::replace(&mut wakeups.cluster, mpsc::unbounded().1);
    let resync = wakeups.resync.clone();
    let stop = shutdown.requested();
    let controllers = controller::run(
        ctx.clone(),
        wakeups,
        concurrency,
        leadership,
        prunes,
        async move {
            stop.await;
        },
    );
    let run = async move {
        tokio::select! {
            () = controllers => Ok(()),
            () = watches => anyhow::bail!("the {} watches ended unexpectedly", K::kind(&())),
        }
    };
    let writer = Writer {
        ctx,
        prune: more_prunes,
    };
    let started = Started {
        writer,
        cluster_wakes,
        resync,
    };
    Ok((started, run.boxed()))
}

/// What kind `K`'s reconciles share: what the kinds share, with the
/// kind's own caches, consent, digest key, source rules and what it knows
/// of the ClusterMirrors.
fn context<K: MirroredKind>(
    shared: Shared,
    caches: Caches<K>,
    consent: Consent,
    key: K::KeyHandle,
    source_rules: K::SourceRules,
    cluster_mirrors: Option<Arc<ClusterMirrorCaches>>,
) -> Arc<Context<K>> {
    let fresh_reads = FreshReads::new(
        shared.client.clone(),
        &shared.install.selector,
        coalesced::PAGE_BYTES,
        Arc::new(caches.clone()),
    )
    .at_most_waiting(shared.concurrency.into());
    Arc::new(Context {
        client: shared.client.clone(),
        caches,
        install: shared.install,
        digest_key: key,
        source_rules,
        events: shared.events,
        metrics: shared.metrics,
        backoffs: shared.backoffs,
        contests: Contests::default(),
        pending: PendingScopes::default(),
        retry_policy: shared.retry_policy,
        consent,
        fresh_reads,
        copy_budget: shared.copy_budget,
        read_budget: shared.read_budget,
        sync_workers: WorkerShares::new(shared.concurrency),
        namespace_warnings: Default::default(),
        leadership: shared.leadership,
        shutdown: shared.shutdown,
        cluster_mirrors,
    })
}

/// With a ClusterMirror loop, the orphans metric also counts the copies
/// of ClusterMirrors no longer there.
fn count_orphans_of_cluster_mirrors<K: MirroredKind>(ctx: &Arc<Context<K>>) {
    if ctx.cluster_mirrors.is_none() {
        return;
    }
    let counted = Arc::downgrade(ctx);
    ctx.metrics.count_orphans_with(Box::new(move |counts| {
        if let Some(ctx) = counted.upgrade() {
            cluster_mirror::prune::count_orphans(&ctx, counts);
        }
    }));
}

/// Secrets, with the digest key their watch keeps (`key`, which the
/// ClusterMirror loop reads too): copies are written while there is a key
/// to use, and removed when no longer wanted whether or not there is.
pub fn start_secrets(
    shared: Shared,
    consent: Consent,
    key_secret: KeySecret,
    key: SharedDigestKey,
    source_rules: SecretSourceRules,
    initial_list: InitialList,
    cluster_mirrors: Option<Arc<ClusterMirrorCaches>>,
) -> anyhow::Result<(Started<Secret>, Run)> {
    let new_keys = digest_key::new_keys(&key);
    let (kube_config, client, health) = (
        shared.kube_config.clone(),
        shared.client.clone(),
        shared.health.clone(),
    );
    let kept_key = key.clone();
    let (secrets, controllers) = start::<Secret>(
        shared,
        consent,
        key,
        source_rules,
        new_keys,
        cluster_mirrors,
    )?;
    let run = async move {
        let keeper = digest_key::keep(
            &kube_config,
            client,
            key_secret,
            kept_key,
            initial_list,
            health,
        );
        tokio::select! {
            ran = controllers => ran,
            kept = keeper => {
                kept?;
                anyhow::bail!("the watch of the digest key ended unexpectedly")
            }
        }
    };
    Ok((secrets, run.boxed()))
}
