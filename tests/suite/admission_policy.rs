//! The chart's admission policy (`admissionPolicy.enabled`) on a real API
//! server, with the controller running under the chart's ServiceAccount:
//! hand edits, deletes and forgeries of copies are refused with a message
//! naming the source; other labels and annotations, the garbage collector,
//! namespace deletion and the break-glass values still pass; the controller
//! works as ever, but its account is refused a copy of a refused Secret type
//! or in a protected namespace. `guards` holds what the policy narrows
//! further (finalizers, claims by annotation, the system controllers, two
//! installs, deploy/'s component elsewhere), `render` the chart's shapes.
//!
//! The policy and the controller are cluster-wide, so these tests run on a
//! control plane of their own, one at a time. Every test first waits for the
//! policy to refuse a forged copy, so each fails without the policy.

use crate::common;

use std::collections::BTreeMap;

use common::{Apart, PATIENCE, Pod, Runs, TestKind, World, helm, helm_on, run, run_ok, to};
use configmap_mirror::contract::{
    CHECKSUM_ANNOTATION, MANAGED_BY_LABEL, MANAGER_NAME, MIRROR_OF_ANNOTATION,
};
use k8s_openapi::api::{
    admissionregistration::v1::ValidatingAdmissionPolicy,
    apps::v1::Deployment,
    coordination::v1::Lease,
    core::v1::{ConfigMap, Namespace, Secret},
};
use kube::{
    Api, Client, ResourceExt,
    api::{DeleteParams, Patch, PatchParams, PostParams, PropagationPolicy},
};
use serde_json::{Value, json};
use testenv::{ControlPlane, wait_for};
use tokio::sync::OnceCell;

const CHART: &str = "charts/configmap-mirror";
/// The release as `make manifests` renders it: the ServiceAccount
/// configmap-mirror/configmap-mirror.
const RELEASE: &str = "configmap-mirror";
const RELEASE_NAMESPACE: &str = "configmap-mirror";
const BREAK_GLASS_GROUP: &str = "mirror-break-glass";
const BREAK_GLASS_USER: &str = "mirror-operator";
const CONSENT: &str = "workshop.io/accept-mirrors";
const SECRET_CONSENT: &str = "workshop.io/accept-secret-mirrors";
/// The one value every source holds: no refusal may carry it.
const VALUE: &str = "value-never-in-a-message";
const PROBE: &str = "policy-probe";
/// The install's `clusterMirror.sourceNamespaces`: protected, as every
/// namespace ClusterMirror sources may come from.
const CLUSTER_MIRROR_SOURCES: &str = "vap-cluster-mirror-sources";

/// The policy's plane, one test at a time: each may run a cluster-wide
/// controller, or a second install's policy.
static POLICY_PLANE: Apart = Apart::new();

fn control_plane() -> &'static ControlPlane {
    POLICY_PLANE.plane()
}

/// What the tests share: the chart's controller as its Pod runs it, a
/// token of its ServiceAccount, and what was applied.
struct Install {
    pod: Pod,
    token: String,
    manifest: String,
}

/// The chart rendered with the policy on (and Secrets, and break-glass
/// values), applied once, as `kubectl apply` of the rendered manifests.
async fn installed() -> &'static Install {
    static INSTALL: OnceCell<Install> = OnceCell::const_new();
    INSTALL
        .get_or_init(|| async {
            let exempt_groups = format!("admissionPolicy.exemptGroups={{{BREAK_GLASS_GROUP}}}");
            let exempt_users = format!("admissionPolicy.exemptUsers={{{BREAK_GLASS_USER}}}");
            let never_carry = format!("controller.neverCarry={{{}}}", never_carry::NEVER_CARRY);
            let sources = format!(
                "clusterMirror.sourceNamespaces={{{RELEASE_NAMESPACE},{CLUSTER_MIRROR_SOURCES}}}"
            );
            let guarded = format!(
                "admissionPolicy.guardedNamespaceLabels={{{}}}",
                namespace_labels::GUARDED.join(",")
            );
            let manifest = render_install(
                RELEASE,
                RELEASE_NAMESPACE,
                &[
                    "secrets.enabled=true",
                    &exempt_groups,
                    &exempt_users,
                    &never_carry,
                    &sources,
                    &guarded,
                ],
            );
            let install = apply_install(manifest, RELEASE, RELEASE_NAMESPACE).await;
            assert!(
                install
                    .pod
                    .args
                    .contains(&"--kinds=configmaps,secrets".to_owned()),
                "{:?}",
                install.pod.args
            );
            install
        })
        .await
}

/// Release `release` of the chart in `namespace`, with the policy on and
/// these `--set` values, as `helm template` renders it.
fn render_install(release: &str, namespace: &str, sets: &[&str]) -> String {
    // The `helm test` Pod is helm's to run, not an object of the install.
    let mut args = vec![
        "template",
        release,
        CHART,
        "--skip-tests",
        "--namespace",
        namespace,
    ];
    for set in ["namespace.create=true", "admissionPolicy.enabled=true"]
        .iter()
        .chain(sets)
    {
        args.extend(["--set", set]);
    }
    let manifest = run_ok(&mut helm(&args), None);
    assert!(
        manifest.contains("kind: ValidatingAdmissionPolicy\n"),
        "{manifest}"
    );
    manifest
}

/// `manifest` of [`render_install`] applied as `kubectl apply` would; its
/// Deployment and ServiceAccount are named as the release.
async fn apply_install(manifest: String, release: &str, namespace: &str) -> Install {
    let control_plane = control_plane();
    run_ok(
        control_plane.kubectl().args(["apply", "-f", "-"]),
        Some(&manifest),
    );
    let admin = control_plane.client().await;
    let deployment = Api::<Deployment>::namespaced(admin.clone(), namespace)
        .get(release)
        .await
        .expect("the Deployment");
    // The test's controller serves on a port of its own and logs as text.
    let args = deployment
        .spec
        .and_then(|spec| spec.template.spec)
        .and_then(|pod| pod.containers.into_iter().next())
        .and_then(|container| container.args)
        .unwrap_or_default()
        .into_iter()
        .filter(|arg| !arg.starts_with("--http-addr=") && !arg.starts_with("--log-format="))
        .collect::<Vec<_>>();
    let token = testenv::mint_token(&admin, namespace, release)
        .await
        .expect("a token of the chart's ServiceAccount");
    let kubeconfig = control_plane
        .log_dir()
        .join(format!("admission-policy-{release}-kubeconfig"));
    control_plane
        .write_token_kubeconfig(&token, &kubeconfig)
        .expect("kubeconfig");
    let pod = Pod {
        args,
        kubeconfig,
        namespace: namespace.to_owned(),
        name: "policy-pod".to_owned(),
    };
    Install {
        pod,
        token,
        manifest,
    }
}

/// Policies are enforced a moment after they are written: waits until the
/// admin's dry-run create of a forged copy is refused.
async fn policy_enforced(client: &Client) {
    let probe = ConfigMap {
        metadata: kube::api::ObjectMeta {
            name: Some(PROBE.into()),
            labels: Some(BTreeMap::from([(
                MANAGED_BY_LABEL.into(),
                MANAGER_NAME.into(),
            )])),
            ..Default::default()
        },
        ..ConfigMap::default()
    };
    let dry_run = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    wait_for(
        "the admission policy to refuse a forged copy",
        PATIENCE,
        || async {
            match configmaps.create(&dry_run, &probe).await {
                Err(kube::Error::Api(status)) if status.code == 403 => Some(()),
                _ => None,
            }
        },
    )
    .await
    .unwrap_or_else(|e| panic!("{e:#}"));
}

/// The message of the policy's refusal of an edit or a forgery (403
/// Forbidden); never prints the object.
fn refused<K: ResourceExt>(result: Result<K, kube::Error>, what: &str) -> String {
    refused_with(403, result, what)
}

/// The message of a refusal by the policy with HTTP status `code`.
fn refused_with<K: ResourceExt>(code: u16, result: Result<K, kube::Error>, what: &str) -> String {
    let message = match result {
        Err(kube::Error::Api(status)) if status.code == code => status.message,
        Err(other) => panic!("{what}: not refused by the policy but with {other}"),
        Ok(object) => panic!("{what}: accepted ({})", object.name_any()),
    };
    // First, without printing it: a refusal never carries content.
    assert!(
        !message.contains(VALUE),
        "{what}: the refusal holds content"
    );
    assert!(
        message.contains("ValidatingAdmissionPolicy"),
        "{what}: {message}"
    );
    message
}

/// One test's world on the policy's plane: its namespace of sources, the
/// chart's controller as its Pod runs it (not started), the policy
/// enforced, and [`targets`], accepting mirrors of every kind.
async fn world<K: TestKind>(tag: &str) -> World<K> {
    let install = installed().await;
    let world = World::on(&POLICY_PLANE, Runs::AsPod(&install.pod), tag).await;
    policy_enforced(&world.scene.client).await;
    let consent = [(CONSENT, "true"), (SECRET_CONSENT, "true")];
    world.namespace("to", false, &consent).await;
    world
}

/// The namespace of [`world`] that accepts the mirrors of its sources.
fn targets<K: TestKind>(world: &World<K>) -> String {
    format!("{}-to", world.prefix)
}

/// A labeled source `name` holding [`VALUE`] that mirrors into
/// [`targets`].
async fn source_to_targets<K: TestKind>(world: &World<K>, name: &str) -> K {
    let targets = targets(world);
    world
        .objects()
        .source(name, &[("key", VALUE)], &[to(&targets)])
        .await
}

/// The admin's merge patch of `namespace/name`, which the policy must
/// refuse naming the source `source` and pointing at it.
async fn refused_edit<K: TestKind>(
    world: &World<K>,
    namespace: &str,
    name: &str,
    edit: &Edit,
    source: &str,
) {
    let (what, patch) = edit;
    let what = format!("{what} on {namespace}/{name}");
    let message = refused(world.try_patch(namespace, name, patch).await, &what);
    assert!(
        message.contains(&format!("{namespace}/{name} is a copy of {source} "))
            && message.contains("edit the source instead"),
        "{what}: {message}"
    );
}

/// What an edit does, for the test's messages (never its values), and its
/// merge patch.
type Edit = (&'static str, Value);

fn managed_by_us() -> BTreeMap<String, String> {
    BTreeMap::from([(MANAGED_BY_LABEL.into(), MANAGER_NAME.into())])
}

crate::for_each_kind!(
    an_admins_edits_of_copies_are_refused_naming_the_source,
    forged_copies_are_refused,
    the_controller_still_creates_updates_heals_and_deletes_copies,
    the_garbage_collector_and_namespace_deletion_still_pass,
    the_exempt_group_and_user_may_edit_a_copy,
);

async fn an_admins_edits_of_copies_are_refused_naming_the_source<K: TestKind>() {
    let mut world = world::<K>("vap-edit").await;
    world.start().await;
    source_to_targets(&world, "app").await;
    let source = format!("{}/app", world.scene.namespace);
    let companion = (world.scene.namespace.clone(), "app-synced");
    let mirror = (targets(&world), "app");
    world.copy_in_sync(&companion.0, companion.1, "app").await;
    world.copy_in_sync(&mirror.0, mirror.1, "app").await;

    for (namespace, name) in [&companion, &mirror] {
        let (namespace, name) = (namespace.as_str(), *name);
        let edits: [Edit; 8] = [
            ("a changed value", K::data_patch(&[("key", Some("edited"))])),
            ("an added key", K::data_patch(&[("more", Some("added"))])),
            ("immutable", json!({"immutable": true})),
            // Detaching the copy.
            (
                "the managed-by label removed",
                json!({"metadata": {"labels": {MANAGED_BY_LABEL: null}}}),
            ),
            (
                "the managed-by label changed",
                json!({"metadata": {"labels": {MANAGED_BY_LABEL: "someone-else"}}}),
            ),
            (
                "a workshop.io/ label added",
                json!({"metadata": {"labels": {"workshop.io/extra": "x"}}}),
            ),
            (
                "the checksum changed",
                json!({"metadata": {"annotations": {CHECKSUM_ANNOTATION: "sha256:forged"}}}),
            ),
            (
                "the source-selector annotation removed",
                json!({"metadata": {"annotations": {"workshop.io/source-selector": null}}}),
            ),
        ];
        for edit in &edits {
            refused_edit(&world, namespace, name, edit, &source).await;
        }
        // What other tools add to a copy is theirs.
        let theirs = json!({"metadata": {
            "labels": {"example.com/tier": "a"},
            "annotations": {"example.com/note": "kept"},
        }});
        let edited = world
            .try_patch(namespace, name, &theirs)
            .await
            .unwrap_or_else(|e| panic!("adding a label to {namespace}/{name}: {e}"));
        assert_eq!(
            edited.labels().get("example.com/tier").map(String::as_str),
            Some("a")
        );
        let removed = json!({"metadata": {"labels": {"example.com/tier": null}}});
        world
            .try_patch(namespace, name, &removed)
            .await
            .unwrap_or_else(|e| panic!("removing a label from {namespace}/{name}: {e}"));
    }
    // A companion's owner reference.
    refused_edit(
        &world,
        &companion.0,
        companion.1,
        &(
            "the owner reference removed",
            json!({"metadata": {"ownerReferences": null}}),
        ),
        &source,
    )
    .await;
    // A full replace too, and a mirror that names its source in its
    // annotation.
    let mut replaced = world
        .api(&mirror.0)
        .get(mirror.1)
        .await
        .expect("the mirror");
    replaced.meta_mut().annotations = None;
    let message = refused(
        world
            .api(&mirror.0)
            .replace(mirror.1, &PostParams::default(), &replaced)
            .await,
        "a replace of the mirror without its annotations",
    );
    assert!(message.contains(&source), "{message}");
    world.finish().await;
}

async fn forged_copies_are_refused<K: TestKind>() {
    let world = world::<K>("vap-forge").await;
    let api = world.api(&world.scene.namespace);
    let create = PostParams::default();

    let mut labeled = K::with_data("labeled", &[("key", VALUE)], false);
    labeled.meta_mut().labels = Some(managed_by_us());
    let message = refused(api.create(&create, &labeled).await, "a labeled forgery");
    assert!(
        message.contains(&format!(
            "{}/labeled may not claim to be a copy: only configmap-mirror makes copies",
            world.scene.namespace
        )),
        "{message}"
    );

    let claimed = "elsewhere/app";
    let mut annotated = K::with_data("annotated", &[("key", VALUE)], false);
    annotated.meta_mut().annotations = Some(BTreeMap::from([(
        MIRROR_OF_ANNOTATION.into(),
        claimed.into(),
    )]));
    let message = refused(
        api.create(&create, &annotated).await,
        "a forgery by its mirror-of annotation alone",
    );
    assert!(
        message.contains(&format!("may not claim to be a copy of {claimed}"))
            && message.contains("edit the source instead"),
        "{message}"
    );

    // An object of one's own may not be made a copy by an update either.
    let plain = api
        .create(&create, &K::with_data("plain", &[("key", VALUE)], false))
        .await
        .expect("a plain object");
    for patch in [
        json!({"metadata": {"labels": {MANAGED_BY_LABEL: MANAGER_NAME}}}),
        json!({"metadata": {"annotations": {MIRROR_OF_ANNOTATION: claimed}}}),
    ] {
        refused(
            world
                .try_patch(&world.scene.namespace, "plain", &patch)
                .await,
            &format!("{patch} on a plain object"),
        );
    }
    // The managed-by label of another manager is none of the policy's
    // business, nor is editing an object of one's own.
    let mut helm_made = K::with_data("helm-made", &[("key", VALUE)], false);
    helm_made.meta_mut().labels = Some(BTreeMap::from([(MANAGED_BY_LABEL.into(), "Helm".into())]));
    api.create(&create, &helm_made)
        .await
        .expect("another manager's object");
    world
        .try_patch(
            &world.scene.namespace,
            &plain.name_any(),
            &K::data_patch(&[("key", Some("mine"))]),
        )
        .await
        .expect("an edit of a plain object");
    world.finish().await;
}

async fn the_controller_still_creates_updates_heals_and_deletes_copies<K: TestKind>() {
    let mut world = world::<K>("vap-works").await;
    world.start().await;
    source_to_targets(&world, "app").await;
    let (sources, targets) = (world.scene.namespace.clone(), targets(&world));
    world.copy_in_sync(&sources, "app-synced", "app").await;
    world.copy_in_sync(&targets, "app", "app").await;

    world
        .try_patch(&sources, "app", &K::data_patch(&[("key", Some("changed"))]))
        .await
        .expect("change the source");
    world.copy_in_sync(&sources, "app-synced", "app").await;
    world.copy_in_sync(&targets, "app", "app").await;

    // The controller deletes a mirror no longer asked for, and the
    // companion of a deleted source goes.
    let stop_mirroring = json!({"metadata": {"annotations": {"workshop.io/mirror-to": null}}});
    world
        .try_patch(&sources, "app", &stop_mirroring)
        .await
        .expect("stop mirroring");
    world.objects_in(&targets).wait_gone("app").await;
    world
        .api(&sources)
        .delete("app", &DeleteParams::default())
        .await
        .expect("delete the source");
    world.objects_in(&sources).wait_gone("app-synced").await;

    // Its Lease and digest key, in the protected release namespace, carry
    // no managed-by label: the policy leaves them alone.
    let lease = Api::<Lease>::namespaced(world.scene.client.clone(), RELEASE_NAMESPACE)
        .get("configmap-mirror")
        .await
        .expect("the Lease");
    assert_eq!(
        lease.spec.and_then(|s| s.holder_identity).as_deref(),
        Some("policy-pod")
    );
    Api::<Secret>::namespaced(world.scene.client.clone(), RELEASE_NAMESPACE)
        .get_metadata("configmap-mirror-digest-key")
        .await
        .expect("the digest key");
    // No write of the controller's was refused (it logs every refusal).
    let log = world.controller().log_text();
    assert!(!log.contains("denied request"), "{log}");
    world.finish().await;
}

async fn the_garbage_collector_and_namespace_deletion_still_pass<K: TestKind>() {
    let mut world = world::<K>("vap-gc").await;
    world.start().await;
    source_to_targets(&world, "app").await;
    source_to_targets(&world, "orphaning").await;
    let (sources, targets) = (world.scene.namespace.clone(), targets(&world));
    world.copy_in_sync(&sources, "app-synced", "app").await;
    world.copy_in_sync(&targets, "app", "app").await;
    world
        .copy_in_sync(&sources, "orphaning-synced", "orphaning")
        .await;
    // Without the controller, what removes the copy or its owner reference
    // is the garbage collector alone.
    world.stop();
    let api = world.api(&sources);
    api.delete("app", &DeleteParams::default())
        .await
        .expect("delete a source");
    world.objects_in(&sources).wait_gone("app-synced").await;
    // Orphaning: the collector removes the companion's owner reference (an
    // update of a copy) before the source may go.
    let orphan = DeleteParams {
        propagation_policy: Some(PropagationPolicy::Orphan),
        ..DeleteParams::default()
    };
    api.delete("orphaning", &orphan)
        .await
        .expect("delete a source, orphaning");
    wait_for(
        "the garbage collector to orphan the companion",
        PATIENCE,
        || async {
            let companion = api.get_opt("orphaning-synced").await.ok()??;
            let source_gone = matches!(api.get_opt("orphaning").await, Ok(None));
            (source_gone && companion.owner_references().is_empty()).then_some(())
        },
    )
    .await
    .unwrap_or_else(|e| panic!("{e:#}"));

    // Namespaces holding copies (the orphan, the mirror) are deleted whole.
    world.start().await;
    let namespaces: Api<Namespace> = Api::all(world.scene.client.clone());
    for namespace in [&targets, &sources] {
        namespaces
            .delete(namespace, &DeleteParams::default())
            .await
            .unwrap_or_else(|e| panic!("delete namespace {namespace}: {e}"));
    }
    wait_for("both namespaces to be deleted", PATIENCE, || async {
        let sources_gone = matches!(namespaces.get_opt(&sources).await, Ok(None));
        let targets_gone = matches!(namespaces.get_opt(&targets).await, Ok(None));
        (sources_gone && targets_gone).then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{e:#}"));
    world.stop();
}

/// `kubectl patch` of `namespace/name` of kind `K` as `user` in `groups`.
fn patch_as<K: TestKind>(
    namespace: &str,
    name: &str,
    patch: &Value,
    user: &str,
    groups: &[&str],
) -> (bool, String) {
    let plural = K::plural(&()).into_owned();
    let patch = patch.to_string();
    kubectl_as(
        &[
            "patch",
            &plural,
            name,
            "--namespace",
            namespace,
            "--type",
            "merge",
            "--patch",
            &patch,
        ],
        user,
        groups,
    )
}

/// `kubectl <args>` as `user` in `groups`: whether it passed, and its
/// error output.
fn kubectl_as(args: &[&str], user: &str, groups: &[&str]) -> (bool, String) {
    let mut cmd = control_plane().kubectl();
    cmd.args(args).args(["--as", user]);
    for group in groups {
        cmd.args(["--as-group", group]);
    }
    let ran = run(&mut cmd, None);
    (ran.ok, ran.stderr)
}

async fn the_exempt_group_and_user_may_edit_a_copy<K: TestKind>() {
    let mut world = world::<K>("vap-exempt").await;
    world.start().await;
    source_to_targets(&world, "app").await;
    let sources = world.scene.namespace.clone();
    world.copy_in_sync(&sources, "app-synced", "app").await;
    // Stopped, so that what the exempt write stays to be seen.
    world.stop();
    let edit = K::data_patch(&[("key", Some("break-glass"))]);
    let admins = "system:masters";

    let (ok, err) = patch_as::<K>(&sources, "app-synced", &edit, "an-admin", &[admins]);
    assert!(
        !ok,
        "a cluster admin outside the exempt group edited a copy"
    );
    assert!(err.contains("edit the source instead"), "{err}");

    let (ok, err) = patch_as::<K>(
        &sources,
        "app-synced",
        &edit,
        "an-admin",
        &[admins, BREAK_GLASS_GROUP],
    );
    assert!(ok, "the exempt group was refused: {err}");
    let edited = world.api(&sources).get("app-synced").await.expect("copy");
    assert_eq!(edited.value("key").as_deref(), Some("break-glass"));

    let detach = json!({"metadata": {"labels": {MANAGED_BY_LABEL: null}}});
    let (ok, err) = patch_as::<K>(&sources, "app-synced", &detach, BREAK_GLASS_USER, &[admins]);
    assert!(ok, "the exempt user was refused: {err}");
    let detached = world.api(&sources).get("app-synced").await.expect("copy");
    assert!(!detached.labels().contains_key(MANAGED_BY_LABEL));
    world.finish().await;
}

/// A copy as a buggy controller would write it: the managed-by label.
fn labeled_configmap(name: &str) -> ConfigMap {
    ConfigMap {
        metadata: kube::api::ObjectMeta {
            name: Some(name.into()),
            labels: Some(managed_by_us()),
            ..Default::default()
        },
        ..ConfigMap::default()
    }
}

fn labeled_secret(name: &str, type_: &str) -> Secret {
    Secret {
        metadata: kube::api::ObjectMeta {
            name: Some(name.into()),
            labels: Some(managed_by_us()),
            ..Default::default()
        },
        type_: Some(type_.into()),
        ..Secret::default()
    }
}

#[tokio::test]
async fn the_controllers_account_is_refused_refused_types_and_protected_namespaces() {
    let world = world::<ConfigMap>("vap-own").await;
    let controller = Client::try_from(control_plane().token_config(&installed().await.token))
        .expect("a client with the ServiceAccount's token");
    let create = PostParams::default();
    let here = world.scene.namespace.as_str();

    // What its RBAC allows and its rules too: a copy in an ordinary namespace.
    Api::<ConfigMap>::namespaced(controller.clone(), here)
        .create(&create, &labeled_configmap("fine"))
        .await
        .expect("a copy in an ordinary namespace");
    Api::<Secret>::namespaced(controller.clone(), here)
        .create(&create, &labeled_secret("fine", "Opaque"))
        .await
        .expect("an Opaque copy in an ordinary namespace");

    let secrets: Api<Secret> = Api::namespaced(controller.clone(), here);
    for type_ in [
        "bootstrap.kubernetes.io/token",
        "helm.sh/release.v1",
        "kubernetes.io/service-account-token",
    ] {
        let mut secret = labeled_secret("refused-type", type_);
        // What the API server's own validation asks of a token Secret.
        secret.metadata.annotations = Some(BTreeMap::from([(
            "kubernetes.io/service-account.name".into(),
            "default".into(),
        )]));
        // Invalid (422): the controller reports it as CompanionRejected.
        let message = refused_with(
            422,
            secrets.create(&create, &secret).await,
            &format!("a copy of type {type_}"),
        );
        assert!(
            message.contains(&format!("Secrets of type {type_} are never copied")),
            "{message}"
        );
    }

    let mirror_of = |mut meta: kube::api::ObjectMeta| {
        meta.annotations = Some(BTreeMap::from([(
            "workshop.io/mirror-of".into(),
            format!("{here}/source"),
        )]));
        meta
    };
    // Where a ClusterMirror's source may come from: present, so that the
    // request reaches the policy.
    let namespace = Namespace {
        metadata: kube::api::ObjectMeta {
            name: Some(CLUSTER_MIRROR_SOURCES.into()),
            ..Default::default()
        },
        ..Namespace::default()
    };
    match Api::<Namespace>::all(world.scene.client.clone())
        .create(&create, &namespace)
        .await
    {
        Ok(_) => {}
        Err(kube::Error::Api(status)) if status.is_already_exists() => {}
        Err(error) => panic!("create namespace {CLUSTER_MIRROR_SOURCES}: {error}"),
    }
    for namespace in [
        "kube-system",
        "kube-public",
        "kube-node-lease",
        RELEASE_NAMESPACE,
        CLUSTER_MIRROR_SOURCES,
    ] {
        let mut mirror = labeled_configmap("protected");
        mirror.metadata = mirror_of(mirror.metadata);
        let message = refused_with(
            422,
            Api::<ConfigMap>::namespaced(controller.clone(), namespace)
                .create(&create, &mirror)
                .await,
            &format!("a ConfigMap mirror in {namespace}"),
        );
        assert!(
            message.contains(&format!("namespace {namespace} is protected")),
            "{message}"
        );
        let mut mirror = labeled_secret("protected", "Opaque");
        mirror.metadata = mirror_of(mirror.metadata);
        refused_with(
            422,
            Api::<Secret>::namespaced(controller.clone(), namespace)
                .create(&create, &mirror)
                .await,
            &format!("a Secret mirror in {namespace}"),
        );
    }
    // A source in a protected namespace keeps its companion: protection is
    // about targets, as the controller decides it.
    let companions: Api<ConfigMap> = Api::namespaced(controller.clone(), "kube-public");
    companions
        .create(&create, &labeled_configmap("companion-synced"))
        .await
        .expect("a companion in a protected namespace");
    companions
        .delete("companion-synced", &Default::default())
        .await
        .expect("delete the companion");
    world.finish().await;
}

#[tokio::test]
async fn the_policy_type_checks_without_warnings() {
    let world = world::<ConfigMap>("vap-typecheck").await;
    let policies: Api<ValidatingAdmissionPolicy> = Api::all(world.scene.client.clone());
    let guarding_labels = format!("{RELEASE}-namespace-labels");
    for name in [RELEASE, guarding_labels.as_str()] {
        let checked = wait_for(&format!("{name} to be type-checked"), PATIENCE, || async {
            let policy = policies.get(name).await.ok()?;
            let status = policy.status?;
            (status.observed_generation == policy.metadata.generation)
                .then_some(status.type_checking)?
        })
        .await
        .unwrap_or_else(|e| panic!("{e:#}"));
        let warnings = checked.expression_warnings.unwrap_or_default();
        assert!(warnings.is_empty(), "{name}: {warnings:#?}");
    }
    world.finish().await;
}

#[tokio::test]
async fn an_uninstall_removes_the_policy() {
    let world = world::<ConfigMap>("vap-helm").await;
    let release = format!(
        "configmap-mirror-{}",
        world.scene.namespace.rsplit('-').next().unwrap_or("helm")
    );
    run_ok(
        &mut helm_on(
            control_plane(),
            &[
                "install",
                &release,
                CHART,
                "--namespace",
                &world.scene.namespace,
                "--set",
                "admissionPolicy.enabled=true",
                // The CRD is already there, applied with the rendered
                // manifests, and owned by no release.
                "--set",
                "crds.enabled=false",
            ],
        ),
        None,
    );
    let listed = || {
        run_ok(
            control_plane().kubectl().args([
                "get",
                "validatingadmissionpolicy,validatingadmissionpolicybinding",
                &release,
                "-o",
                "name",
                "--ignore-not-found",
            ]),
            None,
        )
    };
    let installed = listed();
    // Uninstalled before any assertion: this install's policy would refuse
    // the other tests' controller.
    run_ok(
        &mut helm_on(
            control_plane(),
            &["uninstall", &release, "--namespace", &world.scene.namespace],
        ),
        None,
    );
    assert_eq!(installed.lines().count(), 2, "{installed}");
    wait_for(
        "the policy and its binding to be gone",
        PATIENCE,
        || async { listed().trim().is_empty().then_some(()) },
    )
    .await
    .unwrap_or_else(|e| panic!("{e:#}: {}", listed()));
    world.finish().await;
}

mod cluster_mirror;
mod guards;
mod namespace_labels;
mod never_carry;
mod render;
