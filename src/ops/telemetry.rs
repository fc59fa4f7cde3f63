//! Log setup: text for people at a terminal, JSON for log pipelines.

use std::io::IsTerminal;

use tracing_subscriber::{EnvFilter, fmt};

use crate::ops::config::LogFormat;

/// This crate's progress at info.
const DEFAULT_LEVEL: &str = "info";

/// What the libraries beneath may log unless `RUST_LOG` says otherwise:
/// only their warnings, and of kube's client and runtime only errors.
/// kube_client's own warnings print a whole response body it could not
/// parse (a list of Secrets, behind a faulty proxy), and kube_runtime's
/// watcher warnings repeat on every retry (the watch failures are logged
/// here once per streak instead).
const LIBRARY_FILTER: &str = "kube=warn,kube_client=error,kube_runtime=error,tower=warn,hyper=warn";

/// Level from `RUST_LOG` when set, else [`DEFAULT_LEVEL`] and
/// [`LIBRARY_FILTER`].
fn filter() -> EnvFilter {
    EnvFilter::try_from_default_env().unwrap_or_else(|_| default_filter())
}

fn default_filter() -> EnvFilter {
    EnvFilter::new(format!("{DEFAULT_LEVEL},{LIBRARY_FILTER}"))
}

pub fn init(format: LogFormat) {
    let filter = filter();
    let terminal = std::io::stderr().is_terminal();
    let json = match format {
        LogFormat::Json => true,
        LogFormat::Text => false,
        LogFormat::Auto => !terminal,
    };
    let builder = fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(terminal);
    if json {
        builder
            .json()
            .with_current_span(true)
            .with_span_list(false)
            .init();
    } else {
        builder.with_target(false).init();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use tracing_subscriber::fmt::MakeWriter;

    use super::*;

    /// Everything a subscriber writes, kept for the test to read.
    #[derive(Clone, Default)]
    struct Written(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Written {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl<'a> MakeWriter<'a> for Written {
        type Writer = Written;
        fn make_writer(&'a self) -> Written {
            self.clone()
        }
    }

    #[test]
    fn by_default_kube_s_client_logs_only_its_errors() {
        let written = Written::default();
        let subscriber = fmt()
            .with_env_filter(default_filter())
            .with_writer(written.clone())
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            // As kube_client logs a body it could not parse.
            tracing::warn!(target: "kube_client::client", "body-of-a-response");
            tracing::info!(target: "kube_client::client", "client-info");
            tracing::warn!(target: "kube_runtime::watcher", "watcher-warning");
            tracing::error!(target: "kube_client::client::builder", "failed with status 500");
            tracing::warn!(target: "hyper_util::client", "hyper-warning");
            tracing::debug!(target: "hyper::proto", "hyper-debug");
            tracing::info!(target: "configmap_mirror::reconcile", "our progress");
        });
        let text = String::from_utf8(written.0.lock().unwrap().clone()).unwrap();
        for silent in [
            "body-of-a-response",
            "client-info",
            "watcher-warning",
            "hyper-debug",
        ] {
            assert!(!text.contains(silent), "{silent} was logged:\n{text}");
        }
        for logged in ["failed with status 500", "hyper-warning", "our progress"] {
            assert!(text.contains(logged), "{logged} was not logged:\n{text}");
        }
    }
}
