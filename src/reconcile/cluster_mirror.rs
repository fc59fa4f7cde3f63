//! ClusterMirrors as mirror requests: one loop reconciles every
//! ClusterMirror, whatever kind it copies. Each is handed to the writer of
//! its copies' kind (`writers`), with its source read from the cache of
//! the source's own kind (`source`), and reconciled with that kind's
//! plan and writes (`sync`); its copies are pruned by the kind's prune
//! loop (`prune`), and what it found is told (`publish`). The queue is
//! keyed by ClusterMirror, so that each has one status, one retry state
//! and one Event per condition.
//!
//! What wakes a ClusterMirror: its spec changing (never its status, which
//! this loop writes, unless another install wrote it for an earlier
//! generation), its source changing, one of its copies changing or going,
//! a namespace it asks for, or asked for before, appearing, changing or
//! going, and every (re)list and change of leader. A changed or deleted
//! ClusterMirror wakes the prune of every copy carrying its name; each
//! (re)list, the prune of every ClusterMirror copy (one whose ClusterMirror
//! went unseen is an orphan, told about).
//!
//! Only the ClusterMirrors of the install's class are served
//! (`--cluster-mirror-class`): for any other, nothing is written, and its
//! copies are left alone.

pub mod caches;
pub mod loop_context;
pub mod prune;
mod publish;
mod selected;
mod source;
mod suspended;
mod sync;
mod woken;
pub mod writers;

use std::{sync::Arc, time::Instant};

use futures::{Stream, StreamExt, channel::mpsc, future, stream};
use kube::runtime::{
    Controller,
    controller::{self, Action},
    reflector::ObjectRef,
    watcher,
};

use crate::{
    api::{SourceKind, StoredClusterMirror},
    cluster::cluster_mirrors::Change,
    cluster::cluster_sources::SourceChange,
    cluster::digest_key,
    decisions::cluster_mirror::Request,
    decisions::request_key::RequestKey,
    index::wakeups::ClusterWake,
    ops::metrics::Loop,
    reconcile::backoff::{BackoffKey, Of},
    reconcile::error::{Error, Retry},
};

use caches::ClusterMirrorCaches;
use loop_context::LoopContext;
use sync::Found;
use writers::Writers;

/// The one ClusterMirror loop: what it knows of the ClusterMirrors, what
/// its own work needs, and a writer for each kind of copy.
pub struct ClusterMirrorLoop {
    pub caches: Arc<ClusterMirrorCaches>,
    pub ctx: LoopContext,
    pub writers: Writers,
}

/// What wakes the ClusterMirrors.
pub struct Inputs {
    pub changes: mpsc::UnboundedReceiver<Change>,
    /// Each source kind's changes.
    pub sources: stream::BoxStream<'static, SourceChange>,
    /// Each copy kind's watches' wakeups, with the kind.
    pub from_watches: stream::BoxStream<'static, (SourceKind, ClusterWake)>,
    /// A kind whose caches completed a list (the first, or again) or must
    /// be compared again whole: every ClusterMirror its writer reports on
    /// compares everything.
    pub compare_all: stream::BoxStream<'static, SourceKind>,
}

/// Runs the ClusterMirror loop until `shutdown` completes, with
/// `concurrency` reconciles at most at once.
pub async fn run(
    this: Arc<ClusterMirrorLoop>,
    inputs: Inputs,
    concurrency: u16,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) {
    let caches = this.caches.clone();
    // The ClusterMirror cache is not listed until the CRD is there. The
    // caches each request reads are checked by its reconcile
    // (`ClusterMirrorLoop::listed`): one kind's that cannot be listed
    // stops no ClusterMirror of another.
    tokio::select! {
        () = caches.mirrors.wait_listed() => {}
        _ = this.ctx.shutdown.requested() => return,
    }
    let names = wakeups(this.clone(), inputs).map(|key| caches::object_ref(&key));
    let names = stream::select(names, caches.workers.unparked());
    let config = controller::Config::default().concurrency(concurrency);
    Controller::for_stream(
        stream::pending::<Result<StoredClusterMirror, watcher::Error>>(),
        caches.mirrors.store.clone(),
    )
    .with_config(config)
    .reconcile_on(names)
    .graceful_shutdown_on(shutdown)
    .run(reconcile, error_policy, this.clone())
    .for_each(|outcome| {
        match outcome {
            Ok(_) | Err(controller::Error::ReconcilerFailed(..)) => {}
            Err(controller::Error::ObjectNotFound(object)) => {
                let key = RequestKey {
                    namespace: object.namespace.clone(),
                    name: object.name.clone(),
                };
                caches.pending.forget(&key);
            }
            Err(error) => {
                tracing::warn!(controller = "clustermirror", %error, "controller error");
            }
        }
        future::ready(())
    })
    .await;
}

/// One thing that may wake ClusterMirrors.
pub(super) enum Input {
    Change(Change),
    Source(SourceChange),
    Watch(SourceKind, ClusterWake),
    /// The install's Secret key changed: the checksums of the ConfigMaps
    /// that publish Secrets' keys with it.
    NewKey,
    /// One kind's caches were listed, or must be compared again whole.
    CompareAll(SourceKind),
    Everything,
}

/// The ClusterMirrors and Mirrors each input wakes.
fn wakeups(this: Arc<ClusterMirrorLoop>, inputs: Inputs) -> impl Stream<Item = RequestKey> + Send {
    let leading = stream::unfold(this.ctx.leadership.clone(), |mut leadership| async move {
        loop {
            if !leadership.changed().await {
                return None;
            }
            if leadership.is_leading() {
                return Some((Input::Everything, leadership));
            }
        }
    });
    // The install's Secret key, which checksums every copy of a Secret's
    // content: a new one changes the ConfigMaps that publish Secrets' keys.
    let new_keys = match &this.caches.secrets {
        Some(secrets) => digest_key::new_keys(&secrets.key).boxed(),
        None => stream::pending().boxed(),
    };
    let inputs = stream::select_all([
        stream::once(future::ready(Input::Everything)).boxed(),
        new_keys.map(|()| Input::NewKey).boxed(),
        inputs.changes.map(Input::Change).boxed(),
        inputs.sources.map(Input::Source).boxed(),
        (inputs.from_watches)
            .map(|(kind, wake)| Input::Watch(kind, wake))
            .boxed(),
        inputs.compare_all.map(Input::CompareAll).boxed(),
        leading.boxed(),
    ]);
    inputs.flat_map(move |input| {
        let names: Vec<RequestKey> = woken::woken(&this, input)
            .into_iter()
            .map(|(key, reach)| {
                this.caches.pending.taken(&key, Instant::now(), reach);
                key
            })
            .collect();
        stream::iter(names)
    })
}

impl ClusterMirrorLoop {
    /// Whether this install reconciles `object`: of its class, and of a
    /// kind it reports on.
    fn serves(&self, object: &StoredClusterMirror) -> bool {
        self.caches.serves_class(object)
            && (self.writers.kinds())
                .reporter(object.copy_kind())
                .is_some()
    }

    /// Whether every cache `object`'s reconcile reads has been listed: its
    /// reporting writer's, and those of its source's kind. Until then it
    /// waits, unseen; the list wakes it (`Input::CompareAll`,
    /// `SourceChange::Listed`).
    fn listed(&self, object: &StoredClusterMirror) -> bool {
        let reporter = self.writers.kinds().reporter(object.copy_kind());
        let source = object.spec.as_ref().ok().map(|spec| &spec.source);
        // A Mirror woken before its namespace's watch started (by another
        // input than its own change): started now, it is woken once listed.
        if let Some(source) = source
            && object.metadata.namespace.is_some()
            && !self.caches.sources_watched(source.kind, &source.namespace)
        {
            self.caches.follow_mirror_sources();
            return false;
        }
        reporter.is_some_and(|kind| self.writers.caches_listed(kind))
            && source
                .is_none_or(|source| self.caches.sources_listed(source.kind, &source.namespace))
    }
}

async fn reconcile(
    object: Arc<StoredClusterMirror>,
    this: Arc<ClusterMirrorLoop>,
) -> Result<Action, Error> {
    let caches = &this.caches;
    // Another install's: nothing of it is written here, not even a status.
    let request_key = RequestKey::of_meta(&object.metadata);
    if !this.serves(&object) || !this.listed(&object) {
        caches.pending.forget(&request_key);
        return Ok(Action::await_change());
    }
    // Shared by the namespace its source is in, as that source's own
    // mirrors are; taken before the reconcile starts (`worker_share`).
    let spec = object.spec.as_ref().ok();
    let namespace = spec.map(|spec| spec.source.namespace.as_str());
    let object_ref = ObjectRef::from_obj(object.as_ref());
    let Some(_worker) = caches
        .workers
        .take(namespace.unwrap_or_default(), &object_ref)
    else {
        return Ok(Action::await_change());
    };
    let key = BackoffKey::new(Loop::sync, Of::ClusterMirrors, &object.metadata);
    let served = caches.pending.reconcile_started(&request_key);
    let ctx = &this.ctx;
    // When to run again without a wakeup: a status write that had to wait,
    // or a look on the slow timer at what no watch reports.
    let mut again = None;
    let work = async {
        let found = match Request::accepted(&object, &ctx.install) {
            Ok(request) => this.writers.sync(&request, served.scope, caches).await?,
            Err(why) => Found::invalid(object.metadata.generation, why),
        };
        if !found.writes() {
            caches.writes_for(&request_key, false);
        }
        let waiting = publish::report(&object, &found, caches, ctx).await?;
        again = waiting.or_else(|| found.looks_again().then_some(ctx.retry_policy.slowly.0));
        match found.retry {
            // A status write waiting its turn comes first: the reconcile
            // that writes it finds the failure again.
            Some(error) if error.retry() == Retry::Slowly && waiting.is_some() => Ok(()),
            Some(error) => Err(error),
            None => Ok(()),
        }
    };
    let action = (ctx.around())
        .run_reconcile(Loop::sync, &object.metadata, &key, served.woken_at, work)
        .await?;
    Ok(match again {
        Some(delay) => Action::requeue(delay),
        None => action,
    })
}

fn error_policy(
    object: Arc<StoredClusterMirror>,
    error: &Error,
    this: Arc<ClusterMirrorLoop>,
) -> Action {
    let key = BackoffKey::new(Loop::sync, Of::ClusterMirrors, &object.metadata);
    let request = RequestKey::of_meta(&object.metadata);
    // Its retry compares everything: nothing narrower builds on it.
    this.caches.stand(&request, None);
    this.caches.pending.retried(&request);
    let new = this.ctx.backoffs.is_new_condition(&key, &error.to_string());
    match error.retry() {
        // Told in its status and Event already; only looked at again.
        Retry::Slowly => {
            tracing::debug!(%request, %error, "failures wait for a person; looking again on the slow timer")
        }
        _ if new => {
            tracing::warn!(%request, %error, "reconcile failed; retrying with backoff")
        }
        _ => {}
    }
    this.ctx.around().requeue_after_failure(&key, error)
}
