//! Wires the caches to the two controllers and runs them.
//!
//! - sync: one reconcile per managed source, keeping its companion exact;
//! - prune: one reconcile per companion, deleting those no longer wanted.

use std::sync::Arc;

use futures::{Stream, StreamExt, future, stream};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::runtime::{
    Controller,
    controller::{self, Action},
    reflector::ObjectRef,
    watcher,
};
use tokio::sync::watch;

use crate::{caches::Wakeups, context::Context, error::Error, prune, reconcile};

/// Runs both controllers until `shutdown` completes and in-flight reconciles
/// have finished. `leadership` turns true when this replica may write, and
/// every object is reconciled then.
pub async fn run(
    ctx: Arc<Context>,
    wakeups: Wakeups,
    concurrency: u16,
    leadership: watch::Receiver<bool>,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) {
    let config = controller::Config::default().concurrency(concurrency);
    let (stop_tx, stop_rx) = watch::channel(false);
    let stopped = move || {
        let mut stop_rx = stop_rx.clone();
        async move {
            let _ = stop_rx.wait_for(|stop| *stop).await;
        }
    };
    let metrics = ctx.metrics.clone();
    let sync_wakeups = wakeups.sync.inspect(move |_| metrics.trigger_taken());

    let sync = Controller::for_stream(no_trigger(), ctx.caches.sources.clone())
        .with_config(config.clone())
        .reconcile_on(sync_wakeups)
        .reconcile_all_on(became_leader(leadership.clone()))
        .graceful_shutdown_on(stopped())
        .run(reconcile::reconcile, reconcile::error_policy, ctx.clone())
        .for_each(|result| log_outcome("sync", result));

    let prune = Controller::for_stream(no_trigger(), ctx.caches.companions.clone())
        .with_config(config)
        .reconcile_on(wakeups.prune)
        .reconcile_all_on(wakeups.prune_all)
        .reconcile_all_on(became_leader(leadership))
        .graceful_shutdown_on(stopped())
        .run(prune::reconcile, prune::error_policy, ctx)
        .for_each(|result| log_outcome("prune", result));

    let signal = async move {
        shutdown.await;
        let _ = stop_tx.send(true);
    };
    futures::join!(sync, prune, signal);
}

/// The controllers are woken by the caches' wakeups only.
fn no_trigger() -> impl Stream<Item = Result<ConfigMap, watcher::Error>> + Send {
    stream::pending()
}

/// Yields once when this replica first leads. A leader that loses the
/// lease exits, so leadership begins at most once per process.
fn became_leader(mut leadership: watch::Receiver<bool>) -> impl Stream<Item = ()> + Send {
    stream::once(async move { leadership.wait_for(|leading| *leading).await.is_ok() })
        .filter_map(|led| future::ready(led.then_some(())))
}

type Outcome = Result<(ObjectRef<ConfigMap>, Action), controller::Error<Error, watcher::Error>>;

fn log_outcome(controller: &'static str, outcome: Outcome) -> future::Ready<()> {
    match outcome {
        Ok(_) => {}
        // Reconcile errors were reported by the error policy already; a
        // wakeup for an object that left the cache is no error at all.
        Err(controller::Error::ReconcilerFailed(..) | controller::Error::ObjectNotFound(..)) => {}
        Err(error) => tracing::warn!(controller, %error, "controller error"),
    }
    future::ready(())
}
