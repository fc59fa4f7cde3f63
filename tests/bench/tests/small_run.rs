//! The benchmark itself is code that can rot: run its small mode once and
//! check it completes, and that the one asserted figure holds; run the
//! ClusterMirror and hostile-tenant phases alone, small, and check their
//! counts. Timings are not asserted; they depend on the machine.

use std::path::PathBuf;

use mirror_bench::Params;
use mirror_bench::only::{Figures, OnlyParams, Phase};
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

/// The ClusterMirror phase alone at 20 namespaces: every copy is there and
/// current, its status says so, and the counts of status writes and heals
/// agree with each other. No timing is asserted.
#[tokio::test(flavor = "multi_thread")]
async fn the_cluster_mirror_phase_runs_alone_and_its_counts_agree() {
    let controller = controller_binary();
    let params = OnlyParams::small(Phase::ClusterMirror);
    let (namespaces, heals) = (params.namespaces, params.sweep.copy_heal_samples);
    let results = mirror_bench::only::run(params, &controller)
        .await
        .unwrap_or_else(|e| panic!("the ClusterMirror phase failed: {e:#}"));
    println!("{}", results.table());
    let Figures::ClusterMirror(c) = &results.figures else {
        panic!("the ClusterMirror phase gave {:?}", results.figures);
    };
    assert_eq!(c.namespaces, 20);
    assert_eq!(c.copies_present, namespaces);
    assert_eq!(c.label.namespaces, namespaces);
    let all = i32::try_from(namespaces).unwrap();
    assert_eq!((c.selected, c.synced, c.failed), (all, all, 0));
    for writes in [&c.converge_status_writes, &c.update_status_writes] {
        assert!(writes.status_changes <= writes.writes, "{writes:?}");
        assert!(
            writes.max_in_one_second <= writes.status_changes,
            "{writes:?}"
        );
        let per_second = writes.status_changes as f64 / writes.seconds;
        assert!((writes.per_second - per_second).abs() < 1e-9, "{writes:?}");
    }
    // The status went from nothing to every copy synced: it was written.
    assert!(c.converge_status_writes.status_changes >= 1);
    assert_eq!(
        c.heal.latency.as_ref().map(|l| l.samples),
        Some(heals.min(namespaces)),
        "every deleted copy came back"
    );
    assert!(c.floor.seconds > 0.0 && c.converge_ratio_to_floor > 0.0);
}

/// The hostile-tenant phase alone, two of its attacks at the small size
/// (attack 4 restarts the controller through the phase's supervisor): each
/// attack is watched, the quiet heals are all taken, and every goal is
/// judged. Whether a goal is met is not asserted: that is the controller's
/// figure, not the bench's.
#[tokio::test(flavor = "multi_thread")]
async fn the_hostile_tenant_phase_runs_alone_and_watches_every_attack() {
    let controller = controller_binary();
    let mut params = OnlyParams::small(Phase::HostileTenant);
    params.hostile.attacks = vec![3, 4];
    let quiet = params.hostile.quiet_samples;
    let results = mirror_bench::only::run(params, &controller)
        .await
        .unwrap_or_else(|e| panic!("the hostile-tenant phase failed: {e:#}"));
    println!("{}", results.table());
    let Figures::HostileTenant(h) = &results.figures else {
        panic!("the hostile-tenant phase gave {:?}", results.figures);
    };
    let numbers: Vec<u8> = h.attacks.iter().map(|a| a.number).collect();
    assert_eq!(numbers, [3, 4]);
    assert_eq!(h.quiet_heal.samples, quiet);
    for attack in &h.attacks {
        let w = &attack.window;
        assert!(
            !w.healthz_ms.is_empty(),
            "attack {}: no /healthz answer timed",
            attack.number
        );
        assert!(
            w.peak_bytes > 0 && w.reconciles > 0.0,
            "attack {}: {w:?}",
            attack.number
        );
    }
    assert!(
        h.attacks[1].outcome.copies_seconds.is_some(),
        "attack 4's companions were not written"
    );
    assert!(
        h.starts >= 2,
        "attack 4 restarts the controller: {} starts",
        h.starts
    );
    assert_eq!(h.goals.len(), 4);
    assert_eq!(
        h.memory_limit_bytes,
        mirror_bench::hostile::chart_memory_limit().unwrap()
    );
}
