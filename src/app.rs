//! Starts every part, and stops them in order on SIGTERM or SIGINT:
//! in-flight reconciles finish, the lease is released, then the process exits.

use std::sync::Arc;

use anyhow::Context as _;
use kube::Client;
use tokio::{net::TcpListener, sync::watch};

use crate::{
    backoff::{Backoffs, RetryPolicy},
    caches::{self, WatchSettings},
    config::Config,
    context::Context,
    controller,
    health::Health,
    http,
    leader::{self, Elector},
    metrics::Metrics,
    report::Reporter,
    selector::Selector,
};

pub async fn run(config: Config) -> anyhow::Result<()> {
    config.leader.validate().map_err(anyhow::Error::msg)?;
    let source_selector =
        Selector::parse(&config.selector).map_err(|e| anyhow::anyhow!("--selector: {e}"))?;
    let consent = Selector::parse(&config.accept_mirrors_selector)
        .map_err(|e| anyhow::anyhow!("--accept-mirrors-selector: {e}"))?;
    let client = Client::try_default()
        .await
        .context("no Kubernetes configuration found (kubeconfig or in-cluster)")?;
    let metrics = Arc::new(Metrics::new(config.concurrency, &config.leader.lease_name));
    let health = Arc::new(Health::new(config.watch_failure_threshold));

    let listener = TcpListener::bind(config.http_addr)
        .await
        .with_context(|| format!("cannot listen on {}", config.http_addr))?;
    tracing::info!(addr = %listener.local_addr()?, "serving /metrics, /healthz and /readyz");
    let (stop_tx, stop_rx) = watch::channel(false);
    let server = tokio::spawn(http::serve(
        listener,
        http::router(metrics.clone(), health.clone()),
        stopped(stop_rx.clone()),
    ));
    tokio::spawn(async move {
        shutdown_signal().await;
        tracing::info!("shutting down: finishing in-flight reconciles");
        let _ = stop_tx.send(true);
    });

    let mut elector = match config.leader.enabled {
        true => Some(elector(client.clone(), &config)?),
        false => None,
    };
    let (leading_tx, leading_rx) = watch::channel(elector.is_none());
    tokio::spawn(mirror_leadership(leading_rx.clone(), metrics.clone()));

    let (caches, wakeups, watches) = caches::watch(
        client.clone(),
        WatchSettings {
            namespace: config.namespace.clone(),
            selector: config.selector.clone(),
            suffix: config.suffix.clone(),
            initial_list: config.initial_list,
        },
        health,
        metrics.clone(),
    );
    let ctx = Arc::new(Context {
        reporter: Reporter::new(
            client.clone(),
            elector.as_ref().map(|e| e.identity().to_owned()),
        ),
        client,
        caches,
        suffix: config.suffix.clone(),
        source_label_keys: source_selector.keys(),
        metrics,
        backoffs: Backoffs::default(),
        retry_policy: RetryPolicy::new(config.slow_retry),
        consent,
        leading: leading_rx.clone(),
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
        leading_rx,
        stopped(stop_rx),
    );
    let election = async {
        match elector.as_mut() {
            Some(elector) => elector.run(&leading_tx).await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        () = controllers => {}
        () = watches => anyhow::bail!("the watches ended unexpectedly"),
        lost = election => return lost.map_err(anyhow::Error::from),
    }
    if let Some(elector) = elector.as_mut() {
        elector.release().await;
    }
    server.await??;
    tracing::info!("stopped");
    Ok(())
}

fn elector(client: Client, config: &Config) -> anyhow::Result<Elector> {
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
    Ok(Elector::new(client, &namespace, identity, &config.leader))
}

async fn mirror_leadership(mut leading: watch::Receiver<bool>, metrics: Arc<Metrics>) {
    loop {
        metrics.set_leader(*leading.borrow_and_update());
        if leading.changed().await.is_err() {
            return;
        }
    }
}

async fn stopped(mut stop: watch::Receiver<bool>) {
    let _ = stop.wait_for(|stopped| *stopped).await;
}

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(mut terminate) => {
            tokio::select! {
                _ = ctrl_c => {}
                _ = terminate.recv() => {}
            }
        }
        Err(_) => {
            let _ = ctrl_c.await;
        }
    }
}
