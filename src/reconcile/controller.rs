//! Wires the caches to the label path's two controllers and runs them
//! (the third loop, a ClusterMirror's, is `cluster_mirror`'s).
//!
//! - sync: one reconcile per managed source, keeping its companion exact;
//! - prune: one reconcile per copy, deleting those no longer wanted.

use std::{sync::Arc, time::Instant};

use futures::{Stream, StreamExt, future, stream};
use kube::api::DynamicObject;
use kube::runtime::{
    Controller,
    controller::{self, Action},
    reflector::ObjectRef,
    watcher,
};
use tokio::sync::watch;

use crate::{
    cluster::watches::Wakeups, decisions::scope::Reach, kind::MirroredKind,
    ops::leader::Leadership, ops::metrics::Loop, reconcile::context::Context,
    reconcile::error::Error, reconcile::prune, reconcile::resync, reconcile::sync,
};

/// Runs both controllers until `shutdown` completes and in-flight reconciles
/// have finished. `leadership` turns true when this replica may write, and
/// every object is compared then (a resync).
pub async fn run<K: MirroredKind>(
    ctx: Arc<Context<K>>,
    wakeups: Wakeups<K>,
    concurrency: u16,
    leadership: Leadership,
    more_prunes: impl Stream<Item = ObjectRef<K>> + Send + 'static,
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
    let sync_due = resync::due(
        Loop::sync,
        ctx.caches.sources.clone(),
        sync::needs_sync,
        wakeups.resync.clone(),
        leadership.clone(),
        ctx.clone(),
    );
    let prune_due = resync::due(
        Loop::prune,
        ctx.caches.copies.clone(),
        prune::needs_prune,
        wakeups.resync,
        leadership,
        ctx.clone(),
    );
    let queued = ctx.metrics.clone();
    let taken = ctx.clone();
    let sync_wakeups = stream::select(
        wakeups.sync,
        sync_due.map(move |object| {
            queued.trigger_queued();
            (object, Instant::now(), Reach::Everything)
        }),
    )
    .map(move |(object, queued_at, reach)| {
        taken.metrics.trigger_taken(queued_at);
        taken.pending.taken(&object, queued_at, reach);
        object
    });
    let gone = ctx.clone();

    // Not the usual `Controller::new(api, ...)`, which would run a watch of
    // its own per controller: both loops share the caches (and their one
    // watch per kind), and are woken only by what `wakeups` decides an event
    // means (`reconcile_on`), so one event wakes the loop that must act.
    let sync = Controller::for_stream(no_trigger(), ctx.caches.sources.clone())
        .with_config(config.clone())
        .reconcile_on(stream::select(sync_wakeups, ctx.sync_workers.unparked()))
        .graceful_shutdown_on(stopped())
        .run(sync::reconcile, sync::error_policy, ctx.clone())
        .for_each(move |result| {
            if let Err(controller::Error::ObjectNotFound(object)) = &result {
                gone.pending.forget(&same_object(object));
            }
            log_outcome("sync", result)
        });

    let prune = Controller::for_stream(no_trigger(), ctx.caches.copies.clone())
        .with_config(config)
        .reconcile_on(stream::select(
            wakeups.prune,
            stream::select(prune_due, more_prunes),
        ))
        .graceful_shutdown_on(stopped())
        .run(prune::reconcile, prune::error_policy, ctx)
        .for_each(|result| log_outcome("prune", result));

    let signal = async move {
        shutdown.await;
        let _ = stop_tx.send(true);
    };
    futures::join!(sync, prune, signal);
}

/// The object of kind `K` an erased reference names.
fn same_object<K: MirroredKind>(erased: &ObjectRef<DynamicObject>) -> ObjectRef<K> {
    let object = ObjectRef::new(&erased.name);
    match &erased.namespace {
        Some(namespace) => object.within(namespace),
        None => object,
    }
}

/// The controllers are woken by the caches' wakeups only.
fn no_trigger<K: MirroredKind>() -> impl Stream<Item = Result<K, watcher::Error>> + Send {
    stream::pending()
}

type Outcome<K> = Result<(ObjectRef<K>, Action), controller::Error<Error, watcher::Error>>;

fn log_outcome<K: MirroredKind>(
    controller: &'static str,
    outcome: Outcome<K>,
) -> future::Ready<()> {
    match outcome {
        Ok(_) => {}
        // Reconcile errors were reported by the error policy already; a
        // wakeup for an object that left the cache is no error at all.
        Err(controller::Error::ReconcilerFailed(..) | controller::Error::ObjectNotFound(..)) => {}
        Err(error) => tracing::warn!(controller, %error, "controller error"),
    }
    future::ready(())
}
