//! One controller pair per mirrored kind, on what every kind shares: one
//! client, one namespace cache, one retry state, one metrics registry and
//! one leader.

use std::sync::Arc;

use futures::{Stream, StreamExt, channel::mpsc};
use k8s_openapi::api::core::v1::Secret;
use kube::Client;

use crate::{
    api::SourceKind,
    cluster::cluster_mirrors::{Change, ClusterMirrors},
    cluster::cluster_sources::{ClusterSources, SourceChange},
    cluster::digest_key::{self, KeySecret},
    cluster::events::EventPublisher,
    cluster::watches::{self, Namespaces, WatchSettings},
    decisions::cluster_mirror::cluster_consent,
    decisions::consent::Consent,
    decisions::install::Install,
    index::caches::Caches,
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
        caches::{ClusterMirrorCaches, InstallClass, PublishedSecrets},
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
    /// The kinds this install does not mirror (their ClusterMirrors are
    /// told so by the ConfigMap loop).
    pub unmirrored_kinds: Vec<SourceKind>,
}

/// Runs kind `K`'s watches and controllers until a stop is asked for and
/// its in-flight reconciles are done; an error if its watches end first.
/// Each item of `new_keys` (a new digest key) compares every source again.
/// `cluster_sources`, when this install mirrors into other namespaces, are
/// the objects of the kind ClusterMirrors may copy; `published`, for the
/// ConfigMap loop, the Secrets whose keys it may publish.
pub async fn run<K: MirroredKind>(
    shared: Shared,
    consent: Consent,
    key: K::KeyHandle,
    source_rules: K::SourceRules,
    new_keys: impl Stream<Item = ()> + Send + 'static,
    cluster_sources: Option<ClusterSources<K>>,
    published: Option<PublishedSecrets>,
) -> anyhow::Result<()> {
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
    let cluster = cluster_mirror_caches::<K>(&shared, cluster_sources, published);
    let (cluster_mirrors, cluster_inputs) = match cluster {
        Some((cluster_mirrors, inputs)) => (Some(cluster_mirrors), Some(inputs)),
        None => (None, None),
    };
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
    let from_watches = std::mem::replace(&mut wakeups.cluster, mpsc::unbounded().1);
    let cluster_loop = cluster_inputs.map(|(changes, sources)| {
        let inputs = cluster_mirror::Inputs {
            changes,
            sources,
            from_watches,
            resync: wakeups.resync.clone(),
        };
        let stop = shutdown.requested();
        cluster_mirror::run(ctx.clone(), inputs, more_prunes, concurrency, async move {
            stop.await;
        })
    });
    let stop = shutdown.requested();
    let controllers = controller::run(ctx, wakeups, concurrency, leadership, prunes, async move {
        stop.await;
    });
    let controllers = async {
        futures::join!(controllers, async {
            if let Some(cluster_loop) = cluster_loop {
                cluster_loop.await;
            }
        });
    };
    tokio::select! {
        () = controllers => Ok(()),
        () = watches => anyhow::bail!("the {} watches ended unexpectedly", K::kind(&())),
    }
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
    cluster_mirrors: Option<ClusterMirrorCaches<K>>,
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
        cluster_mirror_workers: WorkerShares::new(shared.concurrency),
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

/// What kind `K`'s loops know of the ClusterMirrors, and what wakes its
/// ClusterMirror loop, when this install mirrors into other namespaces
/// (then `sources` are there, their watches running whether or not the
/// ClusterMirror CRD is).
#[allow(clippy::type_complexity)]
fn cluster_mirror_caches<K: MirroredKind>(
    shared: &Shared,
    sources: Option<ClusterSources<K>>,
    published: Option<PublishedSecrets>,
) -> Option<(
    ClusterMirrorCaches<K>,
    (
        mpsc::UnboundedReceiver<Change>,
        futures::stream::BoxStream<'static, SourceChange>,
    ),
)> {
    let mirrors = shared.cluster_mirrors.clone()?;
    let sources = sources?;
    let changes = match &published {
        Some(published) => {
            futures::stream::select(sources.subscribe(), published.sources.subscribe()).boxed()
        }
        None => sources.subscribe().boxed(),
    };
    let reports_for = match K::SOURCE_KIND == SourceKind::ConfigMap {
        true => shared.unmirrored_kinds.clone(),
        false => Vec::new(),
    };
    let consent = cluster_consent(&shared.protected, &shared.cluster_mirror_sources);
    let caches = ClusterMirrorCaches::new(
        mirrors.clone(),
        sources,
        published,
        consent,
        reports_for,
        shared.cluster_mirror_install.clone(),
    );
    Some((caches, (mirrors.subscribe(), changes)))
}

/// Secrets, with the digest key their watch keeps (`key`, which the
/// ConfigMap loop reads too when it publishes Secrets' keys): copies are
/// written while there is a key to use, and removed when no longer wanted
/// whether or not there is.
pub async fn run_secrets(
    shared: Shared,
    consent: Consent,
    key_secret: KeySecret,
    key: SharedDigestKey,
    source_rules: SecretSourceRules,
    initial_list: InitialList,
    cluster_sources: Option<ClusterSources<Secret>>,
) -> anyhow::Result<()> {
    let new_keys = digest_key::new_keys(&key);
    let keeper = digest_key::keep(
        &shared.kube_config,
        shared.client.clone(),
        key_secret,
        key.clone(),
        initial_list,
        shared.health.clone(),
    );
    let secrets = run::<Secret>(
        shared.clone(),
        consent,
        key,
        source_rules,
        new_keys,
        cluster_sources,
        None,
    );
    tokio::select! {
        ran = secrets => ran,
        kept = keeper => {
            kept?;
            anyhow::bail!("the watch of the digest key ended unexpectedly")
        }
    }
}
