//! The user guide's walkthroughs, run as written: every `console walkthrough`
//! block of the pages in [`PAGES`], in order, against a control plane of
//! their own with the controller running cluster-wide (ConfigMaps and
//! Secrets, ClusterMirror sources allowed from `mirror-admin`), each command in bash with kubectl, helm and this build's
//! `configmap-mirror` on its PATH. A step whose output is not what its page
//! shows fails, naming the page, the line and both outputs: a walkthrough
//! that drifts from what the binary does fails here.
//!
//! Also: the chart values the in-cluster kind path documents are the very
//! strings `make demo-in-cluster` and the kubelet end-to-end test use.

mod markdown;

use std::{
    path::{Path, PathBuf},
    process::Command,
    time::{Duration, Instant},
};

use testenv::{ControlPlane, Options, free_port, spawn_child};

/// The walkthroughs, in the order they run: each may build on the one
/// before (the namespaces and sources it made).
const PAGES: &[&str] = &[
    "docs/user/getting-started.md",
    "docs/user/labels.md",
    "docs/user/mirroring.md",
    "docs/user/secrets.md",
    "docs/user/explain.md",
    "docs/user/clustermirror.md",
    "docs/user/mirror.md",
];

/// How long the controller gets to become ready, on a machine that may be
/// busy compiling.
const READY_WITHIN: Duration = Duration::from_secs(60);

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &str) -> String {
    std::fs::read_to_string(repo().join(path)).unwrap_or_else(|e| panic!("read {path}: {e}"))
}

/// The directory of the cached helm build, or a failure naming `make helm`.
fn helm_dir() -> PathBuf {
    let out = Command::new("bash")
        .args(["hack/install-helm.sh", "--cached-only"])
        .current_dir(repo())
        .output()
        .expect("run hack/install-helm.sh");
    assert!(
        out.status.success(),
        "helm is not built: run `make helm`\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}

/// The controller as a user runs it with `cargo run`, cluster-wide, with
/// Secrets on; ready once `/readyz` answers 200, which `configmap-mirror
/// probe` asks.
fn start_controller(control_plane: &ControlPlane, binary: &Path) -> testenv::ChildProcess {
    let port = free_port().expect("a free port");
    let log = control_plane.log_dir().join("walkthrough-controller.log");
    let mut cmd = Command::new(binary);
    cmd.env("KUBECONFIG", control_plane.kubeconfig_path())
        .args(["--kinds", "configmaps,secrets", "--log-format", "text"])
        // The ClusterMirror walkthrough's admin namespace, as the chart
        // would allow its release namespace.
        .args(["--cluster-mirror-source-namespaces", "mirror-admin"])
        .args(["--http-addr", &format!("127.0.0.1:{port}")]);
    let controller = spawn_child(cmd, &log).expect("start the controller");
    let started = Instant::now();
    loop {
        let probe = Command::new(binary)
            .args(["probe", &format!("http://127.0.0.1:{port}/readyz")])
            .output()
            .expect("run configmap-mirror probe");
        if probe.status.success() {
            return controller;
        }
        assert!(
            started.elapsed() < READY_WITHIN,
            "the controller was not ready within {READY_WITHIN:?}: {}\n{}",
            String::from_utf8_lossy(&probe.stdout),
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn the_user_guide_walkthroughs_do_what_they_say() {
    let control_plane = ControlPlane::start(Options::default())
        .unwrap_or_else(|e| panic!("{e:#}\n(the Kubernetes binaries: run `make k8s`)"));
    let binary = PathBuf::from(env!("CARGO_BIN_EXE_configmap-mirror"));
    let controller = start_controller(&control_plane, &binary);
    let inherited = std::env::var_os("PATH").unwrap_or_default();
    let path = std::env::join_paths(
        [
            control_plane.bin_dir().to_path_buf(),
            binary
                .parent()
                .expect("the binary's directory")
                .to_path_buf(),
            helm_dir(),
        ]
        .into_iter()
        .chain(std::env::split_paths(&inherited)),
    )
    .expect("a PATH");
    let mut ran = 0;
    // Every step runs, so that one run names every drifted step.
    let mut drifted = Vec::new();
    let mut explain_json = Vec::new();
    for page in PAGES {
        let steps = markdown::steps(&read(page));
        assert!(
            !steps.is_empty(),
            "{page} has no `{}` block",
            markdown::MARKER
        );
        for step in steps {
            let out = Command::new("bash")
                .args([
                    "-o",
                    "pipefail",
                    "-c",
                    &format!("exec 2>&1\n{}", step.command),
                ])
                .current_dir(repo())
                .env("PATH", &path)
                .env("KUBECONFIG", control_plane.kubeconfig_path())
                .env_remove("KUBE_EDITOR")
                .output()
                .expect("run bash");
            let actual = markdown::transcript(
                &String::from_utf8_lossy(&out.stdout),
                out.status.code().unwrap_or(-1),
            );
            if step.command.starts_with("configmap-mirror explain")
                && step.command.contains("-o json")
            {
                explain_json.push(String::from_utf8_lossy(&out.stdout).into_owned());
            }
            if !markdown::matches(&step.expected, &actual) {
                drifted.push(format!(
                    "{page}:{}: `{}` printed what the page does not show.\n--- the page:\n{}\n--- the run:\n{}\n",
                    step.line,
                    step.command,
                    step.expected.join("\n"),
                    actual.join("\n"),
                ));
            }
            ran += 1;
        }
    }
    drop(controller);
    assert!(ran > 0);
    assert!(
        drifted.is_empty(),
        "{} of {ran} steps drifted:\n\n{}\n--- the controller's log:\n{}",
        drifted.len(),
        drifted.join("\n"),
        std::fs::read_to_string(control_plane.log_dir().join("walkthrough-controller.log"))
            .unwrap_or_default()
    );
    assert!(
        !explain_json.is_empty(),
        "no walkthrough runs `configmap-mirror explain -o json`"
    );
    for json in &explain_json {
        every_field_is_in_the_schema_table(json);
    }
}

/// Every field `explain -o json` printed is in the schema's table of
/// docs/user/explain.md: as its path (`rows[].verdict`; an object or a list
/// by its fields' or items' paths), or, for the fields
/// of `preview` and `warnings[]`, which the table names in their parent's
/// row, as its own name.
fn every_field_is_in_the_schema_table(json: &str) {
    let value: serde_json::Value = serde_json::from_str(json)
        .unwrap_or_else(|e| panic!("explain -o json printed no JSON ({e}):\n{json}"));
    let page = read("docs/user/explain.md");
    let table = page
        .split("## JSON output")
        .nth(1)
        .expect("docs/user/explain.md has its JSON schema section");
    let mut paths = Vec::new();
    field_paths(&value, "", &mut paths);
    for (path, name) in paths {
        assert!(
            [
                format!("`{path}`"),
                format!("`{path}[]"),
                format!("`{path}."),
                format!("`{name}`"),
            ]
            .iter()
            .any(|documented| table.contains(documented.as_str())),
            "explain -o json prints `{path}`, which the schema table of docs/user/explain.md does not list"
        );
    }
}

/// Each field's path (`rows[].verdict`) and own name, depth first.
fn field_paths(value: &serde_json::Value, prefix: &str, paths: &mut Vec<(String, String)>) {
    match value {
        serde_json::Value::Object(fields) => {
            for (name, field) in fields {
                let path = if prefix.is_empty() {
                    name.clone()
                } else {
                    format!("{prefix}.{name}")
                };
                paths.push((path.clone(), name.clone()));
                field_paths(field, &path, paths);
            }
        }
        serde_json::Value::Array(items) => {
            for item in items {
                field_paths(item, &format!("{prefix}[]"), paths);
            }
        }
        _ => {}
    }
}

/// A page of the user guide with a walkthrough block is one this test runs.
#[test]
fn every_walkthrough_of_the_user_guide_is_run() {
    let user_guide = repo().join("docs/user");
    for entry in std::fs::read_dir(&user_guide).expect("docs/user") {
        let path = entry.expect("a page").path();
        let page = format!(
            "docs/user/{}",
            path.file_name().expect("a name").to_string_lossy()
        );
        let text = std::fs::read_to_string(&path).expect("read a page");
        if !markdown::steps(&text).is_empty() {
            assert!(
                PAGES.contains(&page.as_str()),
                "{page} has a walkthrough this test does not run: add it to PAGES"
            );
        }
    }
}

/// The chart values of the in-cluster kind path (README.md and the getting
/// started page) are the strings `make demo-in-cluster` and the kubelet
/// end-to-end test install the image with.
#[test]
fn the_kind_path_installs_the_image_with_the_values_the_node_tests_use() {
    const VALUES: [&str; 3] = [
        "image.repository=localhost/configmap-mirror",
        "image.tag=dev",
        "image.pullPolicy=Never",
    ];
    for file in [
        "README.md",
        "docs/user/getting-started.md",
        "hack/demo-in-cluster.sh",
        "tests/in_cluster.rs",
    ] {
        let text = read(file);
        for value in VALUES {
            assert!(text.contains(value), "{file} does not set {value}");
        }
    }
    let image = read("hack/image.sh");
    assert!(
        image.contains("IMAGE=\"${IMAGE:-localhost/configmap-mirror:dev}\""),
        "make image no longer builds localhost/configmap-mirror:dev, the image the kind path loads"
    );
}
