//! Log setup: text for people at a terminal, JSON for log pipelines.

use std::io::IsTerminal;

use tracing_subscriber::{EnvFilter, fmt};

use crate::ops::config::LogFormat;

/// Level from `RUST_LOG`, defaulting to this crate's progress at info and
/// only warnings from the libraries beneath it.
// kube_runtime's own watcher warnings repeat on every retry; the watch
// failures are logged here once per streak instead.
const DEFAULT_FILTER: &str = "info,kube=warn,kube_runtime=error,tower=warn,hyper=warn";

pub fn init(format: LogFormat) {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(DEFAULT_FILTER));
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
