//! The test control plane behaves like a real cluster in the ways the
//! controller relies on: owner references are garbage-collected, and RBAC
//! limits what a ServiceAccount token may do.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Secret, ServiceAccount};
use k8s_openapi::api::rbac::v1::{PolicyRule, Role, RoleBinding, RoleRef, Subject};
use kube::api::{DeleteParams, ListParams, ObjectMeta, PostParams};
use kube::{Api, Client, Resource, ResourceExt};
use testenv::{ControlPlane, fresh_namespace, mint_token, wait_for};

fn config_map(name: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([("key".to_owned(), "value".to_owned())])),
        ..ConfigMap::default()
    }
}

#[tokio::test]
async fn deleting_an_owner_garbage_collects_its_dependents() -> anyhow::Result<()> {
    let client = ControlPlane::shared().client().await;
    let namespace = fresh_namespace(&client, "garbage-collector").await?;
    let config_maps: Api<ConfigMap> = Api::namespaced(client, &namespace);

    let owner = config_maps
        .create(&PostParams::default(), &config_map("owner"))
        .await?;
    let mut dependent = config_map("dependent");
    dependent.metadata.owner_references = Some(vec![
        owner
            .controller_owner_ref(&())
            .expect("a created object has a name and uid"),
    ]);
    config_maps
        .create(&PostParams::default(), &dependent)
        .await?;

    config_maps
        .delete("owner", &DeleteParams::background())
        .await?;

    wait_for(
        "the dependent ConfigMap to be deleted",
        Duration::from_secs(15),
        || async {
            match config_maps.get_opt("dependent").await {
                Ok(None) => Some(()),
                _ => None,
            }
        },
    )
    .await?;
    Ok(())
}

#[tokio::test]
async fn a_service_account_token_can_do_only_what_its_role_allows() -> anyhow::Result<()> {
    let control_plane = ControlPlane::shared();
    let admin = control_plane.client().await;
    let namespace = fresh_namespace(&admin, "rbac").await?;

    Api::<ConfigMap>::namespaced(admin.clone(), &namespace)
        .create(&PostParams::default(), &config_map("readable"))
        .await?;
    let service_account = ServiceAccount {
        metadata: ObjectMeta {
            name: Some("reader".to_owned()),
            ..ObjectMeta::default()
        },
        ..ServiceAccount::default()
    };
    Api::<ServiceAccount>::namespaced(admin.clone(), &namespace)
        .create(&PostParams::default(), &service_account)
        .await?;
    let role = Role {
        metadata: ObjectMeta {
            name: Some("get-configmaps".to_owned()),
            ..ObjectMeta::default()
        },
        rules: Some(vec![PolicyRule {
            api_groups: Some(vec![String::new()]),
            resources: Some(vec!["configmaps".to_owned()]),
            verbs: vec!["get".to_owned()],
            ..PolicyRule::default()
        }]),
    };
    Api::<Role>::namespaced(admin.clone(), &namespace)
        .create(&PostParams::default(), &role)
        .await?;
    let binding = RoleBinding {
        metadata: ObjectMeta {
            name: Some("reader-gets-configmaps".to_owned()),
            ..ObjectMeta::default()
        },
        role_ref: RoleRef {
            api_group: Some(Role::group(&()).into_owned()),
            kind: Role::kind(&()).into_owned(),
            name: role.name_any(),
        },
        subjects: Some(vec![Subject {
            kind: "ServiceAccount".to_owned(),
            name: service_account.name_any(),
            namespace: Some(namespace.clone()),
            ..Subject::default()
        }]),
    };
    Api::<RoleBinding>::namespaced(admin.clone(), &namespace)
        .create(&PostParams::default(), &binding)
        .await?;

    let token = mint_token(&admin, &namespace, "reader").await?;
    let reader = Client::try_from(control_plane.token_config(&token))?;
    let config_maps: Api<ConfigMap> = Api::namespaced(reader.clone(), &namespace);
    let secrets: Api<Secret> = Api::namespaced(reader, &namespace);

    // RBAC caches are filled asynchronously after the binding is created.
    wait_for(
        "the reader to get a ConfigMap",
        Duration::from_secs(10),
        || async { config_maps.get("readable").await.ok() },
    )
    .await?;

    let listed = secrets.list(&ListParams::default()).await;
    assert!(
        matches!(&listed, Err(kube::Error::Api(status)) if status.is_forbidden()),
        "listing Secrets should be forbidden, got {listed:?}"
    );
    let created = config_maps
        .create(&PostParams::default(), &config_map("not-allowed"))
        .await;
    assert!(
        matches!(&created, Err(kube::Error::Api(status)) if status.is_forbidden()),
        "creating a ConfigMap should be forbidden, got {created:?}"
    );
    Ok(())
}
