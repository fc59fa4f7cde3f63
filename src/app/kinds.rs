//! One controller pair per mirrored kind, on what every kind shares: one
//! client, one namespace cache, one retry state, one metrics registry and
//! one leader.

use std::sync::Arc;

use k8s_openapi::api::core::v1::Secret;
use kube::Client;

use crate::{
    cluster::digest_key,
    cluster::report::EventPublisher,
    cluster::watches::{self, Namespaces, WatchSettings},
    decisions::consent::Consent,
    decisions::selector::Selector,
    kind::MirroredKind,
    ops::health::Health,
    ops::leader::Leadership,
    ops::metrics::Metrics,
    ops::shutdown::Shutdown,
    reconcile::backoff::{Backoffs, RetryPolicy},
    reconcile::contest::Contests,
    reconcile::context::Context,
    reconcile::controller,
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
pub async fn run<K: MirroredKind>(
    shared: Shared,
    consent: Consent,
    key: K::DigestKey,
) -> anyhow::Result<()> {
    let (caches, wakeups, watches) = watches::watch::<K>(
        &shared.kube_config,
        shared.settings.clone(),
        consent.clone(),
        key.clone(),
        &shared.namespaces,
        shared.health.clone(),
        shared.metrics.clone(),
        shared.backoffs.clone(),
    )?;
    let ctx = Arc::new(Context {
        client: shared.client,
        caches,
        suffix: shared.settings.suffix.clone(),
        digest_key: key,
        selector: shared.settings.selector.clone(),
        source_label_keys: shared.source_label_keys,
        events: shared.events,
        metrics: shared.metrics,
        backoffs: shared.backoffs,
        contests: Contests::default(),
        retry_policy: shared.retry_policy,
        consent,
        source_selector: shared.source_selector,
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

/// Secrets, once their digest key is read (or made).
pub async fn run_secrets(
    shared: Shared,
    consent: Consent,
    key_secret: (String, String),
) -> anyhow::Result<()> {
    let key = digest_key::obtain(
        shared.client.clone(),
        key_secret,
        &shared.health,
        &shared.shutdown,
    )
    .await;
    match key {
        Some(key) => run::<Secret>(shared, consent, key).await,
        None => Ok(()),
    }
}
