//! What the ClusterMirror loop's own work needs, of no kind: its queue,
//! retries, status writes, Events and metrics, beside the writers of each
//! kind's copies.

use std::sync::Arc;

use kube::Client;

use crate::{
    cluster::events::EventPublisher,
    decisions::install::Install,
    kind::MirroredKind,
    ops::leader::Leadership,
    ops::metrics::Metrics,
    ops::shutdown::Shutdown,
    reconcile::backoff::{Backoffs, RetryPolicy},
    reconcile::context::{Around, Context},
    reconcile::error::Error,
};

pub struct LoopContext {
    pub client: Client,
    pub install: Install,
    pub events: EventPublisher,
    pub metrics: Arc<Metrics>,
    pub backoffs: Arc<Backoffs>,
    pub retry_policy: RetryPolicy,
    pub leadership: Leadership,
    pub shutdown: Shutdown,
}

impl LoopContext {
    /// What a kind's context shares with every other kind's.
    pub fn of<K: MirroredKind>(ctx: &Context<K>) -> LoopContext {
        LoopContext {
            client: ctx.client.clone(),
            install: ctx.install.clone(),
            events: ctx.events.clone(),
            metrics: ctx.metrics.clone(),
            backoffs: ctx.backoffs.clone(),
            retry_policy: ctx.retry_policy,
            leadership: ctx.leadership.clone(),
            shutdown: ctx.shutdown.clone(),
        }
    }

    /// What every reconcile of the loop does around its work.
    pub fn around(&self) -> Around<'_> {
        Around {
            metrics: &self.metrics,
            backoffs: &self.backoffs,
            retry_policy: &self.retry_policy,
            leadership: &self.leadership,
        }
    }

    pub fn is_leading(&self) -> bool {
        self.leadership.is_leading()
    }

    /// Checked immediately before every write (see `Around::ensure_leading`).
    pub fn ensure_leading(&self) -> Result<(), Error> {
        self.around().ensure_leading()
    }
}
