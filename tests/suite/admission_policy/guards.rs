//! What the policy guards beyond edits, and whom it lets through for what:
//! deletes of copies (refused, saying how to stop receiving one), finalizers,
//! objects that claim a source by annotation only, the garbage collector and
//! the namespace controller each admitted for what they do and nothing
//! more, two installs side by side, and deploy/'s component in an overlay
//! into another namespace.

use super::*;

use std::path::PathBuf;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

crate::for_each_kind!(
    deleting_a_copy_is_refused_saying_how_to_stop_receiving_it,
    finalizers_and_claims_by_annotation_are_guarded_and_system_controllers_do_only_their_part,
);

async fn deleting_a_copy_is_refused_saying_how_to_stop_receiving_it<K: TestKind>() {
    let mut world = world::<K>("vap-delete").await;
    world.start().await;
    source_to_targets(&world, "app").await;
    let (sources, targets) = (world.scene.namespace.clone(), targets(&world));
    world.copy_in_sync(&sources, "app-synced", "app").await;
    let mirror = world.copy_in_sync(&targets, "app", "app").await;
    let source = format!("{sources}/app");

    // Deleted, a copy's name could be taken by a plain object before the
    // controller puts it back, and then it never would: refused, to an
    // admin too, saying how to stop having it.
    let message = refused_delete(
        &world.api(&sources),
        "app-synced",
        "an admin's delete of the companion",
    )
    .await;
    assert!(
        message.contains(&format!(
            "{sources}/app-synced is a copy of {source} kept by configmap-mirror and may not be deleted"
        )) && message.contains("delete the source, or take it out of the selector workshop.io/managed=true"),
        "{message}"
    );
    let consent = if K::plural(&()) == "secrets" {
        SECRET_CONSENT
    } else {
        CONSENT
    };
    let message = refused_delete(
        &world.api(&targets),
        "app",
        "an admin's delete of the mirror",
    )
    .await;
    assert!(
        message.contains(&format!(
            "{targets}/app is a copy of {source} kept by configmap-mirror and may not be deleted"
        )) && message.contains(&format!(
            "withdraw the namespace's consent (its labels matching {consent}=true, or a MirrorGrant in it)"
        )) && message.contains("workshop.io/mirror-to, or their Mirror or ClusterMirror"),
        "{message}"
    );

    // Break-glass still deletes, and the copy comes back.
    let plural = K::plural(&()).into_owned();
    let (ok, err) = kubectl_as(
        &["delete", &plural, "app", "--namespace", &targets],
        BREAK_GLASS_USER,
        &["system:masters"],
    );
    assert!(ok, "the exempt user was refused a delete: {err}");
    let back = world.copy_in_sync(&targets, "app", "app").await;
    assert_ne!(back.uid(), mirror.uid(), "the mirror was not recreated");

    // What the message says works: without the namespace's consent the
    // controller removes the mirror itself.
    let withdraw = json!({"metadata": {"labels": {consent: null}}});
    Api::<Namespace>::all(world.scene.client.clone())
        .patch(&targets, &PatchParams::default(), &Patch::Merge(&withdraw))
        .await
        .expect("withdraw the consent");
    world.objects_in(&targets).wait_gone("app").await;
    let log = world.controller().log_text();
    assert!(!log.contains("denied request"), "{log}");
    world.finish().await;
}

/// The message of the policy's refusal of a delete of `name`.
async fn refused_delete<K: TestKind>(api: &Api<K>, name: &str, what: &str) -> String {
    let result = api.delete(name, &DeleteParams::default()).await;
    // A delete answers the object or a Status: either way it passed.
    refused(result.map(|_| ConfigMap::default()), what)
}

/// The selector annotation every copy of the test's install carries.
fn of_this_install() -> (String, String) {
    (
        "workshop.io/source-selector".into(),
        "workshop.io/managed=true".into(),
    )
}

async fn finalizers_and_claims_by_annotation_are_guarded_and_system_controllers_do_only_their_part<
    K: TestKind,
>() {
    let world = world::<K>("vap-narrow").await;
    let (sources, targets) = (world.scene.namespace.clone(), targets(&world));
    let create = PostParams::default();
    // What the controller writes, written under its ServiceAccount: a
    // companion owned by its source, and an object that names a source by
    // its annotation alone (as an older release, or break-glass, leaves).
    let controller = Client::try_from(control_plane().token_config(&installed().await.token))
        .expect("a client with the ServiceAccount's token");
    let source = world
        .api(&sources)
        .create(&create, &K::with_data("app", &[("key", VALUE)], false))
        .await
        .expect("the source");
    let mut companion = K::with_data("app-synced", &[("key", VALUE)], false);
    companion.meta_mut().labels = Some(managed_by_us());
    companion.meta_mut().annotations = Some(BTreeMap::from([of_this_install()]));
    companion.meta_mut().owner_references = Some(vec![OwnerReference {
        api_version: "v1".into(),
        kind: K::kind(&()).into_owned(),
        name: "app".into(),
        uid: source.uid().expect("the source's uid"),
        controller: Some(true),
        ..OwnerReference::default()
    }]);
    Api::<K>::namespaced(controller.clone(), &sources)
        .create(&create, &companion)
        .await
        .expect("the controller's companion");
    let mut claimed = K::with_data("claimed", &[("key", VALUE)], false);
    claimed.meta_mut().annotations = Some(BTreeMap::from([
        of_this_install(),
        (MIRROR_OF_ANNOTATION.into(), format!("{sources}/app")),
    ]));
    Api::<K>::namespaced(controller.clone(), &targets)
        .create(&create, &claimed)
        .await
        .expect("an object claiming a source by its annotation");
    let source = format!("{sources}/app");

    // A finalizer would keep a pruned copy Terminating, readable.
    let hold = json!({"metadata": {"finalizers": ["example.com/hold"]}});
    refused_edit(
        &world,
        &sources,
        "app-synced",
        &("a finalizer added", hold.clone()),
        &source,
    )
    .await;
    // Claiming by the annotation alone is claiming: re-targeted, or marked
    // as detached (which the controller takes for its own), refused.
    let edits: [Edit; 4] = [
        ("a changed value", K::data_patch(&[("key", Some("edited"))])),
        (
            "the source re-targeted",
            json!({"metadata": {"annotations": {MIRROR_OF_ANNOTATION: format!("{sources}/other")}}}),
        ),
        (
            "marked detached",
            json!({"metadata": {"annotations": {"workshop.io/carried-labels": MANAGED_BY_LABEL}}}),
        ),
        ("a finalizer added", hold.clone()),
    ];
    for edit in &edits {
        refused_edit(&world, &targets, "claimed", edit, &source).await;
    }
    world
        .try_patch(
            &targets,
            "claimed",
            &json!({"metadata": {"labels": {"example.com/tier": "a"}}}),
        )
        .await
        .expect("a label of one's own on it");
    refused_delete(
        &world.api(&targets),
        "claimed",
        "an admin's delete of an object claiming a source",
    )
    .await;

    // The garbage collector removes owner references and its own
    // finalizers, nothing else. Impersonated: its own RBAC lets it.
    let collector = "system:serviceaccount:kube-system:generic-garbage-collector";
    let data = K::data_patch(&[("key", Some("collected"))]);
    for (what, patch) in [("a data patch", &data), ("a finalizer added", &hold)] {
        let (ok, err) = patch_as::<K>(&sources, "app-synced", patch, collector, &[]);
        assert!(!ok, "the garbage collector's identity made {what}");
        assert!(err.contains("is a copy of"), "{what}: {err}");
    }
    let unowned = json!({"metadata": {"ownerReferences": null}});
    let (ok, err) = patch_as::<K>(&sources, "app-synced", &unowned, collector, &[]);
    assert!(
        ok,
        "the garbage collector was refused an owner reference's removal: {err}"
    );
    let orphaned = world
        .api(&sources)
        .get("app-synced")
        .await
        .expect("the companion");
    assert!(orphaned.owner_references().is_empty());
    assert_eq!(orphaned.value("key").as_deref(), Some(VALUE));

    // The namespace controller only deletes. Given every right (the
    // masters group), so that what refuses it is the policy.
    let namespace_controller = "system:serviceaccount:kube-system:namespace-controller";
    let (ok, err) = patch_as::<K>(
        &targets,
        "claimed",
        &data,
        namespace_controller,
        &["system:masters"],
    );
    assert!(!ok, "the namespace controller's identity edited a copy");
    assert!(err.contains("is a copy of"), "{err}");
    let plural = K::plural(&()).into_owned();
    let (ok, err) = kubectl_as(
        &["delete", &plural, "claimed", "--namespace", &targets],
        namespace_controller,
        &["system:masters"],
    );
    assert!(ok, "the namespace controller was refused a delete: {err}");
    world.finish().await;
}

/// Deletes what a manifest made when dropped, so that a failing test leaves
/// no second install's policy behind to refuse the next test's controller.
struct Applied(String);

impl Drop for Applied {
    fn drop(&mut self) {
        let _ = run(
            control_plane().kubectl().args([
                "delete",
                "-f",
                "-",
                "--ignore-not-found",
                "--wait=false",
            ]),
            Some(&self.0),
        );
    }
}

#[tokio::test]
async fn two_installs_with_the_policy_on_both_mirror_and_neither_is_refused() {
    let mut world = world::<ConfigMap>("vap-two").await;
    // A second install: another release, namespace, selector and Lease,
    // the policy on, nobody exempt; it never carries app.kubernetes.io/*,
    // a prefix of its own managed-by label, which its policy must not hold
    // against it.
    let release = "second-configmap-mirror";
    let manifest = render_install(
        release,
        "second-system",
        &[
            "controller.selector=workshop.io/team=b",
            "leaderElection.leaseName=second",
            "controller.neverCarry={app.kubernetes.io/*}",
        ],
    );
    let _uninstall = Applied(manifest.clone());
    let second = apply_install(manifest, release, "second-system").await;
    world.start().await;
    let theirs = second
        .pod
        .run(control_plane(), &format!("{}-b", world.scene.namespace))
        .await;

    source_to_targets(&world, "app").await;
    let mut source_b = ConfigMap::with_data("app-b", &[("key", VALUE)], false);
    source_b.metadata.labels = Some(BTreeMap::from([("workshop.io/team".into(), "b".into())]));
    source_b.metadata.annotations = Some(BTreeMap::from([(
        "workshop.io/mirror-to".into(),
        targets(&world),
    )]));
    world
        .api(&world.scene.namespace)
        .create(&PostParams::default(), &source_b)
        .await
        .expect("the second install's source");
    let (sources, targets) = (world.scene.namespace.clone(), targets(&world));
    for (copy, of) in [("app-synced", "app"), ("app-b-synced", "app-b")] {
        world.copy_in_sync(&sources, copy, of).await;
    }
    world.copy_in_sync(&targets, "app", "app").await;
    world.copy_in_sync(&targets, "app-b", "app-b").await;

    // Each policy still guards its own install's copies.
    let edit = (
        "a changed value",
        ConfigMap::data_patch(&[("key", Some("edited"))]),
    );
    refused_edit(
        &world,
        &targets,
        "app-b",
        &edit,
        &format!("{sources}/app-b"),
    )
    .await;
    let message = refused_delete(
        &world.api(&targets),
        "app",
        "a delete of the first install's mirror",
    )
    .await;
    assert!(message.contains("may not be deleted"), "{message}");

    let log = theirs.log_text();
    let ours = world.controller().log_text();
    assert!(theirs.stop().success());
    assert!(!log.contains("denied request"), "{log}");
    assert!(!ours.contains("denied request"), "{ours}");

    // Uninstalled, and its policy no longer enforced, before the next test.
    drop(_uninstall);
    chart_controller_admitted(&world).await;
    world.finish().await;
}

/// Waits until the chart install's controller may create a copy (not
/// marked by any install) again: no other policy refuses it any more.
async fn chart_controller_admitted<K>(world: &World<K>) {
    let controller = Client::try_from(control_plane().token_config(&installed().await.token))
        .expect("a client with the ServiceAccount's token");
    let unmarked: Api<ConfigMap> = Api::namespaced(controller, &world.scene.namespace);
    let dry_run = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    wait_for(
        "only the chart's policy to be enforced",
        PATIENCE,
        || async {
            unmarked
                .create(&dry_run, &labeled_configmap("unmarked"))
                .await
                .ok()
        },
    )
    .await
    .unwrap_or_else(|e| panic!("{e:#}"));
}

/// The objects of these kinds in a multi-document manifest, as one List
/// `kubectl apply` takes.
fn only_kinds(manifest: &str, kinds: &[&str]) -> String {
    let items: Vec<Value> = serde_saphyr::from_multiple::<Value>(manifest)
        .unwrap_or_else(|e| panic!("not YAML: {e}\n{manifest}"))
        .into_iter()
        .filter(|o| kinds.iter().any(|kind| o["kind"] == *kind))
        .collect();
    json!({"apiVersion": "v1", "kind": "List", "items": items}).to_string()
}

const POLICY_KINDS: &[&str] = &[
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding",
];

/// Puts the chart install's policy back when dropped: the test replaced it
/// with one of the same name.
struct RestorePolicy(String);

impl Drop for RestorePolicy {
    fn drop(&mut self) {
        let ran = run(
            control_plane().kubectl().args(["apply", "-f", "-"]),
            Some(&self.0),
        );
        assert!(
            ran.ok || std::thread::panicking(),
            "restore the policy: {}",
            ran.stderr
        );
    }
}

/// `kubectl kustomize` of a kustomization written under `dir`.
fn kustomize(dir: &std::path::Path, kustomization: &str) -> (bool, String, String) {
    std::fs::create_dir_all(dir).expect("a scratch directory");
    std::fs::write(dir.join("kustomization.yaml"), kustomization).expect("write kustomization");
    let ran = run(control_plane().kubectl().arg("kustomize").arg(dir), None);
    (ran.ok, ran.stdout, ran.stderr)
}

#[tokio::test]
async fn the_kustomize_component_follows_an_overlay_into_another_namespace() {
    let world = world::<ConfigMap>("vap-kustomize").await;
    let namespace = "mirror-kustomized";
    // kustomize takes no absolute path: the overlays beside a copy of
    // deploy/'s base and component.
    let scratch = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("policy-overlay-{}", std::process::id()));
    let deploy = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("deploy");
    for dir in ["base", "components/admission-policy"] {
        let to = scratch.join(dir);
        std::fs::create_dir_all(&to).expect("a scratch directory");
        for file in std::fs::read_dir(deploy.join(dir)).expect("deploy/") {
            let file = file.expect("a file of deploy/").path();
            let name = file.file_name().expect("a file name");
            std::fs::copy(&file, to.join(name)).expect("copy deploy/");
        }
    }
    let (base, component) = ("../base", "../components/admission-policy");
    // The namespace set in the kustomization that adds the component comes
    // after its replacements: refused at render, naming what to do.
    let (ok, out, err) = kustomize(
        &scratch.join("together"),
        &format!("namespace: {namespace}\nresources: [{base}]\ncomponents: [{component}]\n"),
    );
    assert!(
        !ok,
        "rendered with the namespace beside the component:\n{out}"
    );
    assert!(
        err.contains("namespace transformation produces ID conflict")
            && err.contains("set-the-namespace-beneath-the-admission-policy-component"),
        "{err}"
    );
    // Set beneath it, as the component says: the policy names the
    // ServiceAccount where the overlay put it.
    let (ok, _, err) = kustomize(
        &scratch.join("moved"),
        &format!("namespace: {namespace}\nresources: [{base}]\n"),
    );
    assert!(ok, "{err}");
    let (ok, manifest, err) = kustomize(
        &scratch.join("guarded"),
        &format!("resources: [../moved]\ncomponents: [{component}]\n"),
    );
    assert!(ok, "{err}");

    let _restore = RestorePolicy(only_kinds(&installed().await.manifest, POLICY_KINDS));
    let _remove = Applied(only_kinds(&manifest, &["Namespace"]));
    let mut kinds = vec!["Namespace", "ServiceAccount"];
    kinds.extend(POLICY_KINDS);
    run_ok(
        control_plane().kubectl().args(["apply", "-f", "-"]),
        Some(&only_kinds(&manifest, &kinds)),
    );
    policy_enforced(&world.scene.client).await;
    let sources = world.scene.namespace.as_str();
    let account = format!("{namespace}:configmap-mirror");
    for create in [
        vec![
            "role",
            "kustomized",
            "--verb=get,create,update,patch,delete",
            "--resource=configmaps",
        ],
        vec![
            "rolebinding",
            "kustomized",
            "--role=kustomized",
            &format!("--serviceaccount={account}"),
        ],
    ] {
        run_ok(
            control_plane()
                .kubectl()
                .arg("create")
                .args(create)
                .args(["--namespace", sources]),
            None,
        );
    }
    let token = testenv::mint_token(&world.scene.client, namespace, "configmap-mirror")
        .await
        .expect("a token of the overlay's ServiceAccount");
    let moved_controller = Client::try_from(control_plane().token_config(&token)).expect("client");
    let chart_controller =
        Client::try_from(control_plane().token_config(&installed().await.token)).expect("client");

    // The overlay's controller writes, updates and deletes copies; the
    // account of that name in the namespace it left is nobody.
    let copies: Api<ConfigMap> = Api::namespaced(moved_controller, sources);
    let waited = wait_for(
        "the overlay's policy to admit its controller",
        PATIENCE,
        || async {
            copies
                .create(&PostParams::default(), &labeled_configmap("copy"))
                .await
                .ok()
        },
    )
    .await;
    if let Err(e) = waited {
        let last = copies
            .create(&PostParams::default(), &labeled_configmap("copy"))
            .await;
        panic!("{e:#}: {last:?}");
    }
    copies
        .patch(
            "copy",
            &PatchParams::default(),
            &Patch::Merge(ConfigMap::data_patch(&[("key", Some("v"))])),
        )
        .await
        .expect("the overlay's controller updates its copy");
    let message = refused(
        Api::<ConfigMap>::namespaced(chart_controller, sources)
            .create(&PostParams::default(), &labeled_configmap("elsewhere"))
            .await,
        "a copy by the account the overlay moved away from",
    );
    assert!(message.contains("may not claim to be a copy"), "{message}");
    copies
        .delete("copy", &DeleteParams::default())
        .await
        .expect("the overlay's controller deletes its copy");
    drop(_restore);
    chart_controller_admitted(&world).await;
    world.finish().await;
}
