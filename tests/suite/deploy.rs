//! deploy/ on a real API server: it is accepted under Pod Security
//! "restricted", its RBAC is enough for everything the controller does and
//! refuses everything else, and the binary finds the API server the way a
//! Pod does. Runs the release binary, as the image does.

use crate::common;

use std::{path::PathBuf, process::Command};

use common::{ControllerProcess, Scene, mk_source, mk_unmanaged};
use k8s_openapi::api::{
    coordination::v1::Lease,
    core::v1::{ConfigMap, Secret},
};
use kube::{
    Api, Client,
    api::{DeleteParams, ListParams, Patch, PatchParams, PostParams},
};
use serde_json::json;
use testenv::{ControlPlane, LazyControlPlane};
use tokio::sync::{Mutex, MutexGuard, OnceCell};

const CONTROLLER_NAMESPACE: &str = "configmap-mirror";
const SERVICE_ACCOUNT: &str = "configmap-mirror";

/// Apart from the other topics' tests: the ServiceAccount's controller
/// watches the whole cluster, and would serve their namespaces too.
fn control_plane() -> &'static ControlPlane {
    static CLUSTER_WIDE: LazyControlPlane = LazyControlPlane::new();
    CLUSTER_WIDE.get()
}

fn release_binary() -> PathBuf {
    let binary = common::repo().join("target/release/configmap-mirror");
    assert!(
        binary.exists(),
        "{} is missing: run `cargo build --release --locked` (make test does)",
        binary.display()
    );
    binary
}

fn kubectl(control_plane: &ControlPlane, args: &[&str]) -> (bool, String, String) {
    let out = control_plane
        .kubectl()
        .args(args)
        .current_dir(common::repo())
        .output()
        .expect("run kubectl");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `kubectl apply` reads an object, then creates it if it found none: two
/// applies of the same objects at once (the real install and a dry run) can
/// both find one missing, and the second create is refused as a conflict.
async fn applying_deploy() -> MutexGuard<'static, ()> {
    static ONE_AT_A_TIME: Mutex<()> = Mutex::const_new(());
    ONE_AT_A_TIME.lock().await
}

/// deploy/ applied for real once, on this module's control plane; the
/// ServiceAccount's token.
async fn installed(control_plane: &'static ControlPlane) -> &'static str {
    static TOKEN: OnceCell<String> = OnceCell::const_new();
    TOKEN
        .get_or_init(|| async {
            let _turn = applying_deploy().await;
            let (ok, _, err) = kubectl(control_plane, &["apply", "-k", "deploy/"]);
            assert!(ok, "kubectl apply -k deploy/ failed: {err}");
            let client = control_plane.client().await;
            testenv::mint_token(&client, CONTROLLER_NAMESPACE, SERVICE_ACCOUNT)
                .await
                .expect("mint a token")
        })
        .await
}

async fn service_account_client(control_plane: &'static ControlPlane) -> Client {
    let token = installed(control_plane).await;
    Client::try_from(control_plane.token_config(token)).expect("client with the token")
}

#[tokio::test]
async fn deploy_is_accepted_by_a_server_side_dry_run_without_pod_security_warnings() {
    let control_plane = control_plane();
    let _turn = applying_deploy().await;
    // The namespace must exist, with its Pod Security labels, for the dry
    // run of what goes into it to be judged against "restricted".
    let (ok, _, err) = kubectl(
        control_plane,
        &["apply", "-f", "deploy/base/namespace.yaml"],
    );
    assert!(ok, "{err}");
    for kustomization in [
        "deploy/",
        "deploy/overlays/namespaced/",
        "deploy/overlays/secrets/",
        "deploy/overlays/admission-policy/",
    ] {
        let (ok, out, err) = kubectl(
            control_plane,
            &["apply", "--dry-run=server", "-k", kustomization],
        );
        assert!(ok, "dry run of {kustomization} failed: {err}");
        assert!(out.contains("deployment.apps/configmap-mirror"), "{out}");
        assert!(
            !err.contains("PodSecurity") && !err.contains("Warning"),
            "warnings for {kustomization}: {err}"
        );
    }
}

#[tokio::test]
async fn the_service_account_can_run_the_whole_mirror_scenario() {
    let scene = Scene::on(control_plane(), "deployed").await;
    let token = installed(scene.control_plane).await;
    let kubeconfig = scene.control_plane.log_dir().join("deploy-kubeconfig");
    scene
        .control_plane
        .write_token_kubeconfig(token, &kubeconfig)
        .expect("kubeconfig");
    let controller = ControllerProcess::start_binary(
        &release_binary(),
        scene.control_plane,
        &kubeconfig,
        "deployed",
        &[
            "--leader-elect",
            "--leader-election-identity",
            "deployed-replica",
        ],
        &[("POD_NAMESPACE", CONTROLLER_NAMESPACE)],
    )
    .await;

    scene.live_through_change_and_heal("colors").await;
    scene
        .configmaps()
        .patch("colors-synced", json!({"data": {"a": "edited"}}))
        .await;
    scene.configmaps().companion_in_sync("colors").await;
    scene.wait_event("colors", "CompanionCreated").await;

    // A name taken by a foreign object needs the one `get` the role grants.
    scene
        .configmaps()
        .create(&mk_unmanaged("taken-synced", &[]))
        .await;
    scene.configmaps().create(&mk_source("taken", &[])).await;
    scene.wait_event("taken", "CompanionNameTaken").await;

    scene.configmaps().unlabel("colors").await;
    scene.configmaps().wait_gone("colors-synced").await;
    scene
        .configmaps()
        .source_in_sync("doomed", &[("a", "1")])
        .await;
    scene.configmaps().delete("doomed").await;
    scene.configmaps().wait_gone("doomed-synced").await;

    let leases: Api<Lease> = Api::namespaced(scene.client.clone(), CONTROLLER_NAMESPACE);
    let lease = leases
        .get("configmap-mirror")
        .await
        .expect("the lease exists in the controller's namespace");
    assert_eq!(
        lease.spec.and_then(|s| s.holder_identity).as_deref(),
        Some("deployed-replica")
    );
    assert_eq!(
        controller
            .metric("controller_runtime_reconcile_errors_total", "")
            .await,
        1.0,
        "only the name taken"
    );
    assert!(controller.stop().success());
}

#[tokio::test]
async fn the_service_account_is_refused_everything_else() {
    let control_plane = control_plane();
    let admin = control_plane.client().await;
    let namespace = testenv::fresh_namespace(&admin, "refused")
        .await
        .expect("namespace");
    let client = service_account_client(control_plane).await;
    let refused = |result: Result<(), kube::Error>, what: &str| match result {
        Err(kube::Error::Api(status)) if status.code == 403 => {}
        other => panic!("{what} was not refused with 403: {other:?}"),
    };

    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), &namespace);
    configmaps
        .list(&ListParams::default())
        .await
        .expect("listing configmaps is allowed");
    configmaps
        .create(&PostParams::default(), &mk_unmanaged("mine", &[]))
        .await
        .expect("create is allowed");

    let secrets: Api<Secret> = Api::namespaced(client.clone(), &namespace);
    refused(
        secrets.list(&ListParams::default()).await.map(drop),
        "listing secrets",
    );
    refused(secrets.get("any").await.map(drop), "reading a secret");
    let all_secrets: Api<Secret> = Api::all(client.clone());
    refused(
        all_secrets.list(&ListParams::default()).await.map(drop),
        "listing secrets cluster-wide",
    );

    let patch = json!({"data": {"x": "y"}});
    refused(
        configmaps
            .patch("mine", &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map(drop),
        "patching a configmap",
    );
    refused(
        configmaps
            .delete_collection(&DeleteParams::default(), &ListParams::default())
            .await
            .map(drop),
        "deleting a collection of configmaps",
    );

    let other_leases: Api<Lease> = Api::namespaced(client.clone(), &namespace);
    refused(
        other_leases.get("configmap-mirror").await.map(drop),
        "reading a lease elsewhere",
    );
    let lease = Lease {
        metadata: kube::api::ObjectMeta {
            name: Some("grab".into()),
            ..Default::default()
        },
        spec: None,
    };
    refused(
        other_leases
            .create(&PostParams::default(), &lease)
            .await
            .map(drop),
        "creating a lease elsewhere",
    );
    let own_leases: Api<Lease> = Api::namespaced(client, CONTROLLER_NAMESPACE);
    refused(
        own_leases.list(&ListParams::default()).await.map(drop),
        "listing leases",
    );
}

#[tokio::test]
async fn the_binary_reaches_the_api_server_through_in_cluster_configuration() {
    let scene = Scene::on(control_plane(), "in-cluster").await;
    let token = installed(scene.control_plane).await;
    let secrets = scene.control_plane.log_dir().join("serviceaccount");
    std::fs::create_dir_all(&secrets).expect("mkdir");
    std::fs::write(secrets.join("token"), token).expect("token");
    std::fs::write(secrets.join("ca.crt"), scene.control_plane.ca_pem()).expect("ca");
    std::fs::write(secrets.join("namespace"), CONTROLLER_NAMESPACE).expect("namespace");
    let port = scene.control_plane.apiserver_port().to_string();

    // A private mount namespace puts the files where every Pod has them,
    // without touching this machine's own /run.
    let script = format!(
        "mount -t tmpfs tmpfs /run && mkdir -p /run/secrets/kubernetes.io && \
         cp -r '{}' /run/secrets/kubernetes.io/serviceaccount && exec \"$@\"",
        secrets.display()
    );
    let mut command = Command::new("unshare");
    command
        .args([
            "--mount",
            "--propagation",
            "private",
            "--",
            "sh",
            "-c",
            &script,
            "sh",
        ])
        .arg(release_binary())
        .args(["--namespace", &scene.namespace])
        .env_remove("KUBECONFIG")
        .env("HOME", scene.control_plane.log_dir())
        .env("KUBERNETES_SERVICE_HOST", "127.0.0.1")
        .env("KUBERNETES_SERVICE_PORT", &port);
    assert_eq!(
        std::process::Command::new("id")
            .arg("-u")
            .output()
            .map(|o| o.stdout)
            .unwrap_or_default(),
        b"0\n",
        "this test mounts a tmpfs in a private mount namespace and needs root (CI runs as root)"
    );
    let controller =
        ControllerProcess::start_command(command, scene.control_plane, "in-cluster").await;
    scene
        .configmaps()
        .source_in_sync("colors", &[("a", "1")])
        .await;
    assert!(controller.log_text().contains("configmap-mirror started"));
}

#[test]
fn hadolint_passes_on_the_dockerfile_and_the_image_builds_what_ci_builds() {
    let out = Command::new("bash")
        .arg("hack/lint-dockerfile.sh")
        .current_dir(common::repo())
        .output()
        .expect("run hack/lint-dockerfile.sh");
    assert!(
        out.status.success(),
        "hadolint failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let dockerfile =
        std::fs::read_to_string(common::repo().join("Dockerfile")).expect("Dockerfile");
    let makefile = std::fs::read_to_string(common::repo().join("Makefile")).expect("Makefile");
    for text in [&dockerfile, &makefile] {
        assert!(text.contains("cargo build --release --locked"));
    }
}

/// What `kubectl auth can-i` answers for `account` (namespace/name).
fn can(control_plane: &ControlPlane, account: &str, verb: &str, namespace: &str) -> bool {
    let (ok, out, err) = kubectl(
        control_plane,
        &[
            "auth",
            "can-i",
            verb,
            "secrets",
            "--namespace",
            namespace,
            &format!("--as=system:serviceaccount:{account}"),
        ],
    );
    assert!(
        ok || out.trim() == "no",
        "kubectl auth can-i {verb} secrets: {out}{err}"
    );
    out.trim() == "yes"
}

const SECRET_VERBS_CALLED: [&str; 6] = ["get", "list", "watch", "create", "update", "delete"];
const SECRET_VERBS_NEVER: [&str; 2] = ["patch", "deletecollection"];

#[tokio::test]
async fn the_default_install_is_refused_every_secret_verb() {
    let control_plane = control_plane();
    installed(control_plane).await;
    let account = format!("{CONTROLLER_NAMESPACE}:{SERVICE_ACCOUNT}");
    for verb in SECRET_VERBS_CALLED.iter().chain(&SECRET_VERBS_NEVER) {
        for namespace in [CONTROLLER_NAMESPACE, "default"] {
            assert!(
                !can(control_plane, &account, verb, namespace),
                "the default install may {verb} secrets in {namespace}"
            );
        }
    }
}

#[tokio::test]
async fn the_secrets_component_grants_exactly_the_secret_verbs_the_binary_calls() {
    let control_plane = control_plane();
    let (ok, rendered, err) = kubectl(control_plane, &["kustomize", "deploy/overlays/secrets/"]);
    assert!(ok, "{err}");
    assert!(
        rendered.contains("--kinds=configmaps,secrets"),
        "{rendered}"
    );
    // Its RBAC, bound to an account of its own, so that the install the
    // other tests share keeps the default rights.
    let admin = control_plane.client().await;
    let namespace = testenv::fresh_namespace(&admin, "secrets-rbac")
        .await
        .expect("namespace");
    let rbac: String = rendered
        .split("\n---\n")
        .filter(|doc| doc.contains("name: configmap-mirror-secrets"))
        .map(|doc| {
            doc.replace(
                "name: configmap-mirror-secrets",
                &format!("name: {namespace}"),
            )
            .replace(
                "namespace: configmap-mirror",
                &format!("namespace: {namespace}"),
            )
        })
        .collect::<Vec<_>>()
        .join("\n---\n");
    assert!(rbac.contains("kind: ClusterRole\n") && rbac.contains("kind: ClusterRoleBinding"));
    let manifest = format!(
        "apiVersion: v1\nkind: ServiceAccount\nmetadata: {{name: configmap-mirror, namespace: {namespace}}}\n---\n{rbac}"
    );
    let path = control_plane
        .log_dir()
        .join(format!("{namespace}-rbac.yaml"));
    std::fs::write(&path, manifest).expect("write the manifest");
    let (ok, _, err) = kubectl(control_plane, &["apply", "-f", &path.to_string_lossy()]);
    assert!(ok, "{err}");
    let account = format!("{namespace}:configmap-mirror");
    for verb in SECRET_VERBS_CALLED {
        assert!(can(control_plane, &account, verb, "default"), "{verb}");
    }
    for verb in SECRET_VERBS_NEVER {
        assert!(!can(control_plane, &account, verb, "default"), "{verb}");
    }
    let (ok, _, err) = kubectl(
        control_plane,
        &["delete", "-f", &path.to_string_lossy(), "--wait=false"],
    );
    assert!(ok, "{err}");
}
