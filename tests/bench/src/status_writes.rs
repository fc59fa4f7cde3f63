//! How often a ClusterMirror's status is written: a watch of the one
//! object notes every new resourceVersion, and whether its status changed
//! with it, at the instant the event arrived.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::bail;
use configmap_mirror::api::{ClusterMirror, ClusterMirrorStatus};
use futures::StreamExt;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, ResourceExt};
use serde::Serialize;
use tokio::task::JoinHandle;

const POLL: Duration = Duration::from_millis(50);
const ONE_SECOND: Duration = Duration::from_secs(1);

/// The status writes of one stretch of a run.
#[derive(Clone, Debug, Default, Serialize)]
pub struct StatusWrites {
    /// New resourceVersions of the ClusterMirror (its spec does not change,
    /// so these are the controller's writes).
    pub writes: usize,
    /// Those of them that changed the status.
    pub status_changes: usize,
    /// From the stretch's start to its last write (at least one second).
    pub seconds: f64,
    /// `status_changes` over `seconds`.
    pub per_second: f64,
    /// The most status changes within any one second.
    pub max_in_one_second: usize,
}

/// One new resourceVersion.
#[derive(Clone, Copy, Debug)]
struct Write {
    at: Instant,
    status_changed: bool,
}

#[derive(Default)]
struct Seen {
    resource_version: Option<String>,
    status: Option<ClusterMirrorStatus>,
    writes: Vec<Write>,
    /// Whether the first version, the object as created or as first
    /// listed, was seen: it is no write of the controller's.
    first: bool,
}

impl Seen {
    fn apply(&mut self, object: ClusterMirror, at: Instant) {
        let version = object.resource_version();
        if version.is_none() || version == self.resource_version {
            return;
        }
        self.resource_version = version;
        let status_changed = object.status != self.status;
        self.status = object.status;
        if !self.first {
            self.first = true;
            return;
        }
        self.writes.push(Write { at, status_changed });
    }
}

/// Watches the ClusterMirror `name`; stops when dropped.
pub struct StatusWatch {
    seen: Arc<Mutex<Seen>>,
    task: JoinHandle<()>,
}

impl Drop for StatusWatch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl StatusWatch {
    /// Starts watching before the ClusterMirror exists, so that its
    /// creation is the first version seen.
    pub async fn start(api: Api<ClusterMirror>, name: &str) -> anyhow::Result<StatusWatch> {
        let seen = Arc::new(Mutex::new(Seen::default()));
        let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
        let (listed_tx, listed) = tokio::sync::oneshot::channel();
        let task = tokio::spawn({
            let seen = seen.clone();
            async move {
                let events = watcher(api, config).default_backoff();
                let mut events = std::pin::pin!(events);
                let mut listed_tx = Some(listed_tx);
                while let Some(event) = events.next().await {
                    let at = Instant::now();
                    match event {
                        Ok(watcher::Event::Apply(o) | watcher::Event::InitApply(o)) => {
                            lock(&seen).apply(o, at);
                        }
                        Ok(watcher::Event::InitDone) => {
                            if let Some(tx) = listed_tx.take() {
                                let _ = tx.send(());
                            }
                        }
                        Ok(_) => {}
                        Err(error) => eprintln!("bench: status watch failed, retrying: {error}"),
                    }
                }
            }
        });
        let watch = StatusWatch { seen, task };
        tokio::time::timeout(Duration::from_secs(60), listed)
            .await
            .map_err(|_| anyhow::anyhow!("the status watch listed nothing within 60 s"))??;
        Ok(watch)
    }

    /// The status as last seen.
    pub fn last(&self) -> Option<ClusterMirrorStatus> {
        lock(&self.seen).status.clone()
    }

    /// Waits until the status satisfies `done` and nothing has been
    /// written for `quiet`.
    pub async fn wait_settled(
        &self,
        patience: Duration,
        quiet: Duration,
        done: impl Fn(&ClusterMirrorStatus) -> bool,
    ) -> anyhow::Result<()> {
        let deadline = Instant::now() + patience;
        loop {
            {
                let seen = lock(&self.seen);
                let last_write = seen.writes.last().map(|w| w.at);
                let is_done = seen.status.as_ref().is_some_and(&done);
                if is_done && last_write.is_none_or(|at| at.elapsed() >= quiet) {
                    return Ok(());
                }
            }
            if self.task.is_finished() {
                bail!("the status watch ended");
            }
            if Instant::now() >= deadline {
                bail!(
                    "timed out after {patience:?}; last status: {:?}",
                    self.last()
                );
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// The writes seen from `started` on.
    pub fn writes_since(&self, started: Instant) -> StatusWrites {
        let seen = lock(&self.seen);
        let writes: Vec<Write> = seen
            .writes
            .iter()
            .copied()
            .filter(|w| w.at >= started)
            .collect();
        count(started, &writes)
    }
}

fn count(started: Instant, writes: &[Write]) -> StatusWrites {
    let changes: Vec<Instant> = writes
        .iter()
        .filter(|w| w.status_changed)
        .map(|w| w.at)
        .collect();
    let end = writes.last().map_or(started, |w| w.at);
    let seconds = end.saturating_duration_since(started).max(ONE_SECOND);
    StatusWrites {
        writes: writes.len(),
        status_changes: changes.len(),
        seconds: seconds.as_secs_f64(),
        per_second: changes.len() as f64 / seconds.as_secs_f64(),
        max_in_one_second: max_within(&changes, ONE_SECOND),
    }
}

/// The most instants of `times` (in order) within any `window`.
fn max_within(times: &[Instant], window: Duration) -> usize {
    let mut first = 0;
    let mut most = 0;
    for (last, at) in times.iter().enumerate() {
        while at.saturating_duration_since(times[first]) >= window {
            first += 1;
        }
        most = most.max(last + 1 - first);
    }
    most
}

fn lock(seen: &Mutex<Seen>) -> std::sync::MutexGuard<'_, Seen> {
    seen.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(t0: Instant, ms: u64) -> Instant {
        t0 + Duration::from_millis(ms)
    }

    #[test]
    fn the_busiest_second_is_found_wherever_it_starts() {
        let t0 = Instant::now();
        let times: Vec<Instant> = [0, 900, 1500, 1600, 1700, 2400, 4000]
            .into_iter()
            .map(|ms| at(t0, ms))
            .collect();
        // 1500, 1600, 1700 and 2400 lie within 900 ms of each other.
        assert_eq!(max_within(&times, ONE_SECOND), 4);
        assert_eq!(max_within(&times[..2], ONE_SECOND), 2);
        assert_eq!(max_within(&[], ONE_SECOND), 0);
    }

    fn object(version: &str, synced: i32) -> ClusterMirror {
        let mut cm = ClusterMirror::new(
            "x",
            serde_json::from_value(serde_json::json!({
                "source": {"kind": "ConfigMap", "namespace": "a", "name": "b"},
                "target": {"namespaceSelector": {}},
            }))
            .unwrap(),
        );
        cm.metadata.resource_version = Some(version.to_owned());
        cm.status = (synced > 0).then(|| ClusterMirrorStatus {
            synced,
            ..ClusterMirrorStatus::default()
        });
        cm
    }

    #[test]
    fn the_creation_and_repeated_versions_are_no_writes() {
        let t0 = Instant::now();
        let mut seen = Seen::default();
        seen.apply(object("1", 0), at(t0, 0));
        seen.apply(object("1", 0), at(t0, 10));
        seen.apply(object("2", 5), at(t0, 200));
        seen.apply(object("3", 5), at(t0, 400));
        seen.apply(object("4", 9), at(t0, 2500));
        let counted = count(t0, &seen.writes);
        assert_eq!((counted.writes, counted.status_changes), (3, 2));
        assert_eq!(counted.max_in_one_second, 1);
        assert!((counted.seconds - 2.5).abs() < 1e-9);
        assert!((counted.per_second - 0.8).abs() < 1e-9);
    }
}
