//! The full comparison after every (re)list, and when this replica becomes
//! the leader: each loop looks at every cached object again, and queues only
//! those its reconcile would act on.
//!
//! A (re)list is when the caches may have missed changes (the watch was
//! down, or the controller was not running), so everything must be compared
//! again. The comparison is the reconcile's own decision, made from the same
//! caches, so an object it skips is one whose reconcile would do nothing.
//! Doing it here rather than by queueing every object keeps a restart over
//! 10,000 in-sync sources from making 20,000 reconciles, and keeps the
//! controllers' queues (which never shrink) from growing to the whole cache.

use std::{collections::HashSet, sync::Arc};

use futures::{Stream, StreamExt, future, stream};
use kube::runtime::reflector::{ObjectRef, Store};
use tokio::sync::watch;

use crate::{
    kind::MirroredKind, ops::leader::Leadership, ops::metrics::Loop, reconcile::backoff::Of,
    reconcile::context::Context,
};

/// Whether one cached object's reconcile has something to do.
pub type NeedsWork<K> = fn(&K, &Context<K>) -> bool;

/// The objects of `store` that need work, after every tick of `resyncs` and
/// once when `leadership` turns true.
pub fn due<K: MirroredKind>(
    which: Loop,
    store: Store<K>,
    needs_work: NeedsWork<K>,
    resyncs: watch::Receiver<u64>,
    leadership: Leadership,
    ctx: Arc<Context<K>>,
) -> impl Stream<Item = ObjectRef<K>> + Send {
    stream::select(ticks(resyncs), became_leader(leadership))
        .then(move |()| {
            let (store, ctx) = (store.clone(), ctx.clone());
            async move {
                ctx.caches.wait_ready().await;
                stream::iter(sweep(which, &store, needs_work, &ctx))
            }
        })
        .flatten()
}

fn sweep<K: MirroredKind>(
    which: Loop,
    store: &Store<K>,
    needs_work: NeedsWork<K>,
    ctx: &Context<K>,
) -> Vec<ObjectRef<K>> {
    let cached = store.state();
    let live: HashSet<&str> = cached
        .iter()
        .filter_map(|o| o.meta().uid.as_deref())
        .collect();
    ctx.backoffs
        .retain(which, Of::Kind(K::SOURCE_KIND), |uid| live.contains(uid));
    let due: Vec<_> = cached
        .iter()
        .filter(|object| needs_work(object, ctx))
        .map(|object| ObjectRef::from(&**object))
        .collect();
    ctx.metrics.resynced(which, cached.len(), due.len());
    tracing::debug!(?which, checked = cached.len(), queued = due.len(), "resync");
    due
}

/// One item per change of the counter; changes made while a sweep runs
/// merge into one more sweep.
fn ticks(resyncs: watch::Receiver<u64>) -> impl Stream<Item = ()> + Send {
    stream::unfold(resyncs, |mut resyncs| async move {
        resyncs.changed().await.ok()?;
        Some(((), resyncs))
    })
}

/// Yields once when this replica first leads. A leader that loses the
/// lease exits, so leadership begins at most once per process.
fn became_leader(leadership: Leadership) -> impl Stream<Item = ()> + Send {
    stream::once(async move { leadership.became_leader().await })
        .filter_map(|led| future::ready(led.then_some(())))
}
