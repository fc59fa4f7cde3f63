//! One controller pair per mirrored kind, on what every kind shares: one
//! client, one namespace cache, one retry state, one metrics registry and
//! one leader.

use std::sync::Arc;

use futures::Stream;
use k8s_openapi::api::core::v1::Secret;
use kube::Client;

use crate::{
    cluster::digest_key::{self, KeySecret},
    cluster::report::EventPublisher,
    cluster::watches::{self, Namespaces, WatchSettings},
    decisions::consent::Consent,
    decisions::selector::Selector,
    kind::MirroredKind,
    kind::secret::{RefusedSecretTypes, SharedDigestKey},
    ops::config::InitialList,
    ops::health::Health,
    ops::leader::Leadership,
    ops::metrics::Metrics,
    ops::shutdown::Shutdown,
    reconcile::backoff::{Backoffs, RetryPolicy},
    reconcile::contest::Contests,
    reconcile::context::Context,
    reconcile::controller,
    reconcile::fresh_reads::{self, FreshReads},
    reconcile::woken::Woken,
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
    pub source_label_keys: Vec<String>,
    pub source_selector: Selector,
    pub retry_policy: RetryPolicy,
    pub reserved_names: Vec<String>,
    pub leadership: Leadership,
    pub shutdown: Shutdown,
    pub concurrency: u16,
}

/// Runs kind `K`'s watches and controllers until a stop is asked for and
/// its in-flight reconciles are done; an error if its watches end first.
/// Each item of `new_keys` (a new digest key) compares every source again.
pub async fn run<K: MirroredKind>(
    shared: Shared,
    consent: Consent,
    key: K::KeyHandle,
    source_rules: K::SourceRules,
    new_keys: impl Stream<Item = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let backoffs = shared.backoffs.clone();
    let (caches, wakeups, watches) = watches::watch::<K, _>(
        &shared.kube_config,
        shared.settings.clone(),
        consent.clone(),
        &shared.namespaces,
        new_keys,
        shared.health.clone(),
        shared.metrics.clone(),
        Arc::new(move |uid: &str| backoffs.forget(uid)),
    )?;
    let ctx = Arc::new(Context {
        client: shared.client.clone(),
        caches,
        suffix: shared.settings.suffix.clone(),
        digest_key: key,
        source_rules,
        selector: shared.settings.selector.clone(),
        source_label_keys: shared.source_label_keys,
        events: shared.events,
        metrics: shared.metrics,
        backoffs: shared.backoffs,
        contests: Contests::default(),
        woken: Woken::default(),
        retry_policy: shared.retry_policy,
        consent,
        source_selector: shared.source_selector,
        fresh_reads: FreshReads::new(
            shared.client.clone(),
            &shared.settings.selector,
            fresh_reads::WINDOW,
            fresh_reads::PAGE_SIZE,
        ),
        namespace_warnings: Default::default(),
        reserved_names: shared.reserved_names,
        leadership: shared.leadership.clone(),
        shutdown: shared.shutdown.clone(),
    });
    let stop = shared.shutdown.requested();
    let controllers = controller::run(
        ctx,
        wakeups,
        shared.concurrency,
        shared.leadership,
        async move {
            stop.await;
        },
    );
    tokio::select! {
        () = controllers => Ok(()),
        () = watches => anyhow::bail!("the {} watches ended unexpectedly", K::kind(&())),
    }
}

/// Secrets, with the digest key their watch keeps: copies are written
/// while there is a key to use, and removed when no longer wanted whether
/// or not there is.
pub async fn run_secrets(
    shared: Shared,
    consent: Consent,
    key_secret: KeySecret,
    refused_types: RefusedSecretTypes,
    initial_list: InitialList,
) -> anyhow::Result<()> {
    let key = SharedDigestKey::default();
    let new_keys = digest_key::new_keys(&key);
    let keeper = digest_key::keep(
        &shared.kube_config,
        shared.client.clone(),
        key_secret,
        key.clone(),
        initial_list,
        shared.health.clone(),
    );
    tokio::select! {
        ran = run::<Secret>(shared.clone(), consent, key, refused_types, new_keys) => ran,
        kept = keeper => {
            kept?;
            anyhow::bail!("the watch of the digest key ended unexpectedly")
        }
    }
}
