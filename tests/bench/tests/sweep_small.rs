//! The sweep is code that can rot too: run its small preset once and check
//! that every size, fan-out and chart came out. Timings are not asserted.

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
    assert_eq!(
        results.mirrored.mirrors,
        params.mirrored_sources * params.mirror_namespaces
    );
    assert_eq!(results.marginal_memory.len(), params.sizes.len() - 1);

    assert_eq!(results.charts.len(), 5);
    for chart in &results.charts {
        let svg = std::fs::read_to_string(workspace_root().join(chart))
            .unwrap_or_else(|e| panic!("reading {chart}: {e}"));
        assert!(svg.starts_with("<svg"), "{chart} is no SVG document");
        assert!(svg.contains("<polyline"), "{chart} draws no line");
    }
}
