//! The namespace watch every kind shares, and with it the MirrorGrants':
//! together, what each kind's consent reads of a namespace.

use super::*;

/// An event of the namespace watch, or of the grants'.
enum Input {
    Namespace(Result<Event<NamespaceMeta>, watcher::Error>),
    Grant(Result<Event<DynamicObject>, watcher::Error>),
}

/// The namespace watch every kind shares: one cache, and the kinds that
/// follow it. A kind may join while the watch runs (one whose start waits
/// on something, such as its digest key): its own first lists are
/// compared in full, so it misses nothing by joining late.
#[derive(Clone)]
pub struct Namespaces {
    pub(super) store: Option<Store<NamespaceMeta>>,
    /// The MirrorGrants, watched with the namespaces: a change of a
    /// namespace's grants is delivered as an event of that namespace.
    pub(super) grants: GrantIndex,
    listeners: Arc<Mutex<Vec<Box<dyn NamespaceListener>>>>,
    // `Store::wait_until_ready` wakes only the most recent of several
    // concurrent waiters, and every kind waits for this cache.
    pub(super) listed: Arc<watch::Sender<bool>>,
}

impl Namespaces {
    /// Starts nothing yet: returns the handle the kinds join, and the
    /// future that runs the watch until it ends (never, when one namespace
    /// is watched: there is no namespace cache then).
    pub fn new(
        config: &kube::Config,
        settings: &WatchSettings,
        health: Arc<Health>,
        warnings: GrantWarnings,
    ) -> anyhow::Result<(Namespaces, impl Future<Output = ()> + Send + use<>)> {
        let mut namespaces = Namespaces {
            store: None,
            grants: GrantIndex::default(),
            listeners: Arc::default(),
            listed: Arc::new(watch::Sender::new(false)),
        };
        let events = match settings.namespace {
            Some(_) => None,
            None => {
                let (store, writer) = reflector::store();
                let api = Api::<NamespaceMeta>::all(client_for(config, &health, NAMESPACES)?);
                let events = watch_stream::events(
                    api,
                    watcher::Config::default(),
                    settings.initial_list,
                    NAMESPACES,
                    health.clone(),
                )
                .modify(|ns: &mut NamespaceMeta| consent::slim_namespace(&mut ns.metadata))
                .reflect(writer);
                namespaces.store = Some(store);
                let grant_client = client_for(config, &health, grants::GRANTS)?;
                let grant_events = grants::events(grant_client.clone());
                Some((events, grant_events, grant_client))
            }
        };
        let drive = {
            let namespaces = namespaces.clone();
            async move {
                match events {
                    Some((events, grant_events, grant_client)) => {
                        let grant_watch =
                            grants::GrantWatch::new(grant_client, health.clone(), warnings);
                        namespaces
                            .drive(events, grant_events, grant_watch, &health)
                            .await;
                    }
                    None => std::future::pending().await,
                }
            }
        };
        Ok((namespaces, drive))
    }

    /// Runs until the watches end: each namespace event, and each change
    /// of a namespace's grants, goes to every kind's follower, one at a
    /// time.
    async fn drive(
        &self,
        events: impl Stream<Item = Result<Event<NamespaceMeta>, watcher::Error>>,
        grant_events: impl Stream<Item = Result<Event<DynamicObject>, watcher::Error>>,
        mut grant_watch: grants::GrantWatch,
        health: &Health,
    ) {
        let forward = async {
            let inputs = futures::stream::select(
                events.map(Input::Namespace),
                grant_events.map(Input::Grant),
            );
            let mut inputs = std::pin::pin!(inputs);
            while let Some(input) = inputs.next().await {
                match input {
                    Input::Namespace(event) => {
                        if let Some(event) = forward::observed(NAMESPACES, event, health) {
                            self.deliver(&event).await;
                        }
                    }
                    Input::Grant(event) => {
                        let change = grant_watch.follow(event, &self.grants).await;
                        self.grants_changed(change).await;
                    }
                }
            }
        };
        let announce = async {
            if let Some(store) = &self.store {
                synced(NAMESPACES, store, health).await;
            }
            self.listed.send_replace(true);
        };
        futures::join!(forward, announce);
    }

    /// Delivers `event` to every kind's follower. The listeners are taken
    /// out for the event, so that a kind can join meanwhile.
    async fn deliver(&self, event: &Event<NamespaceMeta>) {
        let mut listeners = std::mem::take(&mut *self.lock_listeners());
        for listener in &mut listeners {
            listener.deliver(event).await;
        }
        self.put_back(listeners);
    }

    /// A change of some namespaces' grants is a change of their consent: an
    /// event of each (as cached), for every kind. Grants that became known
    /// may change any namespace's consent: every kind compares everything.
    async fn grants_changed(&self, change: GrantChange) {
        let Some(store) = &self.store else {
            return;
        };
        match change {
            GrantChange::Nothing => {}
            GrantChange::Namespaces(names) => {
                for name in names {
                    if let Some(namespace) = store.get(&ObjectRef::new(&name)) {
                        self.deliver(&Event::Apply((*namespace).clone())).await;
                    }
                }
            }
            GrantChange::Everything => {
                let mut listeners = std::mem::take(&mut *self.lock_listeners());
                for listener in &mut listeners {
                    listener.consent_changed(store).await;
                }
                self.put_back(listeners);
            }
        }
    }

    fn put_back(&self, mut listeners: Vec<Box<dyn NamespaceListener>>) {
        let mut joined = self.lock_listeners();
        listeners.append(&mut joined);
        *joined = listeners;
    }

    /// When namespaces are watched, kind `K`'s caches and wakeups follow
    /// them, under the kind's `consent`.
    pub(super) fn follow_for<K: MirroredKind>(
        &self,
        caches: &Caches<K>,
        consent: Consent,
        forwarder: &Forwarder<K>,
    ) {
        if self.store.is_some() {
            self.join(Box::new(KindNamespaces {
                follower: NamespaceFollower {
                    caches: caches.clone(),
                    consent,
                    seen: HashMap::new(),
                },
                forwarder: forwarder.clone(),
            }));
        }
    }

    /// Under the lock, so that every event the listener has not seen in
    /// the cache when it joins is delivered to it.
    fn join(&self, mut listener: Box<dyn NamespaceListener>) {
        let mut listeners = self.lock_listeners();
        if let Some(store) = &self.store {
            listener.joined(store);
        }
        listeners.push(listener);
    }

    fn lock_listeners(&self) -> MutexGuard<'_, Vec<Box<dyn NamespaceListener>>> {
        // A panic while the list was held left it whole: each step either
        // pushed a listener or did not.
        self.listeners
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
