//! configmap-mirror keeps, for every ConfigMap labeled
//! `workshop.io/managed=true`, an exact companion copy `<name>-synced` in the
//! same namespace, and heals it when it drifts.
//!
//! A source may also ask to be mirrored into other namespaces that consent
//! ([`decisions::targets`]).
//!
//! The folders are the layers:
//! - [`contract`]: the labels, annotations, names and Event reasons users
//!   and other tools see;
//! - [`api`]: the custom resources users write (`ClusterMirror`), from
//!   which the CRDs are generated; like the contract, no I/O;
//! - [`kind`]: what differs between the kinds of object mirrored (only
//!   their content), behind one trait;
//! - [`decisions`]: the pure decisions, with no I/O;
//! - [`reconcile`]: the two reconcile loops and their bookkeeping;
//! - [`cluster`]: the cluster I/O: the API clients, the watches and their
//!   caches, Events;
//! - [`ops`]: operations: flags, health, leader election, metrics, the HTTP
//!   listener, logs and shutdown;
//! - [`app`] wires them together;
//! - [`explain`] is the read-only `explain` subcommand: it reads the
//!   cluster as its caller and says why copies are or are not where their
//!   sources ask, with the decisions' own functions.
//!
//! Reading order for newcomers: [`contract`], [`decisions::desired`] (what
//! a source's copies should be), [`decisions::ownership`] (whose an
//! existing object is), [`decisions::plan`] (what to write),
//! [`reconcile::sync`] and [`reconcile::prune`] (the two reconcile loops),
//! [`cluster::caches`] (what they read, in the forms of
//! [`decisions::cache_form`]), [`decisions::wakeups`] (what wakes them),
//! [`cluster::watches`] (what fills the caches and sends the wakeups), then
//! [`app`] (how it all runs).
#![forbid(unsafe_code)]
// This guide points into modules private to the crate: it is meant to be
// read with `cargo doc --document-private-items`.
#![allow(rustdoc::private_intra_doc_links)]
#![deny(clippy::unwrap_used, clippy::expect_used)]
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

pub mod api;
pub mod app;
pub(crate) mod cluster;
pub mod contract;
pub(crate) mod decisions;
pub mod explain;
pub mod kind;
#[cfg(test)]
mod layering_tests;
pub mod ops;
pub mod reconcile;
#[cfg(test)]
pub(crate) mod test_fixtures;
