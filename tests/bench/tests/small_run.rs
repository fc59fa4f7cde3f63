//! The benchmark itself is code that can rot: run its small mode once and
//! check it completes, and that the one asserted figure holds. Timings are
//! not asserted; they depend on the machine.

use std::path::PathBuf;

use mirror_bench::Params;
use mirror_bench::params::workspace_root;

/// The release build if there is one (what the figures are about), else
/// the debug build a plain `cargo test` leaves behind.
fn controller_binary() -> PathBuf {
    let candidates = [
        "target/release/configmap-mirror",
        "target/debug/configmap-mirror",
    ]
    .map(|path| workspace_root().join(path));
    candidates
        .iter()
        .find(|path| path.is_file())
        .cloned()
        .unwrap_or_else(|| {
            panic!(
                "no controller binary at {} or {}: run `cargo build --release --locked` \
                 (or `cargo build`) first",
                candidates[0].display(),
                candidates[1].display()
            )
        })
}

#[tokio::test(flavor = "multi_thread")]
async fn the_small_benchmark_completes_with_no_steady_state_writes() {
    let controller = controller_binary();
    let results = mirror_bench::run(Params::small(), &controller)
        .await
        .unwrap_or_else(|e| panic!("the small benchmark failed: {e:#}"));
    println!("{}", results.table());
    assert_eq!(results.steady.companion_writes_observed, 0);
    assert_eq!(results.steady.companion_writes_during_unmanaged, 0);
    assert_eq!(results.heal.samples, Params::small().samples);
    assert_eq!(results.update.samples, Params::small().samples);
    assert_eq!(results.secrets.sources, Params::small().sources);
    assert_eq!(results.secrets.writes_during_unmanaged, 0.0);
    assert!(results.passed(), "{}", results.table());
}
