//! State that a watch on ConfigMaps keeps current, and waits on it.
//!
//! A task hands every event to the state, under its lock, with the instant
//! the event arrived. That instant is taken before the lock, so time spent
//! waiting for a waiter to let go never counts as the controller's. Waits
//! look at the state only once the first complete list is in, so nothing
//! that was already there when the watch started can be missed.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use anyhow::bail;
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::runtime::{WatchStreamExt, watcher};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// How long the first complete list may take.
const LIST_PATIENCE: Duration = Duration::from_secs(60);

/// What a watch's events do to a state.
pub trait Apply: Send + 'static {
    fn apply(&mut self, event: watcher::Event<ConfigMap>, at: Instant);
}

/// A state kept current by its own watch; the watch stops when this is
/// dropped.
pub struct Watched<S> {
    what: &'static str,
    state: Arc<Mutex<S>>,
    /// How many events were applied since the first complete list; 0 until
    /// it is in.
    generation: watch::Receiver<u64>,
    task: JoinHandle<()>,
}

impl<S> Drop for Watched<S> {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl<S: Apply> Watched<S> {
    /// Starts the watch `what` from `initial` and waits for its first
    /// complete list.
    pub async fn start(
        what: &'static str,
        api: Api<ConfigMap>,
        config: watcher::Config,
        initial: S,
    ) -> anyhow::Result<Watched<S>> {
        let state = Arc::new(Mutex::new(initial));
        let (tx, generation) = watch::channel(0u64);
        let events = watcher(api, config).default_backoff();
        let task = tokio::spawn({
            let state = state.clone();
            async move {
                let mut events = std::pin::pin!(events);
                let mut listed = false;
                while let Some(event) = events.next().await {
                    let at = Instant::now();
                    match event {
                        Ok(event) => {
                            listed |= matches!(event, watcher::Event::InitDone);
                            lock(&state).apply(event, at);
                        }
                        Err(error) => eprintln!("bench: {what} failed, retrying: {error}"),
                    }
                    if listed {
                        tx.send_modify(|generation| *generation += 1);
                    }
                }
            }
        });
        let watched = Watched {
            what,
            state,
            generation,
            task,
        };
        watched
            .wait_until("its first complete list", LIST_PATIENCE, |_| Some(()))
            .await?;
        Ok(watched)
    }
}

impl<S> Watched<S> {
    pub fn state(&self) -> MutexGuard<'_, S> {
        lock(&self.state)
    }

    /// Waits until `ready` returns a value for the state, for at most
    /// `timeout`; the error names `awaited`.
    pub async fn wait_until<T>(
        &self,
        awaited: &str,
        timeout: Duration,
        mut ready: impl FnMut(&S) -> Option<T>,
    ) -> anyhow::Result<T> {
        let deadline = tokio::time::Instant::now() + timeout;
        let mut generation = self.generation.clone();
        loop {
            if *generation.borrow_and_update() > 0
                && let Some(value) = ready(&self.state())
            {
                return Ok(value);
            }
            if self.task.is_finished() {
                bail!("the {} ended while waiting for {awaited}", self.what);
            }
            if tokio::time::timeout_at(deadline, generation.changed())
                .await
                .is_err()
            {
                bail!("timed out after {timeout:?} waiting for {awaited}");
            }
        }
    }
}

fn lock<S>(state: &Mutex<S>) -> MutexGuard<'_, S> {
    state.lock().unwrap_or_else(PoisonError::into_inner)
}
