//! A ClusterMirror's copies with the policy on: the CRD deleted and
//! created again leaves them in place (orphans nobody may delete by hand),
//! the ClusterMirror applied again adopts them in place, and deleting it
//! then removes them; with `deletionPolicy: Orphan`, deleting it releases
//! them into plain objects that an admin may then edit and delete.
//!
//! The sources are in the release's namespace, the one the chart's
//! install copies ClusterMirror sources from.

use super::*;

use crate::cluster_mirror::{cluster_mirrors, delete_crd, install_crd, orphan_prunes_reaching};
use configmap_mirror::contract::{CLUSTER_MIRROR_LABEL, MIRROR_OF_UID_ANNOTATION};
use kube::api::DynamicObject;

crate::for_each_kind!(deletion_policy_orphan_releases_copies_an_admin_may_then_edit_and_delete,);

/// The ClusterMirror `name` of the source `source` (in the release's
/// namespace) into the world's target namespace, by a label of its own.
async fn apply_cluster_mirror<K: TestKind>(
    world: &World<K>,
    name: &str,
    source: &str,
    deletion_policy: &str,
) -> DynamicObject {
    let mut object = DynamicObject::new(name, &crate::cluster_mirror::resource());
    object.data = json!({"spec": {
        "source": {"kind": K::kind(&()), "namespace": RELEASE_NAMESPACE, "name": source},
        "target": {"namespaceSelector": {"matchLabels": {"cmir-target": targets(world)}}},
        "deletionPolicy": deletion_policy,
    }});
    cluster_mirrors(&world.scene.client)
        .create(&PostParams::default(), &object)
        .await
        .unwrap_or_else(|e| panic!("create ClusterMirror {name}: {e}"))
}

/// The world's target namespace, selected by the ClusterMirrors of
/// [`apply_cluster_mirror`], and a source `name` in the release's namespace.
async fn set_up<K: TestKind>(world: &World<K>, name: &str) {
    select_targets(world).await;
    world
        .api(RELEASE_NAMESPACE)
        .create(
            &PostParams::default(),
            &K::with_data(name, &[("key", VALUE)], false),
        )
        .await
        .unwrap_or_else(|e| panic!("create the source {name}: {e}"));
}

/// Labels the world's target namespace as the ClusterMirrors of
/// [`apply_cluster_mirror`] select it.
async fn select_targets<K: TestKind>(world: &World<K>) {
    let label = json!({"metadata": {"labels": {"cmir-target": targets(world)}}});
    Api::<Namespace>::all(world.scene.client.clone())
        .patch(
            &targets(world),
            &PatchParams::default(),
            &Patch::Merge(&label),
        )
        .await
        .expect("label the target namespace");
}

/// Waits until the target namespace holds `name` that `check` accepts.
async fn target_copy<K: TestKind>(world: &World<K>, name: &str, check: impl Fn(&K) -> bool) -> K {
    let api = world.api(&targets(world));
    wait_for(&format!("{}/{name}", targets(world)), PATIENCE, || async {
        api.get_opt(name).await.ok()?.filter(|copy| check(copy))
    })
    .await
    .unwrap_or_else(|e| panic!("{e:#}"))
}

fn of_cluster_mirror<K: TestKind>(copy: &K, name: &str) -> bool {
    copy.labels().get(CLUSTER_MIRROR_LABEL).map(String::as_str) == Some(name)
}

#[tokio::test]
async fn the_crd_deleted_and_created_again_keeps_the_copies_until_applied_again_and_deleted() {
    let mut world = world::<ConfigMap>("vap-cmir-crd").await;
    world.start().await;
    let name = format!("{}-ca", world.scene.namespace);
    set_up(&world, &name).await;
    apply_cluster_mirror(&world, &name, &name, "Delete").await;
    let before = target_copy(&world, &name, |c| of_cluster_mirror(c, &name)).await;

    // The prune of the copy its ClusterMirror's deletion (with the CRD)
    // woke keeps it as an orphan; once the CRD is back, so does the prune
    // of every ClusterMirror copy the new list wakes.
    let controller = world.controller();
    let copy = format!("{}/{name}", targets(&world));
    delete_crd(&world.scene.client).await;
    let kept = orphan_prunes_reaching(controller, &copy, 1).await;
    install_crd(&world.scene.client).await;
    orphan_prunes_reaching(controller, &copy, kept + 1).await;
    let kept = world
        .api(&targets(&world))
        .get_opt(&name)
        .await
        .expect("get the copy")
        .unwrap_or_else(|| panic!("the copy is gone\n{}", controller.log_text()));
    assert_eq!(kept.uid(), before.uid());
    assert_eq!(kept.resource_version(), before.resource_version());
    // An orphan is still a copy to the policy: nobody deletes it by hand.
    refused(
        world
            .api(&targets(&world))
            .delete(&name, &DeleteParams::default())
            .await
            .map(|_| kept.clone()),
        "deleting an orphan",
    );

    // Applied again, it adopts the copy in place; deleted, it removes it.
    let again = apply_cluster_mirror(&world, &name, &name, "Delete").await;
    let bound = format!(".{}", again.uid().unwrap_or_default());
    let adopted = target_copy(&world, &name, |copy| {
        copy.annotations()
            .get(MIRROR_OF_UID_ANNOTATION)
            .is_some_and(|uid| uid.ends_with(&bound))
    })
    .await;
    assert_eq!(adopted.uid(), before.uid(), "adopted in place");
    assert!(adopted.same_content(&before));
    cluster_mirrors(&world.scene.client)
        .delete(&name, &DeleteParams::default())
        .await
        .expect("delete the ClusterMirror");
    world.objects_in(&targets(&world)).wait_gone(&name).await;
    world
        .api(RELEASE_NAMESPACE)
        .delete(&name, &DeleteParams::default())
        .await
        .expect("delete the source");
    world.finish().await;
}

async fn deletion_policy_orphan_releases_copies_an_admin_may_then_edit_and_delete<K: TestKind>() {
    let mut world = world::<K>("vap-cmir-orphan").await;
    world.start().await;
    let name = format!("{}-rel", world.scene.namespace);
    set_up(&world, &name).await;
    apply_cluster_mirror(&world, &name, &name, "Orphan").await;
    let before = target_copy(&world, &name, |c| of_cluster_mirror(c, &name)).await;

    cluster_mirrors(&world.scene.client)
        .delete(&name, &DeleteParams::default())
        .await
        .expect("delete the ClusterMirror");
    let released = target_copy(&world, &name, |copy| {
        !copy.labels().contains_key(MANAGED_BY_LABEL)
    })
    .await;
    assert_eq!(released.uid(), before.uid(), "left in place");
    assert!(released.same_content(&before), "with its content");
    let marks: Vec<&String> = released
        .labels()
        .keys()
        .chain(released.annotations().keys())
        .filter(|key| key.starts_with("workshop.io/") || *key == MANAGED_BY_LABEL)
        .collect();
    assert!(marks.is_empty(), "still marked: {marks:?}");

    // A plain object now: an admin edits and deletes it, policy or not.
    // The controller follows its copies by their managed-by label, gone
    // (checked above): no event of the edit reaches it to undo it.
    let edited = world
        .try_patch(
            &targets(&world),
            &name,
            &K::data_patch(&[("key", Some("edited"))]),
        )
        .await
        .unwrap_or_else(|e| panic!("edit the released copy: {e}"));
    assert!(!edited.same_content(&before), "the edit was made");
    world
        .api(&targets(&world))
        .delete(&name, &DeleteParams::default())
        .await
        .unwrap_or_else(|e| panic!("delete the released copy: {e}"));
    world
        .api(RELEASE_NAMESPACE)
        .delete(&name, &DeleteParams::default())
        .await
        .expect("delete the source");
    world.finish().await;
}

/// A TLS Secret's `ca.crt` published as a ConfigMap is a copy to the
/// policy as any other: an admin may neither edit nor delete it.
#[tokio::test]
async fn a_published_configmap_is_guarded_as_any_copy() {
    let mut world = world::<ConfigMap>("vap-cmir-pub").await;
    world.start().await;
    select_targets(&world).await;
    let name = format!("{}-tls", world.scene.namespace);
    let data = [("tls.crt", "crt"), ("tls.key", VALUE), ("ca.crt", "ca")];
    let mut tls = Secret::with_data(&name, &data, false);
    tls.type_ = Some("kubernetes.io/tls".into());
    let secrets: Api<Secret> = Api::namespaced(world.scene.client.clone(), RELEASE_NAMESPACE);
    secrets
        .create(&PostParams::default(), &tls)
        .await
        .unwrap_or_else(|e| panic!("create the TLS Secret {name}: {e}"));
    let mut object = DynamicObject::new(&name, &crate::cluster_mirror::resource());
    object.data = json!({"spec": {
        "source": {"kind": "Secret", "namespace": RELEASE_NAMESPACE, "name": name},
        "target": {
            "kind": "ConfigMap",
            "keys": [{"key": "ca.crt"}],
            "namespaceSelector": {"matchLabels": {"cmir-target": targets(&world)}},
        },
    }});
    cluster_mirrors(&world.scene.client)
        .create(&PostParams::default(), &object)
        .await
        .unwrap_or_else(|e| panic!("create ClusterMirror {name}: {e}"));
    target_copy(&world, &name, |c| {
        of_cluster_mirror(c, &name) && c.value("ca.crt").as_deref() == Some("ca")
    })
    .await;

    let source = format!("{RELEASE_NAMESPACE}/{name}");
    let edits: [Edit; 2] = [
        (
            "a changed value",
            ConfigMap::data_patch(&[("ca.crt", Some("edited"))]),
        ),
        (
            "an added key",
            ConfigMap::data_patch(&[("tls.key", Some("added"))]),
        ),
    ];
    for edit in &edits {
        refused_edit(&world, &targets(&world), &name, edit, &source).await;
    }
    let copy = world
        .api(&targets(&world))
        .get(&name)
        .await
        .expect("the copy");
    refused(
        world
            .api(&targets(&world))
            .delete(&name, &DeleteParams::default())
            .await
            .map(|_| copy.clone()),
        "deleting a published ConfigMap",
    );

    cluster_mirrors(&world.scene.client)
        .delete(&name, &DeleteParams::default())
        .await
        .expect("delete the ClusterMirror");
    world.objects_in(&targets(&world)).wait_gone(&name).await;
    secrets
        .delete(&name, &DeleteParams::default())
        .await
        .expect("delete the Secret");
    world.finish().await;
}
