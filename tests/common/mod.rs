//! What the integration tests share: the controller binary as a child
//! process against the shared control plane, and small ConfigMap builders.
#![allow(dead_code)]

use std::{collections::BTreeMap, path::PathBuf, process::Command, time::Duration};

use anyhow::Context as _;
use configmap_mirror::desired::{self, CHECKSUM_ANNOTATION, MANAGED_BY_LABEL, MANAGER_NAME};
use k8s_openapi::{
    ByteString,
    api::{core::v1::ConfigMap, events::v1::Event},
    apimachinery::pkg::apis::meta::v1::ObjectMeta,
};
use kube::{
    Api, Client, ResourceExt,
    api::{ListParams, Patch, PatchParams, PostParams},
};
use testenv::{ChildProcess, ControlPlane, Signal, free_port, spawn_child, wait_for};

pub const SOURCE_LABEL: &str = "workshop.io/managed";
/// Long enough for a loaded 2-core machine; the benchmark measures speed.
pub const PATIENCE: Duration = Duration::from_secs(30);

/// One test's world: a control plane (the shared one, unless the test
/// started its own), an admin client and a fresh namespace of its own.
pub struct Scene<'a> {
    pub control_plane: &'a ControlPlane,
    pub client: Client,
    pub namespace: String,
}

impl Scene<'static> {
    pub async fn new(prefix: &str) -> Scene<'static> {
        Scene::on(ControlPlane::shared(), prefix).await
    }
}

impl<'a> Scene<'a> {
    pub async fn on(control_plane: &'a ControlPlane, prefix: &str) -> Scene<'a> {
        let client = control_plane.client().await;
        let namespace = testenv::fresh_namespace(&client, prefix)
            .await
            .expect("create a namespace for the test");
        Scene {
            control_plane,
            client,
            namespace,
        }
    }

    pub fn configmaps(&self) -> Api<ConfigMap> {
        Api::namespaced(self.client.clone(), &self.namespace)
    }

    /// The controller, watching only this test's namespace.
    pub async fn start_controller(&self, extra_args: &[&str]) -> ControllerProcess {
        let mut args = vec!["--namespace", &self.namespace];
        args.extend_from_slice(extra_args);
        ControllerProcess::start(
            self.control_plane,
            &self.control_plane.kubeconfig_path().to_path_buf(),
            &self.namespace,
            &args,
        )
        .await
    }

    pub async fn create(&self, cm: &ConfigMap) -> ConfigMap {
        self.configmaps()
            .create(&PostParams::default(), cm)
            .await
            .unwrap_or_else(|e| panic!("create {}: {e}", cm.name_any()))
    }

    pub async fn get(&self, name: &str) -> Option<ConfigMap> {
        self.configmaps()
            .get_opt(name)
            .await
            .expect("get configmap")
    }

    pub async fn patch_json(&self, name: &str, patch: serde_json::Value) -> ConfigMap {
        self.configmaps()
            .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .unwrap_or_else(|e| panic!("patch {name}: {e}"))
    }

    /// Creates source `name`, then changes it and deletes its companion,
    /// waiting each time for the companion to be exact again.
    pub async fn live_through_change_and_heal(&self, name: &str) {
        self.create(&mk_source(name, &[("a", "1")])).await;
        self.companion_in_sync(name).await;
        self.patch_json(name, serde_json::json!({"data": {"a": "2"}}))
            .await;
        self.companion_in_sync(name).await;
        self.delete(&desired::companion_name(name, "-synced")).await;
        self.companion_in_sync(name).await;
    }

    /// Removes the source label: the ConfigMap is no longer managed.
    pub async fn unlabel(&self, name: &str) {
        self.patch_json(
            name,
            serde_json::json!({"metadata": {"labels": {SOURCE_LABEL: null}}}),
        )
        .await;
    }

    /// A kubeconfig holding only a fresh token of ServiceAccount `account`
    /// in this namespace.
    pub async fn token_kubeconfig(&self, account: &str) -> PathBuf {
        let token = testenv::mint_token(&self.client, &self.namespace, account)
            .await
            .expect("mint a token");
        let path = self
            .control_plane
            .log_dir()
            .join(format!("{}-{account}-kubeconfig", self.namespace));
        self.control_plane
            .write_token_kubeconfig(&token, &path)
            .expect("write the kubeconfig");
        path
    }

    pub async fn delete(&self, name: &str) {
        self.configmaps()
            .delete(name, &Default::default())
            .await
            .unwrap_or_else(|e| panic!("delete {name}: {e}"));
    }

    /// Waits until `name-synced` is an exact companion of the source as it
    /// is now, and returns it.
    pub async fn companion_in_sync(&self, source_name: &str) -> ConfigMap {
        let api = self.configmaps();
        let name = desired::companion_name(source_name, "-synced");
        wait_for(&format!("{name} to match {source_name}"), PATIENCE, || {
            let api = api.clone();
            let name = name.clone();
            async move {
                let source = api.get_opt(source_name).await.ok()??;
                let companion = api.get_opt(&name).await.ok()??;
                is_exact_companion(&companion, &source).then_some(companion)
            }
        })
        .await
        .unwrap_or_else(|e| panic!("{e:#}"))
    }

    pub async fn wait_gone(&self, name: &str) {
        let api = self.configmaps();
        wait_for(&format!("{name} to be deleted"), PATIENCE, || {
            let api = api.clone();
            async move { matches!(api.get_opt(name).await, Ok(None)).then_some(()) }
        })
        .await
        .unwrap_or_else(|e| panic!("{e:#}"));
    }

    /// Events in this namespace about `regarding`, with `reason`.
    pub async fn events(&self, regarding: &str, reason: &str) -> Vec<Event> {
        let api: Api<Event> = Api::namespaced(self.client.clone(), &self.namespace);
        let events = api.list(&ListParams::default()).await.expect("list events");
        events
            .items
            .into_iter()
            .filter(|e| {
                e.reason.as_deref() == Some(reason)
                    && e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(regarding)
            })
            .collect()
    }

    pub async fn wait_event(&self, regarding: &str, reason: &str) -> Event {
        wait_for(
            &format!("a {reason} event on {regarding}"),
            PATIENCE,
            || async { self.events(regarding, reason).await.into_iter().next() },
        )
        .await
        .unwrap_or_else(|e| panic!("{e:#}"))
    }
}

/// The companion has exactly the source's content, the checksum of that
/// content, one controller reference to this very source, our label, and
/// nothing of the source's labels or annotations.
pub fn is_exact_companion(companion: &ConfigMap, source: &ConfigMap) -> bool {
    let owners = companion.owner_references();
    let owned = owners.len() == 1
        && owners[0].uid == source.uid().unwrap_or_default()
        && owners[0].name == source.name_any()
        && owners[0].kind == "ConfigMap"
        && owners[0].controller == Some(true);
    let labels = companion.labels();
    let labeled = labels.get(MANAGED_BY_LABEL).map(String::as_str) == Some(MANAGER_NAME)
        && !labels.contains_key(SOURCE_LABEL);
    owned
        && labeled
        && companion.data.clone().unwrap_or_default() == source.data.clone().unwrap_or_default()
        && companion.binary_data.clone().unwrap_or_default()
            == source.binary_data.clone().unwrap_or_default()
        && companion.immutable.unwrap_or(false) == source.immutable.unwrap_or(false)
        && companion.annotations().get(CHECKSUM_ANNOTATION)
            == Some(&desired::content_checksum(source))
}

pub fn mk_source(name: &str, data: &[(&str, &str)]) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: Some(BTreeMap::from([(
                SOURCE_LABEL.to_owned(),
                "true".to_owned(),
            )])),
            ..ObjectMeta::default()
        },
        data: Some(
            data.iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        ),
        ..ConfigMap::default()
    }
}

pub fn mk_unmanaged(name: &str, data: &[(&str, &str)]) -> ConfigMap {
    let mut cm = mk_source(name, data);
    cm.metadata.labels = None;
    cm
}

pub fn with_binary(mut cm: ConfigMap, key: &str, bytes: &[u8]) -> ConfigMap {
    cm.binary_data
        .get_or_insert_with(BTreeMap::new)
        .insert(key.to_owned(), ByteString(bytes.to_vec()));
    cm
}

/// The controller binary, running as a child process with its own HTTP
/// port; stopped (and killed if need be) when dropped.
pub struct ControllerProcess {
    child: ChildProcess,
    pub port: u16,
    pub log: PathBuf,
}

impl ControllerProcess {
    /// Starts the test build of the controller with `kubeconfig` and waits
    /// until its caches are synced.
    pub async fn start(
        control_plane: &ControlPlane,
        kubeconfig: &PathBuf,
        tag: &str,
        args: &[&str],
    ) -> ControllerProcess {
        let binary = PathBuf::from(env!("CARGO_BIN_EXE_configmap-mirror"));
        ControllerProcess::start_binary(&binary, control_plane, kubeconfig, tag, args, &[]).await
    }

    /// Like [`ControllerProcess::start`], for another build of the binary.
    pub async fn start_binary(
        binary: &PathBuf,
        control_plane: &ControlPlane,
        kubeconfig: &PathBuf,
        tag: &str,
        args: &[&str],
        envs: &[(&str, &str)],
    ) -> ControllerProcess {
        let mut cmd = Command::new(binary);
        cmd.args(args)
            .env("KUBECONFIG", kubeconfig)
            .envs(envs.iter().copied());
        ControllerProcess::start_command(cmd, control_plane, tag).await
    }

    /// Runs `cmd`, whose last arguments must be the controller's, and waits
    /// until the controller's caches are synced.
    pub async fn start_command(
        cmd: Command,
        control_plane: &ControlPlane,
        tag: &str,
    ) -> ControllerProcess {
        let controller = ControllerProcess::spawn(cmd, control_plane, tag).await;
        wait_for("the controller to be ready", PATIENCE, || async {
            (controller.get("/readyz").await.ok()?.0 == 200).then_some(())
        })
        .await
        .unwrap_or_else(|e| panic!("{e:#}\n{}", controller.log_text()));
        controller
    }

    /// Starts the test build and waits only for its HTTP listener.
    pub async fn start_unready(
        control_plane: &ControlPlane,
        kubeconfig: &PathBuf,
        tag: &str,
        args: &[&str],
    ) -> ControllerProcess {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_configmap-mirror"));
        cmd.args(args).env("KUBECONFIG", kubeconfig);
        ControllerProcess::spawn(cmd, control_plane, tag).await
    }

    async fn spawn(mut cmd: Command, control_plane: &ControlPlane, tag: &str) -> ControllerProcess {
        let port = free_port().expect("find a free port");
        let log = control_plane
            .log_dir()
            .join(format!("controller-{tag}-{port}.log"));
        cmd.args([
            "--http-addr",
            &format!("127.0.0.1:{port}"),
            "--log-format",
            "text",
        ])
        .env("RUST_LOG", "info,configmap_mirror=debug");
        let child = spawn_child(cmd, &log).expect("start configmap-mirror");
        let controller = ControllerProcess { child, port, log };
        wait_for("the controller to listen", PATIENCE, || async {
            controller.get("/healthz").await.ok().map(|_| ())
        })
        .await
        .unwrap_or_else(|e| panic!("{e:#}\n{}", controller.log_text()));
        controller
    }

    /// Status and body of a GET on the controller's HTTP listener.
    pub async fn get(&self, path: &str) -> anyhow::Result<(u16, String)> {
        let url = format!("http://127.0.0.1:{}{path}", self.port);
        let response = reqwest::get(&url)
            .await
            .with_context(|| format!("GET {url}"))?;
        let status = response.status().as_u16();
        Ok((status, response.text().await?))
    }

    /// The sum of every series of metric `name` whose labels contain `labels`.
    pub async fn metric(&self, name: &str, labels: &str) -> f64 {
        let (_, text) = self.get("/metrics").await.expect("scrape /metrics");
        sum_metric(&text, name, labels)
    }

    /// Companion writes made by this process, by its own count.
    pub async fn writes(&self) -> f64 {
        self.metric("configmap_mirror_companion_writes_total", "")
            .await
    }

    /// The metric once it has reached `at_least` (or its value when
    /// patience runs out). The controller counts a write just after the API
    /// server accepts it, so a test that has seen the write may be a moment
    /// ahead of the counter; counters only grow, so waiting for the expected
    /// value and then comparing still catches any extra count.
    pub async fn metric_reaching(&self, name: &str, labels: &str, at_least: f64) -> f64 {
        let what = format!("{name}{{{labels}}} to reach {at_least}");
        let reached = wait_for(&what, PATIENCE, || async {
            let value = self.metric(name, labels).await;
            (value >= at_least).then_some(value)
        })
        .await;
        match reached {
            Ok(value) => value,
            Err(_) => self.metric(name, labels).await,
        }
    }

    /// [`ControllerProcess::writes`], once it has reached `at_least`.
    pub async fn writes_reaching(&self, at_least: f64) -> f64 {
        self.metric_reaching("configmap_mirror_companion_writes_total", "", at_least)
            .await
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub fn pid(&self) -> u32 {
        self.child.pid()
    }

    pub fn signal(&self, signal: Signal) {
        self.child.signal(signal).expect("signal the controller");
    }

    /// SIGTERM, then the exit status.
    pub fn stop(mut self) -> std::process::ExitStatus {
        self.signal(Signal::Term);
        self.child
            .wait_with_timeout(PATIENCE)
            .expect("wait for the controller")
            .unwrap_or_else(|| {
                panic!(
                    "the controller did not stop on SIGTERM\n{}",
                    self.log_text()
                )
            })
    }

    pub fn wait_exit(&mut self, timeout: Duration) -> Option<std::process::ExitStatus> {
        self.child
            .wait_with_timeout(timeout)
            .expect("wait for the controller")
    }
}

impl Drop for ControllerProcess {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let text = self.log_text();
            let tail: Vec<&str> = text.lines().rev().take(80).collect();
            eprintln!("--- last lines of {} ---", self.log.display());
            for line in tail.iter().rev() {
                eprintln!("{line}");
            }
        }
    }
}

/// Sums a metric over the series whose label text contains `labels`.
pub fn sum_metric(text: &str, name: &str, labels: &str) -> f64 {
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| {
            let (series, value) = line.rsplit_once(' ')?;
            let (metric, rest) = series.split_once('{').unwrap_or((series, ""));
            (metric == name && rest.contains(labels)).then(|| value.parse::<f64>().ok())?
        })
        .sum()
}

/// `kubectl apply -f -` of a manifest, failing the test if it fails.
pub fn kubectl_apply(scene: &Scene, manifest: &str) {
    use std::io::Write;
    let mut child = scene
        .control_plane
        .kubectl()
        .args(["apply", "-f", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run kubectl");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(manifest.as_bytes())
        .expect("write manifest");
    let out = child.wait_with_output().expect("kubectl apply");
    assert!(
        out.status.success(),
        "kubectl apply failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A ServiceAccount, for running the controller with a token of its own.
pub fn service_account(namespace: &str, name: &str) -> String {
    format!(
        r#"
apiVersion: v1
kind: ServiceAccount
metadata: {{name: {name}, namespace: {namespace}}}
"#
    )
}

/// A Role with these verbs on configmaps (and Events, which the controller
/// always writes), bound to ServiceAccount `account`.
pub fn role_for(namespace: &str, account: &str, role: &str, configmap_verbs: &[&str]) -> String {
    let verbs = configmap_verbs
        .iter()
        .map(|v| format!("{v:?}"))
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {{name: {role}, namespace: {namespace}}}
rules:
- {{apiGroups: [""], resources: ["configmaps"], verbs: [{verbs}]}}
- {{apiGroups: ["events.k8s.io"], resources: ["events"], verbs: ["create", "patch"]}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {{name: {role}, namespace: {namespace}}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: Role, name: {role}}}
subjects: [{{kind: ServiceAccount, name: {account}, namespace: {namespace}}}]
"#
    )
}
