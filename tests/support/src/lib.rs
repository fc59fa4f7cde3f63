//! What the integration tests share: a scene per test (a fresh namespace on
//! a control plane), the controller binary as a child process, and the
//! objects and manifests the tests create.
// Each test binary uses only part of this.
#![allow(dead_code)]

mod controller_process;
mod fixtures;
mod helm;
mod kinds;
mod manifests;
mod scene;

use std::time::Duration;

#[allow(unused_imports)]
pub use controller_process::{ControllerProcess, sum_metric};
#[allow(unused_imports)]
pub use fixtures::{SOURCE_LABEL, mk_source, mk_unmanaged, with_binary};
#[allow(unused_imports)]
pub use helm::{find_helm, helm, helm_binary, helm_on};
#[allow(unused_imports)]
pub use kinds::{Objects, TestKind, with_json};
#[allow(unused_imports)]
pub use manifests::{
    delete_policy, kubectl_apply, kubectl_delete, policy_enforced, refusing_policy, replica_role,
    role_for, secrets_role, service_account,
};
#[allow(unused_imports)]
pub use scene::{LEASE, LEASE_TIMINGS, Scene, is_exact_companion};

/// Long enough for a loaded 2-core machine; the benchmark measures speed.
pub const PATIENCE: Duration = Duration::from_secs(30);
