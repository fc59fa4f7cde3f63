//! The Lease and the HTTP endpoints (/healthz, /readyz, /metrics) run on a
//! thread and a runtime of their own, with an API client of their own.
//!
//! The reconciles share the main runtime, one thread by default. However
//! much CPU one of them takes, it must not delay a renewal of the Lease
//! (a leader that cannot renew within its renew deadline stops, and every
//! replica would stop on the same source in turn) nor a probe's answer
//! (the kubelet restarts a pod whose /healthz does not answer). A client's
//! connections and its request queue are tasks of the runtime that built
//! it, so the Lease's client is built here too.

use std::{
    io,
    sync::Arc,
    thread,
    time::{Duration, Instant},
};

use anyhow::Context as _;
use tokio::{
    runtime::{Builder, Handle},
    sync::{oneshot, watch},
    task::JoinHandle,
};

use crate::{
    cluster::api_client,
    cluster::lease::{ElectionReport, Elector},
    ops::config::Config,
    ops::health::Health,
    ops::http,
    ops::leader::{self, LeaderError, Leadership, Term},
    ops::metrics::Metrics,
    ops::shutdown::Shutdown,
};

/// A current-thread runtime on a thread of its own, stopped when dropped
/// (whatever still runs on it is cancelled).
pub struct Lifeline {
    handle: Handle,
    stop: Option<oneshot::Sender<()>>,
}

impl Lifeline {
    pub fn start() -> io::Result<Lifeline> {
        let runtime = Builder::new_current_thread().enable_all().build()?;
        let handle = runtime.handle().clone();
        let (stop, stopped) = oneshot::channel::<()>();
        thread::Builder::new()
            .name("lease-and-probes".into())
            .spawn(move || {
                // Either a stop or the sender dropped ends it alike.
                let _ = runtime.block_on(stopped);
            })?;
        Ok(Lifeline {
            handle,
            stop: Some(stop),
        })
    }

    /// Where to spawn, or `enter` to build a client or a listener whose
    /// tasks must run here.
    pub fn handle(&self) -> &Handle {
        &self.handle
    }
}

impl Drop for Lifeline {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// The Lease held by an elector running on the lifeline.
pub struct Lease {
    held: JoinHandle<Option<LeaderError>>,
    release: Option<oneshot::Sender<()>>,
}

impl Lease {
    /// Competes for the Lease and holds it on the lifeline, publishing the
    /// term on `term`, until it is lost or released.
    pub fn hold(lifeline: &Lifeline, mut elector: Elector, term: watch::Sender<Term>) -> Lease {
        let (release, released) = oneshot::channel::<()>();
        let held = lifeline.handle().spawn(async move {
            tokio::select! {
                ended = elector.run(&term) => ended.err(),
                _ = released => {
                    elector.release().await;
                    None
                }
            }
        });
        Lease {
            held,
            release: Some(release),
        }
    }

    /// Completes when leadership is lost, with why.
    pub async fn lost(&mut self) -> anyhow::Error {
        match (&mut self.held).await {
            Ok(Some(lost)) => lost.into(),
            Ok(None) => anyhow::anyhow!("leader election ended without a reason"),
            Err(failed) => anyhow::anyhow!("leader election stopped: {failed}"),
        }
    }

    /// Clears the holder so a standby takes over without waiting for the
    /// Lease to expire.
    pub async fn release(mut self) {
        if let Some(release) = self.release.take() {
            let _ = release.send(());
        }
        let _ = self.held.await;
    }
}

/// The Lease held on the lifeline when leader election is on, the term it
/// publishes, and this replica's identity in it. Without an election the
/// term never changes, and its sender (returned) lives as long as the
/// controller does.
#[allow(clippy::type_complexity)]
pub(super) fn lead(
    lifeline: &Lifeline,
    kube_config: &kube::Config,
    config: &Config,
    health: &Arc<Health>,
    metrics: &Arc<Metrics>,
) -> anyhow::Result<(
    Option<Lease>,
    Leadership,
    Option<String>,
    Option<tokio::sync::watch::Sender<Term>>,
)> {
    let elector = match config.leader.enabled {
        true => Some(elector(
            lifeline,
            kube_config,
            config,
            election_report(health.clone(), metrics.clone()),
        )?),
        false => None,
    };
    let identity = elector.as_ref().map(|e| e.identity().to_owned());
    let (term_tx, leadership) = Leadership::new(elector.is_some());
    tokio::spawn(mirror_leadership(leadership.clone(), metrics.clone()));
    Ok(match elector {
        Some(elector) => {
            let lease = Lease::hold(lifeline, elector, term_tx);
            (Some(lease), leadership, identity, None)
        }
        None => (None, leadership, identity, Some(term_tx)),
    })
}

/// Serves /metrics, /healthz and /readyz on the lifeline until shutdown is
/// requested.
pub(super) fn serve_http(
    lifeline: &Lifeline,
    config: &Config,
    metrics: &Arc<Metrics>,
    health: &Arc<Health>,
    shutdown: &Shutdown,
) -> anyhow::Result<tokio::task::JoinHandle<std::io::Result<()>>> {
    let _on_lifeline = lifeline.handle().enter();
    let listener = http::bind(config.http_addr)
        .with_context(|| format!("cannot listen on {}", config.http_addr))?;
    tracing::info!(addr = %listener.local_addr()?, "serving /metrics, /healthz and /readyz");
    Ok(lifeline.handle().spawn(http::serve(
        listener,
        http::router(metrics.clone(), health.clone()),
        discard(shutdown.requested()),
    )))
}

/// Tells health, every second, that the main runtime runs: a runtime
/// wedged for good fails /healthz, which the lifeline answers.
pub(super) async fn beat(health: Arc<Health>) {
    let mut ticks = tokio::time::interval(Duration::from_secs(1));
    loop {
        ticks.tick().await;
        health.runtime_ran(Instant::now());
    }
}

/// Where a refused Lease shows: /readyz and a metric (the elector logs it).
fn election_report(health: Arc<Health>, metrics: Arc<Metrics>) -> ElectionReport {
    Box::new(move |refused| {
        health.election_refused(refused);
        metrics.set_election_refused(refused.is_some());
    })
}

/// The elector, its client built on the lifeline, where its requests run.
fn elector(
    lifeline: &Lifeline,
    kube_config: &kube::Config,
    config: &Config,
    report: ElectionReport,
) -> anyhow::Result<Elector> {
    let namespace = config
        .leader
        .namespace
        .clone()
        .or_else(|| std::env::var("POD_NAMESPACE").ok())
        .context("--leader-elect needs --leader-election-namespace (or POD_NAMESPACE)")?;
    let identity = config
        .leader
        .identity
        .clone()
        .unwrap_or_else(leader::default_identity);
    let client = {
        let _on_lifeline = lifeline.handle().enter();
        api_client::calls(kube_config, config.api_timeout)?
    };
    Ok(Elector::new(
        client,
        &namespace,
        identity,
        &config.leader,
        report,
    ))
}

async fn mirror_leadership(mut leadership: Leadership, metrics: Arc<Metrics>) {
    loop {
        metrics.set_leader(leadership.is_leading());
        if !leadership.changed().await {
            return;
        }
    }
}

/// A future of `()` from one that completes with a value.
async fn discard<T>(future: impl Future<Output = T>) {
    future.await;
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// The main runtime busy in a loop that never awaits, as a reconcile
    /// that takes the CPU: a task on the lifeline still runs to the end.
    #[test]
    fn a_task_on_the_lifeline_runs_while_the_main_runtime_is_busy() {
        let main = Builder::new_current_thread().enable_all().build().unwrap();
        let lifeline = Lifeline::start().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        main.block_on(async {
            lifeline.handle().spawn(async move {
                tokio::time::sleep(Duration::from_millis(10)).await;
                tx.send(()).unwrap();
            });
            // Busy, never yielding, until the lifeline's timer has fired; a
            // deadline turns a lifeline that never runs into a failure
            // rather than a hang.
            let give_up = std::time::Instant::now() + Duration::from_secs(60);
            let answered = loop {
                match rx.try_recv() {
                    Ok(()) => break Ok(()),
                    Err(std::sync::mpsc::TryRecvError::Empty)
                        if std::time::Instant::now() < give_up =>
                    {
                        std::hint::spin_loop()
                    }
                    Err(other) => break Err(other),
                }
            };
            assert_eq!(answered, Ok(()), "the lifeline's task never ran");
        });
    }
}
