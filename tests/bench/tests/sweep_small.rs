//! The sweep is code that can rot too: run its small preset once and check
//! that every size, fan-out, floor, heal, new-namespace sample and chart
//! came out. Timings are not asserted.

use mirror_bench::params::workspace_root;
use mirror_bench::sweep::SweepParams;

#[tokio::test(flavor = "multi_thread")]
async fn the_small_sweep_measures_every_size_and_draws_every_chart() {
    let controller = [
        "target/release/configmap-mirror",
        "target/debug/configmap-mirror",
    ]
    .map(|path| workspace_root().join(path))
    .into_iter()
    .find(|path| path.is_file())
    .unwrap_or_else(|| {
        panic!(
            "no controller binary: run `cargo build --release --locked` (or `cargo build`) first"
        )
    });
    let params = SweepParams::small();
    let results = mirror_bench::sweep::run(params.clone(), &controller)
        .await
        .unwrap_or_else(|e| panic!("the small sweep failed: {e:#}"));
    println!("{}", results.table());

    let sizes: Vec<usize> = results.sizes.iter().map(|p| p.sources).collect();
    assert_eq!(sizes, params.sizes);
    for point in &results.sizes {
        assert_eq!(
            point.heal.samples, params.samples,
            "{} sources",
            point.sources
        );
        assert!(point.memory.rss_bytes > 0);
    }
    let fan_outs: Vec<usize> = results
        .fan_out
        .iter()
        .map(|p| p.fan_out.namespaces)
        .collect();
    assert_eq!(fan_outs, params.fan_outs);
    let mut copies = 0;
    for point in &results.fan_out {
        let namespaces = point.fan_out.namespaces;
        copies += namespaces;
        assert!(point.floor.seconds > 0.0, "{namespaces}: no floor");
        assert!(
            point.converge_ratio_to_floor > 0.0 && point.propagate_ratio_to_floor > 0.0,
            "{namespaces}: no ratio to the floor"
        );
        let heal = &point.heal;
        assert_eq!(
            heal.heal.latency.as_ref().map(|l| l.samples),
            Some(params.copy_heal_samples.min(namespaces)),
            "{namespaces}: copy heals"
        );
        assert_eq!(heal.copies_present, copies);
        assert!(
            heal.namespaces_present > namespaces,
            "{namespaces}: {} namespaces present",
            heal.namespaces_present
        );
    }
    assert_eq!(
        results.mirrored.mirrors,
        params.mirrored_sources * params.mirror_namespaces
    );
    let mirrored_heal = &results.mirrored.heal;
    assert_eq!(
        mirrored_heal.heal.latency.as_ref().map(|l| l.samples),
        Some(params.copy_heal_samples.min(params.mirrored_sources))
    );
    assert_eq!(
        mirrored_heal.copies_present,
        copies + results.mirrored.mirrors
    );
    let namespaces: usize = params.fan_outs.iter().sum::<usize>() + params.mirror_namespaces;
    assert!(mirrored_heal.namespaces_present > namespaces);
    let new_namespaces = &results.new_namespaces;
    assert_eq!(new_namespaces.sources, params.glob_sources);
    assert_eq!(new_namespaces.latency.samples, params.glob_namespaces);
    assert!(new_namespaces.namespaces_present >= mirrored_heal.namespaces_present);
    assert_eq!(results.marginal_memory.len(), params.sizes.len() - 1);
    for figure in [
        "fan-out update (s), by namespaces",
        "copy heal p50 (ms), by namespaces present",
    ] {
        assert!(
            results.growth.iter().any(|g| g.figure == figure),
            "no growth exponent for {figure}"
        );
    }

    let table = results.table();
    for line in ["xfloor", "namespaces present before", "copies of"] {
        assert!(table.contains(line), "the table has no {line:?}");
    }
    assert_eq!(results.charts.len(), 6);
    assert!(
        results
            .charts
            .iter()
            .any(|c| c.ends_with("sweep-heal-namespaces.svg"))
    );
    for chart in &results.charts {
        let svg = std::fs::read_to_string(workspace_root().join(chart))
            .unwrap_or_else(|e| panic!("reading {chart}: {e}"));
        assert!(svg.starts_with("<svg"), "{chart} is no SVG document");
        assert!(svg.contains("<polyline"), "{chart} draws no line");
    }
}
