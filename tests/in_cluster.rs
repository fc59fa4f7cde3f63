//! The image built here, and `deploy/` running as real pods on a kubelet
//! node: the journey of a user who builds the image and runs
//! `kubectl apply -k deploy/`, then installs the same image with the Helm
//! chart. Also where the image's size is checked against its 50 MB target.
//!
//! Needs root (CI runs as root), podman and mmdebstrap (`make image`), the
//! node's programs (`make node`) and helm (`make helm`); without them it
//! fails, naming the install command.

use test_support as common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use common::{Scene, mk_unmanaged};
use k8s_openapi::api::{
    coordination::v1::Lease,
    core::v1::{Pod, ServiceAccount},
    discovery::v1::EndpointSlice,
};
use kube::{
    Api, ResourceExt,
    api::{DeleteParams, ListParams, PostParams},
};
use serde_json::json;
use testenv::{Cluster, ClusterOptions, Options, wait_for};

const NAMESPACE: &str = "configmap-mirror";
const DEPLOYMENT: &str = "configmap-mirror";
const SELECTOR: &str = "app.kubernetes.io/name=configmap-mirror";
/// The image name in deploy/, which the overlay replaces.
const PLACEHOLDER_IMAGE: &str = "ghcr.io/workshop-io/configmap-mirror";
/// The image's target size, in bytes (decimal megabytes).
const IMAGE_SIZE_TARGET: u64 = 50_000_000;
/// Pods start, stop and roll on a loaded two-core machine: be generous.
const POD_PATIENCE: Duration = Duration::from_secs(240);

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|out| out.stdout == b"0\n")
}

/// `make image`'s script; its image's name and size from the file it writes.
fn build_image() -> (String, u64, PathBuf) {
    let started = Instant::now();
    let out = Command::new("bash")
        .arg("hack/image.sh")
        .current_dir(common::repo())
        .output()
        .expect("run hack/image.sh");
    assert!(
        out.status.success(),
        "`make image` (hack/image.sh) failed:\n{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let archive = common::repo().join("target/image/configmap-mirror.tar");
    let meta = std::fs::read_to_string(archive.with_extension("tar.meta")).expect("image meta");
    let field = |key: &str| {
        meta.lines()
            .find_map(|line| line.strip_prefix(&format!("{key}=")))
            .unwrap_or_else(|| panic!("no {key}= in the image meta: {meta}"))
            .to_owned()
    };
    let size: u64 = field("size_bytes").parse().expect("a size in bytes");
    eprintln!(
        "in-cluster: image {} built in {:.0}s, {:.1} MB",
        field("name"),
        started.elapsed().as_secs_f64(),
        size as f64 / 1e6
    );
    (field("name"), size, archive)
}

fn kubectl(cluster: &Cluster, args: &[&str]) -> Output {
    cluster
        .control_plane()
        .kubectl()
        .args(args)
        .output()
        .expect("run kubectl")
}

fn kubectl_ok(cluster: &Cluster, args: &[&str]) -> String {
    let out = kubectl(cluster, args);
    assert!(
        out.status.success(),
        "kubectl {} failed: {}",
        args.join(" "),
        text(&out.stderr)
    );
    text(&out.stdout)
}

/// An overlay of deploy/ that only sets the image, in a directory of its own.
fn overlay(image: &str) -> PathBuf {
    let dir = common::repo().join("target/in-cluster-overlay");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create the overlay directory");
    let (name, tag) = image.rsplit_once(':').expect("an image with a tag");
    let kustomization = format!(
        "apiVersion: kustomize.config.k8s.io/v1beta1\n\
         kind: Kustomization\n\
         resources:\n  - {deploy}\n\
         images:\n  - name: {PLACEHOLDER_IMAGE}\n    newName: {name}\n    newTag: \"{tag}\"\n",
        // kustomize takes only relative paths to other kustomizations.
        deploy = "../../deploy"
    );
    std::fs::write(dir.join("kustomization.yaml"), kustomization).expect("write overlay");
    dir
}

fn is_ready(pod: &Pod) -> bool {
    let status = pod.status.as_ref();
    status.and_then(|s| s.phase.as_deref()) == Some("Running")
        && status
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|conditions| {
                conditions
                    .iter()
                    .any(|c| c.type_ == "Ready" && c.status == "True")
            })
}

/// The names of the controller's pods once there are exactly `count`, all
/// Running and Ready, and none terminating.
async fn ready_pods(pods: &Api<Pod>, count: usize) -> Vec<String> {
    wait_for(
        &format!("{count} ready controller pods"),
        POD_PATIENCE,
        || async {
            let list = pods
                .list(&ListParams::default().labels(SELECTOR))
                .await
                .ok()?;
            let all_ready = list.items.len() == count
                && list
                    .items
                    .iter()
                    .all(|pod| is_ready(pod) && pod.metadata.deletion_timestamp.is_none());
            all_ready.then(|| list.items.iter().map(ResourceExt::name_any).collect())
        },
    )
    .await
    .unwrap_or_else(|e| panic!("{e:#}"))
}

/// Waits until the Service's EndpointSlices list exactly the IPs of the
/// controller pods that are ready and not being deleted, each ready, and
/// no other (terminating) endpoint.
async fn service_serves_the_running_pods(scene: &Scene<'_>) {
    let pods: Api<Pod> = Api::namespaced(scene.client.clone(), NAMESPACE);
    let slices: Api<EndpointSlice> = Api::namespaced(scene.client.clone(), NAMESPACE);
    wait_for(
        "the Service's endpoints to be the running pods",
        POD_PATIENCE,
        || async {
            let running: std::collections::BTreeSet<String> = pods
                .list(&ListParams::default().labels(SELECTOR))
                .await
                .ok()?
                .items
                .iter()
                .filter(|pod| is_ready(pod) && pod.metadata.deletion_timestamp.is_none())
                .filter_map(|pod| pod.status.as_ref()?.pod_ip.clone())
                .collect();
            let selector = format!("kubernetes.io/service-name={DEPLOYMENT}");
            let mut endpoints = std::collections::BTreeSet::new();
            for slice in slices
                .list(&ListParams::default().labels(&selector))
                .await
                .ok()?
                .items
            {
                for endpoint in slice.endpoints.into_iter().flatten() {
                    let ready = endpoint.conditions.and_then(|c| c.ready) == Some(true);
                    if !ready {
                        return None;
                    }
                    endpoints.extend(endpoint.addresses);
                }
            }
            (!running.is_empty() && endpoints == running).then_some(())
        },
    )
    .await
    .unwrap_or_else(|e| panic!("{e:#}"));
}

async fn lease_holder(leases: &Api<Lease>) -> Option<String> {
    let lease = leases.get_opt(DEPLOYMENT).await.ok()??;
    lease
        .spec?
        .holder_identity
        .filter(|holder| !holder.is_empty())
}

async fn wait_holder(leases: &Api<Lease>, what: &str, wanted: impl Fn(&str) -> bool) -> String {
    wait_for(what, POD_PATIENCE, || async {
        lease_holder(leases).await.filter(|holder| wanted(holder))
    })
    .await
    .unwrap_or_else(|e| panic!("{e:#}"))
}

#[tokio::test]
async fn the_image_built_here_runs_deploy_on_a_real_node() {
    assert!(
        is_root(),
        "this test starts a kubelet node and needs root (CI runs as root)"
    );
    // Before the long steps: a missing helm fails at once, naming `make helm`.
    common::helm_binary();
    let test_started = Instant::now();
    let (image, image_size, archive) = build_image();
    assert!(
        image_size < IMAGE_SIZE_TARGET,
        "the image is {image_size} bytes, over the {IMAGE_SIZE_TARGET}-byte target"
    );

    let cluster = Cluster::start(ClusterOptions {
        control_plane: Options {
            etcd_unsafe_no_fsync: true,
            ..Options::default()
        },
        ..ClusterOptions::default()
    })
    .unwrap_or_else(|e| panic!("cannot start the cluster: {e:#}"));
    eprintln!(
        "in-cluster: control plane and node ready in {:.1}s",
        cluster.startup_duration().as_secs_f64()
    );
    let pids: Vec<u32> = cluster.pids().iter().map(|(_, pid)| *pid).collect();
    let node_dir = cluster.node_dir().to_owned();

    run_the_journey(&cluster, &image, &archive).await;

    drop(cluster);
    assert_nothing_left(&pids, &node_dir);
    eprintln!(
        "in-cluster: whole test {:.0}s",
        test_started.elapsed().as_secs_f64()
    );
}

async fn run_the_journey(cluster: &Cluster, image: &str, archive: &Path) {
    cluster
        .load_image(archive)
        .expect("load the image into the node");
    let overlay = overlay(image);
    let overlay_path = overlay.to_string_lossy().into_owned();

    // 1. Installed as a user would, under the namespace's restricted Pod
    //    Security: any warning would be printed on stderr.
    let applied = kubectl(cluster, &["apply", "-k", &overlay_path]);
    assert!(applied.status.success(), "{}", text(&applied.stderr));
    assert!(
        !text(&applied.stderr).contains("Warning"),
        "warnings from apply: {}",
        text(&applied.stderr)
    );
    let client = cluster.control_plane().client().await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), NAMESPACE);
    let leases: Api<Lease> = Api::namespaced(client.clone(), NAMESPACE);
    let names = ready_pods(&pods, 2).await;
    for name in &names {
        let pod = pods.get(name).await.expect("the pod");
        let image_of_pod = pod
            .spec
            .and_then(|spec| spec.containers.into_iter().next())
            .and_then(|container| container.image);
        assert_eq!(image_of_pod.as_deref(), Some(image));
    }

    // 2. The Lease names one pod, from the downward API.
    let leader = wait_holder(&leases, "a leader", |holder| {
        names.iter().any(|n| n == holder)
    })
    .await;
    eprintln!("in-cluster: pods {names:?}, leader {leader}");

    // 3. Label, update, heal and unlabel, through the real pods.
    let scene = Scene::on(cluster.control_plane(), "in-cluster").await;
    scene
        .configmaps()
        .create(&mk_unmanaged("colors", &[("a", "1")]))
        .await;
    scene
        .configmaps()
        .patch(
            "colors",
            json!({"metadata": {"labels": {common::SOURCE_LABEL: "true"}}}),
        )
        .await;
    scene.configmaps().companion_in_sync("colors").await;
    scene
        .configmaps()
        .patch("colors", json!({"data": {"a": "2"}}))
        .await;
    scene.configmaps().companion_in_sync("colors").await;
    scene.configmaps().delete("colors-synced").await;
    scene.configmaps().companion_in_sync("colors").await;
    scene
        .configmaps()
        .patch("colors-synced", json!({"data": {"a": "hacked"}}))
        .await;
    scene.configmaps().companion_in_sync("colors").await;
    scene.configmaps().unlabel("colors").await;
    scene.configmaps().wait_gone("colors-synced").await;

    // 4. The leader pod goes: the other takes over, and heals a companion
    //    deleted once the old leader has let go.
    take_over(&scene, &pods, &leases, &names, &leader).await;

    // 5. A rolling restart loses no update made while it runs.
    roll_without_losing_updates(cluster, &scene, &pods, &leases).await;

    // 6. /metrics through the Service's ClusterIP, from a pod.
    metrics_through_the_service(cluster, &scene).await;

    // 7. Uninstalled, nothing of it is left.
    kubectl_ok(
        cluster,
        &[
            "delete",
            "-k",
            &overlay_path,
            "--wait=true",
            "--timeout=240s",
        ],
    );
    for kind in ["namespace", "clusterrole", "clusterrolebinding"] {
        let out = kubectl(
            cluster,
            &["get", kind, DEPLOYMENT, "--ignore-not-found", "-o", "name"],
        );
        assert!(
            text(&out.stdout).trim().is_empty(),
            "{kind} left: {}",
            text(&out.stdout)
        );
    }
    no_controller_pod_anywhere(&client).await;

    // 8. The same image installed with the Helm chart, into the namespace
    //    made first with Pod Security "restricted" enforced: its pods run,
    //    lead and mirror, and an uninstall leaves nothing of it.
    the_chart_on_the_node(cluster, image, &scene, &pods, &leases).await;
}

/// `helm test`: the chart's test Pod, of the image built here, asks
/// `/readyz` through the Service with `configmap-mirror probe`, passes, and
/// is deleted.
async fn helm_test_passes(cluster: &Cluster, scene: &Scene<'_>, pods: &Api<Pod>) {
    const TEST_POD: &str = "configmap-mirror-test-readyz";
    // As a user would run it: once the Service routes to the ready pods.
    service_serves_the_running_pods(scene).await;
    let tested = common::helm_on(
        cluster.control_plane(),
        &[
            "test",
            DEPLOYMENT,
            "--namespace",
            NAMESPACE,
            "--timeout",
            "4m",
        ],
    )
    .output()
    .expect("run helm test");
    let logs = || text(&kubectl(cluster, &["-n", NAMESPACE, "logs", TEST_POD]).stdout);
    assert!(
        tested.status.success(),
        "helm test: {}{}\nthe test Pod's log: {}",
        text(&tested.stdout),
        text(&tested.stderr),
        logs()
    );
    let report = text(&tested.stdout);
    assert!(
        report.contains(TEST_POD) && report.contains("Succeeded"),
        "helm test: {report}"
    );
    wait_for(
        "the passed test Pod to be deleted",
        POD_PATIENCE,
        || async { pods.get_opt(TEST_POD).await.ok()?.is_none().then_some(()) },
    )
    .await
    .unwrap_or_else(|e| panic!("{e:#}"));
    eprintln!("in-cluster: helm test passed");
}

async fn no_controller_pod_anywhere(client: &kube::Client) {
    let all_pods: Api<Pod> = Api::all(client.clone());
    wait_for("no controller pod anywhere", POD_PATIENCE, || async {
        let list = all_pods
            .list(&ListParams::default().labels(SELECTOR))
            .await
            .ok()?;
        list.items.is_empty().then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{e:#}"));
}

async fn the_chart_on_the_node(
    cluster: &Cluster,
    image: &str,
    scene: &Scene<'_>,
    pods: &Api<Pod>,
    leases: &Api<Lease>,
) {
    let namespace_manifest = common::repo().join("deploy/base/namespace.yaml");
    let namespace_manifest = namespace_manifest.to_string_lossy();
    kubectl_ok(cluster, &["apply", "-f", &namespace_manifest]);
    // The values the in-cluster kind path documents (README.md), for the
    // image `make image` builds, loaded into the node and never pulled.
    assert_eq!(
        image, "localhost/configmap-mirror:dev",
        "the kind path's values name the image make image builds"
    );
    let installed = common::helm_on(
        cluster.control_plane(),
        &[
            "install",
            DEPLOYMENT,
            "charts/configmap-mirror",
            "--namespace",
            NAMESPACE,
            "--set",
            "image.repository=localhost/configmap-mirror",
            "--set",
            "image.tag=dev",
            "--set",
            "image.pullPolicy=Never",
        ],
    )
    .output()
    .expect("run helm install");
    assert!(
        installed.status.success() && !text(&installed.stderr).contains("PodSecurity"),
        "helm install: {}{}",
        text(&installed.stdout),
        text(&installed.stderr)
    );
    let names = ready_pods(pods, 2).await;
    for name in &names {
        let pod = pods.get(name).await.expect("the pod");
        let image_of_pod = pod
            .spec
            .and_then(|spec| spec.containers.into_iter().next())
            .and_then(|container| container.image);
        assert_eq!(image_of_pod.as_deref(), Some(image));
    }
    let leader = wait_holder(leases, "a leader among the chart's pods", |holder| {
        names.iter().any(|n| n == holder)
    })
    .await;
    eprintln!("in-cluster: helm install, pods {names:?}, leader {leader}");
    scene
        .configmaps()
        .create(&common::mk_source("charted", &[("a", "1")]))
        .await;
    scene.configmaps().companion_in_sync("charted").await;
    scene.configmaps().delete("charted-synced").await;
    scene.configmaps().companion_in_sync("charted").await;
    helm_test_passes(cluster, scene, pods).await;

    let uninstalled = common::helm_on(
        cluster.control_plane(),
        &["uninstall", DEPLOYMENT, "--namespace", NAMESPACE],
    )
    .output()
    .expect("run helm uninstall");
    assert!(
        uninstalled.status.success(),
        "helm uninstall: {}",
        text(&uninstalled.stderr)
    );
    no_controller_pod_anywhere(&scene.client).await;
    for kind in ["clusterrole", "clusterrolebinding"] {
        let out = kubectl(
            cluster,
            &["get", kind, DEPLOYMENT, "--ignore-not-found", "-o", "name"],
        );
        assert!(
            text(&out.stdout).trim().is_empty(),
            "{kind} left by helm uninstall: {}",
            text(&out.stdout)
        );
    }
    kubectl_ok(
        cluster,
        &[
            "delete",
            "-f",
            &namespace_manifest,
            "--wait=true",
            "--timeout=240s",
        ],
    );
}

async fn take_over(
    scene: &Scene<'_>,
    pods: &Api<Pod>,
    leases: &Api<Lease>,
    names: &[String],
    leader: &str,
) {
    let standby = names
        .iter()
        .find(|name| *name != leader)
        .expect("two pods")
        .clone();
    scene
        .configmaps()
        .create(&common::mk_source("failover", &[("a", "1")]))
        .await;
    scene.configmaps().companion_in_sync("failover").await;

    let deleted_at = Instant::now();
    pods.delete(leader, &DeleteParams::default())
        .await
        .expect("delete the leader pod");
    wait_holder(leases, "the old leader to let go", |holder| {
        holder != leader
    })
    .await;
    scene.configmaps().delete("failover-synced").await;
    let new_leader = wait_holder(leases, "a new leader", |holder| holder != leader).await;
    let takeover = deleted_at.elapsed();
    // The ReplicaSet's replacement pod competes too, and may win the race
    // against the standby's next try: either is a live pod of the Deployment.
    let live = ready_pods(pods, 2).await;
    assert!(
        live.contains(&new_leader),
        "the new leader {new_leader} is one of the live pods {live:?}"
    );
    let which = if new_leader == standby {
        "the standby"
    } else {
        "the replacement pod"
    };
    eprintln!(
        "in-cluster: takeover by {which} {new_leader} {:.2}s after deleting the leader pod {leader}",
        takeover.as_secs_f64()
    );
    scene.configmaps().companion_in_sync("failover").await;
}

async fn roll_without_losing_updates(
    cluster: &Cluster,
    scene: &Scene<'_>,
    pods: &Api<Pod>,
    leases: &Api<Lease>,
) {
    // The Deployment is whole again after the leader pod's deletion.
    let before = ready_pods(pods, 2).await;
    scene
        .configmaps()
        .create(&common::mk_source("rolling", &[("n", "0")]))
        .await;
    scene.configmaps().companion_in_sync("rolling").await;

    kubectl_ok(
        cluster,
        &[
            "-n",
            NAMESPACE,
            "rollout",
            "restart",
            &format!("deployment/{DEPLOYMENT}"),
        ],
    );
    let mut status = cluster
        .control_plane()
        .kubectl()
        .args(["-n", NAMESPACE, "rollout", "status"])
        .arg(format!("deployment/{DEPLOYMENT}"))
        .arg(format!("--timeout={}s", POD_PATIENCE.as_secs()))
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("run kubectl rollout status");
    // Updates all through the rollout: each must reach the companion.
    let mut updates = 0;
    let rolled = loop {
        updates += 1;
        scene
            .configmaps()
            .patch("rolling", json!({"data": {"n": updates.to_string()}}))
            .await;
        tokio::time::sleep(Duration::from_millis(500)).await;
        if let Some(exit) = status.try_wait().expect("wait for rollout status") {
            break exit;
        }
    };
    assert!(rolled.success(), "kubectl rollout status failed: {rolled}");
    let companion = scene.configmaps().companion_in_sync("rolling").await;
    assert_eq!(
        companion.data.and_then(|data| data.get("n").cloned()),
        Some(updates.to_string()),
        "the last of {updates} updates made during the rollout"
    );
    let after = ready_pods(pods, 2).await;
    assert!(
        after.iter().all(|name| !before.contains(name)),
        "every pod replaced: {before:?} -> {after:?}"
    );
    wait_holder(leases, "a leader among the new pods", |holder| {
        after.iter().any(|name| name == holder)
    })
    .await;
    eprintln!("in-cluster: {updates} updates during the rollout, none lost");
}

async fn metrics_through_the_service(cluster: &Cluster, scene: &Scene<'_>) {
    let service_ip = kubectl_ok(
        cluster,
        &[
            "-n",
            NAMESPACE,
            "get",
            "service",
            DEPLOYMENT,
            "-o",
            "jsonpath={.spec.clusterIP}",
        ],
    );
    let url = format!("http://{}:8080/metrics", service_ip.trim());
    // Just after a rollout the Service may still route to pods that are
    // gone: probe once its endpoints are exactly the pods running now.
    service_serves_the_running_pods(scene).await;
    // The ServiceAccount admission needs the namespace's default account.
    let accounts: Api<ServiceAccount> = Api::namespaced(scene.client.clone(), &scene.namespace);
    wait_for("the default ServiceAccount", POD_PATIENCE, || async {
        accounts.get_opt("default").await.ok()?.map(|_| ())
    })
    .await
    .unwrap_or_else(|e| panic!("{e:#}"));
    let probe: Pod = serde_json::from_value(json!({
        "metadata": {"name": "metrics-probe"},
        "spec": {
            "restartPolicy": "Never",
            "automountServiceAccountToken": false,
            "securityContext": {
                "runAsNonRoot": true,
                "runAsUser": 65534,
                "seccompProfile": {"type": "RuntimeDefault"}
            },
            "containers": [{
                "name": "http-get",
                "image": testenv::NODE_TOOLS_IMAGE,
                "imagePullPolicy": "Never",
                "command": ["/http-get", url],
                "securityContext": {
                    "allowPrivilegeEscalation": false,
                    "readOnlyRootFilesystem": true,
                    "capabilities": {"drop": ["ALL"]}
                }
            }]
        }
    }))
    .expect("a pod");
    let pods: Api<Pod> = Api::namespaced(scene.client.clone(), &scene.namespace);
    pods.create(&PostParams::default(), &probe)
        .await
        .expect("create the probe pod");
    let phase = wait_for("the probe pod to finish", POD_PATIENCE, || async {
        let pod = pods.get("metrics-probe").await.ok()?;
        let phase = pod.status?.phase?;
        matches!(phase.as_str(), "Succeeded" | "Failed").then_some(phase)
    })
    .await
    .unwrap_or_else(|e| panic!("{e:#}"));
    let logs = kubectl_ok(cluster, &["-n", &scene.namespace, "logs", "metrics-probe"]);
    assert_eq!(phase, "Succeeded", "GET {url} from a pod: {logs}");
    assert!(
        // Served by either replica, the leader or the standby.
        logs.contains(
            "controller_runtime_max_concurrent_reconciles{controller=\"configmap-mirror\"}"
        ),
        "GET {url} from a pod: {logs}"
    );
}

/// After the cluster is dropped: none of its servers runs, and the node
/// left no mount, cgroup, network interface, rule or file.
fn assert_nothing_left(pids: &[u32], node_dir: &Path) {
    let running: Vec<&u32> = pids
        .iter()
        .filter(|pid| testenv::process_alive(**pid))
        .collect();
    assert!(running.is_empty(), "still running: {running:?}");
    // Shims and pods are not our children: found by the node's paths in
    // their command lines.
    let node_dir_text = node_dir.to_string_lossy();
    let strays: Vec<String> = std::fs::read_dir("/proc")
        .expect("read /proc")
        .flatten()
        .filter_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let cmdline =
                text(&std::fs::read(entry.path().join("cmdline")).ok()?).replace('\0', " ");
            (testenv::process_alive(pid) && cmdline.contains(node_dir_text.as_ref()))
                .then(|| format!("{pid}: {cmdline}"))
        })
        .collect();
    assert!(strays.is_empty(), "processes of the node left: {strays:?}");
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").expect("mountinfo");
    assert!(
        !mounts.contains(node_dir_text.as_ref()),
        "mounts left under {node_dir_text}"
    );
    assert!(!node_dir.exists(), "{} left", node_dir.display());
    assert!(
        !Path::new("/sys/class/net/cmm-host").exists(),
        "the node's network interface is left"
    );
    let rules = Command::new("iptables")
        .arg("-S")
        .output()
        .expect("iptables -S");
    assert!(
        !text(&rules.stdout).contains("CONFIGMAP-MIRROR-NODE"),
        "the node's iptables rules are left"
    );
    for hierarchy in ["pids", "memory", "cpu"] {
        let cgroup = Path::new("/sys/fs/cgroup")
            .join(hierarchy)
            .join("configmap-mirror-node");
        assert!(!cgroup.exists(), "{} left", cgroup.display());
    }
}
