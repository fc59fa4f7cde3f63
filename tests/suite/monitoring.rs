//! The Grafana dashboard and the Prometheus alerts the chart ships: every
//! series a dashboard query names is one the binary exports, and the
//! dashboard ConfigMap carries the file unchanged.

use crate::common;

use std::{
    collections::{BTreeMap, BTreeSet},
    path::PathBuf,
};

use common::{Scene, helm, mk_source};
use serde_json::Value;
use testenv::wait_for;

const CHART: &str = "charts/configmap-mirror";
const DASHBOARD: &str = "charts/configmap-mirror/files/dashboard.json";

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn dashboard() -> Value {
    let text = std::fs::read_to_string(repo().join(DASHBOARD)).expect("read the dashboard");
    serde_json::from_str(&text).expect("the dashboard is JSON")
}

/// (panel title, query) of every query of every panel.
fn panel_queries(dashboard: &Value) -> Vec<(String, String)> {
    let panels = dashboard["panels"].as_array().expect("panels");
    panels
        .iter()
        .filter(|panel| panel["type"] != "row")
        .flat_map(|panel| {
            let title = panel["title"].as_str().expect("a title").to_owned();
            let targets = panel["targets"].as_array().cloned().unwrap_or_default();
            assert!(!targets.is_empty(), "panel {title:?} has no query");
            targets.into_iter().map(move |target| {
                let expr = target["expr"].as_str().expect("an expr").to_owned();
                (title.clone(), expr)
            })
        })
        .collect()
}

/// Skips from `open` (at `at`) to just past its matching `close`.
fn skip_group(chars: &[char], at: usize, open: char, close: char) -> usize {
    let mut depth = 0;
    let mut i = at;
    while i < chars.len() {
        if chars[i] == '"' {
            i = skip_string(chars, i);
            continue;
        }
        if chars[i] == open {
            depth += 1;
        } else if chars[i] == close {
            depth -= 1;
            if depth == 0 {
                return i + 1;
            }
        }
        i += 1;
    }
    i
}

/// Just past the string literal that starts at `at`.
fn skip_string(chars: &[char], at: usize) -> usize {
    let quote = chars[at];
    let mut i = at + 1;
    while i < chars.len() && chars[i] != quote {
        i += if chars[i] == '\\' { 2 } else { 1 };
    }
    i + 1
}

/// Words of PromQL that are not series names, though not followed by `(`.
const KEYWORDS: &[&str] = &[
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "bool",
    "offset",
    "and",
    "or",
    "unless",
    "atan2",
    "inf",
    "nan",
];

/// PromQL's aggregation operators: reserved words, followed by `(` or by
/// `by (...)`/`without (...)` and then `(`.
const AGGREGATIONS: &[&str] = &[
    "sum",
    "min",
    "max",
    "avg",
    "group",
    "stddev",
    "stdvar",
    "count",
    "count_values",
    "bottomk",
    "topk",
    "quantile",
    "limitk",
    "limit_ratio",
];

/// The series names a PromQL expression selects: identifiers outside label
/// matchers, ranges and strings that are neither functions, aggregations
/// nor keywords, nor the label lists of `by (...)` and the like. Suffixes
/// such as `_bucket` stay: they are part of the sample names queried.
fn series_in(expr: &str) -> BTreeSet<String> {
    let chars: Vec<char> = expr.chars().collect();
    let mut names = BTreeSet::new();
    let mut i = 0;
    let is_start = |c: char| c.is_ascii_alphabetic() || c == '_' || c == ':';
    let is_part = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == ':';
    while i < chars.len() {
        let c = chars[i];
        if c == '"' || c == '\'' || c == '`' {
            i = skip_string(&chars, i);
        } else if c == '{' {
            i = skip_group(&chars, i, '{', '}');
        } else if c == '[' {
            i = skip_group(&chars, i, '[', ']');
        } else if c.is_ascii_digit() || c == '.' || c == '$' {
            // A number (0.99, 1e3) or a dashboard variable.
            i += 1;
            while i < chars.len() && (is_part(chars[i]) || chars[i] == '.') {
                i += 1;
            }
        } else if is_start(c) {
            let start = i;
            while i < chars.len() && is_part(chars[i]) {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            let mut next = i;
            while next < chars.len() && chars[next].is_whitespace() {
                next += 1;
            }
            let called = chars.get(next) == Some(&'(');
            let keyword = KEYWORDS.contains(&word.as_str());
            if keyword && called {
                // by (pod), on (le), group_left (kind): label names.
                i = skip_group(&chars, next, '(', ')');
            } else if !keyword && !called && !AGGREGATIONS.contains(&word.as_str()) {
                names.insert(word);
            }
        } else {
            i += 1;
        }
    }
    names
}

#[test]
fn the_query_parser_finds_series_and_only_series() {
    for (expr, expected) in [
        (
            r#"histogram_quantile(0.99, sum by (le) (rate(a_seconds_bucket{job="$job", x=~"y|z"}[$__rate_interval])))"#,
            &["a_seconds_bucket"][..],
        ),
        (
            "sum(b_total) by (pod, kind) / ignoring(kind) c_count offset 5m",
            &["b_total", "c_count"],
        ),
        (
            "max by (pod) (time() - d_seconds{a=\"}\"}) / 86400",
            &["d_seconds"],
        ),
        ("absent(e == 1) or on() vector(0)", &["e"]),
        ("f > bool 1e3 and g", &["f", "g"]),
        (
            "count without (pod) (h) + max(i) - topk by (kind) (3, j)",
            &["h", "i", "j"],
        ),
    ] {
        let expected: BTreeSet<String> = expected.iter().map(|s| s.to_string()).collect();
        assert_eq!(series_in(expr), expected, "{expr}");
    }
}

/// The sample names a scrape holds, and each metric family's type.
fn exported(scrape: &str) -> (BTreeSet<String>, BTreeMap<String, String>) {
    let mut samples = BTreeSet::new();
    let mut types = BTreeMap::new();
    for line in scrape.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            if let Some((name, kind)) = rest.split_once(' ') {
                types.insert(name.to_owned(), kind.to_owned());
            }
        } else if !line.starts_with('#') && !line.trim().is_empty() {
            let end = line.find(['{', ' ']).unwrap_or(line.len());
            samples.insert(line[..end].to_owned());
        }
    }
    (samples, types)
}

/// What is wrong with `name` as a query of this scrape, if anything: it
/// must be a sample name, and a `_bucket` must be a histogram's.
fn unexported(
    name: &str,
    samples: &BTreeSet<String>,
    types: &BTreeMap<String, String>,
) -> Option<String> {
    if !samples.contains(name) {
        return Some(format!("{name} is not exported"));
    }
    if let Some(base) = name.strip_suffix("_bucket") {
        let kind = types.get(base).map(String::as_str);
        if kind != Some("histogram") {
            return Some(format!("{name}: {base} is a {kind:?}, not a histogram"));
        }
    }
    None
}

#[test]
fn the_dashboard_has_the_panels_an_operator_looks_for() {
    let dashboard = dashboard();
    let queries = panel_queries(&dashboard);
    let titles: BTreeSet<&str> = queries.iter().map(|(title, _)| title.as_str()).collect();
    for wanted in [
        "Reconciles by loop and result",
        "Reconcile errors by loop",
        "Queue depth",
        "Queue latency",
        "Heal latency",
        "Copies written by operation",
        "Leader",
        "Leaders now",
        "Failing objects",
        "Memory",
        "CPU",
    ] {
        assert!(titles.contains(wanted), "no panel {wanted:?} in {titles:?}");
    }
    // "By loop" and "by operation" are in the queries, not only the titles.
    let query_of = |title: &str| {
        queries
            .iter()
            .filter(|(t, _)| t == title)
            .map(|(_, q)| q.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert!(query_of("Reconciles by loop and result").contains("by (loop, result)"));
    assert!(query_of("Reconcile errors by loop").contains("by (loop)"));
    assert!(query_of("Copies written by operation").contains("by (operation)"));
}

#[test]
fn the_chart_dashboard_configmap_carries_the_dashboard_file() {
    let out = helm(&[
        "template",
        "r",
        CHART,
        "--set",
        "metrics.dashboard.enabled=true",
        "--show-only",
        "templates/dashboard.yaml",
    ])
    .output()
    .expect("run helm template");
    let rendered = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(rendered.contains("grafana_dashboard: \"1\""), "{rendered}");
    let (_, data) = rendered
        .split_once("configmap-mirror.json: |-\n")
        .expect("the dashboard key");
    let json: String = data
        .lines()
        .take_while(|line| line.starts_with("    ") || line.is_empty())
        .map(|line| line.strip_prefix("    ").unwrap_or(line))
        .collect::<Vec<_>>()
        .join("\n");
    let carried: Value = serde_json::from_str(&json).expect("the ConfigMap holds JSON");
    assert_eq!(carried, dashboard());
}

#[tokio::test]
async fn every_series_the_dashboard_queries_is_exported_by_the_binary() {
    let queries = panel_queries(&dashboard());
    let scene = Scene::new("dashboard").await;
    let controller = scene.start_controller(&[]).await;
    // Work that makes every family of series hold a sample: a copy written,
    // healed and a source counted.
    scene.create(&mk_source("colors", &[("a", "1")])).await;
    scene.companion_in_sync("colors").await;
    scene.delete("colors-synced").await;
    scene.companion_in_sync("colors").await;

    let problems = |scrape: &str| {
        let (samples, types) = exported(scrape);
        queries
            .iter()
            .flat_map(|(title, expr)| {
                let names = series_in(expr);
                assert!(!names.is_empty(), "no series in {title:?}: {expr}");
                names
                    .into_iter()
                    .filter_map(|name| unexported(&name, &samples, &types))
                    .map(|problem| format!("panel {title:?}: {problem}"))
                    .collect::<Vec<_>>()
            })
            .collect::<BTreeSet<String>>()
    };
    let settled = wait_for(
        "every dashboard series in a scrape",
        common::PATIENCE,
        || async {
            let (_, scrape) = controller.get("/metrics").await.ok()?;
            problems(&scrape).is_empty().then_some(())
        },
    )
    .await;
    if settled.is_err() {
        let (_, scrape) = controller.get("/metrics").await.expect("scrape /metrics");
        panic!(
            "series the dashboard queries but the binary does not export: {:#?}\nscrape:\n{scrape}",
            problems(&scrape)
        );
    }
    assert!(controller.stop().success());
}

const PROMTOOL_HINT: &str = "promtool is missing: install Debian's prometheus package \
     (`apt-get install -y prometheus`; as root, `make prereqs` does it)";

/// promtool, found on `path` (a PATH value); the error names the install
/// command.
fn find_promtool(path: &std::ffi::OsStr) -> Result<PathBuf, String> {
    std::env::split_paths(path)
        .map(|dir| dir.join("promtool"))
        .find(|candidate| candidate.is_file())
        .ok_or_else(|| PROMTOOL_HINT.to_owned())
}

fn promtool() -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    find_promtool(&path).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn a_missing_promtool_fails_naming_the_install_command() {
    let error = find_promtool(std::ffi::OsStr::new("/nonexistent")).expect_err("no promtool");
    assert!(error.contains("apt-get install -y prometheus"), "{error}");
}

/// The alerting rules as the chart renders them for release
/// configmap-mirror in namespace configmap-mirror: the PrometheusRule's
/// spec, a Prometheus rule file.
fn rendered_rules() -> String {
    let out = helm(&[
        "template",
        "configmap-mirror",
        CHART,
        "--namespace",
        "configmap-mirror",
        "--set",
        "metrics.prometheusRule.enabled=true",
        "--show-only",
        "templates/prometheusrule.yaml",
    ])
    .output()
    .expect("run helm template");
    let rendered = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (_, spec) = rendered.split_once("\nspec:\n").expect("a spec");
    spec.lines()
        .map(|line| line.strip_prefix("  ").unwrap_or(line))
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

fn run_promtool(args: &[&str], dir: &std::path::Path) -> String {
    let out = std::process::Command::new(promtool())
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run promtool");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "promtool {}:\n{text}", args.join(" "));
    text
}

#[test]
fn the_alerts_pass_promtool_check_rules_and_their_unit_tests() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("prometheus-rules-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(dir.join("prometheus-rules.yaml"), rendered_rules()).expect("write the rules");
    std::fs::copy(
        repo().join("tests/fixtures/prometheus-rules-test.yaml"),
        dir.join("prometheus-rules-test.yaml"),
    )
    .expect("copy the rules' tests");
    let checked = run_promtool(&["check", "rules", "prometheus-rules.yaml"], &dir);
    assert!(checked.contains("SUCCESS"), "{checked}");
    let tested = run_promtool(&["test", "rules", "prometheus-rules-test.yaml"], &dir);
    assert!(tested.contains("SUCCESS"), "{tested}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every alert the chart ships, with a summary, and a runbook_url to its
/// section of the README, which exists; and each has unit tests, firing
/// and not firing.
#[test]
fn every_alert_has_a_summary_a_runbook_section_and_unit_tests() {
    let rules = rendered_rules();
    let readme = std::fs::read_to_string(repo().join("README.md")).expect("README");
    let tests = std::fs::read_to_string(repo().join("tests/fixtures/prometheus-rules-test.yaml"))
        .expect("the rules' tests");
    let alerts: Vec<&str> = rules.split("- alert: ").skip(1).collect();
    let names: Vec<&str> = alerts
        .iter()
        .map(|alert| alert.lines().next().unwrap_or_default().trim())
        .collect();
    for wanted in [
        "ConfigMapMirrorDown",
        "ConfigMapMirrorNoLeader",
        "ConfigMapMirrorTwoLeaders",
        "ConfigMapMirrorLeaseRefused",
        "ConfigMapMirrorReconcileErrors",
        "ConfigMapMirrorObjectsFailing",
        "ConfigMapMirrorCopiesContested",
        "ConfigMapMirrorWatchFailing",
    ] {
        assert!(names.contains(&wanted), "no alert {wanted} in {names:?}");
    }
    for (name, alert) in names.iter().zip(&alerts) {
        assert!(
            alert
                .lines()
                .any(|line| line.trim_start().starts_with("summary: ")),
            "{name}: no summary"
        );
        let anchor = name.to_lowercase();
        assert!(
            alert.contains(&format!("runbook_url: \"README.md#{anchor}\"")),
            "{name}: no runbook_url to README.md#{anchor}:\n{alert}"
        );
        assert!(
            readme.lines().any(|line| line == format!("#### {name}")),
            "README.md has no section \"#### {name}\", the alert's runbook"
        );
        let test_cases: Vec<&str> = tests
            .split("alertname: ")
            .skip(1)
            .filter(|case| case.starts_with(&format!("{name}\n")))
            .collect();
        assert!(
            test_cases
                .iter()
                .any(|case| case.contains("exp_alerts: []")),
            "{name}: no unit test where it does not fire"
        );
        assert!(
            test_cases.iter().any(|case| case.contains("exp_labels:")),
            "{name}: no unit test where it fires"
        );
    }
}
