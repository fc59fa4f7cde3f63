//! The Helm chart, charts/configmap-mirror: it lints strictly, its schema
//! refuses what it does not know, what it renders passes a server-side dry
//! run under Pod Security "restricted", an install grants exactly the
//! documented permissions in either mode, an upgrade reaches the Deployment,
//! an uninstall leaves nothing, and the binary runs with the flags and the
//! token it gives. Also: the manifests committed under deploy/ and
//! configmap-mirror.yaml are those the chart renders, and every place that
//! names the version agrees.
//!
//! helm is the one `make helm` builds (hack/install-helm.sh, the release in
//! hack/helm-version, or HELM_VERSION); without it these tests fail, naming
//! that command.

use crate::common;

use std::{
    collections::BTreeSet,
    path::{Path, PathBuf},
    process::Command,
};

use common::{
    ControllerProcess, PATIENCE, Scene, find_helm, helm, helm_binary, helm_on, rendered, run,
    run_ok,
};
use k8s_openapi::api::{
    apps::v1::Deployment,
    core::v1::{Namespace, ServiceAccount},
};
use kube::{
    Api, Client,
    api::{Patch, PatchParams, PostParams},
};
use serde_json::{Value, json};
use testenv::{ControlPlane, LazyControlPlane, wait_for};
use tokio::sync::OnceCell;

const CHART: &str = "charts/configmap-mirror";
const ALL_TOGGLES: &str = "charts/configmap-mirror/ci/all-toggles-values.yaml";
const ESCAPE_HATCHES: &str = "charts/configmap-mirror/ci/escape-hatches-values.yaml";

/// Apart from the other topics' tests: one test runs the controller with
/// the chart's cluster-wide flags, which would serve their namespaces too.
fn control_plane() -> &'static ControlPlane {
    static CHART_PLANE: LazyControlPlane = LazyControlPlane::new();
    CHART_PLANE.get()
}

fn scratch(name: &str) -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}-{}", std::process::id()))
}

/// A namespace where Pod Security "restricted" is enforced and warned about.
async fn restricted_namespace(client: &Client, prefix: &str) -> String {
    let name = testenv::fresh_namespace(client, prefix)
        .await
        .expect("namespace");
    let labels = json!({"metadata": {"labels": {
        "pod-security.kubernetes.io/enforce": "restricted",
        "pod-security.kubernetes.io/enforce-version": "latest",
        "pod-security.kubernetes.io/warn": "restricted",
        "pod-security.kubernetes.io/warn-version": "latest",
    }}});
    Api::<Namespace>::all(client.clone())
        .patch(&name, &PatchParams::default(), &Patch::Merge(&labels))
        .await
        .expect("label the namespace");
    // The `helm test` Pod runs as the namespace's default ServiceAccount,
    // which kube-controller-manager adds to every namespace; this control
    // plane runs no such controller.
    let default_account: ServiceAccount =
        serde_json::from_value(json!({"metadata": {"name": "default"}})).expect("an account");
    let accounts = Api::<ServiceAccount>::namespaced(client.clone(), &name);
    if let Err(e) = accounts
        .create(&PostParams::default(), &default_account)
        .await
    {
        let exists = accounts.get_opt("default").await.ok().flatten().is_some();
        assert!(exists, "the default ServiceAccount: {e}");
    }
    name
}

/// The Prometheus Operator's CRDs, for the ServiceMonitor and PrometheusRule.
async fn prometheus_operator_crds(control_plane: &'static ControlPlane) {
    static INSTALLED: OnceCell<()> = OnceCell::const_new();
    INSTALLED
        .get_or_init(|| async {
            run_ok(
                control_plane.kubectl().current_dir(common::repo()).args([
                    "apply",
                    "--server-side",
                    "-f",
                    "tests/fixtures/prometheus-operator-crds/",
                ]),
                None,
            );
            run_ok(
                control_plane.kubectl().args([
                    "wait",
                    "--for=condition=Established",
                    "--timeout=60s",
                    "crd/servicemonitors.monitoring.coreos.com",
                    "crd/prometheusrules.monitoring.coreos.com",
                ]),
                None,
            );
        })
        .await;
}

/// A release name of its own for each test: the cluster-wide objects are
/// named after it. It contains the chart's name, so objects are named
/// exactly that.
fn release_in(namespace: &str) -> String {
    let suffix = namespace.rsplit('-').next().unwrap_or(namespace);
    format!("configmap-mirror-{suffix}")
}

/// `helm install` of the chart, without its CRD: the releases on this
/// control plane share it, and one CRD has one owner (the ClusterMirror
/// topic installs it from the chart, on a control plane of its own).
fn install(
    control_plane: &ControlPlane,
    release: &str,
    namespace: &str,
    values: &[&str],
) -> String {
    run_ok(
        helm_on(
            control_plane,
            &["install", release, CHART, "--namespace", namespace],
        )
        .args(NO_CRDS)
        .args(values),
        None,
    )
}

const NO_CRDS: [&str; 2] = ["--set", "crds.enabled=false"];

#[test]
fn helm_lint_strict_passes_in_every_mode() {
    for values in [
        vec![],
        vec!["-f", ALL_TOGGLES],
        vec!["-f", "charts/configmap-mirror/ci/namespaced-values.yaml"],
        vec!["-f", ESCAPE_HATCHES],
    ] {
        let out = run_ok(helm(&["lint", "--strict", CHART]).args(&values), None);
        assert!(
            out.contains("1 chart(s) linted, 0 chart(s) failed"),
            "{out}"
        );
    }
}

#[test]
fn the_schema_refuses_a_wrong_type_or_an_unknown_key_naming_it() {
    let render = |set: &[&str]| run(helm(&["template", "r", CHART]).args(set), None);
    let accepted = render(&["--set", "controller.concurrency=4"]);
    assert!(accepted.ok, "{}", accepted.stderr);
    assert!(
        accepted.stdout.contains("\"--concurrency=4\""),
        "{}",
        accepted.stdout
    );

    // Each refusal names the value: its path for a wrong type, the key
    // itself for an unknown one.
    for (set, named) in [
        (
            vec!["--set", "controller.concurrency=many"],
            "'/controller/concurrency': got string, want integer",
        ),
        (
            vec!["--set", "leaderElection.enabled=sometimes"],
            "'/leaderElection/enabled': got string, want boolean",
        ),
        (
            vec!["--set", "controller.slowRetry=soon"],
            "'/controller/slowRetry'",
        ),
        (
            vec!["--set", "controller.logFormat=xml"],
            "'/controller/logFormat'",
        ),
        (
            vec!["--set", "secrets.enabled=sometimes"],
            "'/secrets/enabled': got string, want boolean",
        ),
        (
            vec!["--set", "secrets.digestKeySecret=no-namespace"],
            "'/secrets/digestKeySecret'",
        ),
        (
            vec!["--set", "admissionPolicy.enabled=sometimes"],
            "'/admissionPolicy/enabled': got string, want boolean",
        ),
        (
            vec!["--set", "admissionPolicy.exemptGroup={ops}"],
            "'exemptGroup' not allowed",
        ),
        (vec!["--set", "replicas=3"], "'replicas' not allowed"),
        (
            vec!["--set", "controller.concurency=4"],
            "'concurency' not allowed",
        ),
        (
            vec!["--set", "metrics.serviceMonitor.intervall=1m"],
            "'intervall' not allowed",
        ),
        (
            vec!["--set", "resources.request.cpu=1"],
            "'request' not allowed",
        ),
        (
            vec![
                "--set-json",
                r#"tolerations=[{"key":"a","operater":"Exists"}]"#,
            ],
            "'operater' not allowed",
        ),
        (
            vec![
                "--set-json",
                r#"affinity={"podAntiAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":[{"weight":1,"podAffinityTerm":{"topologyKey":"k","labelSelectr":{}}}]}}"#,
            ],
            "'labelSelectr' not allowed",
        ),
        // The escape hatches are checked as strictly, to their leaves.
        (
            vec!["--set", "podSecurityContext.runAsUsr=1000"],
            "'runAsUsr' not allowed",
        ),
        (
            vec!["--set", "podSecurityContext.runAsUser=root"],
            "'/podSecurityContext/runAsUser'",
        ),
        (
            vec!["--set", "securityContext.capabilities.dorp={ALL}"],
            "'dorp' not allowed",
        ),
        (
            vec!["--set-json", r#"extraArgs=["--x",3]"#],
            "'/extraArgs/1': got number, want string",
        ),
        (
            vec!["--set-json", r#"extraEnv=[{"name":"A","valu":"b"}]"#],
            "'valu' not allowed",
        ),
        (
            vec![
                "--set-json",
                r#"extraEnv=[{"name":"A","valueFrom":{"secretKeyRef":{"name":"s","kye":"k"}}}]"#,
            ],
            "'kye' not allowed",
        ),
        (
            vec![
                "--set-json",
                r#"extraVolumes=[{"name":"a","configmap":{"name":"c"}}]"#,
            ],
            "'configmap' not allowed",
        ),
        (
            vec![
                "--set-json",
                r#"extraVolumeMounts=[{"name":"a","mountpath":"/x"}]"#,
            ],
            "'mountpath' not allowed",
        ),
        (
            vec!["--set", "commonLabels.team=7"],
            "'/commonLabels/team': got number, want string",
        ),
        (
            vec!["--set", "namespaceOverride=Team_A"],
            "'/namespaceOverride'",
        ),
        (
            vec!["--set", "image.registri=mirror"],
            "'registri' not allowed",
        ),
        (
            vec!["--set", "image.registry=a registry"],
            "'/image/registry'",
        ),
        (
            vec!["--set", "controller.logLevel="],
            "'/controller/logLevel'",
        ),
        (
            vec!["--set", "controller.loglevel=debug"],
            "'loglevel' not allowed",
        ),
        // What a parent chart may set: `global` and `enabled`, of their types.
        (vec!["--set", "globals.x=1"], "'globals' not allowed"),
        (
            vec!["--set", "enabled=maybe"],
            "'/enabled': got string, want boolean",
        ),
    ] {
        let refused = render(&set);
        assert!(!refused.ok, "{set:?} was accepted:\n{}", refused.stdout);
        assert!(
            refused.stderr.contains("schema") && refused.stderr.contains(named),
            "{set:?}: the error does not say {named}: {}",
            refused.stderr
        );
    }
}

/// The alerts select the series of this install's scrape job: without the
/// chart's ServiceMonitor nor a job named, none would ever match and
/// ConfigMapMirrorDown would fire on a healthy install, so the chart
/// refuses to render, naming the values that fix it.
#[test]
fn alerts_without_a_scrape_job_are_refused_naming_the_values_to_set() {
    let render = |set: &[&str]| {
        let mut cmd = helm(&["template", "r", CHART, "--namespace", "team"]);
        for value in set {
            cmd.args(["--set", value]);
        }
        run(&mut cmd, None)
    };
    let refused = render(&["metrics.prometheusRule.enabled=true"]);
    assert!(!refused.ok, "rendered:\n{}", refused.stdout);
    for named in [
        "metrics.serviceMonitor.enabled=true",
        "metrics.prometheusRule.job",
    ] {
        assert!(
            refused.stderr.contains(named),
            "the refusal does not name {named}: {}",
            refused.stderr
        );
    }

    // A scrape job of one's own: the alerts select its series.
    let own = render(&[
        "metrics.prometheusRule.enabled=true",
        "metrics.prometheusRule.job=kubernetes-pods",
    ]);
    assert!(own.ok, "{}", own.stderr);
    assert!(
        own.stdout
            .contains(r#"up{namespace="team", job="kubernetes-pods"}"#),
        "{}",
        own.stdout
    );
    // The chart's ServiceMonitor: the job is the Service's name.
    let scraped = render(&[
        "metrics.prometheusRule.enabled=true",
        "metrics.serviceMonitor.enabled=true",
    ]);
    assert!(scraped.ok, "{}", scraped.stderr);
    assert!(
        scraped
            .stdout
            .contains(r#"up{namespace="team", job="r-configmap-mirror"}"#),
        "{}",
        scraped.stdout
    );
}

/// The controller listens on both stacks, so the kubelet's probes reach
/// it on IPv4-only, IPv6-only and dual-stack clusters alike.
#[test]
fn the_controller_listens_on_ipv4_and_ipv6() {
    let rendered = run_ok(
        &mut helm(&[
            "template",
            "r",
            CHART,
            "--set",
            "controller.httpPort=9090",
            "--show-only",
            "templates/deployment.yaml",
        ]),
        None,
    );
    assert!(
        rendered.contains(r#"- "--http-addr=[::]:9090""#),
        "{rendered}"
    );
}

/// The one rendered object of this kind whose name ends so.
fn object<'a>(objects: &'a [Value], kind: &str, name_ends: &str) -> &'a Value {
    let found: Vec<&Value> = objects
        .iter()
        .filter(|o| o["kind"] == kind)
        .filter(|o| {
            o["metadata"]["name"]
                .as_str()
                .is_some_and(|n| n.ends_with(name_ends))
        })
        .collect();
    assert_eq!(found.len(), 1, "{kind} *{name_ends}: {found:?}");
    found[0]
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .map(|items| {
            items
                .iter()
                .map(|item| {
                    item.as_str()
                        .map(str::to_owned)
                        .unwrap_or_else(|| item.to_string())
                })
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn the_escape_hatches_render_where_they_belong() {
    let objects = rendered(&["-f", ESCAPE_HATCHES]);
    assert!(objects.len() >= 8, "{objects:?}");

    // commonLabels on every object, the Pods included; the chart's own
    // labels stay.
    let pod_templates = objects
        .iter()
        .filter_map(|o| o["spec"]["template"].get("metadata"));
    for metadata in objects.iter().map(|o| &o["metadata"]).chain(pod_templates) {
        let labels = &metadata["labels"];
        assert_eq!(labels["example.com/team"], "platform", "{metadata}");
        assert_eq!(
            labels["app.kubernetes.io/part-of"], "workshop",
            "{metadata}"
        );
        assert_eq!(labels["app.kubernetes.io/instance"], "r", "{metadata}");
    }
    // namespaceOverride: every namespaced object, and every binding's
    // subject, is in it; the release's namespace holds nothing.
    for o in &objects {
        let cluster_scoped = matches!(
            o["kind"].as_str(),
            Some("ClusterRole" | "ClusterRoleBinding" | "CustomResourceDefinition")
        );
        let namespace = o["metadata"]["namespace"].as_str();
        if cluster_scoped {
            assert_eq!(namespace, None, "{o}");
        } else {
            assert_eq!(namespace, Some("configmap-mirror-elsewhere"), "{o}");
        }
        for subject in o["subjects"].as_array().into_iter().flatten() {
            assert_eq!(subject["namespace"], "configmap-mirror-elsewhere", "{o}");
        }
    }

    let deployment = object(&objects, "Deployment", "configmap-mirror");
    let pod = &deployment["spec"]["template"]["spec"];
    let container = &pod["containers"][0];
    let image = container["image"].as_str().expect("an image");
    assert!(
        image.starts_with("registry.example.com/mirror/ghcr.io/workshop-io/configmap-mirror:"),
        "{image}"
    );
    let args = strings(&container["args"]);
    assert!(
        args.contains(&"--log-level=info,configmap_mirror=debug".to_owned()),
        "{args:?}"
    );
    assert_eq!(
        args.last().map(String::as_str),
        Some("--leader-election-identity=$(POD_NAME).$(NODE_NAME)"),
        "extraArgs come last: {args:?}"
    );
    let env: Vec<&str> = container["env"]
        .as_array()
        .expect("env")
        .iter()
        .filter_map(|e| e["name"].as_str())
        .collect();
    assert_eq!(env, ["POD_NAMESPACE", "POD_NAME", "NODE_NAME", "TZ"]);
    assert_eq!(
        container["env"][2]["valueFrom"]["fieldRef"]["fieldPath"],
        "spec.nodeName"
    );
    assert_eq!(container["volumeMounts"][0]["mountPath"], "/etc/ssl/extra");
    assert_eq!(container["volumeMounts"][1]["name"], "scratch");
    assert_eq!(pod["volumes"][0]["configMap"]["name"], "ca-bundle");
    assert_eq!(pod["volumes"][1]["emptyDir"]["sizeLimit"], "16Mi");
    // runAsUser and runAsGroup dropped, the rest of the hardening kept.
    assert_eq!(
        pod["securityContext"],
        json!({"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}})
    );
    let hardened = json!({
        "allowPrivilegeEscalation": false,
        "readOnlyRootFilesystem": true,
        "capabilities": {"drop": ["ALL"]},
    });
    assert_eq!(container["securityContext"], hardened);

    // The `helm test` Pod: the same image and security, the probe of /readyz
    // through the Service by its address from the environment.
    let test = object(&objects, "Pod", "-test-readyz");
    assert_eq!(test["metadata"]["annotations"]["helm.sh/hook"], "test");
    assert_eq!(test["spec"]["securityContext"], pod["securityContext"]);
    let probe = &test["spec"]["containers"][0];
    assert_eq!(probe["image"], image);
    assert_eq!(probe["securityContext"], hardened);
    assert_eq!(
        strings(&probe["args"]),
        [
            "probe",
            "--address=$(R_CONFIGMAP_MIRROR_SERVICE_HOST)",
            "http://r-configmap-mirror.configmap-mirror-elsewhere.svc:8080/readyz",
        ]
    );
}

#[test]
fn the_defaults_render_none_of_the_escape_hatches() {
    let objects = rendered(&[]);
    let deployment = object(&objects, "Deployment", "configmap-mirror");
    let pod = &deployment["spec"]["template"]["spec"];
    let container = &pod["containers"][0];
    assert!(
        !strings(&container["args"])
            .iter()
            .any(|a| a.starts_with("--log-level")),
        "info is the binary's default"
    );
    assert_eq!(container["env"].as_array().map(Vec::len), Some(2));
    assert!(container.get("volumeMounts").is_none() && pod.get("volumes").is_none());
    assert_eq!(
        pod["securityContext"],
        json!({
            "runAsNonRoot": true,
            "runAsUser": 65532,
            "runAsGroup": 65532,
            "seccompProfile": {"type": "RuntimeDefault"},
        })
    );
    assert_eq!(
        container["image"],
        format!(
            "ghcr.io/workshop-io/configmap-mirror:{}",
            env!("CARGO_PKG_VERSION")
        )
    );
    for o in &objects {
        assert!(
            o["metadata"]["namespace"].is_null() || o["metadata"]["namespace"] == "home",
            "{o}"
        );
    }
}

#[test]
fn common_labels_cannot_replace_the_charts_own() {
    for key in [
        "app.kubernetes.io/name",
        "app.kubernetes.io/component",
        "helm.sh/chart",
    ] {
        let refused = run(
            helm(&["template", "r", CHART])
                .args(["--set-json", &format!(r#"commonLabels={{"{key}":"x"}}"#)]),
            None,
        );
        assert!(!refused.ok, "{key}: {}", refused.stdout);
        assert!(
            refused
                .stderr
                .contains(&format!("commonLabels: {key} is the chart's own label")),
            "{}",
            refused.stderr
        );
    }
    // Other keys of the same prefix are the user's.
    let objects = rendered(&[
        "--set",
        "commonLabels.app\\.kubernetes\\.io/part-of=workshop",
    ]);
    assert!(
        objects
            .iter()
            .all(|o| o["metadata"]["labels"]["app.kubernetes.io/part-of"] == "workshop")
    );
}

/// Copies the directory `from` to `to`, recursively.
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read dir").flatten() {
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

#[test]
fn as_a_subchart_it_takes_the_parents_globals_and_condition_and_still_refuses_typos() {
    let parent = scratch("parent-chart");
    let _ = std::fs::remove_dir_all(&parent);
    copy_dir(
        &common::repo().join(CHART),
        &parent.join("charts/configmap-mirror"),
    );
    std::fs::write(
        parent.join("Chart.yaml"),
        format!(
            "apiVersion: v2\nname: platform\nversion: 1.0.0\ndependencies:\n  \
             - name: configmap-mirror\n    version: \"{}\"\n    condition: configmap-mirror.enabled\n",
            env!("CARGO_PKG_VERSION")
        ),
    )
    .expect("write Chart.yaml");
    std::fs::write(
        parent.join("values.yaml"),
        "global:\n  imageRegistry: registry.example.com\n  labels:\n    team: platform\n\
         configmap-mirror:\n  enabled: true\n  controller:\n    concurrency: 4\n",
    )
    .expect("write values.yaml");
    let parent_dir = parent.to_string_lossy().into_owned();
    let render = |set: &[&str]| run(helm(&["template", "p", &parent_dir]).args(set), None);

    let accepted = render(&[]);
    assert!(accepted.ok, "{}", accepted.stderr);
    assert!(
        accepted.stdout.contains("\"--concurrency=4\""),
        "{}",
        accepted.stdout
    );
    let accepted = render(&["--set", "global.anything.nested=1"]);
    assert!(accepted.ok, "{}", accepted.stderr);

    let off = render(&["--set", "configmap-mirror.enabled=false"]);
    assert!(off.ok, "{}", off.stderr);
    assert!(!off.stdout.contains("kind: Deployment"), "{}", off.stdout);

    let refused = render(&["--set", "configmap-mirror.controller.concurency=4"]);
    assert!(!refused.ok, "{}", refused.stdout);
    assert!(
        refused.stderr.contains("schema") && refused.stderr.contains("'concurency' not allowed"),
        "{}",
        refused.stderr
    );
    let refused = render(&["--set", "configmap-mirror.enabld=true"]);
    assert!(!refused.ok, "{}", refused.stdout);
    assert!(
        refused.stderr.contains("'enabld' not allowed"),
        "{}",
        refused.stderr
    );
    let _ = std::fs::remove_dir_all(&parent);
}

#[tokio::test]
async fn rendered_manifests_pass_a_server_side_dry_run_under_restricted_pod_security() {
    let control_plane = control_plane();
    prometheus_operator_crds(control_plane).await;
    let client = control_plane.client().await;
    let namespace = restricted_namespace(&client, "chart-dry-run").await;
    let watched = testenv::fresh_namespace(&client, "chart-dry-run-watched")
        .await
        .expect("namespace");
    let elsewhere = restricted_namespace(&client, "chart-dry-run-elsewhere").await;
    let release = release_in(&namespace);
    let single_namespace = format!("controller.watchNamespace={watched}");
    let override_namespace = format!("namespaceOverride={elsewhere}");
    for (what, values, kinds) in [
        (
            "the defaults",
            vec![],
            // The `helm test` Pod is enforced, not only warned about.
            vec!["clusterrole.rbac", "deployment.apps", "pod/"],
        ),
        (
            "the escape hatches",
            vec!["-f", ESCAPE_HATCHES, "--set", override_namespace.as_str()],
            vec!["clusterrole.rbac", "deployment.apps", "pod/"],
        ),
        (
            "every toggle on",
            vec!["-f", ALL_TOGGLES],
            vec![
                "clusterrole.rbac",
                "servicemonitor.monitoring.coreos.com",
                "prometheusrule.monitoring.coreos.com",
                "configmap/",
                "poddisruptionbudget.policy",
                "validatingadmissionpolicy.admissionregistration.k8s.io/",
                "validatingadmissionpolicybinding.admissionregistration.k8s.io/",
            ],
        ),
        (
            "single-namespace mode",
            vec!["--set", single_namespace.as_str()],
            vec!["role.rbac", "rolebinding.rbac", "deployment.apps"],
        ),
    ] {
        let manifest = run_ok(
            helm(&["template", &release, CHART, "--namespace", &namespace]).args(&values),
            None,
        );
        let documents = manifest.lines().filter(|l| l.starts_with("kind: ")).count();
        let applied = run(
            control_plane
                .kubectl()
                .args(["apply", "--dry-run=server", "-f", "-"]),
            Some(&manifest),
        );
        assert!(applied.ok, "dry run of {what} failed: {}", applied.stderr);
        assert!(
            !applied.stderr.contains("Warning"),
            "warnings for {what}: {}",
            applied.stderr
        );
        let accepted = applied
            .stdout
            .lines()
            .filter(|l| l.ends_with("(server dry run)"))
            .count();
        assert_eq!(accepted, documents, "{what}: {}", applied.stdout);
        for kind in kinds {
            assert!(
                applied.stdout.contains(kind),
                "{what}: no {kind} in {}",
                applied.stdout
            );
        }
        let cluster_role = applied.stdout.contains("clusterrole.rbac");
        assert_eq!(
            cluster_role,
            what != "single-namespace mode",
            "{}",
            applied.stdout
        );
    }
}

#[tokio::test]
async fn an_install_with_the_escape_hatches_carries_them_into_another_namespace() {
    let control_plane = control_plane();
    let client = control_plane.client().await;
    let home = testenv::fresh_namespace(&client, "chart-hatches-home")
        .await
        .expect("namespace");
    let elsewhere = restricted_namespace(&client, "chart-hatches").await;
    let release = release_in(&elsewhere);
    let before_install = everything_in(control_plane, &home);
    let installed = run(
        helm_on(
            control_plane,
            &[
                "install",
                &release,
                CHART,
                "--namespace",
                &home,
                "-f",
                ESCAPE_HATCHES,
                NO_CRDS[0],
                NO_CRDS[1],
            ],
        )
        .args(["--set", &format!("namespaceOverride={elsewhere}")]),
        None,
    );
    assert!(installed.ok, "{}{}", installed.stdout, installed.stderr);
    assert!(
        !installed.stderr.contains("PodSecurity"),
        "{}",
        installed.stderr
    );
    assert!(
        installed
            .stdout
            .contains(&format!("installed in namespace {elsewhere}")),
        "the notes name the namespace: {}",
        installed.stdout
    );

    // Everything in the other namespace, and labeled; nothing but Helm's
    // record of the release at home.
    let at_home: BTreeSet<String> = everything_in(control_plane, &home)
        .difference(&before_install)
        .filter(|o| !o.starts_with("secret/sh.helm.release."))
        .cloned()
        .collect();
    assert_eq!(at_home, BTreeSet::new());
    let labeled = run_ok(
        control_plane.kubectl().args([
            "get",
            "deployments,services,serviceaccounts,roles,rolebindings,poddisruptionbudgets",
            "-n",
            &elsewhere,
            "-l",
            "example.com/team=platform",
            "-o",
            "name",
        ]),
        None,
    );
    assert_eq!(labeled.lines().count(), 6, "{labeled}");
    let cluster_role = run_ok(
        control_plane.kubectl().args([
            "get",
            "clusterrole",
            &release,
            "-o",
            "jsonpath={.metadata.labels.example\\.com/team}",
        ]),
        None,
    );
    assert_eq!(cluster_role, "platform");

    let deployment = Api::<Deployment>::namespaced(client.clone(), &elsewhere)
        .get(&release)
        .await
        .expect("the Deployment, in the other namespace");
    let pod = deployment
        .spec
        .and_then(|spec| spec.template.spec)
        .expect("a Pod template");
    let security = pod
        .security_context
        .clone()
        .expect("a Pod security context");
    assert_eq!((security.run_as_user, security.run_as_group), (None, None));
    assert_eq!(security.run_as_non_root, Some(true));
    let container = &pod.containers[0];
    let args = container.args.clone().unwrap_or_default();
    assert!(
        args.contains(&"--log-level=info,configmap_mirror=debug".to_owned()),
        "{args:?}"
    );
    assert_eq!(
        args.last().map(String::as_str),
        Some("--leader-election-identity=$(POD_NAME).$(NODE_NAME)")
    );
    let env: Vec<&str> = container
        .env
        .iter()
        .flatten()
        .map(|e| e.name.as_str())
        .collect();
    assert_eq!(env, ["POD_NAMESPACE", "POD_NAME", "NODE_NAME", "TZ"]);
    let mounts: Vec<&str> = container
        .volume_mounts
        .iter()
        .flatten()
        .map(|m| m.mount_path.as_str())
        .collect();
    assert_eq!(mounts, ["/etc/ssl/extra", "/tmp"]);
    assert_eq!(pod.volumes.map(|v| v.len()), Some(2));

    // The account, in the other namespace, holds the Lease there.
    let account = service_account(&elsewhere, &release);
    for verb in LEASE_VERBS {
        assert!(can_i(
            control_plane,
            &account,
            verb,
            "leases.coordination.k8s.io",
            &["-n", &elsewhere]
        ));
    }
    run_ok(
        &mut helm_on(
            control_plane,
            &["uninstall", &release, "--namespace", &home],
        ),
        None,
    );
}

/// (resource, verb) pairs `kubectl auth can-i --list` grants the account in
/// a namespace, leaving out what every authenticated user may do (ask
/// about its own access and identity).
fn granted(
    control_plane: &ControlPlane,
    account: &str,
    namespace: &str,
) -> BTreeSet<(String, String)> {
    let out = run_ok(
        control_plane.kubectl().args([
            "auth",
            "can-i",
            "--list",
            "--no-headers",
            "-n",
            namespace,
            &format!("--as={account}"),
        ]),
        None,
    );
    let mut pairs = BTreeSet::new();
    for line in out.lines() {
        let Some(resource) = line.split_whitespace().next() else {
            continue;
        };
        // Non-resource URLs have no resource: their line starts with "[".
        if resource.starts_with('[') || resource.starts_with("selfsubject") {
            continue;
        }
        let verbs = line
            .rsplit_once('[')
            .and_then(|(_, verbs)| verbs.strip_suffix(']'))
            .unwrap_or_else(|| panic!("no verbs in {line:?}"));
        for verb in verbs.split_whitespace() {
            pairs.insert((resource.to_owned(), verb.to_owned()));
        }
    }
    pairs
}

fn pairs(rules: &[(&str, &[&str])]) -> BTreeSet<(String, String)> {
    rules
        .iter()
        .flat_map(|(resource, verbs)| verbs.iter().map(|v| (resource.to_string(), v.to_string())))
        .collect()
}

const CONFIGMAP_VERBS: &[&str] = &["get", "list", "watch", "create", "update", "delete"];
const EVENT_VERBS: &[&str] = &["create", "patch"];
const LEASE_VERBS: &[&str] = &["get", "create", "update"];
/// ClusterMirrors, their status, the one CRD (by name), and MirrorGrants:
/// cluster-wide.
const CLUSTER_MIRROR_RULES: [(&str, &[&str]); 6] = [
    (
        "clustermirrors.mirror.workshop.io",
        &["get", "list", "watch"],
    ),
    ("clustermirrors.mirror.workshop.io/status", &["patch"]),
    (
        "customresourcedefinitions.apiextensions.k8s.io",
        &["get", "list", "watch"],
    ),
    ("mirrorgrants.mirror.workshop.io", &["list", "watch"]),
    ("mirrors.mirror.workshop.io", &["get", "list", "watch"]),
    ("mirrors.mirror.workshop.io/status", &["patch"]),
];

/// `kubectl auth can-i` as the account: `where` is `-n <namespace>` or
/// `--all-namespaces`.
fn can_i(
    control_plane: &ControlPlane,
    account: &str,
    verb: &str,
    resource: &str,
    r#where: &[&str],
) -> bool {
    let ran = run(
        control_plane
            .kubectl()
            .args(["auth", "can-i", verb, resource, &format!("--as={account}")])
            .args(r#where),
        None,
    );
    match ran.stdout.trim() {
        "yes" => true,
        "no" => false,
        _ => panic!(
            "kubectl auth can-i {verb} {resource}: {}{}",
            ran.stdout, ran.stderr
        ),
    }
}

/// Denied to the account, whatever the mode: a sample of what the
/// controller never does.
fn assert_denied_sample(control_plane: &ControlPlane, account: &str, namespace: &str) {
    let here = ["-n", namespace];
    let everywhere = ["--all-namespaces"];
    for (verb, resource, r#where) in [
        ("patch", "configmaps", &here[..]),
        ("deletecollection", "configmaps", &here[..]),
        ("patch", "configmaps", &everywhere[..]),
        ("get", "secrets", &here[..]),
        ("list", "secrets", &everywhere[..]),
        ("watch", "secrets", &here[..]),
        ("get", "namespaces", &everywhere[..]),
        ("create", "namespaces", &everywhere[..]),
        ("delete", "namespaces", &everywhere[..]),
        ("create", "events", &here[..]),
        ("delete", "events.events.k8s.io", &here[..]),
        ("list", "leases.coordination.k8s.io", &here[..]),
        ("delete", "leases.coordination.k8s.io", &here[..]),
        ("patch", "leases.coordination.k8s.io", &here[..]),
        (
            "get",
            "leases.coordination.k8s.io",
            &["-n", "kube-system"][..],
        ),
        ("list", "pods", &here[..]),
        ("create", "deployments.apps", &here[..]),
        (
            "escalate",
            "clusterroles.rbac.authorization.k8s.io",
            &everywhere[..],
        ),
        (
            "bind",
            "clusterroles.rbac.authorization.k8s.io",
            &everywhere[..],
        ),
        ("impersonate", "serviceaccounts", &here[..]),
        ("*", "*", &everywhere[..]),
    ] {
        assert!(
            !can_i(control_plane, account, verb, resource, r#where),
            "{account} may {verb} {resource} {where:?}"
        );
    }
}

fn service_account(namespace: &str, release: &str) -> String {
    format!("system:serviceaccount:{namespace}:{release}")
}

#[tokio::test]
async fn an_install_grants_exactly_the_documented_permissions_cluster_wide() {
    let control_plane = control_plane();
    let client = control_plane.client().await;
    let namespace = restricted_namespace(&client, "chart-cluster").await;
    let elsewhere = testenv::fresh_namespace(&client, "chart-cluster-other")
        .await
        .expect("namespace");
    let release = release_in(&namespace);
    let notes = install(control_plane, &release, &namespace, &[]);
    for told in [
        "label configmap colors workshop.io/managed=true",
        "colors-synced",
        "/metrics",
        "metrics.dashboard.enabled=true",
    ] {
        assert!(
            notes.contains(told),
            "the notes do not say {told:?}:\n{notes}"
        );
    }
    let account = service_account(&namespace, &release);

    let everywhere = [
        ("configmaps", CONFIGMAP_VERBS),
        ("namespaces", &["list", "watch"][..]),
        ("events.events.k8s.io", EVENT_VERBS),
        CLUSTER_MIRROR_RULES[0],
        CLUSTER_MIRROR_RULES[1],
        CLUSTER_MIRROR_RULES[2],
        CLUSTER_MIRROR_RULES[3],
        CLUSTER_MIRROR_RULES[4],
        CLUSTER_MIRROR_RULES[5],
    ];
    let mut at_home = everywhere.to_vec();
    at_home.push(("leases.coordination.k8s.io", LEASE_VERBS));
    assert_eq!(
        granted(control_plane, &account, &namespace),
        pairs(&at_home)
    );
    assert_eq!(
        granted(control_plane, &account, &elsewhere),
        pairs(&everywhere)
    );

    for (resource, verbs) in &everywhere[..3] {
        for verb in *verbs {
            assert!(
                can_i(
                    control_plane,
                    &account,
                    verb,
                    resource,
                    &["--all-namespaces"]
                ),
                "{verb} {resource}"
            );
        }
    }
    // The CRD checks read the ClusterMirror and Mirror CRDs by name, and
    // no other.
    let crds = "customresourcedefinitions.apiextensions.k8s.io";
    for (verb, resource, allowed) in [
        (
            "get",
            format!("{crds}/clustermirrors.mirror.workshop.io"),
            true,
        ),
        ("get", format!("{crds}/mirrors.mirror.workshop.io"), true),
        ("get", format!("{crds}/other.example.com"), false),
        ("list", crds.to_owned(), false),
        (
            "delete",
            format!("{crds}/clustermirrors.mirror.workshop.io"),
            false,
        ),
    ] {
        assert_eq!(
            can_i(control_plane, &account, verb, &resource, &[]),
            allowed,
            "{verb} {resource}"
        );
    }
    for verb in LEASE_VERBS {
        assert!(can_i(
            control_plane,
            &account,
            verb,
            "leases.coordination.k8s.io",
            &["-n", &namespace]
        ));
        assert!(!can_i(
            control_plane,
            &account,
            verb,
            "leases.coordination.k8s.io",
            &["-n", &elsewhere]
        ));
    }
    assert_denied_sample(control_plane, &account, &namespace);
    assert_denied_sample(control_plane, &account, &elsewhere);
}

const SECRET_VERBS: &[&str] = CONFIGMAP_VERBS;

#[tokio::test]
async fn an_install_mirroring_secrets_adds_exactly_the_secret_verbs_cluster_wide() {
    let control_plane = control_plane();
    let client = control_plane.client().await;
    let namespace = restricted_namespace(&client, "chart-secrets").await;
    let elsewhere = testenv::fresh_namespace(&client, "chart-secrets-other")
        .await
        .expect("namespace");
    let release = release_in(&namespace);
    install(
        control_plane,
        &release,
        &namespace,
        &["--set", "secrets.enabled=true"],
    );
    let args = deployment_args(&client, &namespace, &release).await;
    assert!(
        args.contains(&"--kinds=configmaps,secrets".to_owned()),
        "{args:?}"
    );
    let account = service_account(&namespace, &release);
    let everywhere = [
        ("configmaps", CONFIGMAP_VERBS),
        ("secrets", SECRET_VERBS),
        ("namespaces", &["list", "watch"][..]),
        ("events.events.k8s.io", EVENT_VERBS),
        CLUSTER_MIRROR_RULES[0],
        CLUSTER_MIRROR_RULES[1],
        CLUSTER_MIRROR_RULES[2],
        CLUSTER_MIRROR_RULES[3],
        CLUSTER_MIRROR_RULES[4],
        CLUSTER_MIRROR_RULES[5],
    ];
    assert_eq!(
        granted(control_plane, &account, &elsewhere),
        pairs(&everywhere)
    );
    for verb in ["patch", "deletecollection"] {
        assert!(
            !can_i(
                control_plane,
                &account,
                verb,
                "secrets",
                &["--all-namespaces"]
            ),
            "{verb} secrets"
        );
    }

    // Only cluster-wide: in single-namespace mode the chart refuses it,
    // saying what to change.
    let refused = run(
        &mut helm(&[
            "template",
            "r",
            CHART,
            "--set",
            "secrets.enabled=true",
            "--set",
            "controller.watchNamespace=apps",
        ]),
        None,
    );
    assert!(!refused.ok, "rendered: {}", refused.stdout);
    assert!(
        refused.stderr.contains("secrets.enabled")
            && refused.stderr.contains("controller.watchNamespace"),
        "{}",
        refused.stderr
    );
}

#[tokio::test]
async fn an_install_in_single_namespace_mode_grants_only_namespaced_permissions() {
    let control_plane = control_plane();
    let client = control_plane.client().await;
    let namespace = restricted_namespace(&client, "chart-single").await;
    let watched = testenv::fresh_namespace(&client, "chart-single-watched")
        .await
        .expect("namespace");
    let elsewhere = testenv::fresh_namespace(&client, "chart-single-other")
        .await
        .expect("namespace");
    let release = release_in(&namespace);
    let notes = install(
        control_plane,
        &release,
        &namespace,
        &["--set", &format!("controller.watchNamespace={watched}")],
    );
    assert!(
        notes.contains(&format!("-n {watched} label configmap colors")),
        "{notes}"
    );
    let account = service_account(&namespace, &release);

    assert_eq!(
        granted(control_plane, &account, &watched),
        pairs(&[
            ("configmaps", CONFIGMAP_VERBS),
            ("events.events.k8s.io", EVENT_VERBS)
        ])
    );
    assert_eq!(
        granted(control_plane, &account, &namespace),
        pairs(&[("leases.coordination.k8s.io", LEASE_VERBS)])
    );
    assert_eq!(
        granted(control_plane, &account, &elsewhere),
        BTreeSet::new()
    );

    for verb in CONFIGMAP_VERBS {
        assert!(can_i(
            control_plane,
            &account,
            verb,
            "configmaps",
            &["-n", &watched]
        ));
        assert!(!can_i(
            control_plane,
            &account,
            verb,
            "configmaps",
            &["-n", &elsewhere]
        ));
        assert!(!can_i(
            control_plane,
            &account,
            verb,
            "configmaps",
            &["--all-namespaces"]
        ));
    }
    for verb in EVENT_VERBS {
        assert!(can_i(
            control_plane,
            &account,
            verb,
            "events.events.k8s.io",
            &["-n", &watched]
        ));
        assert!(!can_i(
            control_plane,
            &account,
            verb,
            "events.events.k8s.io",
            &["-n", &elsewhere]
        ));
    }
    for verb in ["list", "watch"] {
        assert!(!can_i(
            control_plane,
            &account,
            verb,
            "namespaces",
            &["--all-namespaces"]
        ));
    }
    assert_denied_sample(control_plane, &account, &watched);
    let cluster_wide = run_ok(
        control_plane.kubectl().args([
            "get",
            "clusterroles,clusterrolebindings",
            "-l",
            &format!("app.kubernetes.io/instance={release}"),
            "-o",
            "name",
        ]),
        None,
    );
    assert_eq!(
        cluster_wide.trim(),
        "",
        "cluster-wide RBAC in single-namespace mode"
    );
}

#[tokio::test]
async fn helm_install_refuses_namespace_create_naming_the_value() {
    let control_plane = control_plane();
    let client = control_plane.client().await;
    let namespace = restricted_namespace(&client, "chart-namespace-create").await;
    let release = release_in(&namespace);
    // The release's record is written into the namespace before anything
    // else, so it must exist; rendering it too would fight over it.
    let refused = run(
        &mut helm_on(
            control_plane,
            &[
                "install",
                &release,
                CHART,
                "--namespace",
                &namespace,
                "--set",
                "namespace.create=true",
            ],
        ),
        None,
    );
    assert!(!refused.ok, "installed: {}", refused.stdout);
    assert!(
        refused.stderr.contains("namespace.create") && refused.stderr.contains(&namespace),
        "{}",
        refused.stderr
    );
}

/// The args of the Deployment's one container.
async fn deployment_args(client: &Client, namespace: &str, name: &str) -> Vec<String> {
    let deployment = Api::<Deployment>::namespaced(client.clone(), namespace)
        .get(name)
        .await
        .expect("the Deployment");
    deployment
        .spec
        .and_then(|spec| spec.template.spec)
        .and_then(|pod| pod.containers.into_iter().next())
        .and_then(|container| container.args)
        .unwrap_or_default()
}

/// `kind/name` of every object in the namespace, of every kind that can be
/// listed, but Events (Kubernetes writes those about objects; they expire
/// on their own).
fn everything_in(control_plane: &ControlPlane, namespace: &str) -> BTreeSet<String> {
    let kinds = run_ok(
        control_plane.kubectl().args([
            "api-resources",
            "--namespaced=true",
            "--verbs=list",
            "-o",
            "name",
        ]),
        None,
    );
    let kinds: Vec<&str> = kinds
        .lines()
        .filter(|kind| !matches!(*kind, "events" | "events.events.k8s.io"))
        .collect();
    let out = run_ok(
        control_plane.kubectl().args([
            "get",
            &kinds.join(","),
            "-n",
            namespace,
            "-o",
            "name",
            "--ignore-not-found",
        ]),
        None,
    );
    out.lines().map(str::to_owned).collect()
}

#[tokio::test]
async fn an_upgrade_reaches_the_deployment_and_an_uninstall_leaves_nothing() {
    let control_plane = control_plane();
    let client = control_plane.client().await;
    let namespace = restricted_namespace(&client, "chart-upgrade").await;
    let release = release_in(&namespace);
    let before_install = everything_in(control_plane, &namespace);
    install(control_plane, &release, &namespace, &[]);
    assert!(
        deployment_args(&client, &namespace, &release)
            .await
            .contains(&"--concurrency=16".to_owned())
    );
    let installed = everything_in(control_plane, &namespace);
    for object in [
        format!("deployment.apps/{release}"),
        format!("serviceaccount/{release}"),
        format!("service/{release}"),
        format!("poddisruptionbudget.policy/{release}"),
        format!("role.rbac.authorization.k8s.io/{release}-leader-election"),
    ] {
        assert!(installed.contains(&object), "no {object} in {installed:?}");
    }

    run_ok(
        &mut helm_on(
            control_plane,
            &[
                "upgrade",
                &release,
                CHART,
                "--namespace",
                &namespace,
                "--reuse-values",
                "--set",
                "controller.concurrency=4",
            ],
        ),
        None,
    );
    let args = deployment_args(&client, &namespace, &release).await;
    assert!(args.contains(&"--concurrency=4".to_owned()), "{args:?}");
    assert!(!args.iter().any(|a| a == "--concurrency=16"), "{args:?}");

    run_ok(
        &mut helm_on(
            control_plane,
            &["uninstall", &release, "--namespace", &namespace],
        ),
        None,
    );
    wait_for("the release's objects to be gone", PATIENCE, || async {
        (everything_in(control_plane, &namespace) == before_install).then_some(())
    })
    .await
    .unwrap_or_else(|e| {
        panic!(
            "{e:#}: {:?} left, {before_install:?} before the install",
            everything_in(control_plane, &namespace)
        )
    });
    let cluster_wide = run_ok(
        control_plane
            .kubectl()
            .args(["get", "clusterroles,clusterrolebindings", "-o", "name"]),
        None,
    );
    let left: Vec<&str> = cluster_wide
        .lines()
        .filter(|object| object.ends_with(&format!("/{release}")))
        .collect();
    assert!(left.is_empty(), "cluster-wide RBAC left: {left:?}");
}

#[tokio::test]
async fn the_binary_runs_with_the_flags_and_the_token_the_chart_gives_it() {
    let control_plane = control_plane();
    let scene = Scene::on(control_plane, "chart-run").await;
    let namespace = restricted_namespace(&scene.client, "chart-run-home").await;
    let release = release_in(&namespace);
    install(control_plane, &release, &namespace, &[]);

    // The test's controller serves on a port of its own and logs as text.
    let args: Vec<String> = deployment_args(&scene.client, &namespace, &release)
        .await
        .into_iter()
        .filter(|arg| !arg.starts_with("--http-addr=") && !arg.starts_with("--log-format="))
        .collect();
    assert!(args.contains(&"--leader-elect".to_owned()), "{args:?}");
    let token = testenv::mint_token(&scene.client, &namespace, &release)
        .await
        .expect("a token of the chart's ServiceAccount");
    let kubeconfig = control_plane
        .log_dir()
        .join(format!("{release}-kubeconfig"));
    control_plane
        .write_token_kubeconfig(&token, &kubeconfig)
        .expect("kubeconfig");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let controller = ControllerProcess::start_binary(
        &PathBuf::from(env!("CARGO_BIN_EXE_configmap-mirror")),
        control_plane,
        &kubeconfig,
        "chart",
        &args,
        &[("POD_NAMESPACE", &namespace), ("POD_NAME", "chart-pod")],
    )
    .await;

    scene.live_through_change_and_heal("colors").await;
    scene
        .configmaps()
        .source_in_sync("doomed", &[("a", "1")])
        .await;
    scene.configmaps().delete("doomed").await;
    scene.configmaps().wait_gone("doomed-synced").await;
    let leases: Api<k8s_openapi::api::coordination::v1::Lease> =
        Api::namespaced(scene.client.clone(), &namespace);
    let lease = leases
        .get("configmap-mirror")
        .await
        .expect("the Lease, in the release namespace");
    assert_eq!(
        lease.spec.and_then(|s| s.holder_identity).as_deref(),
        Some("chart-pod")
    );
    assert_eq!(
        controller
            .metric("controller_runtime_reconcile_errors_total", "")
            .await,
        0.0,
        "{}",
        controller.log_text()
    );
    assert!(controller.stop().success());
}

/// Every file under `dir`, relative to it.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_owned()];
    while let Some(next) = pending.pop() {
        for entry in std::fs::read_dir(&next).expect("read dir").flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else {
                files.push(path.strip_prefix(dir).expect("under dir").to_owned());
            }
        }
    }
    files.sort();
    files
}

#[test]
fn the_committed_manifests_are_those_the_chart_renders() {
    let out = scratch("rendered-manifests");
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out).expect("mkdir");
    run_ok(
        Command::new("bash")
            .arg("hack/manifests.sh")
            .arg(&out)
            .current_dir(common::repo())
            .env("HELM", helm_binary())
            // The CRD from this build's binary, with no cargo run inside.
            .env("CONFIGMAP_MIRROR", env!("CARGO_BIN_EXE_configmap-mirror")),
        None,
    );
    let rendered = files_under(&out);
    for expected in ["configmap-mirror.yaml", "deploy/base/deployment.yaml"] {
        assert!(rendered.contains(&PathBuf::from(expected)), "{rendered:?}");
    }
    let stale: Vec<String> = rendered
        .iter()
        .filter(|file| {
            std::fs::read(out.join(file)).ok() != std::fs::read(common::repo().join(file)).ok()
        })
        .map(|file| file.display().to_string())
        .collect();
    assert!(
        stale.is_empty(),
        "stale, not what charts/configmap-mirror renders: {stale:?}; run `make manifests`"
    );
    let _ = std::fs::remove_dir_all(&out);
}

/// The value of `key: value` on the first line that has it, unquoted.
fn yaml_field(text: &str, key: &str) -> Option<String> {
    text.lines().find_map(|line| {
        let value = line.trim_start().strip_prefix(key)?.strip_prefix(':')?;
        Some(value.trim().trim_matches('"').to_owned())
    })
}

/// The tag of the first `image:` in a manifest.
fn image_tag(manifest: &str) -> Option<String> {
    let image = yaml_field(manifest, "image")?;
    let (_, tag) = image.rsplit_once(':')?;
    Some(tag.to_owned())
}

#[test]
fn the_crate_the_chart_and_deploy_carry_one_version() {
    let version = env!("CARGO_PKG_VERSION");
    let read = |file: &str| {
        std::fs::read_to_string(common::repo().join(file))
            .unwrap_or_else(|e| panic!("read {file}: {e}"))
    };
    let chart = read("charts/configmap-mirror/Chart.yaml");
    let kustomization = read("deploy/base/kustomization.yaml");
    let found = [
        ("Chart.yaml version", yaml_field(&chart, "version")),
        ("Chart.yaml appVersion", yaml_field(&chart, "appVersion")),
        (
            "deploy/base/kustomization.yaml newTag",
            yaml_field(&kustomization, "newTag"),
        ),
        (
            "deploy/base/deployment.yaml image tag",
            image_tag(&read("deploy/base/deployment.yaml")),
        ),
        (
            "configmap-mirror.yaml image tag",
            image_tag(&read("configmap-mirror.yaml")),
        ),
    ];
    let disagree: Vec<String> = found
        .iter()
        .filter(|(_, value)| value.as_deref() != Some(version))
        .map(|(place, value)| format!("{place}: {value:?}"))
        .collect();
    assert!(
        disagree.is_empty(),
        "the crate is {version} (Cargo.toml) but {disagree:?}; run `make manifests`, which \
         writes the crate's version into the chart and deploy/"
    );
    let out = run_ok(
        Command::new(env!("CARGO_BIN_EXE_configmap-mirror")).arg("--version"),
        None,
    );
    assert_eq!(out.trim(), format!("configmap-mirror {version}"));
}

#[test]
fn a_missing_helm_fails_naming_the_install_command() {
    let empty_cache = scratch("no-helm-cache");
    std::fs::create_dir_all(&empty_cache).expect("mkdir");
    let error =
        find_helm(&[("XDG_CACHE_HOME", &empty_cache)]).expect_err("no helm in an empty cache");
    assert!(
        error.contains("make helm") && error.contains("bash hack/install-helm.sh"),
        "{error}"
    );
    let _ = std::fs::remove_dir_all(&empty_cache);
}
