//! Starts every part, and stops them in order on SIGTERM or SIGINT, within
//! `--shutdown-timeout` whatever the state: in-flight reconciles finish or
//! are abandoned, the lease is released if the API server answers, then the
//! process exits 0.

use std::{sync::Arc, time::Instant};

use anyhow::Context as _;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Client;
use tokio::net::TcpListener;

use crate::{
    cluster::api_client,
    cluster::api_probe,
    cluster::report::EventPublisher,
    cluster::watches::{self, WatchSettings},
    decisions::selector::Selector,
    decisions::targets,
    ops::config::Config,
    ops::health::Health,
    ops::http,
    ops::leader::{self, ElectionReport, Elector, Leadership},
    ops::metrics::Metrics,
    ops::shutdown::Shutdown,
    reconcile::backoff::{Backoffs, RetryPolicy},
    reconcile::contest::Contests,
    reconcile::context::Context,
    reconcile::controller,
};

pub async fn run(config: Config) -> anyhow::Result<()> {
    let source_selector =
        Selector::parse(&config.selector).map_err(|e| anyhow::anyhow!("--selector: {e}"))?;
    let consent = Selector::parse(&config.accept_mirrors_selector)
        .map_err(|e| anyhow::anyhow!("--accept-mirrors-selector: {e}"))?;
    let shutdown = Shutdown::on_signals().context("cannot listen for signals")?;
    let kube_config =
        api_client::infer_config(config.kubeconfig.as_deref(), config.context.as_deref()).await?;
    let client = api_client::calls(&kube_config, config.api_timeout)?;
    let metrics = Arc::new(Metrics::new(config.concurrency, &config.leader.lease_name));
    let health = Arc::new(Health::new(config.watch_failure_threshold));

    let listener = TcpListener::bind(config.http_addr)
        .await
        .with_context(|| format!("cannot listen on {}", config.http_addr))?;
    tracing::info!(addr = %listener.local_addr()?, "serving /metrics, /healthz and /readyz");
    let server = tokio::spawn(http::serve(
        listener,
        http::router(metrics.clone(), health.clone()),
        discard(shutdown.requested()),
    ));

    let mut elector = match config.leader.enabled {
        true => Some(elector(
            client.clone(),
            &config,
            election_report(health.clone(), metrics.clone()),
        )?),
        false => None,
    };
    let (term_tx, leadership) = Leadership::new(elector.is_some());
    tokio::spawn(mirror_leadership(leadership.clone(), metrics.clone()));

    let backoffs = Arc::new(Backoffs::new(metrics.failing_objects()));
    let (caches, wakeups, watches) = watches::watch::<ConfigMap>(
        &kube_config,
        WatchSettings {
            namespace: config.namespace.clone(),
            selector: config.selector.clone(),
            suffix: config.suffix.clone(),
            initial_list: config.initial_list,
            consent: consent.clone(),
        },
        health.clone(),
        metrics.clone(),
        backoffs.clone(),
    )?;
    tokio::spawn(api_probe::while_watches_fail(
        client.clone(),
        config.namespace.clone(),
        health,
    ));
    let ctx = Arc::new(Context {
        events: EventPublisher::new(
            client.clone(),
            elector.as_ref().map(|e| e.identity().to_owned()),
        ),
        client,
        caches,
        suffix: config.suffix.clone(),
        selector: config.selector.clone(),
        source_label_keys: source_selector.keys(),
        metrics,
        backoffs,
        contests: Contests::default(),
        retry_policy: RetryPolicy::new(config.slow_retry),
        consent,
        reserved_names: targets::reserved_names(&config.reserved_names),
        leadership: leadership.clone(),
        shutdown: shutdown.clone(),
    });
    tracing::info!(
        selector = %config.selector,
        namespace = config.namespace.as_deref().unwrap_or("(all)"),
        mirroring = config.namespace.is_none(),
        leader_election = config.leader.enabled,
        "configmap-mirror started"
    );

    let controllers = controller::run(
        ctx,
        wakeups,
        config.concurrency,
        leadership,
        discard(shutdown.requested()),
    );
    let election = async {
        match elector.as_mut() {
            Some(elector) => elector.run(&term_tx).await,
            None => std::future::pending().await,
        }
    };
    // In-flight reconciles get two thirds of the shutdown time; whatever
    // they have not finished by then is abandoned (a write either reached
    // the API server or did not; the next leader compares everything).
    let drain = config.shutdown_timeout * 2 / 3;
    let drain_expired = {
        let requested = shutdown.requested();
        async move {
            tokio::time::sleep_until((requested.await + drain).into()).await;
        }
    };
    tokio::select! {
        () = controllers => {}
        () = drain_expired => tracing::warn!(?drain, "shutting down: abandoning the reconciles still in flight"),
        () = watches => anyhow::bail!("the watches ended unexpectedly"),
        lost = election => return lost.map_err(anyhow::Error::from),
    }
    let exit_by = shutdown.requested_at().unwrap_or_else(Instant::now) + config.shutdown_timeout;
    if let Some(elector) = elector.as_mut()
        && tokio::time::timeout_at(exit_by.into(), elector.release())
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

/// Where a refused Lease shows: /readyz and a metric (the elector logs it).
fn election_report(health: Arc<Health>, metrics: Arc<Metrics>) -> ElectionReport {
    Box::new(move |refused| {
        health.election_refused(refused);
        metrics.set_election_refused(refused.is_some());
    })
}

fn elector(client: Client, config: &Config, report: ElectionReport) -> anyhow::Result<Elector> {
    let namespace = config
        .leader
        .namespace
        .clone()
        .or_else(|| std::env::var("POD_NAMESPACE").ok())
        .context("--leader-elect needs --leader-election-namespace (or POD_NAMESPACE)")?;
    let identity = config
        .leader
        .identity
        .clone()
        .unwrap_or_else(leader::default_identity);
    Ok(Elector::new(
        client,
        &namespace,
        identity,
        &config.leader,
        report,
    ))
}

async fn mirror_leadership(mut leadership: Leadership, metrics: Arc<Metrics>) {
    loop {
        metrics.set_leader(leadership.is_leading());
        if !leadership.changed().await {
            return;
        }
    }
}

/// A future of `()` from one that completes with a value.
async fn discard<T>(future: impl Future<Output = T>) {
    future.await;
}
