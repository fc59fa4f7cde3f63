//! Operations: the command line and flags, logs, health and readiness,
//! leader election's protocol (its Lease I/O is `cluster::lease`),
//! metrics and the HTTP listener that serves them, shutdown, and the
//! `probe` subcommand.

pub mod cli;
pub mod config;
pub(crate) mod duration;
pub(crate) mod health;
pub(crate) mod http;
pub(crate) mod leader;
pub(crate) mod metrics;
pub mod probe;
pub(crate) mod shutdown;
pub mod telemetry;
