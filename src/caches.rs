//! The two watch caches, and which reconciles each change wakes.
//!
//! Sources are watched with the source label selector, companions with the
//! managed-by label, so memory follows the managed objects only, never the
//! number of ConfigMaps in the cluster. Each event wakes the reconciles that
//! may care about it:
//!
//! | change                       | wakes                                  |
//! |------------------------------|----------------------------------------|
//! | source created or changed    | sync of that source                    |
//! | source deleted or unlabeled  | prune of its companion                 |
//! | source list (re)completed    | prune of every companion               |
//! | companion changed or deleted | sync of its source, prune of itself    |
//!
//! A label-selected watch reports a source that loses its label as deleted,
//! and the sync controller cannot run for an object no longer in its cache;
//! that is why unlabeling is handled from the companion's side, by prune.

use std::sync::Arc;

use futures::{SinkExt, Stream, StreamExt, channel::mpsc};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::{
    Api, Client, ResourceExt,
    runtime::{
        WatchStreamExt,
        reflector::{self, ObjectRef, Store},
        watcher::{self, Event},
    },
};
use tokio::sync::watch;

use crate::{desired, health::Health, metrics::Metrics, plan};

/// Read-only views of both caches.
#[derive(Clone)]
pub struct Caches {
    pub sources: Store<ConfigMap>,
    pub companions: Store<ConfigMap>,
    // `Store::wait_until_ready` wakes only the most recent of several
    // concurrent waiters, so the reconciles wait on this instead.
    ready: watch::Receiver<bool>,
}

impl Caches {
    /// Waits until both caches have completed their initial list. Before
    /// that, every companion would look missing and every source gone.
    pub async fn wait_ready(&self) {
        // An error means the watch task is gone, i.e. the process is
        // shutting down; reconciles then see whatever the caches hold.
        let _ = self.ready.clone().wait_for(|ready| *ready).await;
    }

    pub fn source(&self, namespace: &str, name: &str) -> Option<Arc<ConfigMap>> {
        self.sources.get(&ObjectRef::new(name).within(namespace))
    }

    pub fn companion(&self, namespace: &str, name: &str) -> Option<Arc<ConfigMap>> {
        self.companions.get(&ObjectRef::new(name).within(namespace))
    }
}

/// What the watches ask the two controllers to look at.
pub struct Wakeups {
    pub sync: mpsc::Receiver<ObjectRef<ConfigMap>>,
    pub prune: mpsc::Receiver<ObjectRef<ConfigMap>>,
    pub prune_all: mpsc::Receiver<()>,
}

#[derive(Clone)]
struct Senders {
    sync: mpsc::Sender<ObjectRef<ConfigMap>>,
    prune: mpsc::Sender<ObjectRef<ConfigMap>>,
    prune_all: mpsc::Sender<()>,
}

/// What the watches need to know.
pub struct WatchSettings {
    pub namespace: Option<String>,
    pub selector: String,
    pub suffix: String,
}

// Deep enough that the watches never wait on the controllers' schedulers,
// which take wakeups as fast as they come and merge duplicates.
const WAKEUP_BUFFER: usize = 1024;

/// Starts nothing yet: returns the caches, the wakeups, and the future that
/// drives both watches (it runs until the watches end).
pub fn watch(
    client: Client,
    settings: WatchSettings,
    health: Arc<Health>,
    metrics: Arc<Metrics>,
) -> (Caches, Wakeups, impl Future<Output = ()> + Send) {
    let api: Api<ConfigMap> = match &settings.namespace {
        Some(ns) => Api::namespaced(client, ns),
        None => Api::all(client),
    };
    let (sources, source_writer) = reflector::store();
    let (companions, companion_writer) = reflector::store();
    let (sync_tx, sync) = mpsc::channel(WAKEUP_BUFFER);
    let (prune_tx, prune) = mpsc::channel(WAKEUP_BUFFER);
    let (prune_all_tx, prune_all) = mpsc::channel(1);
    let senders = Senders {
        sync: sync_tx,
        prune: prune_tx,
        prune_all: prune_all_tx,
    };

    let source_events = watcher(api.clone(), &settings.selector)
        .modify(|cm: &mut ConfigMap| {
            cm.managed_fields_mut().clear();
            // Never copied, and often as large as the data itself.
            cm.annotations_mut()
                .remove("kubectl.kubernetes.io/last-applied-configuration");
        })
        .reflect(source_writer);
    let companion_events = watcher(api, desired::COMPANION_SELECTOR)
        .modify(|cm: &mut ConfigMap| cm.managed_fields_mut().clear())
        .reflect(companion_writer);

    let (ready_tx, ready) = watch::channel(false);
    let caches = Caches {
        sources,
        companions,
        ready,
    };
    let suffix = settings.suffix;
    let drive = {
        let caches = caches.clone();
        async move {
            let sources = forward(
                "sources",
                source_events,
                senders.clone(),
                health.clone(),
                metrics.clone(),
                {
                    let suffix = suffix.clone();
                    let caches = caches.clone();
                    let metrics = metrics.clone();
                    move |event| {
                        metrics.set_managed_sources(caches.sources.len());
                        source_wakeups(event, &suffix)
                    }
                },
            );
            let companions = forward(
                "companions",
                companion_events,
                senders,
                health.clone(),
                metrics,
                move |event| companion_wakeups(event, &suffix),
            );
            let synced = async {
                let _ = caches.sources.wait_until_ready().await;
                let _ = caches.companions.wait_until_ready().await;
                ready_tx.send_replace(true);
                health.set_caches_synced();
            };
            futures::join!(sources, companions, synced);
        }
    };
    (
        caches,
        Wakeups {
            sync,
            prune,
            prune_all,
        },
        drive,
    )
}

fn watcher(
    api: Api<ConfigMap>,
    selector: &str,
) -> impl Stream<Item = Result<Event<ConfigMap>, watcher::Error>> + Send + use<> {
    // The initial list is served from the API server's watch cache.
    let config = watcher::Config::default().labels(selector).any_semantic();
    watcher::watcher(api, config).default_backoff()
}

/// Who must look at something after one watch event.
#[derive(Debug, Default, PartialEq)]
pub struct Wake {
    pub sync: Option<ObjectRef<ConfigMap>>,
    pub prune: Option<ObjectRef<ConfigMap>>,
    pub prune_all: bool,
}

pub fn source_wakeups(event: &Event<ConfigMap>, suffix: &str) -> Wake {
    match event {
        Event::Apply(source) | Event::InitApply(source) => Wake {
            sync: Some(ObjectRef::from(source)),
            ..Wake::default()
        },
        Event::Delete(source) => Wake {
            prune: source.metadata.namespace.as_deref().map(|ns| {
                ObjectRef::new(&desired::companion_name(&source.name_any(), suffix)).within(ns)
            }),
            ..Wake::default()
        },
        // Sources that vanished while the watch was down produce no delete
        // event; re-checking every companion after a re-list catches them.
        Event::InitDone => Wake {
            prune_all: true,
            ..Wake::default()
        },
        Event::Init => Wake::default(),
    }
}

pub fn companion_wakeups(event: &Event<ConfigMap>, suffix: &str) -> Wake {
    let source_of = |companion: &ConfigMap| {
        let namespace = companion.metadata.namespace.as_deref()?;
        let name = plan::claimed_source(companion, suffix)?;
        Some(ObjectRef::new(&name).within(namespace))
    };
    match event {
        Event::Apply(companion) | Event::InitApply(companion) => Wake {
            sync: source_of(companion),
            prune: Some(ObjectRef::from(companion)),
            prune_all: false,
        },
        Event::Delete(companion) => Wake {
            sync: source_of(companion),
            ..Wake::default()
        },
        Event::Init | Event::InitDone => Wake::default(),
    }
}

async fn forward(
    name: &'static str,
    events: impl Stream<Item = Result<Event<ConfigMap>, watcher::Error>>,
    mut senders: Senders,
    health: Arc<Health>,
    metrics: Arc<Metrics>,
    mut wakeups_of: impl FnMut(&Event<ConfigMap>) -> Wake,
) {
    let mut events = std::pin::pin!(events);
    while let Some(event) = events.next().await {
        let event = match event {
            Ok(event) => event,
            Err(error) => {
                if health.watch_failed(name) {
                    tracing::warn!(watch = name, %error, "watch failed; retrying with backoff");
                } else {
                    tracing::debug!(watch = name, %error, "watch failed again; retrying");
                }
                continue;
            }
        };
        // Init is announced before the list is even attempted, so it proves
        // nothing; any other event comes from a working list or watch.
        if !matches!(event, Event::Init) && health.watch_ok(name) {
            tracing::info!(watch = name, "watch works again");
        }
        let wake = wakeups_of(&event);
        // A closed channel means the controllers stopped: shutting down.
        if let Some(source) = wake.sync {
            metrics.trigger_queued();
            let _ = senders.sync.send(source).await;
        }
        if let Some(companion) = wake.prune {
            let _ = senders.prune.send(companion).await;
        }
        if wake.prune_all {
            // One pending request is enough: it re-reads the whole cache.
            let _ = senders.prune_all.try_send(());
        }
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    use super::*;

    fn mk_configmap(name: &str) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("ns".into()),
                uid: Some("u1".into()),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        }
    }

    #[test]
    fn a_deleted_source_wakes_the_prune_of_its_companion() {
        let wake = source_wakeups(&Event::Delete(mk_configmap("colors")), "-synced");
        assert_eq!(
            wake.prune,
            Some(ObjectRef::new("colors-synced").within("ns"))
        );
        assert_eq!(wake.sync, None);
    }

    #[test]
    fn a_completed_source_list_wakes_every_prune() {
        assert!(source_wakeups(&Event::InitDone, "-synced").prune_all);
    }

    #[test]
    fn a_deleted_companion_wakes_the_sync_of_its_source() {
        let source = mk_configmap("colors");
        let companion = desired::desired_companion(&source, "-synced").unwrap();
        let wake = companion_wakeups(&Event::Delete(companion), "-synced");
        assert_eq!(wake.sync, Some(ObjectRef::new("colors").within("ns")));
    }
}
