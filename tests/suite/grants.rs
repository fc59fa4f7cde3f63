//! MirrorGrants: consent given from inside a namespace. A tenant who may
//! not label the Namespace object lets in the mirrors of a kind from the
//! source namespaces a grant names; nothing else gets in, and what a grant
//! alone let in goes with it.
//!
//! These run on the cluster-wide control plane, one at a time (see
//! `common::World`), with the MirrorGrant CRD installed once.

use configmap_mirror::api::mirror_grant::MirrorGrant;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::{
    Api, Client, CustomResourceExt, Resource, ResourceExt,
    api::{ApiResource, DeleteParams, DynamicObject, Patch, PatchParams, PostParams},
};
use serde_json::json;

use crate::common::{
    ControllerProcess, PATIENCE, TestKind, World, kubectl_apply, service_account, to,
};
use crate::explain::explain;
use k8s_openapi::api::core::v1::ConfigMap;

crate::for_each_kind!(
    a_grant_lets_its_kind_in_and_its_deletion_removes_only_what_it_alone_let_in,
    a_grant_lets_in_only_the_kinds_and_namespaces_it_names,
    a_grant_opens_no_protected_namespace,
);

/// Installs the MirrorGrant CRD the chart ships, if it is not there yet,
/// and waits until it serves.
pub(crate) async fn install_grant_crd(client: &Client) {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    match crds
        .create(&PostParams::default(), &MirrorGrant::crd())
        .await
    {
        Ok(_) => {}
        Err(kube::Error::Api(status)) if status.is_already_exists() => {}
        Err(error) => panic!("install the MirrorGrant CRD: {error}"),
    }
    let grants = grants(client, "default");
    testenv::wait_for("the MirrorGrant CRD to serve", PATIENCE, || async {
        grants.list(&Default::default()).await.ok().map(drop)
    })
    .await
    .unwrap_or_else(|e| panic!("{e:#}"));
}

fn grants(client: &Client, namespace: &str) -> Api<DynamicObject> {
    let resource = ApiResource::erase::<MirrorGrant>(&());
    Api::namespaced_with(client.clone(), namespace, &resource)
}

/// Creates (or replaces the spec of) the grant `name` in `namespace`,
/// letting `kinds` in from `from`.
pub(crate) async fn grant<K: TestKind>(
    world: &World<K>,
    namespace: &str,
    name: &str,
    from: &str,
    kinds: &[&str],
) {
    let api = grants(&world.scene.client, namespace);
    let object = json!({
        "apiVersion": MirrorGrant::api_version(&()),
        "kind": MirrorGrant::kind(&()),
        "metadata": {"name": name},
        "spec": {"from": [{"namespace": from, "kinds": kinds}]},
    });
    api.patch(
        name,
        &PatchParams::apply("grants-test").force(),
        &Patch::Apply(&object),
    )
    .await
    .unwrap_or_else(|e| panic!("grant {namespace}/{name}: {e}"));
}

pub(crate) async fn revoke<K: TestKind>(world: &World<K>, namespace: &str, name: &str) {
    grants(&world.scene.client, namespace)
        .delete(name, &DeleteParams::default())
        .await
        .unwrap_or_else(|e| panic!("delete grant {namespace}/{name}: {e}"));
}

fn kind_name<K: TestKind>() -> String {
    K::kind(&()).to_string()
}

fn other_kind_name<K: TestKind>() -> &'static str {
    match K::kind(&()).as_ref() {
        "ConfigMap" => "Secret",
        _ => "ConfigMap",
    }
}

/// A source asks for a namespace with no consent label: nothing there
/// until a grant in it names the source's namespace and the kind. Deleting
/// the grants removes the mirror the grant alone let in, and keeps the one
/// in a namespace whose labels consent too.
async fn a_grant_lets_its_kind_in_and_its_deletion_removes_only_what_it_alone_let_in<
    K: TestKind,
>() {
    let world = World::<K>::new("gr-admit").await;
    install_grant_crd(&world.scene.client).await;
    let granted = world.namespace("granted", false, &[]).await;
    let labelled = world.namespace("labelled", true, &[]).await;
    grant(
        &world,
        &labelled,
        "from-source",
        &world.prefix,
        &[&kind_name::<K>()],
    )
    .await;
    world
        .mirrored("shared", &[to(&format!("{granted},{labelled}"))])
        .await;
    let kept = world.mirror_in_sync(&labelled, "shared").await;
    // Reconciled once without consent in `granted`: no mirror there.
    world.objects_in(&granted).wait_gone("shared").await;

    // The grant's creation wakes the source that asks for its namespace.
    grant(
        &world,
        &granted,
        "from-source",
        &world.prefix,
        &[&kind_name::<K>()],
    )
    .await;
    world.mirror_in_sync(&granted, "shared").await;

    // explain names the grant that lets the kind in.
    let run = explain(
        world.scene.control_plane.kubeconfig_path(),
        &["--namespace", &granted, "-o", "json"],
    );
    let this_kind = crate::explain::rows(&run.json())
        .into_iter()
        .find(|row| row["what"] == "consent" && row["kind"] == kind_name::<K>())
        .unwrap_or_else(|| panic!("no consent row of {}: {}", kind_name::<K>(), run.stdout));
    assert_eq!(this_kind["verdict"], "accepts-by-grant", "{this_kind}");
    assert!(
        this_kind["detail"]
            .as_str()
            .is_some_and(|detail| detail.contains("MirrorGrant from-source")),
        "{this_kind}"
    );

    // Revoked in order: `labelled`'s grant first, then `granted`'s. Once
    // `granted`'s mirror is gone, the earlier revocation was followed too.
    revoke(&world, &labelled, "from-source").await;
    revoke(&world, &granted, "from-source").await;
    world.objects_in(&granted).wait_gone("shared").await;
    let still = world.api(&labelled).get("shared").await.expect("read");
    assert_eq!(still.uid(), kept.uid(), "its labels still consent: kept");
    world.clean_up().await;
}

/// A grant of the other kind lets nothing in; widened to this kind, it
/// does; narrowed to another source namespace, it no longer does, and the
/// mirror goes. The source asks by glob: the namespaces a grant alone
/// admits are found among those that admit the kind.
async fn a_grant_lets_in_only_the_kinds_and_namespaces_it_names<K: TestKind>() {
    let world = World::<K>::new("gr-narrow").await;
    install_grant_crd(&world.scene.client).await;
    let granted = world.namespace("granted", false, &[]).await;
    let open = world.namespace("open", true, &[]).await;
    grant(
        &world,
        &granted,
        "g",
        &world.prefix,
        &[other_kind_name::<K>()],
    )
    .await;
    world
        .mirrored("shared", &[to(&format!("{}-*", world.prefix))])
        .await;
    world.mirror_in_sync(&open, "shared").await;
    world.objects_in(&granted).wait_gone("shared").await;

    let both = [other_kind_name::<K>(), &kind_name::<K>()];
    grant(&world, &granted, "g", &world.prefix, &both).await;
    world.mirror_in_sync(&granted, "shared").await;

    let elsewhere = format!("{}-elsewhere-*", world.prefix);
    grant(&world, &granted, "g", &elsewhere, &both).await;
    world.objects_in(&granted).wait_gone("shared").await;
    world.mirror_in_sync(&open, "shared").await;
    revoke(&world, &granted, "g").await;
    world.clean_up().await;
}

/// A protected namespace stays closed whatever a grant in it says.
async fn a_grant_opens_no_protected_namespace<K: TestKind>() {
    let mut world = World::<K>::new_stopped("gr-protect").await;
    install_grant_crd(&world.scene.client).await;
    let guarded = world.namespace("guarded", false, &[]).await;
    let open = world.namespace("open", true, &[]).await;
    grant(&world, &guarded, "g", "*", &[&kind_name::<K>()]).await;
    let flag = format!("--protected-namespaces=kube-system,{guarded}");
    world.start_with(&[&flag]).await;
    world
        .mirrored("shared", &[to(&format!("{guarded},{open}"))])
        .await;
    world.mirror_in_sync(&open, "shared").await;
    world.objects_in(&guarded).wait_gone("shared").await;
    revoke(&world, &guarded, "g").await;
    world.clean_up().await;
}

/// What a controller of ConfigMaps needs cluster-wide, but for any right on
/// MirrorGrants: an install whose RBAC is an older chart's.
fn cluster_role_without_grants(namespace: &str, account: &str) -> String {
    format!(
        r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {{name: {namespace}-no-grants}}
rules:
- apiGroups: [""]
  resources: [configmaps]
  verbs: [get, list, watch, create, update, delete]
- apiGroups: [""]
  resources: [namespaces]
  verbs: [list, watch]
- apiGroups: [events.k8s.io]
  resources: [events]
  verbs: [create, patch]
- apiGroups: [mirror.workshop.io]
  resources: [clustermirrors]
  verbs: [get, list, watch]
- apiGroups: [mirror.workshop.io]
  resources: [clustermirrors/status]
  verbs: [patch]
- apiGroups: [apiextensions.k8s.io]
  resources: [customresourcedefinitions]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {{name: {namespace}-no-grants}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: {namespace}-no-grants}}
subjects:
- {{kind: ServiceAccount, name: {account}, namespace: {namespace}}}
"#
    )
}

/// Grants the controller may not read are not known, never none: with a
/// grant deleted and another created while it was stopped, a controller
/// whose RBAC lacks MirrorGrants says so in `/readyz`, writes no mirror the
/// new grant alone would let in and removes none the deleted one let in.
/// A controller that may read them then acts on both.
#[tokio::test]
async fn grants_the_controller_may_not_read_neither_let_in_nor_take_back() {
    let mut world = World::<ConfigMap>::new("gr-unread").await;
    install_grant_crd(&world.scene.client).await;
    let granted = world.namespace("granted", false, &[]).await;
    let fresh = world.namespace("fresh", false, &[]).await;
    let open = world.namespace("open", true, &[]).await;
    grant(&world, &granted, "g", &world.prefix, &["ConfigMap"]).await;
    world
        .mirrored("shared", &[to(&format!("{granted},{fresh},{open}"))])
        .await;
    let kept = world.mirror_in_sync(&granted, "shared").await;
    world.stop();
    revoke(&world, &granted, "g").await;
    grant(&world, &fresh, "g", &world.prefix, &["ConfigMap"]).await;

    let account = "no-grants";
    kubectl_apply(&world.scene, &service_account(&world.prefix, account));
    kubectl_apply(
        &world.scene,
        &cluster_role_without_grants(&world.prefix, account),
    );
    let kubeconfig = world.scene.token_kubeconfig(account).await;
    let plane = world.scene.control_plane;
    let tag = format!("{}-no-grants", world.prefix);
    let controller = ControllerProcess::start_unready(plane, &kubeconfig, &tag, &[]).await;
    let why = testenv::wait_for("/readyz to name the grants", PATIENCE, || async {
        let (code, body) = controller.get("/readyz").await.ok()?;
        (code == 503 && body.contains("mirrorgrants")).then_some(body)
    })
    .await
    .unwrap_or_else(|e| panic!("{e:#}\n{}", controller.log_text()));
    assert!(why.contains("forbidden"), "{why}");

    // One reconcile of the source decides every namespace it asks for: its
    // new content in `open` says `fresh` was decided too.
    world
        .objects()
        .set_data("shared", &[("color", Some("green"))])
        .await;
    mirror_in_sync_for(&world, &controller, &open).await;
    // The start's sweep of the copies: every prune it queued has run.
    let sweep = "configmap_mirror_resync_objects_total";
    controller
        .metric_reaching(sweep, "loop=\"prune\"", 1.0)
        .await;
    let queued = controller
        .metric(sweep, "loop=\"prune\",result=\"queued\"")
        .await;
    let reconciles = "controller_runtime_reconcile_total";
    let pruned = controller
        .metric_reaching(reconciles, "loop=\"prune\"", queued)
        .await;
    assert!(pruned >= queued, "{pruned} prunes of {queued} queued");
    assert!(
        world
            .api(&fresh)
            .get_opt("shared")
            .await
            .expect("read")
            .is_none(),
        "no mirror let in by a grant that could not be read"
    );
    let still = world.api(&granted).get_opt("shared").await.expect("read");
    assert_eq!(
        still.and_then(|m| m.uid()),
        kept.uid(),
        "no mirror taken back for a grant that could not be read"
    );
    assert!(controller.stop().success());

    // With rights to read them, both grants' changes take effect.
    world.start().await;
    world.mirror_in_sync(&fresh, "shared").await;
    world.objects_in(&granted).wait_gone("shared").await;
    revoke(&world, &fresh, "g").await;
    world.clean_up().await;
}

/// Waits until `namespace` holds the mirror of `shared` as the source is
/// now, or fails with `controller`'s log.
async fn mirror_in_sync_for(
    world: &World<ConfigMap>,
    controller: &ControllerProcess,
    namespace: &str,
) {
    let source = world.objects().api.get("shared").await.expect("the source");
    let mirrors = world.api(namespace);
    testenv::wait_for(&format!("the mirror in {namespace}"), PATIENCE, || async {
        let mirror = mirrors.get_opt("shared").await.ok()??;
        (mirror.data == source.data).then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{e:#}\n{}", controller.log_text()));
}
