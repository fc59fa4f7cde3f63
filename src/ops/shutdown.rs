//! SIGTERM and SIGINT: the first asks for an orderly stop, bounded by
//! `--shutdown-timeout`; a second one exits at once.

use std::time::Instant;

use tokio::{
    signal::unix::{SignalKind, signal},
    sync::watch,
};

/// Exit status after a second signal, as a shell reports a death by SIGINT.
const EXIT_ON_SECOND_SIGNAL: i32 = 130;

#[derive(Clone)]
pub struct Shutdown {
    requested: watch::Receiver<Option<Instant>>,
}

impl Shutdown {
    /// Listens for SIGTERM and SIGINT from now on.
    pub fn on_signals() -> std::io::Result<Shutdown> {
        let mut terminate = signal(SignalKind::terminate())?;
        let mut interrupt = signal(SignalKind::interrupt())?;
        let (tx, requested) = watch::channel(None);
        tokio::spawn(async move {
            let mut received = 0u32;
            loop {
                let name = tokio::select! {
                    Some(()) = terminate.recv() => "SIGTERM",
                    Some(()) = interrupt.recv() => "SIGINT",
                    else => return,
                };
                received += 1;
                if received == 1 {
                    tracing::info!(
                        signal = name,
                        "shutting down: finishing in-flight reconciles"
                    );
                    tx.send_replace(Some(Instant::now()));
                } else {
                    tracing::warn!(signal = name, "second signal: exiting at once");
                    std::process::exit(EXIT_ON_SECOND_SIGNAL);
                }
            }
        });
        Ok(Shutdown { requested })
    }

    /// Completes when a stop is asked for, with when it was.
    pub fn requested(&self) -> impl Future<Output = Instant> + Send + Sync + 'static {
        let mut requested = self.requested.clone();
        async move {
            let at = match requested.wait_for(Option::is_some).await {
                Ok(at) => *at,
                // The listener is gone only if the runtime is going away.
                Err(_) => None,
            };
            match at {
                Some(at) => at,
                None => std::future::pending().await,
            }
        }
    }

    /// When the stop was asked for, if it was.
    pub fn requested_at(&self) -> Option<Instant> {
        *self.requested.borrow()
    }
}
