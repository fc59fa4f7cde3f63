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
//! | source deleted or unlabeled  | prune of its companion and of its mirrors (from the mirror index) |
//! | copy changed or deleted      | sync of its source, prune of itself    |
//! | namespace's labels changed   | sync of the sources that want a mirror in it, prune of the copies in it |
//! | namespace deleted            | prune of the copies in it |
//! | any list (re)completed       | a resync of both loops ([`crate::resync`]) |
//!
//! Objects delivered by a (re)list wake nothing one by one: the resync that
//! follows the list compares them all, and wakes only those that need work.
//!
//! "Copies" are companions and mirrors alike: both carry the managed-by label
//! and share one cache. Namespaces are watched (metadata only) when mirroring
//! into other namespaces is possible, i.e. when watching all namespaces.
//!
//! A label-selected watch reports a source that loses its label as deleted,
//! and the sync controller cannot run for an object no longer in its cache;
//! that is why unlabeling is handled from the companion's side, by prune.

use std::{
    collections::{BTreeMap, HashMap},
    sync::Arc,
    time::Instant,
};

use futures::{SinkExt, Stream, StreamExt, channel::mpsc};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::{
    Api, Client, ResourceExt,
    core::PartialObjectMeta,
    runtime::{
        WatchStreamExt,
        reflector::{self, ObjectRef, Store},
        watcher::{self, Event},
    },
};
use tokio::sync::watch;

use crate::{
    api_client,
    backoff::Backoffs,
    cached,
    config::InitialList,
    contract,
    health::Health,
    metrics::Metrics,
    mirror_index::MirrorIndex,
    ownership,
    selector::Selector,
    targets::{self, Targets},
    watch_stream,
};

type NamespaceMeta = PartialObjectMeta<Namespace>;

/// Read-only views of the caches.
#[derive(Clone)]
pub struct Caches {
    pub sources: Store<ConfigMap>,
    /// Companions and mirrors: every ConfigMap with the managed-by label.
    pub companions: Store<ConfigMap>,
    /// Namespace metadata, when mirroring into other namespaces is on.
    pub namespaces: Option<Store<NamespaceMeta>>,
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

    /// The copy at this name, read back from its cached form.
    pub fn companion(&self, namespace: &str, name: &str) -> Option<ConfigMap> {
        let cached = self
            .companions
            .get(&ObjectRef::new(name).within(namespace))?;
        Some(cached::copy_from_cache(&cached))
    }

    /// Every namespace with its labels; empty when mirroring is off.
    pub fn namespaces(&self) -> Vec<(String, BTreeMap<String, String>)> {
        let Some(namespaces) = &self.namespaces else {
            return Vec::new();
        };
        namespaces
            .state()
            .iter()
            .map(|ns| (ns.name_any(), ns.labels().clone()))
            .collect()
    }

    /// A namespace's labels, or None if it does not exist (or mirroring is off).
    pub fn namespace_labels(&self, name: &str) -> Option<BTreeMap<String, String>> {
        let namespace = self.namespaces.as_ref()?.get(&ObjectRef::new(name))?;
        Some(namespace.labels().clone())
    }

    /// Sources that want a mirror in namespace `name` with `labels`.
    fn sources_wanting_mirror_in(
        &self,
        name: &str,
        labels: &BTreeMap<String, String>,
        consent: &Selector,
    ) -> Vec<ObjectRef<ConfigMap>> {
        self.sources
            .state()
            .iter()
            .filter(|source| has_mirror_annotations(source))
            .filter(|source| {
                let source_namespace = source.namespace().unwrap_or_default();
                matches!(Targets::of(source), Ok(Some(targets))
                    if targets::wants_mirror(&targets, &source_namespace, name, labels, consent))
            })
            .map(|s| ObjectRef::from(&**s))
            .collect()
    }

    /// The copies in one namespace.
    fn copies_in(&self, namespace: &str) -> Vec<ObjectRef<ConfigMap>> {
        self.companions
            .state()
            .iter()
            .filter(|c| c.namespace().as_deref() == Some(namespace))
            .map(|c| ObjectRef::from(&**c))
            .collect()
    }
}

/// What the watches ask the two controllers to look at.
pub struct Wakeups {
    pub sync: mpsc::Receiver<ObjectRef<ConfigMap>>,
    pub prune: mpsc::Receiver<ObjectRef<ConfigMap>>,
    /// Changes whenever every cached object must be compared again.
    pub resync: watch::Receiver<u64>,
}

#[derive(Clone)]
struct Senders {
    sync: mpsc::Sender<ObjectRef<ConfigMap>>,
    prune: mpsc::Sender<ObjectRef<ConfigMap>>,
    resync: Arc<watch::Sender<u64>>,
}

/// What the watches need to know.
pub struct WatchSettings {
    /// Watch only this namespace; mirroring into others is then off.
    pub namespace: Option<String>,
    pub selector: String,
    pub suffix: String,
    pub initial_list: InitialList,
    /// Which namespaces accept mirrors.
    pub consent: Selector,
}

// Deep enough that the watches never wait on the controllers' schedulers,
// which take wakeups as fast as they come and merge duplicates.
const WAKEUP_BUFFER: usize = 1024;

/// Starts nothing yet: returns the caches, the wakeups, and the future that
/// drives every watch (it runs until the watches end). Each watch has a
/// client of its own, which tells `health` when the watch reconnects.
pub fn watch(
    config: &kube::Config,
    settings: WatchSettings,
    health: Arc<Health>,
    metrics: Arc<Metrics>,
    backoffs: Arc<Backoffs>,
) -> anyhow::Result<(Caches, Wakeups, impl Future<Output = ()> + Send + use<>)> {
    let client_for = |watch: &'static str| {
        health.register(watch);
        let health = health.clone();
        api_client::for_watch(config, move || {
            if let Some(failed_for) = health.watch_ok(watch, Instant::now()) {
                tracing::info!(watch, ?failed_for, "watch reconnected");
            }
        })
    };
    let configmaps = |client: Client| -> Api<ConfigMap> {
        match &settings.namespace {
            Some(ns) => Api::namespaced(client, ns),
            None => Api::all(client),
        }
    };
    let (namespaces, namespace_events) = match settings.namespace {
        Some(_) => (None, None),
        None => {
            let (store, writer) = reflector::store();
            let api = Api::<NamespaceMeta>::all(client_for(NAMESPACES)?);
            let events = watch_stream::events(
                api,
                watcher::Config::default(),
                settings.initial_list,
                NAMESPACES,
            )
            .modify(|ns: &mut NamespaceMeta| ns.managed_fields_mut().clear())
            .reflect(writer);
            (Some(store), Some(events))
        }
    };
    let (sources, source_writer) = reflector::store();
    let (companions, companion_writer) = reflector::store();
    let (sync_tx, sync) = mpsc::channel(WAKEUP_BUFFER);
    let (prune_tx, prune) = mpsc::channel(WAKEUP_BUFFER);
    let (resync_tx, resync) = watch::channel(0);
    let senders = Senders {
        sync: sync_tx,
        prune: prune_tx,
        resync: Arc::new(resync_tx),
    };

    let source_events = watch_stream::events(
        configmaps(client_for(SOURCES)?),
        watcher::Config::default().labels(&settings.selector),
        settings.initial_list,
        SOURCES,
    )
    .modify(cached::slim_source)
    .reflect(source_writer);
    let companion_events = watch_stream::events(
        configmaps(client_for(COMPANIONS)?),
        watcher::Config::default().labels(&contract::copy_selector()),
        settings.initial_list,
        COMPANIONS,
    )
    .modify(cached::slim_copy)
    .reflect(companion_writer);

    let (ready_tx, ready) = watch::channel(false);
    let caches = Caches {
        sources,
        companions,
        namespaces,
        ready,
    };
    let suffix = settings.suffix;
    let index = MirrorIndex::default();
    let drive = {
        let caches = caches.clone();
        async move {
            let sources = forward(
                SOURCES,
                source_events,
                senders.clone(),
                health.clone(),
                metrics.clone(),
                {
                    let suffix = suffix.clone();
                    let caches = caches.clone();
                    let metrics = metrics.clone();
                    let index = index.clone();
                    let backoffs = backoffs.clone();
                    move |event| {
                        metrics.set_managed_sources(caches.sources.len());
                        forget_deleted(event, &backoffs);
                        let mut wake = source_wakeups(event, &suffix);
                        // A changed source may want fewer mirrors than it
                        // has, and a deleted one none: the index knows which.
                        if let Event::Apply(source) | Event::Delete(source) = event {
                            let namespace = source.namespace().unwrap_or_default();
                            wake.prune
                                .extend(index.mirrors_of(&namespace, &source.name_any()));
                        }
                        wake
                    }
                },
            );
            let companions = forward(
                COMPANIONS,
                companion_events,
                senders.clone(),
                health.clone(),
                metrics.clone(),
                move |event| {
                    forget_deleted(event, &backoffs);
                    index.observe(event);
                    companion_wakeups(event, &suffix)
                },
            );
            let namespaces = async {
                if let Some(events) = namespace_events {
                    let caches = caches.clone();
                    let consent = settings.consent.clone();
                    let mut labels_seen = HashMap::new();
                    let wakeups = move |event: &Event<NamespaceMeta>| {
                        namespace_wakeups(event, &caches, &consent, &mut labels_seen)
                    };
                    forward(
                        NAMESPACES,
                        events,
                        senders,
                        health.clone(),
                        metrics,
                        wakeups,
                    )
                    .await;
                }
            };
            let synced = async {
                let namespaces_synced = async {
                    if let Some(namespaces) = &caches.namespaces {
                        synced(NAMESPACES, namespaces, &health).await;
                    }
                };
                futures::join!(
                    synced(SOURCES, &caches.sources, &health),
                    synced(COMPANIONS, &caches.companions, &health),
                    namespaces_synced,
                );
                ready_tx.send_replace(true);
                tracing::info!("caches synced");
            };
            futures::join!(sources, companions, namespaces, synced);
        }
    };
    Ok((
        caches,
        Wakeups {
            sync,
            prune,
            resync,
        },
        drive,
    ))
}

/// A deleted object's retry state goes with it. (A source that merely
/// lost its label keeps none either: its reconcile no longer runs, and the
/// next list's resync drops what is left.)
fn forget_deleted(event: &Event<ConfigMap>, backoffs: &Backoffs) {
    if let Event::Delete(object) = event
        && let Some(uid) = object.uid()
    {
        backoffs.forget(&uid);
    }
}

// The watches' names, as logs, metrics and health name them.
const SOURCES: &str = "sources";
const COMPANIONS: &str = "companions";
const NAMESPACES: &str = "namespaces";

async fn synced<K>(watch: &'static str, store: &Store<K>, health: &Health)
where
    K: kube::Resource + Clone + 'static,
    K::DynamicType: Eq + std::hash::Hash + Clone,
{
    if store.wait_until_ready().await.is_ok() {
        health.cache_synced(watch);
    }
}

/// Who must look at something after one watch event.
#[derive(Debug, Default, PartialEq)]
pub struct Wake {
    pub sync: Vec<ObjectRef<ConfigMap>>,
    pub prune: Vec<ObjectRef<ConfigMap>>,
    pub resync: bool,
}

pub fn source_wakeups(event: &Event<ConfigMap>, suffix: &str) -> Wake {
    match event {
        Event::Apply(source) => Wake {
            sync: vec![ObjectRef::from(source)],
            ..Wake::default()
        },
        // Its mirrors are found by a resync: they live in other namespaces.
        Event::Delete(source) => Wake {
            prune: source
                .metadata
                .namespace
                .as_deref()
                .map(|ns| {
                    ObjectRef::new(&contract::companion_name(&source.name_any(), suffix)).within(ns)
                })
                .into_iter()
                .collect(),
            ..Wake::default()
        },
        // Sources that vanished while the watch was down produce no delete
        // event; comparing everything after a re-list catches them.
        Event::InitDone => Wake {
            resync: true,
            ..Wake::default()
        },
        Event::Init | Event::InitApply(_) => Wake::default(),
    }
}

pub fn companion_wakeups(event: &Event<ConfigMap>, suffix: &str) -> Wake {
    let source_of = |copy: &ConfigMap| {
        ownership::claimed_source(copy, suffix)
            .map(|(namespace, name)| ObjectRef::new(&name).within(&namespace))
            .into_iter()
            .collect()
    };
    match event {
        Event::Apply(copy) => Wake {
            sync: source_of(copy),
            prune: vec![ObjectRef::from(copy)],
            resync: false,
        },
        Event::Delete(copy) => Wake {
            sync: source_of(copy),
            ..Wake::default()
        },
        Event::InitDone => Wake {
            resync: true,
            ..Wake::default()
        },
        Event::Init | Event::InitApply(_) => Wake::default(),
    }
}

/// A namespace that appears or changes labels may now be wanted by some
/// mirroring sources (those look again), and may no longer want the copies
/// it holds (those look again). Any other change of a namespace (its
/// annotations, its status) wakes nothing. A namespace that goes takes its
/// copies with it. `labels_seen` remembers each namespace's labels, to
/// tell.
fn namespace_wakeups(
    event: &Event<NamespaceMeta>,
    caches: &Caches,
    consent: &Selector,
    labels_seen: &mut HashMap<String, BTreeMap<String, String>>,
) -> Wake {
    match event {
        Event::Apply(namespace) => {
            let name = namespace.name_any();
            let labels = namespace.labels();
            if labels_seen.get(&name) == Some(labels) {
                return Wake::default();
            }
            labels_seen.insert(name.clone(), labels.clone());
            Wake {
                sync: caches.sources_wanting_mirror_in(&name, labels, consent),
                prune: caches.copies_in(&name),
                resync: false,
            }
        }
        Event::Delete(namespace) => {
            let name = namespace.name_any();
            labels_seen.remove(&name);
            Wake {
                prune: caches.copies_in(&name),
                ..Wake::default()
            }
        }
        Event::Init => {
            labels_seen.clear();
            Wake::default()
        }
        Event::InitApply(namespace) => {
            labels_seen.insert(namespace.name_any(), namespace.labels().clone());
            Wake::default()
        }
        Event::InitDone => Wake {
            resync: true,
            ..Wake::default()
        },
    }
}

fn has_mirror_annotations(source: &ConfigMap) -> bool {
    let annotations = source.annotations();
    annotations.contains_key(targets::MIRROR_TO_ANNOTATION)
        || annotations.contains_key(targets::MIRROR_TO_SELECTOR_ANNOTATION)
}

async fn forward<K>(
    name: &'static str,
    events: impl Stream<Item = Result<Event<K>, watcher::Error>>,
    mut senders: Senders,
    health: Arc<Health>,
    metrics: Arc<Metrics>,
    mut wakeups_of: impl FnMut(&Event<K>) -> Wake,
) {
    let mut events = std::pin::pin!(events);
    while let Some(event) = events.next().await {
        let event = match event {
            Ok(event) => event,
            Err(error) => {
                let source = watch_stream::error_source(&error);
                if health.watch_failed(name, error.to_string(), source, Instant::now()) {
                    tracing::warn!(watch = name, %error, "watch failed; retrying with backoff");
                } else {
                    tracing::debug!(watch = name, %error, "watch failed again; retrying");
                }
                continue;
            }
        };
        // Init is announced before the list is even attempted, so it proves
        // nothing; any other event comes from a working list or watch.
        if !matches!(event, Event::Init)
            && let Some(failed_for) = health.watch_ok(name, Instant::now())
        {
            tracing::info!(watch = name, ?failed_for, "watch works again");
        }
        let wake = wakeups_of(&event);
        // A closed channel means the controllers stopped: shutting down.
        for source in wake.sync {
            metrics.trigger_queued();
            let _ = senders.sync.send(source).await;
        }
        for copy in wake.prune {
            let _ = senders.prune.send(copy).await;
        }
        if wake.resync {
            // Requests made while a resync runs merge into the next one.
            senders.resync.send_modify(|generation| *generation += 1);
        }
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    use super::*;
    use crate::desired;

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
            vec![ObjectRef::new("colors-synced").within("ns")]
        );
        assert!(wake.sync.is_empty());
        assert!(!wake.resync, "no mirrors to look for");
    }

    #[test]
    fn a_completed_list_asks_for_a_resync_and_its_objects_wake_nothing_alone() {
        let source = mk_configmap("colors");
        let companion = desired::desired_companion(&source, "-synced").unwrap();
        assert!(source_wakeups(&Event::InitDone, "-synced").resync);
        assert!(companion_wakeups(&Event::InitDone, "-synced").resync);
        assert_eq!(
            source_wakeups(&Event::InitApply(source), "-synced"),
            Wake::default()
        );
        assert_eq!(
            companion_wakeups(&Event::InitApply(companion), "-synced"),
            Wake::default()
        );
    }

    #[test]
    fn a_deleted_companion_wakes_the_sync_of_its_source() {
        let source = mk_configmap("colors");
        let companion = desired::desired_companion(&source, "-synced").unwrap();
        let wake = companion_wakeups(&Event::Delete(companion), "-synced");
        assert_eq!(wake.sync, vec![ObjectRef::new("colors").within("ns")]);
    }
}
