//! The Grafana dashboard and the Prometheus alerts the chart ships: every
//! series a dashboard query names is one the binary exports (or one of a
//! few well-known series of Prometheus and kube-state-metrics), and the
//! dashboard ConfigMap carries the file unchanged.

use crate::common;

use std::{
    collections::{BTreeMap, BTreeSet},
    path::PathBuf,
};

use common::{Scene, TestKind, helm};
use k8s_openapi::api::core::v1::ConfigMap;
use serde_json::Value;
use testenv::wait_for;

const CHART: &str = "charts/configmap-mirror";
const DASHBOARD: &str = "charts/configmap-mirror/files/dashboard.json";

fn dashboard() -> Value {
    let text = std::fs::read_to_string(common::repo().join(DASHBOARD)).expect("read the dashboard");
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

/// The series a dashboard query may name that the binary does not export,
/// and who does: each well known, present wherever kube-prometheus-stack
/// runs.
const EXTERNAL_SERIES: &[(&str, &str)] = &[
    ("up", "Prometheus, one per scrape target"),
    ("kube_pod_container_resource_limits", "kube-state-metrics"),
];

/// What is wrong with `name` as a query of this scrape, if anything: it
/// must be a sample name, and a `_bucket` must be a histogram's.
fn unexported(
    name: &str,
    samples: &BTreeSet<String>,
    types: &BTreeMap<String, String>,
) -> Option<String> {
    if EXTERNAL_SERIES
        .iter()
        .any(|(external, _)| *external == name)
    {
        return None;
    }
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
        "Replicas up",
        "Contested restores",
        "Watch failing",
        "Failing objects",
        "ClusterMirror targets by state",
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
    // What the alerts watch: each alert's series has its panel.
    let watch = query_of("Watch failing");
    assert!(
        watch.contains("configmap_mirror_watch_failing_seconds") && watch.contains("by (watch)"),
        "{watch}"
    );
    let cluster_mirrors = query_of("ClusterMirror targets by state");
    assert!(
        cluster_mirrors.contains("configmap_mirror_clustermirror_targets")
            && cluster_mirrors.contains("by (clustermirror, state)"),
        "{cluster_mirrors}"
    );
    let contested = query_of("Contested restores");
    assert!(
        contested.contains("configmap_mirror_contested_restores_total"),
        "{contested}"
    );
    assert!(query_of("Replicas up").contains("up{"));
    assert!(query_of("Leaders now").contains("leader_election_master_status"));
    // Memory against the container's limit, of this install's pods.
    let memory = query_of("Memory");
    assert!(
        memory.contains(r#"kube_pod_container_resource_limits{namespace="$namespace", container="configmap-mirror", resource="memory"}"#)
            && memory.contains(r#"and on (namespace, pod) up{namespace="$namespace", job="$job"}"#),
        "{memory}"
    );
    // Heal latency is measured, not added up: each line is one histogram's
    // quantile, and the heal lines are the heal histogram's.
    for (title, expr) in queries.iter().filter(|(title, _)| title == "Heal latency") {
        assert_eq!(series_in(expr).len(), 1, "{title}: {expr}");
    }
    assert!(
        query_of("Heal latency").contains("configmap_mirror_heal_duration_seconds_bucket"),
        "{}",
        query_of("Heal latency")
    );
    // Every external series the dashboard may name, it does name.
    for (external, _) in EXTERNAL_SERIES {
        assert!(
            queries
                .iter()
                .any(|(_, expr)| series_in(expr).contains(*external)),
            "{external} is allowed but no query names it"
        );
    }
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
    let controller = scene.configmaps().start_controller(&[]).await;
    // Work that makes every family of series hold a sample: a copy written,
    // healed and a source counted.
    scene
        .configmaps()
        .source_in_sync("colors", &[("a", "1")])
        .await;
    scene.configmaps().delete("colors-synced").await;
    scene.configmaps().companion_in_sync("colors").await;
    // And a ClusterMirror's targets counted, by a cluster-wide controller
    // (the only kind that serves ClusterMirrors), into no namespace: no
    // namespace has the label it selects.
    let world = crate::cluster_mirror::world::<ConfigMap>("dashboard-cmir").await;
    world
        .objects()
        .create(&ConfigMap::with_data("colors", &[("a", "1")], false))
        .await;
    let cluster_mirror = world.prefix.clone();
    crate::cluster_mirror::create(&world, &cluster_mirror, "colors").await;

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
    let both_scrapes = || async {
        let (_, namespaced) = controller.get("/metrics").await.ok()?;
        let (_, cluster_wide) = world.controller().get("/metrics").await.ok()?;
        Some(format!("{namespaced}\n{cluster_wide}"))
    };
    let settled = wait_for(
        "every dashboard series in a scrape",
        common::PATIENCE,
        || async { problems(&both_scrapes().await?).is_empty().then_some(()) },
    )
    .await;
    if settled.is_err() {
        let scrape = both_scrapes().await.expect("scrape /metrics");
        panic!(
            "series the dashboard queries but the binary does not export: {:#?}\nscrapes:\n{scrape}",
            problems(&scrape)
        );
    }
    // Cluster-scoped: gone with the test, so no later test's controller sees it.
    crate::cluster_mirror::cluster_mirrors(&world.scene.client)
        .delete(&cluster_mirror, &Default::default())
        .await
        .expect("delete the ClusterMirror");
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

/// Where the rules' unit tests expect the runbooks
/// (tests/fixtures/prometheus-rules-test.yaml).
const TESTS_RUNBOOK_BASE: &str = "https://runbooks.example.com/configmap-mirror";

/// The alerting rules as the chart renders them for release
/// configmap-mirror in namespace configmap-mirror, scraped by the chart's
/// ServiceMonitor, with `values` (helm's arguments, `--set` and the like)
/// besides: the PrometheusRule's spec, a Prometheus rule file.
fn rendered_rules(values: &[&str]) -> String {
    let mut args = vec![
        "template",
        "configmap-mirror",
        CHART,
        "--namespace",
        "configmap-mirror",
        "--set",
        "metrics.prometheusRule.enabled=true",
        "--set",
        "metrics.serviceMonitor.enabled=true",
        "--show-only",
        "templates/prometheusrule.yaml",
    ];
    args.extend(values);
    let out = helm(&args).output().expect("run helm template");
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
    let runbooks = format!("metrics.prometheusRule.runbookBaseUrl={TESTS_RUNBOOK_BASE}");
    std::fs::write(
        dir.join("prometheus-rules.yaml"),
        rendered_rules(&["--set", &runbooks]),
    )
    .expect("write the rules");
    std::fs::copy(
        common::repo().join("tests/fixtures/prometheus-rules-test.yaml"),
        dir.join("prometheus-rules-test.yaml"),
    )
    .expect("copy the rules' tests");
    let checked = run_promtool(&["check", "rules", "prometheus-rules.yaml"], &dir);
    assert!(checked.contains("SUCCESS"), "{checked}");
    let tested = run_promtool(&["test", "rules", "prometheus-rules-test.yaml"], &dir);
    assert!(tested.contains("SUCCESS"), "{tested}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The value of a top-level `key: value` of Chart.yaml.
fn chart_field(key: &str) -> String {
    let chart = std::fs::read_to_string(common::repo().join(CHART).join("Chart.yaml"))
        .expect("read Chart.yaml");
    chart
        .lines()
        .find_map(|line| line.strip_prefix(key)?.strip_prefix(':'))
        .map(|value| value.trim().trim_matches('"').to_owned())
        .unwrap_or_else(|| panic!("no {key} in Chart.yaml"))
}

/// The unit tests of one alert: the text after each `alertname: <name>`.
fn test_cases<'a>(tests: &'a str, name: &str) -> Vec<&'a str> {
    tests
        .split("alertname: ")
        .skip(1)
        .filter(|case| case.starts_with(&format!("{name}\n")))
        .collect()
}

/// Every alert the chart ships, with a summary, and a runbook_url to its
/// page under docs/operator/runbooks/ at the chart's version, an absolute
/// link a notification can carry; the page exists, titled with the alert's
/// name, and no page there is left from an alert that is gone. Each has unit tests, firing
/// and not firing, and when it fires it carries the install's namespace
/// and job, so that two installs' alerts stay apart and inhibit rules
/// matching on namespace apply.
#[test]
fn every_alert_has_a_summary_a_runbook_page_and_unit_tests() {
    let rules = rendered_rules(&[]);
    let runbooks_url = format!(
        "{}/blob/v{}/docs/operator/runbooks",
        chart_field("home").trim_end_matches('/'),
        chart_field("version")
    );
    assert!(runbooks_url.starts_with("https://"), "{runbooks_url}");
    let runbooks = common::repo().join("docs/operator/runbooks");
    let tests =
        std::fs::read_to_string(common::repo().join("tests/fixtures/prometheus-rules-test.yaml"))
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
        "ConfigMapMirrorClusterMirrorFailing",
        "ConfigMapMirrorClusterMirrorCRDMissing",
        "ConfigMapMirrorClusterMirrorOrphans",
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
        let runbook = format!("{runbooks_url}/{name}.md");
        assert!(
            alert.contains(&format!("runbook_url: \"{runbook}\"")),
            "{name}: no runbook_url to {runbook}:\n{alert}"
        );
        let page =
            std::fs::read_to_string(runbooks.join(format!("{name}.md"))).unwrap_or_else(|e| {
                panic!("{name}: no runbook page docs/operator/runbooks/{name}.md: {e}")
            });
        assert_eq!(
            page.lines().next(),
            Some(format!("# {name}").as_str()),
            "docs/operator/runbooks/{name}.md is not titled with the alert's name"
        );
        let test_cases = test_cases(&tests, name);
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
        for case in test_cases
            .iter()
            .filter(|case| case.contains("exp_labels:"))
        {
            for label in ["namespace: configmap-mirror", "job: configmap-mirror"] {
                let labeled = case.split("- exp_labels:").skip(1).all(|alert| {
                    alert
                        .split("exp_annotations:")
                        .next()
                        .is_some_and(|labels| labels.contains(label))
                });
                assert!(
                    labeled,
                    "{name}: a firing unit test expects no {label}:\n{case}"
                );
            }
        }
    }
    for entry in std::fs::read_dir(&runbooks).expect("docs/operator/runbooks") {
        let file = entry.expect("a runbook page").file_name();
        let file = file.to_string_lossy();
        let Some(alert) = file.strip_suffix(".md") else {
            continue;
        };
        assert!(
            alert == "README" || names.contains(&alert),
            "docs/operator/runbooks/{file} is the runbook of no alert the chart ships"
        );
    }
}

/// Every alert stays quiet on a healthy install the chart's ServiceMonitor
/// scrapes: one unit test feeds the series of two healthy replicas and
/// expects no alert at all.
#[test]
fn no_alert_fires_on_a_healthy_scraped_install() {
    let rules = rendered_rules(&[]);
    let tests =
        std::fs::read_to_string(common::repo().join("tests/fixtures/prometheus-rules-test.yaml"))
            .expect("the rules' tests");
    // From its comment to the next test group.
    let healthy = tests
        .split_once("# A healthy install")
        .and_then(|(_, rest)| rest.split("\n  - interval: ").nth(1))
        .expect("a unit test of a healthy install");
    for series in [
        "up{",
        "leader_election_master_status{",
        "configmap_mirror_watch_failing_seconds{",
    ] {
        assert!(
            healthy.contains(series),
            "the healthy install has no {series}"
        );
    }
    for alert in rules.split("- alert: ").skip(1) {
        let name = alert.lines().next().unwrap_or_default().trim();
        let quiet = test_cases(healthy, name)
            .iter()
            .any(|case| case.contains("exp_alerts: []"));
        assert!(quiet, "{name}: not tested on the healthy install");
    }
}

/// In single-namespace mode there is no ClusterMirror to serve and the CRD
/// is not watched, so its gauge stays 0: the CRD alert is not rendered.
#[test]
fn the_crd_alert_is_only_in_cluster_wide_installs() {
    let alert = "- alert: ConfigMapMirrorClusterMirrorCRDMissing";
    assert!(rendered_rules(&[]).contains(alert));
    let namespaced = rendered_rules(&["--set", "controller.watchNamespace=apps"]);
    assert!(!namespaced.contains(alert), "{namespaced}");
}

/// ConfigMapMirrorWatchFailing fires on failures longer than
/// controller.watchFailureThreshold, the flag /healthz fails by, in any
/// of Go's duration forms.
#[test]
fn the_watch_alert_follows_the_watch_failure_threshold() {
    for (threshold, seconds) in [
        ("60s", "60"),
        ("2m", "120"),
        ("1m30s", "90"),
        ("1.5h", "5400"),
        ("500ms", "0.5"),
        ("45", "45"),
    ] {
        let value = format!("controller.watchFailureThreshold={threshold}");
        let rules = rendered_rules(&["--set-string", &value]);
        let alert = rules
            .split("- alert: ")
            .find(|alert| alert.starts_with("ConfigMapMirrorWatchFailing"))
            .expect("the watch alert");
        let expr = alert
            .split("expr: |-")
            .nth(1)
            .and_then(|rest| rest.split("for:").next())
            .expect("its expression")
            .trim();
        assert!(
            expr.ends_with(&format!("[5m])) > {seconds}")),
            "{threshold}: not > {seconds}: {expr}"
        );
        assert!(
            alert.contains(&format!("for over {threshold} (--watch-failure-threshold)")),
            "{threshold}: the description does not say it:\n{alert}"
        );
    }
}
