//! Who keeps a name: a ClusterMirror outranks a tenant's own mirror at
//! its copy's name (it takes the copy over, the tenant is told and does
//! not fight back), and a name held by someone else is looked at again on
//! the slow timer, so that freeing it is enough, with no event.

use super::*;
use crate::common::{ControllerProcess, SOURCE_LABEL};
use configmap_mirror::contract::MIRROR_OF_UID_ANNOTATION;
use k8s_openapi::api::{core::v1::ConfigMap, events::v1::Event};
use kube::api::ListParams;

crate::for_each_kind!(
    a_clustermirror_takes_over_a_tenant_s_mirror_at_its_name_and_nothing_flaps,
    a_clustermirror_copy_appears_once_a_held_name_is_freed_without_any_event,
    a_suspended_clustermirror_takes_no_name_until_it_writes_there,
);

const ERRORS: &str = "controller_runtime_reconcile_errors_total";
const RECONCILES: &str = "controller_runtime_reconcile_total";
const SYNC_LOOP: &str = "loop=\"sync\"";
const SYNC_SUCCESS: &str = "loop=\"sync\",result=\"success\"";

/// A tenant's labelled source `name` in namespace `tenant`, mirrored into
/// `target`; returns once its mirror is there.
async fn tenant_s_mirror<K: TestKind>(
    world: &World<K>,
    tenant: &str,
    target: &str,
    name: &str,
    immutable: bool,
) -> K {
    let mut source = K::with_data(name, &[("ca.crt", "the tenant's")], true);
    source.meta_mut().annotations = Some([("workshop.io/mirror-to".into(), target.into())].into());
    if immutable {
        source = with_immutable(source);
    }
    world
        .api(tenant)
        .create(&PostParams::default(), &source)
        .await
        .expect("create the tenant's source");
    let of = format!("{tenant}/{name}");
    let mirrors = world.api(target);
    testenv::wait_for(
        &format!("the mirror of {of} in {target}"),
        PATIENCE,
        || async {
            let mirror = mirrors.get_opt(name).await.ok()??;
            (mirror.annotations().get(MIRROR_OF_ANNOTATION) == Some(&of)).then_some(mirror)
        },
    )
    .await
    .unwrap_or_else(|e| panic!("{e:#}\n{}", world.controller().log_text()))
}

/// A platform's source `corp-ca` in the test's namespace, and a tenant's
/// of that name, mirrored into the consenting namespace `prod` that a
/// ClusterMirror `name` will select.
struct Contest<K: TestKind> {
    world: World<K>,
    name: String,
    platform: K,
    target: String,
    tenant: String,
    theirs: K,
}

impl<K: TestKind> Contest<K> {
    async fn set(tag: &str, immutable: bool) -> Contest<K> {
        let world = super::world::<K>(tag).await;
        // Cluster-scoped: a name of its own, whatever another test left.
        let name = format!("{tag}-{}", K::kind(&()).to_lowercase());
        let platform = world
            .objects()
            .create(&K::with_data(
                "corp-ca",
                &[("ca.crt", "the platform's")],
                false,
            ))
            .await;
        let target = world.namespace("prod", true, &[("env", "prod")]).await;
        let tenant = world.namespace("tenant", false, &[]).await;
        let theirs = tenant_s_mirror(&world, &tenant, &target, "corp-ca", immutable).await;
        Contest {
            world,
            name,
            platform,
            target,
            tenant,
            theirs,
        }
    }

    /// Edits the tenant's source.
    async fn tenant_edits(&self, value: &str) {
        let patch = K::data_patch(&[("ca.crt", Some(value))]);
        (self.world.api(&self.tenant))
            .patch("corp-ca", &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .expect("edit the tenant's source");
    }

    /// Edits the tenant's source, and waits for its mirror to follow.
    async fn tenant_s_mirror_follows(&self, value: &str) {
        self.tenant_edits(value).await;
        let of = format!("{}/corp-ca", self.tenant);
        let mirrors = self.world.api(&self.target);
        testenv::wait_for(
            "the tenant's mirror to follow its source",
            PATIENCE,
            || async {
                let mirror = mirrors.get_opt("corp-ca").await.ok()??;
                let theirs = mirror.annotations().get(MIRROR_OF_ANNOTATION) == Some(&of);
                (theirs && mirror.value("ca.crt").as_deref() == Some(value)).then_some(())
            },
        )
        .await
        .unwrap_or_else(|e| panic!("{e:#}\n{}", self.world.controller().log_text()));
    }

    async fn clean_up(self) {
        // The tenant's source lives outside the test's namespace: it goes first.
        (self.world.api(&self.tenant))
            .delete("corp-ca", &DeleteParams::default())
            .await
            .expect("delete the tenant's source");
        self.world
            .objects_in(&self.tenant)
            .wait_gone("corp-ca-synced")
            .await;
        clean_up(self.world, &[&self.name]).await;
    }
}

fn with_immutable<K: TestKind>(source: K) -> K {
    let mut value = serde_json::to_value(&source).expect("serialize");
    value["immutable"] = json!(true);
    serde_json::from_value(value).expect("deserialize")
}

/// The Warning `reason` about the object `name` of namespace `namespace`,
/// once there is one.
async fn warning_on<K: TestKind>(
    world: &World<K>,
    namespace: &str,
    name: &str,
    reason: &str,
) -> Event {
    let events: Api<Event> = Api::namespaced(world.scene.client.clone(), namespace);
    testenv::wait_for(
        &format!("a {reason} Warning on {namespace}/{name}"),
        PATIENCE,
        || async {
            let list = events.list(&ListParams::default()).await.ok()?;
            list.items.into_iter().find(|e| {
                e.reason.as_deref() == Some(reason)
                    && e.type_.as_deref() == Some("Warning")
                    && e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name)
            })
        },
    )
    .await
    .unwrap_or_else(|e| panic!("{e:#}\n{}", world.controller().log_text()))
}

/// Merges `annotation: value` into the metadata of `namespace/name`: a
/// change that asks its reconcilers to look again, and asks nothing new
/// of any copy.
async fn touch<K: TestKind>(world: &World<K>, namespace: &str, name: &str, value: &str) {
    let patch = json!({"metadata": {"annotations": {"example.com/touched": value}}});
    world
        .api(namespace)
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap_or_else(|e| panic!("touch {namespace}/{name}: {e}"));
}

/// `metric{labels}` once it reaches `at_least`; fails if it does not.
async fn reaches(controller: &ControllerProcess, metric: &str, labels: &str, at_least: f64) {
    let value = controller.metric_reaching(metric, labels, at_least).await;
    assert!(
        value >= at_least,
        "{metric}{{{labels}}} stayed at {value}, below {at_least}"
    );
}

async fn a_clustermirror_takes_over_a_tenant_s_mirror_at_its_name_and_nothing_flaps<K: TestKind>() {
    takes_over::<K>("cmir-outranks", false).await;
}

#[tokio::test]
async fn a_clustermirror_takes_over_a_tenant_s_immutable_mirror_at_its_name() {
    takes_over::<ConfigMap>("cmir-outranks-frozen", true).await;
}

/// A tenant mirrors `corp-ca` into a consenting namespace first; then a
/// ClusterMirror selecting that namespace wants the name.
async fn takes_over<K: TestKind>(tag: &str, immutable: bool) {
    let contest = Contest::<K>::set(tag, immutable).await;
    let Contest {
        world,
        name,
        platform,
        target,
        tenant,
        theirs,
    } = &contest;
    let name = name.as_str();
    create(world, name, "corp-ca").await;
    let copy = cluster_copy_in_sync(world, target, "corp-ca", name).await;
    if !immutable {
        assert_eq!(copy.uid(), theirs.uid(), "taken over in place");
    }
    let bound = format!("{}.", platform.uid().expect("a stored source has a uid"));
    assert!(
        copy.annotations()
            .get(MIRROR_OF_UID_ANNOTATION)
            .is_some_and(|uid| uid.starts_with(&bound)),
        "bound to the ClusterMirror's source: {:?}",
        copy.annotations()
    );
    assert!(!copy.labels().contains_key(SOURCE_LABEL));
    let status = ready(world, name, "Synced").await;
    assert_eq!(status.data["status"]["selected"], 1);
    assert_eq!(status.data["status"]["synced"], 1);
    assert_eq!(status.data["status"]["failed"], 0);
    let warning = warning_on(world, tenant, "corp-ca", "MirrorNameTaken").await;
    let note = warning.note.unwrap_or_default();
    assert!(
        note.contains(&format!("{target}/corp-ca (ClusterMirror {name})")),
        "{note}"
    );

    // Settled: both sides are made to look again (the tenant's source
    // fails again, and retries on the slow timer; the ClusterMirror
    // succeeds), and neither writes.
    let controller = world.controller();
    let writes = controller.writes().await;
    let errors = controller.metric(ERRORS, SYNC_LOOP).await;
    let successes = controller.metric(RECONCILES, SYNC_SUCCESS).await;
    touch(world, tenant, "corp-ca", "1").await;
    touch(world, &world.prefix, "corp-ca", "1").await;
    reaches(controller, ERRORS, SYNC_LOOP, errors + 2.0).await;
    reaches(controller, RECONCILES, SYNC_SUCCESS, successes + 1.0).await;
    let after = world
        .api(target)
        .get("corp-ca")
        .await
        .expect("the ClusterMirror's copy");
    assert_eq!(
        after.resource_version(),
        copy.resource_version(),
        "no write since"
    );
    assert_eq!(controller.writes().await, writes, "no write since");
    contest.clean_up().await;
}

/// A claim takes effect only where the claimant writes: a suspended
/// ClusterMirror whose copies' name a tenant's mirror holds writes nothing
/// there, so the tenant's mirror keeps following its source. Resumed, it
/// takes the name over; suspended again, its copy keeps the name.
async fn a_suspended_clustermirror_takes_no_name_until_it_writes_there<K: TestKind>() {
    let contest = Contest::<K>::set("cmir-claim", false).await;
    let Contest {
        world,
        name,
        target,
        ..
    } = &contest;
    let name = name.as_str();
    let spec = json!({
        "source": {"kind": K::kind(&()), "namespace": world.prefix, "name": "corp-ca"},
        "target": {
            "namespaceSelector": {"matchLabels": {"env": "prod"}},
            "namespaces": [format!("{}-*", world.prefix)],
        },
        "suspend": true,
    });
    create_with(world, name, spec).await;
    // Its reconcile read the request the tenant's source's reconcile reads.
    ready(world, name, "Suspended").await;
    contest
        .tenant_s_mirror_follows("the tenant's, renewed")
        .await;

    patch_spec(world, name, json!({"suspend": false})).await;
    let copy = cluster_copy_in_sync(world, target, "corp-ca", name).await;
    ready(world, name, "Synced").await;
    patch_spec(world, name, json!({"suspend": true})).await;
    ready(world, name, "Suspended").await;
    let controller = world.controller();
    let errors = controller.metric(ERRORS, SYNC_LOOP).await;
    let log_before = controller.log_text().len();
    contest.tenant_edits("the tenant's, once more").await;
    // The tenant's source is refused the name again: its reconcile ran;
    // once a second one has, the first was told of too.
    reaches(controller, ERRORS, SYNC_LOOP, errors + 1.0).await;
    touch(world, &contest.tenant, "corp-ca", "1").await;
    reaches(controller, ERRORS, SYNC_LOOP, errors + 2.0).await;
    let told = controller.log_text();
    assert!(
        !told[log_before..].contains("is not a mirror of this source"),
        "refused as the ClusterMirror's name, not as someone else's object:\n{told}"
    );
    let after = (world.api(target))
        .get("corp-ca")
        .await
        .expect("the ClusterMirror's copy");
    assert_eq!(
        after.resource_version(),
        copy.resource_version(),
        "the copy keeps the name"
    );
    contest.clean_up().await;
}

/// Nor does a ClusterMirror whose source is missing claim a name it has
/// not written: it writes nothing, and the tenant's mirror at its copies'
/// name keeps following its source.
#[tokio::test]
async fn a_clustermirror_whose_source_is_missing_takes_no_name_it_has_not_written() {
    let contest = Contest::<ConfigMap>::set("cmir-claim-absent", false).await;
    let (world, name) = (&contest.world, contest.name.as_str());
    let spec = json!({
        "source": {"kind": "ConfigMap", "namespace": world.prefix, "name": "absent"},
        "target": {
            "name": "corp-ca",
            "namespaceSelector": {"matchLabels": {"env": "prod"}},
            "namespaces": [format!("{}-*", world.prefix)],
        },
    });
    create_with(world, name, spec).await;
    ready(world, name, "SourceNotFound").await;
    contest
        .tenant_s_mirror_follows("the tenant's, renewed")
        .await;
    contest.clean_up().await;
}

/// A selected namespace where someone else holds the name with an object
/// no watch of the controller sees (it is no source and no copy): deleting
/// it wakes nothing, and the ClusterMirror writes its copy all the same.
async fn a_clustermirror_copy_appears_once_a_held_name_is_freed_without_any_event<K: TestKind>() {
    let world = super::world::<K>("cmir-freed").await;
    let name = format!("freed-{}", K::kind(&()).to_lowercase());
    let name = name.as_str();
    world
        .objects()
        .create(&K::with_data("app", &[("k", "v")], false))
        .await;
    let held = world.namespace("held", false, &[("env", "prod")]).await;
    world
        .api(&held)
        .create(
            &PostParams::default(),
            &K::with_data("app", &[("k", "theirs")], false),
        )
        .await
        .expect("someone else's object under the name");
    create(&world, name, "app").await;
    let api = cluster_mirrors(&world.scene.client);
    testenv::wait_for("the name reported taken", PATIENCE, || async {
        let object = api.get_opt(name).await.ok()??;
        let failures = object.data["status"]["failures"].as_array()?.clone();
        failures
            .iter()
            .any(|f| f["namespace"] == held.as_str() && f["reason"] == "NameTaken")
            .then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{e:#}\n{}", world.controller().log_text()));

    world
        .api(&held)
        .delete("app", &DeleteParams::default())
        .await
        .expect("free the name");
    cluster_copy_in_sync(&world, &held, "app", name).await;
    let status = ready(&world, name, "Synced").await;
    assert_eq!(status.data["status"]["failed"], 0);
    clean_up(world, &[name]).await;
}

/// A tenant's source being deleted (held by a finalizer) is quietly not
/// copied: it writes no mirror, so a ClusterMirror's claim on its mirrors'
/// name refuses it nothing, and its reconcile succeeds.
#[tokio::test]
async fn a_source_being_deleted_is_refused_no_name_it_no_longer_writes() {
    const HOLD: &str = "example.com/hold";
    let Contest {
        world,
        name,
        target,
        tenant,
        ..
    } = Contest::<ConfigMap>::set("cmir-claim-deleting", false).await;
    create(&world, &name, "corp-ca").await;
    cluster_copy_in_sync(&world, &target, "corp-ca", &name).await;
    // While it lives, the name is the ClusterMirror's: each reconcile of
    // the tenant's source, the only labelled one here, fails.
    warning_on(&world, &tenant, "corp-ca", "MirrorNameTaken").await;
    let sources = world.api(&tenant);
    let hold = json!({"metadata": {"finalizers": [HOLD]}});
    (sources.patch("corp-ca", &PatchParams::default(), &Patch::Merge(&hold)))
        .await
        .expect("hold the tenant's source");
    let controller = world.controller();
    let successes = controller.metric(RECONCILES, SYNC_SUCCESS).await;
    (sources.delete("corp-ca", &DeleteParams::default()))
        .await
        .expect("delete the tenant's source");
    reaches(controller, RECONCILES, SYNC_SUCCESS, successes + 1.0).await;

    let release = json!({"metadata": {"finalizers": null}});
    (sources.patch("corp-ca", &PatchParams::default(), &Patch::Merge(&release)))
        .await
        .expect("release the tenant's source");
    world.objects_in(&tenant).wait_gone("corp-ca").await;
    world.objects_in(&tenant).wait_gone("corp-ca-synced").await;
    clean_up(world, &[&name]).await;
}
