//! The objects of one kind that ClusterMirrors and Mirrors may copy:
//! every object in the namespaces ClusterMirror sources may come from, and
//! in each namespace a Mirror of that source kind is in, while one is (no
//! label asked for), cached in the sources' slim form (`cache_form`), one
//! watch per namespace. Each change wakes the requests that name the
//! object, whatever kind of copy they make of it (a Secret's: Secrets, or
//! its keys published as ConfigMaps); the watches tell whoever subscribes.
//!
//! A Mirror's source is in its own namespace: watching that namespace
//! costs the slim objects of the kind there (no content: it is read when
//! a copy is written), for as long as a Mirror is there, and nothing in
//! the namespaces without one.

use std::{
    collections::{BTreeSet, HashMap, HashSet},
    sync::{Arc, Mutex, MutexGuard, PoisonError},
};

use futures::{FutureExt, StreamExt, channel::mpsc};
use kube::{
    Api, Client,
    runtime::{
        WatchStreamExt,
        reflector::{self, ObjectRef, Store},
        watcher::{self, Event},
    },
};
use tokio::task::AbortHandle;

use crate::{api::SourceKind, decisions::cache_form::content_size, kind::MirroredKind};

/// The objects of one page of a source namespace's list.
const LIST_PAGE: u32 = 25;

/// What a change of a ClusterMirror source asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SourceChange {
    /// The object of `kind` at (namespace, name) changed, appeared or went.
    Object {
        kind: SourceKind,
        namespace: String,
        name: String,
    },
    /// The cache of `kind` in `namespace` was listed (again): look at
    /// every request copying that kind from there.
    Listed { kind: SourceKind, namespace: String },
}

#[derive(Clone)]
pub struct ClusterSources<K: MirroredKind> {
    client: Client,
    /// The namespaces ClusterMirror sources may come from, watched from
    /// the start and never let go.
    allowed: Arc<HashSet<String>>,
    /// Every namespace watched: the allowed ones, and those with a Mirror.
    watched: Arc<Mutex<HashMap<String, Watched<K>>>>,
    listeners: Arc<Mutex<Vec<mpsc::UnboundedSender<SourceChange>>>>,
}

/// One namespace's watch: its cache, and its task.
struct Watched<K: MirroredKind> {
    store: Store<K>,
    task: AbortHandle,
}

impl<K: MirroredKind> Drop for Watched<K> {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl<K: MirroredKind> ClusterSources<K> {
    /// Starts the watches of the `allowed` namespaces, each in a task of
    /// its own, which fill the caches and tell every subscriber of their
    /// changes.
    pub fn start(client: &Client, allowed: &[String]) -> ClusterSources<K> {
        let sources = ClusterSources {
            client: client.clone(),
            allowed: Arc::new(allowed.iter().cloned().collect()),
            watched: Arc::default(),
            listeners: Arc::default(),
        };
        let mut watched = sources.lock_watched();
        for namespace in allowed {
            watched.insert(namespace.clone(), sources.watch(namespace));
        }
        drop(watched);
        sources
    }

    /// Watches the namespaces of `mirrors` (those a Mirror of this source
    /// kind is in) besides the allowed ones, and no other: a namespace
    /// whose last Mirror went is let go.
    pub fn follow_mirrors_in(&self, mirrors: &BTreeSet<String>) {
        let mut watched = self.lock_watched();
        watched
            .retain(|namespace, _| self.allowed.contains(namespace) || mirrors.contains(namespace));
        for namespace in mirrors {
            if !watched.contains_key(namespace) {
                watched.insert(namespace.clone(), self.watch(namespace));
            }
        }
    }

    /// The watch of `namespace`, started.
    fn watch(&self, namespace: &str) -> Watched<K> {
        let (store, writer) = reflector::store();
        let api = Api::<K>::namespaced(self.client.clone(), namespace);
        let listeners = self.listeners.clone();
        let listed_in = namespace.to_owned();
        // Each object is made slim as it comes, but a page is held whole
        // while it is read: a small page bounds what a namespace of large
        // objects (Helm's release records) costs a list.
        let config = watcher::Config::default().page_size(LIST_PAGE);
        let events = watcher::watcher(api, config)
            .default_backoff()
            .modify(content_size::slim_cluster_source_sized::<K>)
            .reflect(writer)
            .filter_map(move |event| {
                let changed = match event {
                    Ok(event) => changed(&listed_in, &event),
                    Err(error) => {
                        tracing::warn!(%error, kind = %K::kind(&()), "cannot watch the sources of ClusterMirrors and Mirrors; retrying");
                        None
                    }
                };
                futures::future::ready(changed)
            })
            .for_each(move |change| {
                let mut listeners = listeners.lock().unwrap_or_else(PoisonError::into_inner);
                listeners.retain(|listener| listener.unbounded_send(change.clone()).is_ok());
                futures::future::ready(())
            });
        let task = tokio::spawn(events).abort_handle();
        Watched { store, task }
    }

    /// Every change from now on.
    pub fn subscribe(&self) -> mpsc::UnboundedReceiver<SourceChange> {
        let (tx, rx) = mpsc::unbounded();
        self.listeners
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(tx);
        rx
    }

    /// Whether ClusterMirror sources may come from `namespace`.
    pub fn allows(&self, namespace: &str) -> bool {
        self.allowed.contains(namespace)
    }

    /// The cached object, if its namespace is watched and it exists.
    pub fn get(&self, namespace: &str, name: &str) -> Option<Arc<K>> {
        let watched = self.lock_watched();
        (watched.get(namespace)?.store).get(&ObjectRef::new(name).within(namespace))
    }

    /// Whether `namespace` is watched.
    pub fn is_watched(&self, namespace: &str) -> bool {
        self.lock_watched().contains_key(namespace)
    }

    /// Whether the cache of `namespace` has completed its first list; true
    /// for a namespace not watched, whose requests are refused or wait for
    /// its watch to start.
    pub fn is_listed(&self, namespace: &str) -> bool {
        (self.lock_watched().get(namespace))
            .is_none_or(|watched| watched.store.wait_until_ready().now_or_never().is_some())
    }

    fn lock_watched(&self) -> MutexGuard<'_, HashMap<String, Watched<K>>> {
        self.watched.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn changed<K: MirroredKind>(namespace: &str, event: &Event<K>) -> Option<SourceChange> {
    match event {
        Event::Apply(object) | Event::Delete(object) => Some(SourceChange::Object {
            kind: K::SOURCE_KIND,
            namespace: object.meta().namespace.clone().unwrap_or_default(),
            name: object.meta().name.clone().unwrap_or_default(),
        }),
        Event::InitDone => Some(SourceChange::Listed {
            kind: K::SOURCE_KIND,
            namespace: namespace.to_owned(),
        }),
        Event::Init | Event::InitApply(_) => None,
    }
}
