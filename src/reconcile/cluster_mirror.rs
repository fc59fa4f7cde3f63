//! ClusterMirrors as mirror requests of one kind: each is reconciled with
//! the kind's caches, plan and writes (`sync`), its copies are pruned by
//! the kind's prune loop (`prune`), and what it found is told (`publish`).
//! The queue is keyed by ClusterMirror, so that each has one status, one
//! retry state and one Event per condition.
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
pub mod prune;
mod publish;
mod source;
mod suspended;
mod sync;

use std::{sync::Arc, time::Instant};

use futures::{Stream, StreamExt, channel::mpsc, future, stream};
use kube::{
    ResourceExt,
    runtime::{
        Controller,
        controller::{self, Action},
        reflector::ObjectRef,
        watcher,
    },
};
use tokio::sync::watch;

use crate::{
    api::StoredClusterMirror,
    cluster::cluster_mirrors::Change,
    cluster::cluster_sources::SourceChange,
    cluster::digest_key,
    contract,
    decisions::cluster_mirror::Request,
    decisions::scope::Reach,
    index::wakeups::{self, ClusterWake},
    kind::MirroredKind,
    ops::metrics::Loop,
    reconcile::backoff::BackoffKey,
    reconcile::context::Context,
    reconcile::error::{Error, Retry},
};

use caches::ClusterMirrorCaches;

/// What wakes the ClusterMirrors of one kind.
pub struct Inputs {
    pub changes: mpsc::UnboundedReceiver<Change>,
    pub sources: stream::BoxStream<'static, SourceChange>,
    pub from_watches: mpsc::UnboundedReceiver<ClusterWake>,
    pub resync: watch::Receiver<u64>,
}

/// Runs the ClusterMirror loop of kind `K` until `shutdown` completes;
/// the copies a changed ClusterMirror may no longer want go to `prune`.
pub async fn run<K: MirroredKind>(
    ctx: Arc<Context<K>>,
    inputs: Inputs,
    prune: mpsc::UnboundedSender<ObjectRef<K>>,
    concurrency: u16,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) {
    let Some(cluster_mirrors) = &ctx.cluster_mirrors else {
        return;
    };
    // Nothing is compared before every cache it reads is complete; the
    // ClusterMirror cache is not until the CRD is there.
    let ready = async {
        ctx.caches.wait_ready().await;
        cluster_mirrors.sources.wait_ready().await;
        cluster_mirrors.mirrors.wait_listed().await;
    };
    tokio::select! {
        () = ready => {}
        _ = ctx.shutdown.requested() => return,
    }
    let names = wakeups(ctx.clone(), inputs, prune).map(|name| ObjectRef::new(&name));
    let names = stream::select(names, ctx.cluster_mirror_workers.unparked());
    let config = controller::Config::default().concurrency(concurrency);
    Controller::for_stream(
        stream::pending::<Result<StoredClusterMirror, watcher::Error>>(),
        cluster_mirrors.mirrors.store.clone(),
    )
    .with_config(config)
    .reconcile_on(names)
    .graceful_shutdown_on(shutdown)
    .run(reconcile, error_policy, ctx.clone())
    .for_each(|outcome| {
        match outcome {
            Ok(_) | Err(controller::Error::ReconcilerFailed(..)) => {}
            Err(controller::Error::ObjectNotFound(object)) => {
                cluster_mirrors.pending.forget(&object.name)
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
enum Input {
    Change(Change),
    Source(SourceChange),
    Watch(ClusterWake),
    /// The install's Secret key changed: the checksums of the ConfigMaps
    /// that publish Secrets' keys with it.
    NewKey,
    Everything,
}

/// The names of the ClusterMirrors each input wakes.
fn wakeups<K: MirroredKind>(
    ctx: Arc<Context<K>>,
    inputs: Inputs,
    prune: mpsc::UnboundedSender<ObjectRef<K>>,
) -> impl Stream<Item = String> + Send {
    let resyncs = stream::unfold(inputs.resync, |mut resync| async move {
        resync.changed().await.ok()?;
        Some((Input::Everything, resync))
    });
    let leading = stream::unfold(ctx.leadership.clone(), |mut leadership| async move {
        loop {
            if !leadership.changed().await {
                return None;
            }
            if leadership.is_leading() {
                return Some((Input::Everything, leadership));
            }
        }
    });
    let new_keys = match ctx
        .cluster_mirrors
        .as_ref()
        .and_then(|c| c.published.as_ref())
    {
        Some(published) => digest_key::new_keys(&published.key).boxed(),
        None => stream::pending().boxed(),
    };
    let inputs = stream::select_all([
        stream::once(future::ready(Input::Everything)).boxed(),
        new_keys.map(|()| Input::NewKey).boxed(),
        inputs.changes.map(Input::Change).boxed(),
        inputs.sources.map(Input::Source).boxed(),
        inputs.from_watches.map(Input::Watch).boxed(),
        resyncs.boxed(),
        leading.boxed(),
    ]);
    inputs.flat_map(move |input| {
        let names: Vec<String> = match &ctx.cluster_mirrors {
            Some(cluster_mirrors) => woken(&ctx, cluster_mirrors, &prune, input)
                .into_iter()
                .map(|(name, reach)| {
                    cluster_mirrors.pending.taken(&name, Instant::now(), reach);
                    name
                })
                .collect(),
            None => Vec::new(),
        };
        stream::iter(names)
    })
}

/// Whom one input wakes, among the ClusterMirrors this kind's loop serves,
/// and about which of their copies: a copy's event about that copy alone,
/// anything else about all (it may change what is selected). A changed or
/// deleted ClusterMirror also wakes the prune of the copies carrying its
/// name.
fn woken<K: MirroredKind>(
    ctx: &Context<K>,
    cluster_mirrors: &ClusterMirrorCaches<K>,
    prune: &mpsc::UnboundedSender<ObjectRef<K>>,
    input: Input,
) -> Vec<(String, Reach)> {
    if let Input::Watch(ClusterWake::Copy { mirror, namespace }) = input {
        let at = ObjectRef::new(&mirror);
        let ours = cluster_mirrors
            .mirrors
            .store
            .get(&at)
            .is_some_and(|o| cluster_mirrors.serves_class(&o));
        return match ours {
            true => vec![(mirror, Reach::Namespace(namespace))],
            false => Vec::new(),
        };
    }
    names_woken(ctx, cluster_mirrors, prune, input)
        .into_iter()
        .map(|name| (name, Reach::Everything))
        .collect()
}

fn names_woken<K: MirroredKind>(
    ctx: &Context<K>,
    cluster_mirrors: &ClusterMirrorCaches<K>,
    prune: &mpsc::UnboundedSender<ObjectRef<K>>,
    input: Input,
) -> Vec<String> {
    let served = || {
        cluster_mirrors
            .mirrors
            .requests()
            .into_iter()
            .filter(|r| cluster_mirrors.serves_request(r))
    };
    // Every ClusterMirror of this install's class, readable or not.
    let of_class = || {
        cluster_mirrors
            .mirrors
            .store
            .state()
            .iter()
            .filter(|o| cluster_mirrors.serves_class(o))
            .map(|o| o.name_any())
            .collect()
    };
    match input {
        Input::Everything | Input::Change(Change::Listed) => {
            // Copies of a ClusterMirror that went while none was watched:
            // kept as orphans, and told about.
            for copy in ctx.caches.copies.state() {
                if contract::cluster_mirror_of(copy.meta()).is_some() {
                    let _ = prune.unbounded_send(ObjectRef::from(copy.as_ref()));
                }
            }
            of_class()
        }
        Input::Change(Change::StatusWritten { name }) => {
            publish::status_written(&name, cluster_mirrors, ctx)
                .into_iter()
                .collect()
        }
        Input::Change(Change::Request { name, after }) => {
            request_changed(ctx, cluster_mirrors, prune, name, after)
        }
        Input::Source(SourceChange::Listed { kind }) => served()
            .filter(|r| r.kind == kind)
            .map(|r| r.name.clone())
            .collect(),
        Input::NewKey => served()
            .filter(|r| r.publishes_secret())
            .map(|r| r.name.clone())
            .collect(),
        Input::Source(SourceChange::Object {
            kind,
            namespace,
            name,
        }) => wakeups::cluster_mirrors_copying(served(), kind, &namespace, &name),
        Input::Watch(wake) => wake.woken(served()),
    }
}

/// Whom a changed (or, with no `after`, deleted) ClusterMirror `name`
/// wakes, after the prune of every copy carrying its name.
fn request_changed<K: MirroredKind>(
    ctx: &Context<K>,
    cluster_mirrors: &ClusterMirrorCaches<K>,
    prune: &mpsc::UnboundedSender<ObjectRef<K>>,
    name: String,
    after: Option<Arc<Request>>,
) -> Vec<String> {
    // Every copy it wrote, whatever source, name or kind it asked
    // for when it wrote it (a suspended one may have changed its
    // spec many times since).
    for copy in ctx.caches.copies.state() {
        if contract::cluster_mirror_of(copy.meta()) == Some(name.as_str()) {
            let _ = prune.unbounded_send(ObjectRef::from(copy.as_ref()));
        }
    }
    match after {
        Some(after) if cluster_mirrors.serves_request(&after) => vec![name],
        // Handed over to another install: this one forgets it.
        Some(after) if !after.served_by(&cluster_mirrors.install.class) => {
            publish::forget(&name, cluster_mirrors, ctx);
            Vec::new()
        }
        Some(_) => Vec::new(),
        None => {
            publish::forget(&name, cluster_mirrors, ctx);
            // An unreadable spec is reported by the kind that serves
            // everything else, of the install of its class.
            vec![name]
        }
    }
}

async fn reconcile<K: MirroredKind>(
    object: Arc<StoredClusterMirror>,
    ctx: Arc<Context<K>>,
) -> Result<Action, Error> {
    let Some(cluster_mirrors) = &ctx.cluster_mirrors else {
        return Ok(Action::await_change());
    };
    // Another install's: nothing of it is written here, not even a status.
    if !cluster_mirrors.serves_class(&object) || !cluster_mirrors.serves(object.copy_kind()) {
        cluster_mirrors.pending.forget(&object.name_any());
        return Ok(Action::await_change());
    }
    // Shared by the namespace its source is in, as that source's own
    // mirrors are; taken before the reconcile starts (`worker_share`).
    let spec = object.spec.as_ref().ok();
    let namespace = spec.map(|spec| spec.source.namespace.as_str());
    let object_ref = ObjectRef::from_obj(object.as_ref());
    let workers = &ctx.cluster_mirror_workers;
    let Some(_worker) = workers.take(namespace.unwrap_or_default(), &object_ref) else {
        return Ok(Action::await_change());
    };
    let key = BackoffKey::new(Loop::sync, &object.metadata);
    let served = cluster_mirrors
        .pending
        .reconcile_started(&object.name_any());
    // When to run again without a wakeup: a status write that had to wait,
    // or a look on the slow timer at what no watch reports.
    let mut again = None;
    let work = async {
        let found = sync::sync(&object, served.scope, cluster_mirrors, &ctx).await?;
        let waiting = publish::report(&object, &found, cluster_mirrors, &ctx).await?;
        again = waiting.or_else(|| found.looks_again().then_some(ctx.retry_policy.slowly.0));
        match found.retry {
            // A status write waiting its turn comes first: the reconcile
            // that writes it finds the failure again.
            Some(error) if error.retry() == Retry::Slowly && waiting.is_some() => Ok(()),
            Some(error) => Err(error),
            None => Ok(()),
        }
    };
    let action = ctx
        .run_reconcile(Loop::sync, &object.metadata, &key, served.woken_at, work)
        .await?;
    Ok(match again {
        Some(delay) => Action::requeue(delay),
        None => action,
    })
}

fn error_policy<K: MirroredKind>(
    object: Arc<StoredClusterMirror>,
    error: &Error,
    ctx: Arc<Context<K>>,
) -> Action {
    let key = BackoffKey::new(Loop::sync, &object.metadata);
    if let Some(cluster_mirrors) = &ctx.cluster_mirrors {
        // Its retry compares everything: nothing narrower builds on it.
        cluster_mirrors.stand(&object.name_any(), None);
        cluster_mirrors.pending.retried(&object.name_any());
    }
    let new = ctx.backoffs.is_new_condition(&key, &error.to_string());
    match error.retry() {
        // Told in its status and Event already; only looked at again.
        Retry::Slowly => {
            tracing::debug!(clustermirror = %object.name_any(), %error, "ClusterMirror failures wait for a person; looking again on the slow timer")
        }
        _ if new => {
            tracing::warn!(clustermirror = %object.name_any(), %error, "ClusterMirror reconcile failed; retrying with backoff")
        }
        _ => {}
    }
    ctx.requeue_after_failure(&key, error)
}
