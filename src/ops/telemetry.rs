//! Log setup: text for people at a terminal, JSON for log pipelines.

use std::io::IsTerminal;

use clap::ValueEnum;
use tracing_subscriber::{EnvFilter, fmt};

/// `--log-format`: JSON unless stderr is a terminal, or either always.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Auto,
    Text,
    Json,
}

/// This crate's progress at info.
const DEFAULT_LEVEL: &str = "info";

/// What the libraries beneath may log unless `RUST_LOG` says otherwise:
/// only their warnings, and of kube's client and runtime only errors.
/// kube_client's own warnings print a whole response body it could not
/// parse (a list of Secrets, behind a faulty proxy), and kube_runtime's
/// watcher warnings repeat on every retry (the watch failures are logged
/// here once per streak instead).
const LIBRARY_FILTER: &str = "kube=warn,kube_client=error,kube_runtime=error,tower=warn,hyper=warn";

fn default_filter() -> EnvFilter {
    EnvFilter::new(format!("{DEFAULT_LEVEL},{LIBRARY_FILTER}"))
}

/// The filter of `--log-level`: the default filter, then the level or
/// directives given. A later directive replaces an earlier one for the same
/// target, so a bare level sets the base level while the libraries keep
/// their own, and a directive naming a library overrides its default.
fn level_filter(level: &str) -> Result<EnvFilter, String> {
    EnvFilter::builder()
        .parse(format!("{DEFAULT_LEVEL},{LIBRARY_FILTER},{level}"))
        .map_err(|e| format!("{level:?} is not a log level nor a filter directive: {e}"))
}

/// `--log-level`: a level name, or directives (`target=level`, comma
/// separated). A lone word that is no level is refused rather than taken as
/// a target to trace, which is what a typo would otherwise mean.
pub fn parse_log_level(value: &str) -> Result<String, String> {
    let value = value.trim();
    let levels = ["off", "error", "warn", "info", "debug", "trace"];
    let directive = value.contains(['=', ',', '[']);
    if !directive && !levels.contains(&value.to_ascii_lowercase().as_str()) {
        return Err(format!(
            "{value:?} is not a log level (error, warn, info, debug, trace) nor a filter \
             directive (target=level,...)"
        ));
    }
    level_filter(value).map(|_| value.to_owned())
}

/// `RUST_LOG` when set, else `--log-level` over the defaults.
pub fn init(format: LogFormat, level: &str) {
    let filter = EnvFilter::try_from_default_env()
        .or_else(|_| level_filter(level))
        .unwrap_or_else(|_| default_filter());
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
    use tracing::Level;
    use tracing_subscriber::layer::SubscriberExt;

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

    /// Whether `level` logs an event of `target` at `event_level`.
    fn logs(level: &str, target_is_kube: bool, event_level: Level) -> bool {
        let subscriber = tracing_subscriber::registry().with(level_filter(level).unwrap());
        tracing::subscriber::with_default(subscriber, || {
            // The target and level of an `enabled!` must be constants.
            macro_rules! enabled_for {
                ($target:literal) => {
                    match event_level {
                        Level::DEBUG => tracing::enabled!(target: $target, Level::DEBUG),
                        Level::INFO => tracing::enabled!(target: $target, Level::INFO),
                        Level::WARN => tracing::enabled!(target: $target, Level::WARN),
                        _ => unreachable!("not asked"),
                    }
                };
            }
            match target_is_kube {
                false => enabled_for!("configmap_mirror::app"),
                true => enabled_for!("kube_client::client"),
            }
        })
    }

    #[test]
    fn the_level_sets_the_base_and_the_libraries_keep_their_defaults() {
        assert!(logs("info", false, Level::INFO));
        assert!(!logs("info", false, Level::DEBUG));
        assert!(!logs("info", true, Level::INFO));
        assert!(logs("debug", false, Level::DEBUG));
        assert!(!logs("debug", true, Level::INFO), "kube stays at warn");
        assert!(!logs("warn", false, Level::INFO));
        assert!(logs("warn", false, Level::WARN));
    }

    #[test]
    fn a_directive_naming_a_library_overrides_its_default() {
        assert!(logs("info,kube_client=debug", true, Level::DEBUG));
        assert!(!logs("info,kube_client=debug", false, Level::DEBUG));
        assert!(logs("configmap_mirror=debug", false, Level::DEBUG));
    }

    #[test]
    fn what_is_neither_a_level_nor_a_directive_is_refused() {
        for good in [
            "info",
            "DEBUG",
            "trace",
            "warn,configmap_mirror=debug",
            "kube_client=info",
        ] {
            assert!(parse_log_level(good).is_ok(), "{good}");
        }
        for bad in ["", "verbose", "infoo", "info,kube=loud", "=debug,"] {
            assert!(parse_log_level(bad).is_err(), "{bad:?}");
        }
    }
}
