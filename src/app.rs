//! Starts every part, and stops them in order on SIGTERM or SIGINT, within
//! `--shutdown-timeout` whatever the state: in-flight reconciles finish or
//! are abandoned, the lease is released if the API server answers, then the
//! process exits 0.

use std::{sync::Arc, time::Instant};

use anyhow::Context as _;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::Client;

mod cluster_mirrors;
mod kinds;
mod lifeline;

use crate::{
    cluster::api_client,
    cluster::api_probe,
    cluster::cluster_mirrors::ClusterMirrors,
    cluster::cluster_sources::ClusterSources,
    cluster::events::EventPublisher,
    cluster::watches::{GrantWarnings, Namespaces, WatchSettings},
    decisions::consent::Consent,
    kind::secret::{SecretSourceRules, SharedDigestKey},
    ops::config::{Config, Kind},
    ops::health::Health,
    ops::metrics::Metrics,
    ops::shutdown::Shutdown,
    reconcile::backoff::{Backoffs, RetryPolicy},
    reconcile::cluster_mirror::caches::InstallClass,
    reconcile::copy_budget::{ByteBudget, COPY_BUDGET_BYTES, NAMESPACE_SHARE, READ_BUDGET_BYTES},
};
use kinds::Shared;
use lifeline::{Lease, Lifeline, beat, lead, serve_http};

pub async fn run(config: Config) -> anyhow::Result<()> {
    let install = config.rules.install()?;
    let protected = config.protected_namespaces();
    let configmap_consent = config.rules.consent(Kind::Configmaps, &protected)?;
    let secret_consent = config.rules.consent(Kind::Secrets, &protected)?;
    let shutdown = Shutdown::on_signals().context("cannot listen for signals")?;
    let (kube_config, client, health, metrics) = connect(&config).await?;
    let lifeline = Lifeline::start().context("cannot start the Lease and probes' thread")?;
    let server = serve_http(&lifeline, &config, &metrics, &health, &shutdown)?;
    tokio::spawn(beat(health.clone()));

    let (mut lease, leadership, identity, _unchanging_term) =
        lead(&lifeline, &kube_config, &config, &health, &metrics)?;

    let settings = watch_settings(&config);
    let events = EventPublisher::new(client.clone(), identity);
    let grant_warnings = GrantWarnings {
        events: events.clone(),
        leadership: leadership.clone(),
    };
    let (namespaces, namespace_watch) =
        Namespaces::new(&kube_config, &settings, health.clone(), grant_warnings)?;
    tokio::spawn(api_probe::while_watches_fail(
        client.clone(),
        config.namespace.clone(),
        health.clone(),
    ));
    let backoffs = Arc::new(Backoffs::new(metrics.failing_objects()));
    let cluster_mirrors = watch_cluster_mirrors(&config, &kube_config, &client, &metrics)?;
    let copy_budget = ByteBudget::new(
        COPY_BUDGET_BYTES,
        NAMESPACE_SHARE,
        metrics.copy_bytes_in_flight(),
    );
    let read_budget = ByteBudget::new(
        READ_BUDGET_BYTES,
        NAMESPACE_SHARE,
        metrics.read_bytes_in_flight(),
    );
    let shared = Shared {
        kube_config,
        events,
        client,
        settings,
        namespaces,
        health,
        metrics,
        backoffs,
        install,
        retry_policy: RetryPolicy::new(config.slow_retry),
        leadership,
        shutdown: shutdown.clone(),
        concurrency: config.concurrency,
        copy_budget: Arc::new(copy_budget),
        read_budget: Arc::new(read_budget),
        cluster_mirrors,
        cluster_mirror_sources: config.cluster_mirror_source_namespaces(),
        cluster_mirror_install: InstallClass {
            class: config.rules.cluster_mirror_class.clone(),
            field_manager: config.field_manager(),
        },
        protected: protected.clone(),
    };
    log_start(&config, &protected);

    let controllers = mirror_kinds(&config, &shared, configmap_consent, secret_consent);
    let election = async {
        match lease.as_mut() {
            Some(lease) => lease.lost().await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        ended = controllers => { ended?; }
        () = drain_expired(&shutdown, &config) => {}
        () = namespace_watch => anyhow::bail!("the namespace watch ended unexpectedly"),
        lost = election => return Err(lost),
    }
    stop(lease, server, &shutdown, &config).await
}

fn watch_settings(config: &Config) -> WatchSettings {
    WatchSettings {
        namespace: config.namespace.clone(),
        initial_list: config.initial_list,
    }
}

/// The API server's client configuration, the client for calls, and the
/// health and metrics every part reports to.
async fn connect(
    config: &Config,
) -> anyhow::Result<(kube::Config, Client, Arc<Health>, Arc<Metrics>)> {
    let kube_config = api_client::infer_config(
        config.kube.kubeconfig.as_deref(),
        config.kube.context.as_deref(),
    )
    .await?;
    let client = api_client::calls(&kube_config, config.api_timeout)?;
    let health = Arc::new(Health::new(config.watch_failure_threshold));
    let mut metrics = Metrics::new(config.concurrency, &config.leader.lease_name);
    metrics.register_watches(health.clone());
    Ok((kube_config, client, health, Arc::new(metrics)))
}

/// The ClusterMirrors' watch, in cluster-wide mode only.
fn watch_cluster_mirrors(
    config: &Config,
    kube_config: &kube::Config,
    client: &Client,
    metrics: &Arc<Metrics>,
) -> anyhow::Result<Option<ClusterMirrors>> {
    if config.namespace.is_some() {
        return Ok(None);
    }
    let (mirrors, watches) = ClusterMirrors::new(kube_config, client.clone(), metrics.clone())?;
    tokio::spawn(watches);
    Ok(Some(mirrors))
}

fn log_start(config: &Config, protected: &[String]) {
    tracing::info!(
        selector = %config.rules.selector,
        kinds = ?config.rules.kinds,
        namespace = config.namespace.as_deref().unwrap_or("(all)"),
        mirroring = config.namespace.is_none(),
        protected_namespaces = ?protected,
        cluster_mirror_class = %config.rules.cluster_mirror_class,
        leader_election = config.leader.enabled,
        "configmap-mirror started"
    );
}

/// Each kind's controllers, for the kinds this install mirrors, and the
/// ClusterMirror loop over them; ends when all do, or at the first error.
async fn mirror_kinds(
    config: &Config,
    shared: &Shared,
    configmap_consent: Consent,
    secret_consent: Consent,
) -> anyhow::Result<()> {
    let secret_setup = config.mirrors(Kind::Secrets).then(|| {
        // The key is the install's own: never a source, on any path.
        let rules = SecretSourceRules::new(&config.rules.refused_secret_types)
            .with_own_secret(config.digest_key_secret());
        (SharedDigestKey::default(), rules)
    });
    let (configmap_sources, secret_sources) = cluster_sources(config, shared)?;
    let secret_sources = match (secret_sources, &secret_setup) {
        (Some(sources), Some((key, rules))) => Some((sources, key, rules)),
        _ => None,
    };
    let caches = cluster_mirrors::caches(shared, configmap_sources, secret_sources);
    let mut runs = Vec::new();
    let configmaps = match config.mirrors(Kind::Configmaps) {
        // A new key changes only the checksums of the ConfigMaps that
        // publish Secrets' keys: their ClusterMirrors hear of it, not the
        // label path.
        true => Some(kinds::start::<ConfigMap>(
            shared.clone(),
            configmap_consent,
            (),
            (),
            futures::stream::pending(),
            caches.clone(),
        )?),
        false => None,
    };
    let configmaps = configmaps.map(|(started, run)| {
        runs.push(run);
        started
    });
    let secrets = match secret_setup {
        Some((key, rules)) => Some(kinds::start_secrets(
            shared.clone(),
            secret_consent,
            config.digest_key_secret(),
            key,
            rules,
            config.initial_list,
            caches.clone(),
        )?),
        None => None,
    };
    let secrets = secrets.map(|(started, run)| {
        runs.push(run);
        started
    });
    let cluster_loop = cluster_mirrors::run(shared, caches, configmaps, secrets);
    let kinds = futures::future::try_join_all(runs);
    let cluster_loop = async {
        if let Some(cluster_loop) = cluster_loop {
            cluster_loop.await;
        }
        Ok(())
    };
    futures::future::try_join(kinds, cluster_loop).await?;
    Ok(())
}

/// The objects of each kind this install mirrors that ClusterMirrors may
/// copy, watched once for the ClusterMirror loop; none when it does not
/// mirror into other namespaces.
#[allow(clippy::type_complexity)]
fn cluster_sources(
    config: &Config,
    shared: &Shared,
) -> anyhow::Result<(
    Option<ClusterSources<ConfigMap>>,
    Option<ClusterSources<Secret>>,
)> {
    if shared.cluster_mirrors.is_none() {
        return Ok((None, None));
    }
    let client = api_client::for_watch(&shared.kube_config, || {})?;
    let namespaces = &shared.cluster_mirror_sources;
    let configmaps = (config.mirrors(Kind::Configmaps))
        .then(|| ClusterSources::<ConfigMap>::start(&client, namespaces));
    let secrets = (config.mirrors(Kind::Secrets))
        .then(|| ClusterSources::<Secret>::start(&client, namespaces));
    Ok((configmaps, secrets))
}

/// Ends once shutdown was requested and two thirds of the shutdown time
/// have passed: in-flight reconciles get that long; whatever they have not
/// finished by then is abandoned (a write either reached the API server or
/// did not; the next leader compares everything).
async fn drain_expired(shutdown: &Shutdown, config: &Config) {
    let drain = config.shutdown_timeout * 2 / 3;
    let requested = shutdown.requested();
    tokio::time::sleep_until((requested.await + drain).into()).await;
    tracing::warn!(
        ?drain,
        "shutting down: abandoning the reconciles still in flight"
    );
}

/// Releases the lease and closes the HTTP server, within what is left of
/// the shutdown time.
async fn stop(
    lease: Option<Lease>,
    server: tokio::task::JoinHandle<std::io::Result<()>>,
    shutdown: &Shutdown,
    config: &Config,
) -> anyhow::Result<()> {
    let exit_by = shutdown.requested_at().unwrap_or_else(Instant::now) + config.shutdown_timeout;
    if let Some(lease) = lease
        && tokio::time::timeout_at(exit_by.into(), lease.release())
            .await
            .is_err()
    {
        tracing::warn!("shutting down: the lease was not released in time; it expires by itself");
    }
    match tokio::time::timeout_at(exit_by.into(), server).await {
        Ok(served) => served??,
        Err(_) => tracing::warn!("shutting down: closing HTTP connections still open"),
    }
    tracing::info!("stopped");
    Ok(())
}
