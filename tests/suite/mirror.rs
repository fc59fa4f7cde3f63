//! Mirrors on the real control plane: a tenant's own request for copies of
//! one object of its namespace, served by the loop that serves
//! ClusterMirrors. Its source is never written; a namespace receives its
//! copies only if it consents, by labels or a MirrorGrant; one named
//! exactly that refuses is a failure its status names.
//!
//! These run on the cluster-wide control plane, one at a time (see
//! `common::World`), with the CRDs installed once.

use configmap_mirror::api::mirror::Mirror;
use configmap_mirror::contract::{
    CLUSTER_MIRROR_LABEL, MANAGED_BY_LABEL, MANAGER_NAME, MIRROR_LABEL, MIRROR_OF_ANNOTATION,
    WRITTEN_UNDER_CRD_ANNOTATION, namespaced_mirror_of,
};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::{
    Api, Client, CustomResourceExt, ResourceExt,
    api::{ApiResource, DeleteParams, DynamicObject, Patch, PatchParams, PostParams},
};
use serde_json::{Value, json};

use crate::common::{PATIENCE, TestKind, World};

crate::for_each_kind!(
    a_mirror_copies_an_untouched_source_into_the_namespaces_that_consent,
    a_grant_lets_a_mirror_in_and_its_deletion_takes_the_copy_back,
);

fn resource() -> ApiResource {
    ApiResource::erase::<Mirror>(&())
}

fn mirrors(client: &Client, namespace: &str) -> Api<DynamicObject> {
    Api::namespaced_with(client.clone(), namespace, &resource())
}

/// Installs the Mirror CRD the chart ships unless it is there, and waits
/// until it serves.
async fn install_crd(client: &Client) {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    match crds.create(&PostParams::default(), &Mirror::crd()).await {
        Ok(_) => {}
        Err(kube::Error::Api(status)) if status.is_already_exists() => {}
        Err(error) => panic!("install the Mirror CRD: {error}"),
    }
    let api = mirrors(client, "default");
    testenv::wait_for("the Mirror CRD to serve", PATIENCE, || async {
        api.list(&Default::default()).await.ok().map(drop)
    })
    .await
    .unwrap_or_else(|e| panic!("{e:#}"));
}

/// A world whose controller starts with the Mirror (and ClusterMirror)
/// CRDs installed.
async fn world<K: TestKind>(tag: &str) -> World<K> {
    let mut world = World::<K>::new_stopped(tag).await;
    install_crd(&world.scene.client).await;
    crate::cluster_mirror::install_crd(&world.scene.client).await;
    let sources = world.prefix.clone();
    world
        .start_with(&["--cluster-mirror-source-namespaces", &sources])
        .await;
    world
}

/// Creates the Mirror `name` in the world's own namespace, copying the
/// object `source` of the world's kind as `target` says.
async fn create<K: TestKind>(world: &World<K>, name: &str, source: &str, target: Value) {
    let mut object = DynamicObject::new(name, &resource()).within(&world.prefix);
    object.data = json!({"spec": {
        "source": {"kind": K::kind(&()), "name": source},
        "target": target,
    }});
    mirrors(&world.scene.client, &world.prefix)
        .create(&PostParams::default(), &object)
        .await
        .unwrap_or_else(|e| panic!("create Mirror {name}: {e}"));
}

async fn patch_spec<K: TestKind>(world: &World<K>, name: &str, spec: Value) {
    mirrors(&world.scene.client, &world.prefix)
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(&json!({"spec": spec})),
        )
        .await
        .unwrap_or_else(|e| panic!("patch Mirror {name}: {e}"));
}

/// Waits until the Mirror's status was written for its spec as it is now
/// and says `selected`, `synced` and `failed`; returns it then.
async fn status_of<K: TestKind>(
    world: &World<K>,
    name: &str,
    [selected, synced, failed]: [i64; 3],
) -> Value {
    let api = mirrors(&world.scene.client, &world.prefix);
    testenv::wait_for(
        &format!("{name}'s status to count {selected} selected, {synced} synced, {failed} failed"),
        PATIENCE,
        || async {
            let object = api.get_opt(name).await.ok()??;
            let status = &object.data["status"];
            let current = status["observedGeneration"].as_i64() == object.metadata.generation;
            let counts = [&status["selected"], &status["synced"], &status["failed"]]
                .map(|count| count.as_i64().unwrap_or_default());
            (current && counts == [selected, synced, failed]).then(|| status.clone())
        },
    )
    .await
    .unwrap_or_else(|e| panic!("{e:#}\n{}", world.controller().log_text()))
}

/// How the kstatus library reads the Mirror `name` as the API server
/// holds it: what Argo CD's and Flux's health checks say of it.
async fn kstatus_of<K: TestKind>(world: &World<K>, name: &str) -> String {
    let object = mirrors(&world.scene.client, &world.prefix)
        .get(name)
        .await
        .unwrap_or_else(|e| panic!("get Mirror {name}: {e}"));
    let object = serde_json::to_value(&object).expect("a Mirror as JSON");
    let (status, message) = crate::common::kstatus(&object);
    assert!(
        !message.is_empty() || status == "Current",
        "{status}: no message"
    );
    status
}

fn ready_reason(status: &Value) -> &str {
    let conditions = status["conditions"].as_array().map(Vec::as_slice);
    (conditions.unwrap_or_default().iter())
        .find(|condition| condition["type"] == "Ready")
        .and_then(|ready| ready["reason"].as_str())
        .unwrap_or_default()
}

/// Waits until `namespace` holds the Mirror's copy of `source` under
/// `name`, with the source's content as it is now.
async fn copy_in_sync<K: TestKind>(
    world: &World<K>,
    namespace: &str,
    name: &str,
    source: &str,
    mirror: &str,
) -> K {
    let objects = world.objects();
    let copies = world.api(namespace);
    testenv::wait_for(
        &format!("Mirror {mirror}'s copy {namespace}/{name}"),
        PATIENCE,
        || async {
            let source_now = objects.api.get_opt(source).await.ok()??;
            let copy = copies.get_opt(name).await.ok()??;
            let of = format!("{}/{source}", world.prefix);
            let ours = copy.labels().get(MIRROR_LABEL).map(String::as_str) == Some(mirror)
                && copy.annotations().get(MIRROR_OF_ANNOTATION) == Some(&of);
            (ours && copy.same_content(&source_now)).then_some(copy)
        },
    )
    .await
    .unwrap_or_else(|e| panic!("{e:#}\n{}", world.controller().log_text()))
}

/// Nothing of the controller's is on the source, and it never wrote it.
fn untouched<K: TestKind>(source: &K) {
    let marks = (source.labels().keys()).chain(source.annotations().keys());
    let ours: Vec<&String> = marks
        .filter(|key| key.starts_with("workshop.io/"))
        .collect();
    assert!(ours.is_empty(), "the source carries {ours:?}");
    let managers = source.meta().managed_fields.iter().flatten();
    let managers: Vec<_> = managers.filter_map(|f| f.manager.as_deref()).collect();
    assert!(
        !managers.contains(&MANAGER_NAME),
        "the controller wrote the source: {managers:?}"
    );
}

/// Deletes the Mirrors `names` in the world's namespace, waits for their
/// copies to go, and cleans up.
async fn clean_up<K: TestKind>(world: World<K>, names: &[&str]) {
    let api = mirrors(&world.scene.client, &world.prefix);
    for name in names {
        let _ = api.delete(name, &DeleteParams::default()).await;
    }
    let copies: Api<K> = Api::all(world.scene.client.clone());
    let claimed = kube::api::ListParams::default().labels(&format!(
        "{MANAGED_BY_LABEL}={MANAGER_NAME},{MIRROR_LABEL} in ({})",
        names.join(",")
    ));
    // Those of Mirrors of these names in other namespaces are not ours.
    let ours = |copy: &&kube::core::PartialObjectMeta<K>| {
        namespaced_mirror_of(&copy.metadata).is_some_and(|(namespace, _)| namespace == world.prefix)
    };
    if !names.is_empty() {
        testenv::wait_for("the Mirrors' copies to go", PATIENCE, || async {
            let left = copies.list_metadata(&claimed).await.ok()?;
            (!left.items.iter().any(|copy| ours(&copy))).then_some(())
        })
        .await
        .unwrap_or_else(|e| panic!("{e:#}\n{}", world.controller().log_text()));
    }
    world.clean_up().await;
}

/// A Mirror copies a source that carries no label or annotation into the
/// namespaces it names that consent; one named exactly that does not is a
/// `NotConsenting` failure, and a protected one `NamespaceProtected`; one
/// reached by a glob only is not counted. The source's owner rewrites it:
/// the copy follows, and the source is never written. Consent given
/// brings a copy, withdrawn takes it back; the Mirror's deletion removes
/// the rest.
async fn a_mirror_copies_an_untouched_source_into_the_namespaces_that_consent<K: TestKind>() {
    let world = world::<K>("mir-copy").await;
    let open = world.namespace("open", true, &[]).await;
    let named = world.namespace("named", false, &[]).await;
    let globbed = world.namespace("globbed", false, &[]).await;
    world
        .objects()
        .create(&K::with_data("ca", &[("ca.crt", "one")], false))
        .await;
    let glob = format!("{}-glob*", world.prefix);
    create(
        &world,
        "team-ca",
        "ca",
        json!({"namespaces": [open, named, glob, "kube-system"]}),
    )
    .await;
    copy_in_sync(&world, &open, "ca", "ca", "team-ca").await;
    let status = status_of(&world, "team-ca", [3, 1, 2]).await;
    let failures: Vec<(&str, &str)> = (status["failures"].as_array().unwrap().iter())
        .map(|f| {
            (
                f["namespace"].as_str().unwrap(),
                f["reason"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        failures,
        [
            ("kube-system", "NamespaceProtected"),
            (named.as_str(), "NotConsenting")
        ]
    );
    assert_eq!(ready_reason(&status), "PartiallySynced");
    assert_eq!(
        kstatus_of(&world, "team-ca").await,
        "Failed",
        "failures that wait for a person"
    );
    assert!(
        world.api(&globbed).get_opt("ca").await.unwrap().is_none(),
        "reached by a glob only, without consent"
    );

    // Rewritten by its owner, as cert-manager rewrites a certificate.
    world
        .objects()
        .set_data("ca", &[("ca.crt", Some("two"))])
        .await;
    copy_in_sync(&world, &open, "ca", "ca", "team-ca").await;
    untouched(&world.objects().get("ca").await.unwrap());

    world
        .label_namespace(&named, K::CONSENT_LABEL, Some("true"))
        .await;
    copy_in_sync(&world, &named, "ca", "ca", "team-ca").await;
    status_of(&world, "team-ca", [3, 2, 1]).await;
    world.label_namespace(&open, K::CONSENT_LABEL, None).await;
    world.objects_in(&open).wait_gone("ca").await;
    let status = status_of(&world, "team-ca", [3, 1, 2]).await;
    assert!(
        (status["failures"].as_array().unwrap().iter())
            .any(|f| f["namespace"] == open.as_str() && f["reason"] == "NotConsenting"),
        "{status}"
    );
    untouched(&world.objects().get("ca").await.unwrap());
    clean_up(world, &["team-ca"]).await;
}

/// A namespace whose labels do not consent lets a Mirror in by a grant
/// naming the Mirror's namespace and the kind; deleting the grant takes
/// the copy back at once.
async fn a_grant_lets_a_mirror_in_and_its_deletion_takes_the_copy_back<K: TestKind>() {
    let world = world::<K>("mir-grant").await;
    crate::grants::install_grant_crd(&world.scene.client).await;
    let granting = world.namespace("granting", false, &[]).await;
    world
        .objects()
        .create(&K::with_data("cfg", &[("k", "v")], false))
        .await;
    create(&world, "cfg", "cfg", json!({"namespaces": [granting]})).await;
    let status = status_of(&world, "cfg", [1, 0, 1]).await;
    assert_eq!(status["failures"][0]["reason"], "NotConsenting");
    crate::grants::grant(
        &world,
        &granting,
        "from-tenant",
        &world.prefix,
        &[&K::kind(&())],
    )
    .await;
    copy_in_sync(&world, &granting, "cfg", "cfg", "cfg").await;
    status_of(&world, "cfg", [1, 1, 0]).await;
    assert_eq!(kstatus_of(&world, "cfg").await, "Current");
    crate::grants::revoke(&world, &granting, "from-tenant").await;
    world.objects_in(&granting).wait_gone("cfg").await;
    status_of(&world, "cfg", [1, 0, 1]).await;
    assert_eq!(kstatus_of(&world, "cfg").await, "Failed", "NotConsenting");
    clean_up(world, &["cfg"]).await;
}

/// A suspended Mirror writes nothing, even for a new target name, and
/// deletes nothing, but where a namespace withdraws its consent: consent
/// comes first. With `deletionPolicy: Orphan` its deletion leaves its copy
/// in place, released.
#[tokio::test]
async fn a_suspended_mirror_writes_nothing_and_an_orphaning_one_releases_its_copies() {
    let world = world::<ConfigMap>("mir-orphan").await;
    let open = world.namespace("open", true, &[]).await;
    let leaving = world.namespace("leaving", true, &[]).await;
    world
        .objects()
        .create(&ConfigMap::with_data("app", &[("k", "v")], false))
        .await;
    create(&world, "app", "app", json!({"namespaces": [open, leaving]})).await;
    let first = copy_in_sync(&world, &open, "app", "app", "app").await;
    copy_in_sync(&world, &leaving, "app", "app", "app").await;
    patch_spec(
        &world,
        "app",
        json!({"suspend": true, "target": {"name": "renamed"}}),
    )
    .await;
    let status = status_of(&world, "app", [2, 0, 0]).await;
    assert_eq!(ready_reason(&status), "Suspended");
    let copies = world.api(&open);
    assert!(
        copies.get_opt("renamed").await.unwrap().is_none(),
        "nothing written"
    );
    let kept = copies.get("app").await.unwrap();
    assert_eq!(
        kept.resource_version(),
        first.resource_version(),
        "nothing deleted"
    );

    world
        .label_namespace(&leaving, ConfigMap::CONSENT_LABEL, None)
        .await;
    world.objects_in(&leaving).wait_gone("app").await;
    status_of(&world, "app", [2, 0, 1]).await;

    patch_spec(
        &world,
        "app",
        json!({"suspend": false, "deletionPolicy": "Orphan", "target": {"name": null}}),
    )
    .await;
    status_of(&world, "app", [2, 1, 1]).await;
    mirrors(&world.scene.client, &world.prefix)
        .delete("app", &DeleteParams::default())
        .await
        .unwrap();
    testenv::wait_for("the copy released", PATIENCE, || async {
        let copy = copies.get_opt("app").await.ok()??;
        (!copy.labels().contains_key(MANAGED_BY_LABEL) && !copy.labels().contains_key(MIRROR_LABEL))
            .then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{e:#}\n{}", world.controller().log_text()));
    copies
        .delete("app", &DeleteParams::default())
        .await
        .unwrap();
    clean_up(world, &[]).await;
}

/// A ClusterMirror that writes a copy under the name a Mirror's copy holds
/// takes it over: the Mirror then fails there with `NameTaken`. Deleted,
/// the ClusterMirror gives the name back: its copy goes, and the Mirror's
/// is written again.
#[tokio::test]
async fn a_clustermirror_outranks_a_mirror_at_a_name() {
    let world = world::<ConfigMap>("mir-rank").await;
    let shared = world.namespace("shared", true, &[("env", "prod")]).await;
    world
        .objects()
        .create(&ConfigMap::with_data("tenant", &[("who", "tenant")], false))
        .await;
    world
        .objects()
        .create(&ConfigMap::with_data(
            "platform",
            &[("who", "platform")],
            false,
        ))
        .await;
    create(
        &world,
        "tenant",
        "tenant",
        json!({"namespaces": [shared], "name": "common"}),
    )
    .await;
    copy_in_sync(&world, &shared, "common", "tenant", "tenant").await;
    let spec = json!({
        "source": {"kind": "ConfigMap", "namespace": world.prefix, "name": "platform"},
        "target": {"name": "common", "namespaceSelector": {"matchLabels": {"env": "prod"}}},
    });
    crate::cluster_mirror::create_with(&world, "mir-rank-platform", spec).await;
    let copies = world.api(&shared);
    testenv::wait_for("the ClusterMirror's copy at the name", PATIENCE, || async {
        let copy = copies.get_opt("common").await.ok()??;
        (copy.labels().get(CLUSTER_MIRROR_LABEL).map(String::as_str) == Some("mir-rank-platform")
            && copy.data.as_ref()?.get("who").map(String::as_str) == Some("platform"))
        .then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{e:#}\n{}", world.controller().log_text()));
    let status = status_of(&world, "tenant", [1, 0, 1]).await;
    assert_eq!(status["failures"][0]["reason"], "NameTaken", "{status}");

    crate::cluster_mirror::cluster_mirrors(&world.scene.client)
        .delete("mir-rank-platform", &DeleteParams::default())
        .await
        .unwrap();
    copy_in_sync(&world, &shared, "common", "tenant", "tenant").await;
    status_of(&world, "tenant", [1, 1, 0]).await;
    clean_up(world, &["tenant"]).await;
}

/// The uid of the Mirror CRD as it is now.
async fn crd_uid(client: &Client) -> String {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd = crds.get(Mirror::crd_name()).await.expect("the Mirror CRD");
    crd.metadata.uid.unwrap_or_default()
}

/// Waits until the copy in `namespace` records the Mirror CRD `crd`.
async fn marked<K: TestKind>(world: &World<K>, namespace: &str, name: &str, crd: &str) -> K {
    let api = world.api(namespace);
    testenv::wait_for(
        &format!("{namespace}/{name} to record the Mirror CRD {crd}"),
        PATIENCE,
        || async {
            let copy = api.get_opt(name).await.ok()??;
            let under = copy.annotations().get(WRITTEN_UNDER_CRD_ANNOTATION);
            (under.map(String::as_str) == Some(crd)).then_some(copy)
        },
    )
    .await
    .unwrap_or_else(|e| panic!("{e:#}\n{}", world.controller().log_text()))
}

/// A Mirror `app` of the ConfigMap `app` into a consenting namespace,
/// whose copy records the Mirror CRD live now: the namespace, that CRD's
/// uid and the copy.
async fn a_marked_copy(world: &World<ConfigMap>) -> (String, String, ConfigMap) {
    let open = world.namespace("open", true, &[]).await;
    world
        .objects()
        .create(&ConfigMap::with_data("app", &[("k", "v")], false))
        .await;
    create(world, "app", "app", json!({"namespaces": [open]})).await;
    copy_in_sync(world, &open, "app", "app", "app").await;
    let crd = crd_uid(&world.scene.client).await;
    let copy = marked(world, &open, "app", &crd).await;
    (open, crd, copy)
}

/// A Mirror deleted while no replica runs (a rollout, a GitOps prune
/// meanwhile) still removes its copies once one does: each records the
/// CRD its Mirror was made under, still live.
#[tokio::test]
async fn a_mirror_deleted_while_the_controller_is_down_removes_its_copies_once_it_runs() {
    let mut world = world::<ConfigMap>("mir-unseen").await;
    let (open, _, _) = a_marked_copy(&world).await;
    let prefix = world.prefix.clone();
    crate::cluster_mirror::unseen_deletion::while_stopped(&mut world, async |client| {
        mirrors(client, &prefix)
            .delete("app", &DeleteParams::default())
            .await
            .expect("delete the Mirror");
    })
    .await;
    world.objects_in(&open).wait_gone("app").await;
    clean_up(world, &[]).await;
}

/// The Mirror CRD deleted and created again while no replica runs takes
/// every Mirror with it, and wipes no copy: each stays, an orphan, never
/// rewritten.
#[tokio::test]
async fn a_mirror_crd_deleted_and_created_again_while_the_controller_is_down_wipes_nothing() {
    let mut world = world::<ConfigMap>("mir-unseen-crd").await;
    let (open, old_crd, before) = a_marked_copy(&world).await;
    crate::cluster_mirror::unseen_deletion::while_stopped(&mut world, async |client| {
        let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
        crds.delete(Mirror::crd_name(), &DeleteParams::default())
            .await
            .expect("delete the Mirror CRD");
        testenv::wait_for("the Mirror CRD to go", PATIENCE, || async {
            matches!(crds.get_opt(Mirror::crd_name()).await, Ok(None)).then_some(())
        })
        .await
        .unwrap_or_else(|e| panic!("{e:#}"));
        install_crd(client).await;
    })
    .await;
    assert_ne!(crd_uid(&world.scene.client).await, old_crd, "another CRD");
    let copy = format!("{open}/app");
    crate::cluster_mirror::kept_as_orphans(world.controller(), &[&copy]).await;
    let kept = world.api(&open).get("app").await.expect("the copy");
    assert_eq!(kept.uid(), before.uid());
    assert_eq!(
        kept.resource_version(),
        before.resource_version(),
        "never rewritten"
    );
    let orphans = "configmap_mirror_mirror_orphans";
    let counted = world.controller().metric_reaching(orphans, "", 1.0).await;
    assert_eq!(counted, 1.0, "the orphan is counted, with no Mirror's name");
    world
        .api(&open)
        .delete("app", &DeleteParams::default())
        .await
        .unwrap();
    testenv::wait_for("no Mirror orphan to be counted", PATIENCE, || async {
        (world.controller().metric(orphans, "").await == 0.0).then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{e:#}"));
    clean_up(world, &[]).await;
}

/// A Mirror never touches an object it did not make at its copies' name:
/// a tenant cannot overwrite another's object in a namespace that
/// consents. The namespace is a `NameTaken` failure, and the object stays
/// as it was.
#[tokio::test]
async fn a_mirror_overwrites_no_object_it_did_not_make() {
    let world = world::<ConfigMap>("mir-held").await;
    let open = world.namespace("open", true, &[]).await;
    let theirs = world
        .api(&open)
        .create(
            &PostParams::default(),
            &ConfigMap::with_data("app", &[("who", "them")], false),
        )
        .await
        .expect("their object");
    world
        .objects()
        .create(&ConfigMap::with_data("app", &[("who", "tenant")], false))
        .await;
    create(&world, "app", "app", json!({"namespaces": [open]})).await;
    let status = status_of(&world, "app", [1, 0, 1]).await;
    assert_eq!(status["failures"][0]["reason"], "NameTaken", "{status}");
    assert_eq!(kstatus_of(&world, "app").await, "Failed", "NameTaken");
    let now = world.api(&open).get("app").await.expect("their object");
    assert_eq!(
        now.resource_version(),
        theirs.resource_version(),
        "untouched"
    );
    assert!(!now.labels().contains_key(MIRROR_LABEL));
    clean_up(world, &["app"]).await;
}

mod explain;
