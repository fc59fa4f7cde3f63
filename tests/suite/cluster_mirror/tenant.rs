//! A ClusterMirror's namespace selector is its consent: whoever may label
//! a Namespace decides whether it receives the copies. A tenant who is
//! admin of their own namespace may not label it, so cannot pull an
//! admin's Secret in; the platform admin who may, can.

use super::*;
use k8s_openapi::api::{core::v1::Namespace, core::v1::Secret, rbac::v1::RoleBinding};

const TENANT: &str = "tenant-alice";

#[tokio::test]
async fn a_namespace_admin_cannot_label_their_namespace_into_a_secret_s_selection() {
    let world = super::world::<Secret>("cmir-tenant").await;
    world
        .objects()
        .create(&Secret::with_data(
            "registry",
            &[("token", "admin-only")],
            false,
        ))
        .await;
    let theirs = world.namespace("alice", false, &[]).await;
    let binding: RoleBinding = serde_json::from_value(json!({
        "metadata": {"name": "alice-admin", "namespace": theirs},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "admin"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": TENANT}],
    }))
    .expect("a RoleBinding");
    Api::<RoleBinding>::namespaced(world.scene.client.clone(), &theirs)
        .create(&PostParams::default(), &binding)
        .await
        .expect("make the tenant admin of their namespace");
    create(&world, "registry", "registry").await;

    let mut config = world.scene.control_plane.kube_config();
    config.auth_info.impersonate = Some(TENANT.to_owned());
    let as_tenant = Api::<Namespace>::all(Client::try_from(config).expect("a client"));
    let label = json!({"metadata": {"labels": {"env": "prod"}}});
    match as_tenant
        .patch(&theirs, &PatchParams::default(), &Patch::Merge(&label))
        .await
    {
        Err(kube::Error::Api(status)) => {
            assert_eq!(status.code, 403, "refused as forbidden: {}", status.message)
        }
        other => panic!("a namespace admin labelled their own Namespace: {other:?}"),
    }
    let status = ready(&world, "registry", "Synced").await;
    assert_eq!(status.data["status"]["selected"], 0, "nothing selected");
    assert!(
        world
            .api(&theirs)
            .get_opt("registry")
            .await
            .unwrap()
            .is_none(),
        "no copy in the tenant's namespace"
    );

    // The label is the consent: given by one who may, the copy comes.
    world.label_namespace(&theirs, "env", Some("prod")).await;
    cluster_copy_in_sync(&world, &theirs, "registry", "registry").await;
    clean_up(world, &["registry"]).await;
}
