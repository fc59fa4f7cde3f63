//! configmap-mirror keeps, for every ConfigMap labeled
//! `workshop.io/managed=true`, an exact companion copy `<name>-synced` in the
//! same namespace, and heals it when it drifts.
//!
//! A source may also ask to be mirrored into other namespaces that consent
//! ([`targets`]).
//!
//! Reading order for newcomers: [`contract`] (the labels, annotations and
//! names users see), [`desired`] (what a source's copies should be),
//! [`ownership`] (whose an existing object is), [`plan`] (what to write),
//! [`sync`] and [`prune`] (the two reconcile loops), [`caches`] (what they
//! read, in the forms of [`cache_form`]), [`wakeups`] (what wakes them),
//! [`watches`] (what fills the caches and sends the wakeups), then [`app`]
//! (how it all runs).
#![forbid(unsafe_code)]
// This guide points into modules private to the crate: it is meant to be
// read with `cargo doc --document-private-items`.
#![allow(rustdoc::private_intra_doc_links)]
#![deny(clippy::unwrap_used, clippy::expect_used)]
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

pub(crate) mod api_client;
pub(crate) mod api_probe;
pub mod app;
pub mod backoff;
pub(crate) mod cache_form;
pub(crate) mod caches;
pub mod config;
pub mod contest;
pub(crate) mod context;
pub mod contract;
pub(crate) mod controller;
pub(crate) mod desired;
pub(crate) mod duration;
pub(crate) mod error;
pub(crate) mod health;
pub(crate) mod http;
pub(crate) mod kind;
pub(crate) mod leader;
pub(crate) mod metrics;
pub(crate) mod mirror_index;
pub(crate) mod names;
pub(crate) mod ownership;
pub(crate) mod plan;
pub(crate) mod prune;
pub(crate) mod ratelimit;
pub(crate) mod report;
pub(crate) mod resync;
pub(crate) mod selector;
pub(crate) mod shutdown;
pub(crate) mod sync;
pub(crate) mod targets;
pub mod telemetry;
#[cfg(test)]
pub(crate) mod test_fixtures;
pub(crate) mod wakeups;
pub(crate) mod watch_stream;
pub(crate) mod watches;
pub(crate) mod write;
