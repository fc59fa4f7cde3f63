//! The objects of one kind that ClusterMirrors may copy: every object in
//! the namespaces ClusterMirror sources may come from (no label asked
//! for), cached in the sources' slim form (`cache_form`), one watch per
//! namespace. Each change wakes the ClusterMirrors that name the object.

use std::{collections::HashMap, sync::Arc};

use futures::{Stream, StreamExt, stream};
use kube::{
    Api, Client,
    runtime::{
        WatchStreamExt,
        reflector::{self, ObjectRef, Store},
        watcher::{self, Event},
    },
};

use crate::{decisions::cache_form, kind::MirroredKind};

/// What a change of a ClusterMirror source asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SourceChange {
    /// The object at (namespace, name) changed, appeared or went.
    Object { namespace: String, name: String },
    /// A namespace's cache was listed (again): look at every ClusterMirror.
    Listed,
}

#[derive(Clone)]
pub struct ClusterSources<K: MirroredKind> {
    stores: Arc<HashMap<String, Store<K>>>,
}

impl<K: MirroredKind> ClusterSources<K> {
    /// Starts nothing yet: the caches of `namespaces`, and the stream of
    /// their changes, which runs their watches as it is read.
    pub fn new(
        client: &Client,
        namespaces: &[String],
    ) -> (
        ClusterSources<K>,
        impl Stream<Item = SourceChange> + Send + use<K>,
    ) {
        let mut stores = HashMap::new();
        let mut watches = Vec::new();
        for namespace in namespaces {
            let (store, writer) = reflector::store();
            let api = Api::<K>::namespaced(client.clone(), namespace);
            let events = watcher::watcher(api, watcher::Config::default())
                .default_backoff()
                .modify(cache_form::slim_cluster_source::<K>)
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
        };
        (sources, stream::select_all(watches))
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

    /// Waits until every namespace's cache has completed its first list.
    pub async fn wait_ready(&self) {
        for store in self.stores.values() {
            let _ = store.wait_until_ready().await;
        }
    }
}

fn changed<K: MirroredKind>(event: &Event<K>) -> Option<SourceChange> {
    match event {
        Event::Apply(object) | Event::Delete(object) => Some(SourceChange::Object {
            namespace: object.meta().namespace.clone().unwrap_or_default(),
            name: object.meta().name.clone().unwrap_or_default(),
        }),
        Event::InitDone => Some(SourceChange::Listed),
        Event::Init | Event::InitApply(_) => None,
    }
}
