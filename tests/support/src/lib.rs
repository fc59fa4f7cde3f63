//! What the integration tests share: a scene per test (a fresh namespace on
//! a control plane), the world of a test across namespaces, the controller
//! binary as a child process, and the objects and manifests the tests
//! create. A crate of its own, as cargo's own testsuite keeps its support,
//! so each test binary links it instead of compiling a copy.
//!
//! Where a new test goes, and a helper with it: the section "Where a new
//! test goes" of docs/contributing/development.md.

mod command;
mod controller_process;
mod fixtures;
mod helm;
mod kinds;
mod kstatus;
mod manifests;
mod scene;
mod waits;
mod world;

use std::{
    path::{Path, PathBuf},
    time::Duration,
};

pub use command::{Ran, run, run_ok};
pub use controller_process::{ControllerProcess, sum_metric};
pub use fixtures::{SOURCE_LABEL, mk_source, mk_unmanaged, with_binary};
pub use helm::{find_helm, helm, helm_binary, helm_on, rendered, template};
pub use kinds::{KEY_SECRET, Objects, TestKind, is_exact_companion, with_json};
pub use kstatus::kstatus;
pub use manifests::{
    delete_policy, kubectl_apply, kubectl_delete, policy_enforced, refusal_enforced,
    refusing_configmap, refusing_policy, replica_role, role_for, secrets_role, service_account,
};
pub use scene::{LEASE, LEASE_TIMINGS, Scene};
pub use waits::{holding, key_names};
pub use world::{Apart, Pod, Runs, World, to};

/// Long enough for a loaded 2-core machine; the benchmark measures speed.
pub const PATIENCE: Duration = Duration::from_secs(30);

/// The repository's root: where the chart, `deploy/` and `hack/` are.
pub fn repo() -> PathBuf {
    let support = Path::new(env!("CARGO_MANIFEST_DIR"));
    support
        .ancestors()
        .nth(2)
        .expect("tests/support is two folders below the repository's root")
        .to_path_buf()
}

/// The target directory's profile folder of the test running
/// (`target/debug`): a test executable is in its `deps`, as cargo lays
/// them out.
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test executable's path");
    exe.parent()
        .and_then(Path::parent)
        .expect("the test executable is in <target>/<profile>/deps")
        .to_path_buf()
}

/// The controller cargo built for these tests (an integration test of the
/// package builds its binary first).
pub fn controller_binary() -> PathBuf {
    let binary = profile_dir().join("configmap-mirror");
    assert!(
        binary.is_file(),
        "no controller at {}: run the tests with `cargo test`, which builds it",
        binary.display()
    );
    binary
}

/// Scratch space for the tests, under the target directory (what cargo
/// calls `CARGO_TARGET_TMPDIR`).
pub fn target_tmp() -> PathBuf {
    profile_dir()
        .parent()
        .map_or_else(|| profile_dir().join("tmp"), |target| target.join("tmp"))
}
