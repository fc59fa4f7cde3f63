//! The objects of one kind that ClusterMirrors may copy: every object in
//! the namespaces ClusterMirror sources may come from (no label asked
//! for), cached in the sources' slim form (`cache_form`), one watch per
//! namespace. Each change wakes the ClusterMirrors that name the object,
//! whatever kind of copy they make of it (a Secret's: Secrets, or its keys
//! published as ConfigMaps); the one watch tells whoever subscribes.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, PoisonError},
};

use futures::{FutureExt, StreamExt, channel::mpsc, stream};
use kube::{
    Api, Client,
    runtime::{
        WatchStreamExt,
        reflector::{self, ObjectRef, Store},
        watcher::{self, Event},
    },
};

use crate::{api::SourceKind, decisions::cache_form::content_size, kind::MirroredKind};

/// What a change of a ClusterMirror source asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SourceChange {
    /// The object of `kind` at (namespace, name) changed, appeared or went.
    Object {
        kind: SourceKind,
        namespace: String,
        name: String,
    },
    /// A namespace's cache of `kind` was listed (again): look at every
    /// ClusterMirror copying that kind.
    Listed { kind: SourceKind },
}

#[derive(Clone)]
pub struct ClusterSources<K: MirroredKind> {
    stores: Arc<HashMap<String, Store<K>>>,
    listeners: Arc<Mutex<Vec<mpsc::UnboundedSender<SourceChange>>>>,
}

impl<K: MirroredKind> ClusterSources<K> {
    /// Starts the watches of `namespaces`, in a task of their own, which
    /// fill the caches and tell every subscriber of their changes.
    pub fn start(client: &Client, namespaces: &[String]) -> ClusterSources<K> {
        let mut stores = HashMap::new();
        let mut watches = Vec::new();
        for namespace in namespaces {
            let (store, writer) = reflector::store();
            let api = Api::<K>::namespaced(client.clone(), namespace);
            let events = watcher::watcher(api, watcher::Config::default())
                .default_backoff()
                .modify(content_size::slim_cluster_source_sized::<K>)
                .reflect(writer)
                .filter_map(|event| async move {
                    match event {
                        Ok(event) => changed(&event),
                        Err(error) => {
                            tracing::warn!(%error, kind = %K::kind(&()), "cannot watch ClusterMirror sources; retrying");
                            None
                        }
                    }
                });
            stores.insert(namespace.clone(), store);
            watches.push(events.boxed());
        }
        let sources = ClusterSources {
            stores: Arc::new(stores),
            listeners: Arc::default(),
        };
        let listeners = sources.listeners.clone();
        tokio::spawn(stream::select_all(watches).for_each(move |change| {
            let mut listeners = listeners.lock().unwrap_or_else(PoisonError::into_inner);
            listeners.retain(|listener| listener.unbounded_send(change.clone()).is_ok());
            futures::future::ready(())
        }));
        sources
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
        self.stores.contains_key(namespace)
    }

    /// The cached object, if its namespace is allowed and it exists.
    pub fn get(&self, namespace: &str, name: &str) -> Option<Arc<K>> {
        self.stores
            .get(namespace)?
            .get(&ObjectRef::new(name).within(namespace))
    }

    /// Whether every namespace's cache has completed its first list.
    pub fn is_ready(&self) -> bool {
        (self.stores.values()).all(|store| store.wait_until_ready().now_or_never().is_some())
    }
}

fn changed<K: MirroredKind>(event: &Event<K>) -> Option<SourceChange> {
    match event {
        Event::Apply(object) | Event::Delete(object) => Some(SourceChange::Object {
            kind: K::SOURCE_KIND,
            namespace: object.meta().namespace.clone().unwrap_or_default(),
            name: object.meta().name.clone().unwrap_or_default(),
        }),
        Event::InitDone => Some(SourceChange::Listed {
            kind: K::SOURCE_KIND,
        }),
        Event::Init | Event::InitApply(_) => None,
    }
}
