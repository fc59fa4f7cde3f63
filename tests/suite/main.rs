//! The integration tests that need no control plane of their own, one
//! module per topic, in one binary: it links kube and the harness once, not
//! once per topic, and starts the shared control plane once.

// Shared with the test binaries that start control planes of their own;
// the topics name it `crate::common`.
use test_support as common;
use test_support::for_each_kind;

mod admission_policy;
mod allowlist;
mod bad_input;
mod chart;
mod cluster_mirror;
mod cluster_mirror_api;
mod cluster_mirror_chart;
mod consent;
mod control_plane;
mod deploy;
mod digest_key;
mod explain;
mod flags;
mod fresh_reads;
mod grants;
mod healing;
mod health;
mod hostile_tenant;
mod idempotency;
mod immutable;
mod leader_election;
mod metrics;
mod mirror;
mod mirror_name;
mod mirroring;
mod monitoring;
mod not_ours;
mod refused;
mod secrets;
mod shaped_copies;
mod source_lifecycle;
mod stale_cache;
