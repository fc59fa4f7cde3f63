//! configmap-mirror keeps, for every ConfigMap labeled
//! `workshop.io/managed=true`, an exact companion copy `<name>-synced` in the
//! same namespace, and heals it when it drifts.
//!
//! A source may also ask to be mirrored into other namespaces that consent
//! ([`targets`]).
//!
//! Reading order for newcomers: [`contract`] (the labels, annotations and
//! names users see), [`desired`] (what a companion should be), [`ownership`]
//! (whose an existing object is), [`plan`] (what to write), [`sync`] and
//! [`prune`] (the two reconcile loops), [`caches`] (what they read),
//! [`wakeups`] (what wakes them), [`watches`] (what fills the caches and
//! sends the wakeups), then [`app`] (how it all runs).
#![forbid(unsafe_code)]
#![deny(clippy::unwrap_used, clippy::expect_used)]
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

pub mod api_client;
pub mod api_probe;
pub mod app;
pub mod backoff;
pub mod cache_form;
pub mod caches;
pub mod config;
pub mod context;
pub mod contract;
pub mod controller;
pub mod desired;
pub mod error;
pub mod health;
pub mod http;
pub mod leader;
pub mod metrics;
pub mod mirror_index;
pub mod ownership;
pub mod plan;
pub mod prune;
pub mod ratelimit;
pub mod report;
pub mod resync;
pub mod selector;
pub mod shutdown;
pub mod sync;
pub mod targets;
pub mod telemetry;
pub mod wakeups;
pub mod watch_stream;
pub mod watches;
pub mod write;
