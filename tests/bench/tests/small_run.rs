//! The benchmark itself is code that can rot: run its small mode once and
//! check it completes, and that the one asserted figure holds; run the
//! ClusterMirror phase alone, small, and check its counts. Timings are not
//! asserted; they depend on the machine.

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

/// The MirrorGrant phase alone at 20 namespaces: every grant is followed,
/// the source reaches every granting namespace, and every mirror goes with
/// its grant (the phase fails otherwise). No timing is asserted.
#[tokio::test(flavor = "multi_thread")]
async fn the_grants_phase_runs_alone_and_each_grant_takes_its_mirror_back() {
    let controller = controller_binary();
    let params = OnlyParams::small(Phase::Grants);
    let namespaces = params.namespaces;
    let results = mirror_bench::only::run(params, &controller)
        .await
        .unwrap_or_else(|e| panic!("the grants phase failed: {e:#}"));
    println!("{}", results.table());
    let Figures::Grants(g) = &results.figures else {
        panic!("the grants phase gave {:?}", results.figures);
    };
    assert_eq!(
        (g.namespaces, g.fan_out.namespaces),
        (namespaces, namespaces)
    );
    assert!(g.floor.seconds > 0.0 && g.withdraw_seconds > 0.0, "{g:?}");
}

/// The Mirror phase alone at 20 namespaces: one Mirror's copies reach every
/// consenting namespace and follow one update, and the Mirrors that mirror
/// nothing all report (the phase fails otherwise). No timing is asserted.
#[tokio::test(flavor = "multi_thread")]
async fn the_mirrors_phase_runs_alone_and_one_mirror_reaches_every_consenting_namespace() {
    let controller = controller_binary();
    let params = OnlyParams::small(Phase::Mirrors);
    let namespaces = params.namespaces;
    let results = mirror_bench::only::run(params, &controller)
        .await
        .unwrap_or_else(|e| panic!("the Mirrors phase failed: {e:#}"));
    println!("{}", results.table());
    let Figures::Mirrors(m) = &results.figures else {
        panic!("the Mirrors phase gave {:?}", results.figures);
    };
    assert_eq!(
        (m.namespaces, m.fan_out.namespaces),
        (namespaces, namespaces)
    );
    assert_eq!(m.mirrors, 2, "a tenth of the namespaces");
    assert!(
        m.floor.seconds > 0.0 && m.converge_ratio_to_floor > 0.0,
        "{m:?}"
    );
    assert!(
        m.shaped_floor.seconds > 0.0 && m.converge_ratio_to_shaped_floor > 0.0,
        "the shaped floor is written: {m:?}"
    );
}
