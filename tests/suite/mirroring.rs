//! Mirroring into other namespaces: asked for by the source, consented to by
//! the target namespace, cleaned up without owner references or finalizers.
//!
//! The controller here watches the whole cluster, so these tests run on a
//! control plane apart from the other topics', one at a time, each in
//! namespaces of its own, and each removes what it created before the next
//! starts.

use crate::common;

use std::{
    collections::BTreeMap,
    sync::atomic::{AtomicUsize, Ordering},
};

use common::{PATIENCE, SOURCE_LABEL, TestKind, World, mk_source, mk_unmanaged, to, with_json};
use configmap_mirror::contract::{
    CHECKSUM_ANNOTATION, CLUSTER_MIRROR_LABEL, MANAGED_BY_LABEL, MANAGER_NAME,
    MIRROR_OF_ANNOTATION, MIRROR_OF_UID_ANNOTATION, SOURCE_SELECTOR_ANNOTATION, content_checksum,
};
use k8s_openapi::api::{
    coordination::v1::Lease,
    core::v1::{ConfigMap, Secret},
};
use kube::{
    Api, ResourceExt,
    api::{ListParams, ObjectMeta, Patch, PatchParams, PostParams},
};
use serde_json::json;

crate::for_each_kind!(
    a_source_is_mirrored_into_namespaces_chosen_by_glob_and_by_selector,
    a_namespace_created_later_receives_the_mirror,
    consent_granted_brings_the_mirror_and_consent_withdrawn_removes_it,
    dropping_a_namespace_from_the_annotation_deletes_its_mirror,
    unlabeling_or_deleting_the_source_removes_every_mirror,
    mirrors_edited_or_deleted_by_hand_are_restored,
    an_unrelated_object_at_the_mirror_name_is_untouched_and_warned_about,
    a_source_deleted_while_the_controller_is_down_loses_its_mirrors_at_start,
    malformed_mirror_annotations_are_warned_about,
    withdrawn_consent_removes_a_mirror_whose_source_annotation_is_malformed,
);

async fn a_source_is_mirrored_into_namespaces_chosen_by_glob_and_by_selector<K: TestKind>() {
    let world = World::<K>::new("mt-glob").await;
    let a = world.namespace("a", true, &[]).await;
    let b = world.namespace("b", true, &[]).await;
    let picked = world
        .namespace("picked", true, &[("mirror-test", &world.prefix)])
        .await;
    let refusing = world.namespace("refusing", false, &[]).await;
    let glob = format!("{}-a,{}-b", world.prefix, world.prefix);
    let selector = format!("mirror-test={}", world.prefix);
    world
        .mirrored(
            "shared",
            &[to(&glob), ("workshop.io/mirror-to-selector", &selector)],
        )
        .await;

    for namespace in [&a, &b, &picked] {
        world.mirror_in_sync(namespace, "shared").await;
    }
    world.objects().companion_in_sync("shared").await;
    assert!(
        world
            .api(&refusing)
            .get_opt("shared")
            .await
            .expect("get")
            .is_none()
    );
    assert!(
        world
            .objects()
            .get("shared")
            .await
            .is_some_and(|s| !configmap_mirror::contract::is_managed_by_us(s.meta()))
    );

    world
        .objects()
        .set_data("shared", &[("color", Some("green"))])
        .await;
    for namespace in [&a, &b, &picked] {
        world.mirror_in_sync(namespace, "shared").await;
    }
    world.clean_up().await;
}

async fn a_namespace_created_later_receives_the_mirror<K: TestKind>() {
    let world = World::<K>::new("mt-later").await;
    world
        .mirrored("shared", &[to(&format!("{}-*", world.prefix))])
        .await;
    world.objects().companion_in_sync("shared").await;

    let late = world.namespace("late", true, &[]).await;
    world.mirror_in_sync(&late, "shared").await;
    world.clean_up().await;
}

async fn consent_granted_brings_the_mirror_and_consent_withdrawn_removes_it<K: TestKind>() {
    let world = World::<K>::new("mt-consent").await;
    let target = world.namespace("t", false, &[]).await;
    world.mirrored("shared", &[to(&target)]).await;
    // The companion shows the source was reconciled: nothing went to `t`.
    world.objects().companion_in_sync("shared").await;
    assert!(
        world
            .api(&target)
            .get_opt("shared")
            .await
            .expect("get")
            .is_none()
    );

    world
        .label_namespace(&target, K::CONSENT_LABEL, Some("true"))
        .await;
    world.mirror_in_sync(&target, "shared").await;
    world.label_namespace(&target, K::CONSENT_LABEL, None).await;
    world.objects_in(&target).wait_gone("shared").await;
    world.clean_up().await;
}

async fn dropping_a_namespace_from_the_annotation_deletes_its_mirror<K: TestKind>() {
    let world = World::<K>::new("mt-drop").await;
    let a = world.namespace("a", true, &[]).await;
    let b = world.namespace("b", true, &[]).await;
    world.mirrored("shared", &[to(&format!("{a},{b}"))]).await;
    world.mirror_in_sync(&a, "shared").await;
    world.mirror_in_sync(&b, "shared").await;

    world
        .objects()
        .patch(
            "shared",
            json!({"metadata": {"annotations": {"workshop.io/mirror-to": a}}}),
        )
        .await;
    world.objects_in(&b).wait_gone("shared").await;
    world.mirror_in_sync(&a, "shared").await;
    world.clean_up().await;
}

async fn unlabeling_or_deleting_the_source_removes_every_mirror<K: TestKind>() {
    let world = World::<K>::new("mt-gone").await;
    let a = world.namespace("a", true, &[]).await;
    let b = world.namespace("b", true, &[]).await;
    let targets = format!("{a},{b}");
    world.mirrored("unlabeled", &[to(&targets)]).await;
    world.mirrored("deleted", &[to(&targets)]).await;
    for namespace in [&a, &b] {
        world.mirror_in_sync(namespace, "unlabeled").await;
        world.mirror_in_sync(namespace, "deleted").await;
    }

    world.objects().unlabel("unlabeled").await;
    world.objects().delete("deleted").await;
    for namespace in [&a, &b] {
        world.objects_in(namespace).wait_gone("unlabeled").await;
        world.objects_in(namespace).wait_gone("deleted").await;
    }
    world.scene.wait_event("unlabeled", "MirrorDeleted").await;
    world.clean_up().await;
}

async fn mirrors_edited_or_deleted_by_hand_are_restored<K: TestKind>() {
    let world = World::<K>::new("mt-heal").await;
    let a = world.namespace("a", true, &[]).await;
    world.mirrored("shared", &[to(&a)]).await;
    let first = world.mirror_in_sync(&a, "shared").await;

    let api = world.api(&a);
    // The last edit makes the mirror claim another source: it is that
    // source's no longer, and comes back as its own.
    let elsewhere = format!("{}/elsewhere", world.scene.namespace);
    for edit in [
        K::data_patch(&[("color", Some("tampered")), ("extra", Some("x"))]),
        json!({"metadata": {"annotations": {CHECKSUM_ANNOTATION: "forged"}}}),
        json!({"metadata": {"annotations": {MIRROR_OF_ANNOTATION: elsewhere}}}),
    ] {
        api.patch("shared", &PatchParams::default(), &Patch::Merge(&edit))
            .await
            .expect("edit mirror");
        world.mirror_in_sync(&a, "shared").await;
    }
    api.delete("shared", &Default::default())
        .await
        .expect("delete mirror");
    let recreated = world.mirror_in_sync(&a, "shared").await;
    assert_ne!(first.uid(), recreated.uid());
    world.clean_up().await;
}

async fn an_unrelated_object_at_the_mirror_name_is_untouched_and_warned_about<K: TestKind>() {
    let world = World::<K>::new("mt-foreign").await;
    let a = world.namespace("a", true, &[]).await;
    let b = world.namespace("b", true, &[]).await;
    let theirs = world
        .api(&a)
        .create(
            &PostParams::default(),
            &K::with_data("shared", &[("theirs", "1")], false),
        )
        .await
        .expect("create the bystander");
    world.mirrored("shared", &[to(&format!("{a},{b}"))]).await;

    world.mirror_in_sync(&b, "shared").await;
    let event = world.scene.wait_event("shared", "MirrorNameTaken").await;
    assert!(event.note.unwrap_or_default().contains(&a));
    let controller = world.controller();
    let errors = "controller_runtime_reconcile_errors_total";
    controller.metric_reaching(errors, "", 3.0).await;
    assert_eq!(
        world.scene.events("shared", "MirrorNameTaken").await.len(),
        1
    );
    let after = world
        .api(&a)
        .get("shared")
        .await
        .expect("the bystander stays");
    assert_eq!(after.resource_version(), theirs.resource_version());
    world.clean_up().await;
}

#[tokio::test]
async fn of_two_sources_competing_for_one_name_the_first_keeps_it_without_flapping() {
    let world = World::<ConfigMap>::new("mt-rivals").await;
    let target = world.namespace("t", true, &[]).await;
    world.mirrored("shared", &[to(&target)]).await;
    let winner = world.mirror_in_sync(&target, "shared").await;

    let rival_namespace = world.namespace("rival", false, &[]).await;
    let mut rival = mk_source("shared", &[("color", "red")]);
    rival.metadata.annotations =
        Some([("workshop.io/mirror-to".to_owned(), target.clone())].into());
    world
        .configmaps(&rival_namespace)
        .create(&PostParams::default(), &rival)
        .await
        .expect("create rival");
    let events: Api<k8s_openapi::api::events::v1::Event> =
        Api::namespaced(world.scene.client.clone(), &rival_namespace);
    testenv::wait_for(
        "a MirrorNameTaken warning on the rival",
        PATIENCE,
        || async {
            let list = events.list(&ListParams::default()).await.ok()?;
            list.items
                .into_iter()
                .find(|e| e.reason.as_deref() == Some("MirrorNameTaken"))
        },
    )
    .await
    .unwrap_or_else(|e| panic!("{e:#}"));

    let writes = world.controller().writes().await;
    // Flapping would show in the loser's retries (1 s, 2 s, 4 s with
    // --slow-retry 1s): each could write, so three of them counted are the
    // barrier before asserting that none did.
    let errors = "controller_runtime_reconcile_errors_total";
    let before = world.controller().metric(errors, r#"loop="sync""#).await;
    let retried = world
        .controller()
        .metric_reaching(errors, r#"loop="sync""#, before + 3.0)
        .await;
    assert!(
        retried >= before + 3.0,
        "the loser retried {} times: {}",
        retried - before,
        world.controller().log_text()
    );
    let held = world
        .configmaps(&target)
        .get("shared")
        .await
        .expect("mirror");
    assert_eq!(
        held.resource_version(),
        winner.resource_version(),
        "the mirror was rewritten"
    );
    assert_eq!(world.controller().writes().await, writes, "the loser wrote");
    world
        .configmaps(&rival_namespace)
        .delete("shared", &Default::default())
        .await
        .expect("delete rival");
    world.clean_up().await;
}

async fn a_source_deleted_while_the_controller_is_down_loses_its_mirrors_at_start<K: TestKind>() {
    let mut world = World::<K>::new("mt-down").await;
    let a = world.namespace("a", true, &[]).await;
    world.mirrored("shared", &[to(&a)]).await;
    world.mirror_in_sync(&a, "shared").await;
    world.stop();

    // Nothing holds the deletion back: the source is gone at once.
    world.objects().delete("shared").await;
    assert!(world.objects().get("shared").await.is_none());
    assert!(
        world
            .api(&a)
            .get_opt("shared")
            .await
            .expect("get")
            .is_some()
    );
    world.start().await;
    world.objects_in(&a).wait_gone("shared").await;
    world.clean_up().await;
}

async fn malformed_mirror_annotations_are_warned_about<K: TestKind>() {
    let world = World::<K>::new("mt-typo").await;
    world.mirrored("typo", &[to("Team_*")]).await;
    world.scene.wait_event("typo", "InvalidMirrorTargets").await;
    world.objects().companion_in_sync("typo").await;
    world.clean_up().await;
}

/// A tenant in one namespace mirrors a ConfigMap named like another
/// namespace's future companion into it. The other namespace's source must
/// not adopt that mirror: it gets a Warning, nothing is overwritten or
/// deleted, and it gets its companion once the tenant's mirror goes.
#[tokio::test]
async fn a_tenant_cannot_take_over_a_companion_name_in_another_namespace() {
    let world = World::<ConfigMap>::new("mt-tenant").await;
    let b = world.namespace("b", true, &[]).await;
    world.mirrored("app-synced", &[to(&b)]).await;
    let evil = world.mirror_in_sync(&b, "app-synced").await;

    let b_sources = world.configmaps(&b);
    let app = b_sources
        .create(&PostParams::default(), &mk_source("app", &[("k", "good")]))
        .await
        .expect("create b/app");
    let events: Api<k8s_openapi::api::events::v1::Event> =
        Api::namespaced(world.scene.client.clone(), &b);
    testenv::wait_for(
        "a CompanionNameTaken warning on b/app",
        PATIENCE,
        || async {
            let list = events.list(&ListParams::default()).await.ok()?;
            list.items
                .into_iter()
                .find(|e| {
                    e.reason.as_deref() == Some("CompanionNameTaken")
                        && e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some("app")
                })
                .map(|_| ())
        },
    )
    .await
    .unwrap_or_else(|e| panic!("{e:#}"));
    let held = b_sources
        .get("app-synced")
        .await
        .expect("the tenant's mirror");
    assert_eq!(held.data, evil.data, "the mirror was overwritten");
    assert!(held.owner_references().is_empty(), "the mirror was adopted");
    assert_eq!(
        held.metadata.resource_version,
        evil.metadata.resource_version
    );

    // The tenant withdraws: its mirror goes, and b/app gets its companion.
    world
        .scene
        .configmaps()
        .patch(
            "app-synced",
            json!({"metadata": {"annotations": {"workshop.io/mirror-to": null}}}),
        )
        .await;
    testenv::wait_for("b/app-synced to be b/app's companion", PATIENCE, || async {
        let companion = b_sources.get_opt("app-synced").await.ok()??;
        common::is_exact_companion(&companion, &app, &()).then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{e:#}"));
    b_sources
        .delete("app", &Default::default())
        .await
        .expect("delete b/app");
    world.clean_up().await;
}

/// Consent is checked first, always: a namespace that withdraws it loses
/// its mirror even while the source's annotation is malformed.
async fn withdrawn_consent_removes_a_mirror_whose_source_annotation_is_malformed<K: TestKind>() {
    let world = World::<K>::new("mt-consent-typo").await;
    let b = world.namespace("b", true, &[]).await;
    world.mirrored("shared", &[to(&b)]).await;
    world.mirror_in_sync(&b, "shared").await;

    world
        .objects()
        .patch(
            "shared",
            json!({"metadata": {"annotations": {"workshop.io/mirror-to": ""}}}),
        )
        .await;
    world
        .scene
        .wait_event("shared", "InvalidMirrorTargets")
        .await;
    world.label_namespace(&b, K::CONSENT_LABEL, None).await;
    world.objects_in(&b).wait_gone("shared").await;
    world.clean_up().await;
}

/// A labeled copy whose annotations claim it mirrors kube-system/x: it is
/// pruned like any unwanted mirror of this install, and no Event goes to
/// kube-system, a namespace no verified source lives in.
#[tokio::test]
async fn a_fabricated_mirror_never_makes_the_controller_post_events_elsewhere() {
    let world = World::<ConfigMap>::new("mt-forged").await;
    let mut forged = mk_unmanaged("forged", &[("k", "v")]);
    forged.metadata.labels = Some(
        [(
            "app.kubernetes.io/managed-by".to_owned(),
            "configmap-mirror".to_owned(),
        )]
        .into(),
    );
    forged.metadata.annotations = Some(
        [
            (MIRROR_OF_ANNOTATION, "kube-system/x"),
            (
                MIRROR_OF_UID_ANNOTATION,
                "00000000-0000-0000-0000-000000000000",
            ),
            ("workshop.io/source-selector", "workshop.io/managed=true"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect(),
    );
    world.scene.configmaps().create(&forged).await;
    // Nothing wants it, so it goes: the prune loop has handled it.
    world.scene.configmaps().wait_gone("forged").await;
    // The prune that deleted it decided whether to tell its source, and
    // says when it does not: any Event it posts is decided before this.
    let decided = format!("mirror={}/forged", world.prefix);
    testenv::wait_for(
        "the prune to decide no Event is posted",
        PATIENCE,
        || async {
            let log = world.controller().log_text();
            log.lines()
                .any(|line| line.contains("is not verified; no Event") && line.contains(&decided))
                .then_some(())
        },
    )
    .await
    .unwrap_or_else(|e| panic!("{e:#}\n{}", world.controller().log_text()));
    let events: Api<k8s_openapi::api::events::v1::Event> =
        Api::namespaced(world.scene.client.clone(), "kube-system");
    let posted: Vec<_> = events
        .list(&ListParams::default())
        .await
        .expect("list events in kube-system")
        .items
        .into_iter()
        .filter(|e| e.reporting_controller.as_deref() == Some("configmap-mirror"))
        .collect();
    assert!(
        posted.is_empty(),
        "events posted into kube-system: {posted:?}"
    );
    world.clean_up().await;
}

/// A source whose companion name is too long (retried only on change) and
/// whose mirror is refused by an admission policy (retried slowly): the
/// mirror's retry must not wait for a change of the source.
#[tokio::test]
async fn a_part_that_waits_for_a_change_does_not_hold_back_a_sibling_s_retry() {
    let world = World::<ConfigMap>::new("mt-retry-class").await;
    let b = world.namespace("b", true, &[]).await;
    let long_name = "l".repeat(250);
    let policy = format!("{}-refuse", world.prefix);
    common::kubectl_apply(
        &world.scene,
        &common::refusing_configmap(&policy, &b, &long_name),
    );
    common::policy_enforced(&world.configmaps(&b), &long_name).await;

    world.mirrored(&long_name, &[to(&b)]).await;
    world
        .scene
        .wait_event(&long_name, "CompanionRejected")
        .await;
    common::delete_policy(&world.scene, &policy);
    world.mirror_in_sync(&b, &long_name).await;
    world.clean_up().await;
}

/// A reconcile woken by one copy compares that copy only, but a retry
/// compares them all: a mirror refused once is written when the refusal
/// ends, even if another mirror of the same source was healed meanwhile,
/// by a reconcile that took the retry's turn.
#[tokio::test]
async fn a_refused_mirror_is_retried_even_after_a_sibling_mirror_was_healed() {
    let world = World::<ConfigMap>::new("mt-retry-scope").await;
    let refusing = world.namespace("a", true, &[]).await;
    let b = world.namespace("b", true, &[]).await;
    let policy = format!("{}-refuse", world.prefix);
    common::kubectl_apply(
        &world.scene,
        &common::refusing_configmap(&policy, &refusing, "shared"),
    );
    common::policy_enforced(&world.configmaps(&refusing), "shared").await;

    world
        .mirrored("shared", &[to(&format!("{refusing},{b}"))])
        .await;
    world.scene.wait_event("shared", "CompanionRejected").await;
    world.mirror_in_sync(&b, "shared").await;
    world
        .configmaps(&b)
        .delete("shared", &Default::default())
        .await
        .expect("delete the mirror in b");
    world.mirror_in_sync(&b, "shared").await;

    common::delete_policy(&world.scene, &policy);
    world.mirror_in_sync(&refusing, "shared").await;
    world.clean_up().await;
}

/// An earlier release let a Helm-installed source's managed-by label onto
/// its mirrors, which the copies' watch then never saw again: a Secret's
/// value stayed wherever its source had been mirrored. The source's next
/// reconcile takes such a mirror back, so that it goes with its source.
#[tokio::test]
async fn a_secret_mirror_detached_by_an_earlier_release_is_taken_back_and_removed_with_its_source()
{
    let world = World::<Secret>::new("mt-detached").await;
    let b = world.namespace("b", true, &[]).await;
    let data = [("password", "p")];
    let helm = "app.kubernetes.io/managed-by";
    // Not a source yet, so that the mirror written before can name its uid.
    let source = with_json(
        Secret::with_data("db", &data, false),
        json!({"metadata": {
            "labels": {helm: "Helm"},
            "annotations": {"workshop.io/mirror-to": b, "workshop.io/copy-labels": "app.kubernetes.io/*"},
        }}),
    );
    let source = world.objects().create(&source).await;
    let detached = with_json(
        Secret::with_data("db", &data, false),
        json!({"metadata": {
            "namespace": b,
            "labels": {helm: "Helm"},
            "annotations": {
                MIRROR_OF_ANNOTATION: format!("{}/db", world.scene.namespace),
                MIRROR_OF_UID_ANNOTATION: source.uid(),
                "workshop.io/carried-labels": helm,
                "workshop.io/source-selector": "workshop.io/managed=true",
            },
        }}),
    );
    world
        .api(&b)
        .create(&PostParams::default(), &detached)
        .await
        .expect("create the detached mirror");

    world
        .objects()
        .patch(
            "db",
            json!({"metadata": {"labels": {SOURCE_LABEL: "true"}}}),
        )
        .await;
    world.mirror_in_sync(&b, "db").await;
    testenv::wait_for(
        "the mirror managed by the controller again",
        PATIENCE,
        || async {
            let mirror = world.api(&b).get_opt("db").await.ok()??;
            (mirror.labels().get(helm).map(String::as_str) == Some("configmap-mirror"))
                .then_some(())
        },
    )
    .await
    .unwrap_or_else(|e| panic!("{e:#}"));
    world.objects().delete("db").await;
    world.objects_in(&b).wait_gone("db").await;
    world.clean_up().await;
}

/// Kubernetes publishes kube-root-ca.crt into every namespace: a mirror of
/// a source of that name would fight the publisher forever. It is refused
/// with a Warning; the source's companion is made as usual.
#[tokio::test]
async fn a_name_kubernetes_publishes_everywhere_is_never_mirrored() {
    let world = World::<ConfigMap>::new("mt-reserved").await;
    let b = world.namespace("b", true, &[]).await;
    world.mirrored("kube-root-ca.crt", &[to(&b)]).await;
    world
        .scene
        .wait_event("kube-root-ca.crt", "MirrorNameReserved")
        .await;
    world
        .scene
        .configmaps()
        .companion_in_sync("kube-root-ca.crt")
        .await;
    // The Warning is posted once the reconcile that refused has ended,
    // having written no mirror; it is retried only on a change, and every
    // reconcile after (woken by the companion's write) refuses the same.
    let mirror = world.configmaps(&b).get_opt("kube-root-ca.crt").await;
    assert!(
        mirror.expect("get").is_none(),
        "kube-root-ca.crt was mirrored"
    );
    world.clean_up().await;
}

/// The work follows what changed: a namespace that no source mirrors into
/// changing its labels wakes no source, and a mirroring source deleted
/// wakes its own mirrors, not a comparison of everything.
#[tokio::test]
async fn the_work_follows_what_changed() {
    const SOURCES: usize = 10;
    const RESYNCED: &str = "configmap_mirror_resync_objects_total";
    // With ClusterMirrors served, for `copies_caught_up`.
    let world = crate::cluster_mirror::world::<ConfigMap>("mt-cost").await;
    let b = world.namespace("b", true, &[]).await;
    let quiet = world.namespace("quiet", true, &[]).await;
    // Where a canary source is mirrored once each consents: a later event of
    // the namespace watch, followed to its effect, at a known cost.
    let canaries = [
        world.namespace("c1", false, &[]).await,
        world.namespace("c2", false, &[]).await,
        world.namespace("c3", false, &[]).await,
    ];
    for i in 0..SOURCES {
        world.mirrored(&format!("s{i}"), &[to(&b)]).await;
    }
    // Last on the sources' watch: its mirror written, every source before
    // it was followed.
    world.mirrored("canary", &[to(&canaries.join(","))]).await;
    let companions = world.scene.configmaps();
    for i in 0..SOURCES {
        companions.companion_in_sync(&format!("s{i}")).await;
        world.mirror_in_sync(&b, &format!("s{i}")).await;
    }
    companions.companion_in_sync("canary").await;
    let before = canary_mirrored(&world, &canaries[0]).await;
    let alone = canary_mirrored(&world, &canaries[1]).await;
    world.label_namespace(&quiet, "team", Some("x")).await;
    // The namespace watch delivers in order: once the canary's mirror is
    // written, the label before it was followed, and its wakeups counted.
    let after = canary_mirrored(&world, &canaries[2]).await;
    let controller = world.controller();
    assert_eq!(
        after - alone,
        alone - before,
        "a namespace nobody mirrors into woke sources (wakeups: {before} before, {alone} \
         with one canary, {after} with the label and another)\n{}",
        controller.log_text()
    );

    let compared = controller.metric(RESYNCED, "").await;
    world.scene.configmaps().delete("s0").await;
    world.objects_in(&b).wait_gone("s0").await;
    // A later event of the sources' watch, followed to its effect: the
    // delete before it was followed, and a comparison it asked for made.
    companions.set_data("s1", &[("color", Some("red"))]).await;
    world.mirror_in_sync(&b, "s1").await;
    assert_eq!(
        controller.metric(RESYNCED, "").await,
        compared,
        "deleting one source compared everything\n{}",
        controller.log_text()
    );
    world.clean_up().await;
}

/// `namespace` consents, and the canary source's mirror is written there:
/// the wakeups handed to the sync loop once the copies' watch has followed
/// that write (which wakes the canary once more).
async fn canary_mirrored(world: &World<ConfigMap>, namespace: &str) -> f64 {
    world
        .label_namespace(namespace, ConfigMap::CONSENT_LABEL, Some("true"))
        .await;
    world.mirror_in_sync(namespace, "canary").await;
    copies_caught_up(world).await;
    world.controller().metric("workqueue_adds_total", "").await
}

/// Returns once the copies' watch has followed every event before the
/// call. No copy of a source can be the later event that shows it: each
/// write the controller makes of one comes back on that watch and wakes
/// its source again. So the later event is a copy of a ClusterMirror that
/// never existed, claiming no source: its prune keeps it as an orphan and
/// says so in the log, and neither its creation nor its deletion wakes the
/// sync loop.
async fn copies_caught_up(world: &World<ConfigMap>) {
    static LATER: AtomicUsize = AtomicUsize::new(0);
    let name = format!("caught-up-{}", LATER.fetch_add(1, Ordering::Relaxed));
    let marked = json!({"metadata": {
        "labels": {MANAGED_BY_LABEL: MANAGER_NAME, CLUSTER_MIRROR_LABEL: name},
        "annotations": {SOURCE_SELECTOR_ANNOTATION: format!("{SOURCE_LABEL}=true")},
    }});
    let orphan = with_json(ConfigMap::with_data(&name, &[("k", "v")], false), marked);
    let objects = world.objects();
    objects.create(&orphan).await;
    let copy = format!("{}/{name}", world.scene.namespace);
    crate::cluster_mirror::orphan_prunes_reaching(world.controller(), &copy, 1).await;
    objects.delete(&name).await;
}

/// A tenant's source listing tens of thousands of names, re-annotated over
/// and over, is refused with a Warning naming the limit, before any
/// namespace is compared; meanwhile another tenant's companion heals, and
/// the leader (at the default timings) keeps its Lease.
#[tokio::test]
async fn a_source_listing_tens_of_thousands_of_namespaces_is_refused_and_starves_nobody() {
    const PATTERNS: usize = 25_000;
    let mut world = World::<ConfigMap>::new("mt-flood").await;
    world.stop();
    let leader_args = ["--leader-elect", "--leader-election-namespace"];
    let namespace = world.scene.namespace.clone();
    world
        .start_with(
            &[
                &leader_args[..],
                &[&namespace, "--leader-election-identity", "leader"],
            ]
            .concat(),
        )
        .await;
    world
        .scene
        .wait_lease_holder(PATIENCE, |h| h == "leader")
        .await;
    let leases: Api<Lease> = Api::namespaced(world.scene.client.clone(), &namespace);
    let lease_before = leases.get(common::LEASE).await.expect("the lease").spec;
    let b = world.namespace("b", true, &[]).await;
    world
        .scene
        .configmaps()
        .create(&mk_source("other", &[("a", "1")]))
        .await;
    world.scene.configmaps().companion_in_sync("other").await;

    let patterns = |prefix: &str| {
        let mut list: Vec<String> = (0..PATTERNS).map(|i| format!("{prefix}{i}")).collect();
        list.push(b.clone());
        list.join(",")
    };
    world.mirrored("flood", &[to(&patterns("p"))]).await;
    for round in 0..6 {
        let patch = json!({"metadata": {"annotations": {"workshop.io/mirror-to": patterns(&format!("r{round}-"))}}});
        world.scene.configmaps().patch("flood", patch).await;
    }
    world.scene.configmaps().delete("other-synced").await;
    world.scene.configmaps().companion_in_sync("other").await;

    let warning = world
        .scene
        .wait_event("flood", "InvalidMirrorTargets")
        .await;
    let note = warning.note.unwrap_or_default();
    assert!(note.contains("over the limit of 8192 bytes"), "{note}");
    world.scene.configmaps().companion_in_sync("flood").await;
    world.objects_in(&b).wait_gone("flood").await;
    let lease_after = leases.get(common::LEASE).await.expect("the lease").spec;
    assert_eq!(
        lease_after.as_ref().and_then(|s| s.acquire_time.clone()),
        lease_before.as_ref().and_then(|s| s.acquire_time.clone()),
        "the leader lost its lease"
    );
    assert!(
        testenv::process_alive(world.controller().pid()),
        "{}",
        world.controller().log_text()
    );
    world.clean_up().await;
}

/// A name reserved after its mirrors exist: the mirrors go (a reserved
/// name is never mirrored, and a mirror kept would go stale for good), the
/// source is warned about, and its companion stays in sync.
#[tokio::test]
async fn mirrors_of_a_name_reserved_later_are_removed() {
    let mut world = World::<ConfigMap>::new("mt-reserved-later").await;
    let b = world.namespace("b", true, &[]).await;
    world.mirrored("app", &[to(&b)]).await;
    world.mirror_in_sync(&b, "app").await;
    world.stop();
    world.start_with(&["--reserved-names", "other,app"]).await;
    world.objects_in(&b).wait_gone("app").await;
    let warning = world.scene.wait_event("app", "MirrorNameReserved").await;
    assert!(
        warning
            .note
            .unwrap_or_default()
            .contains("--reserved-names")
    );
    world
        .scene
        .configmaps()
        .patch("app", json!({"data": {"color": "green"}}))
        .await;
    world.scene.configmaps().companion_in_sync("app").await;
    world.clean_up().await;
}

/// A copy as releases before the `workshop.io/source-selector` marker
/// wrote it (89bd8d7 added the marker): our label, the checksum, and the
/// owner reference (companion) or the source's name and uid (mirror).
fn unmarked_copy(source: &ConfigMap, namespace: &str, name: &str, mirror: bool) -> ConfigMap {
    let mut annotations =
        BTreeMap::from([(CHECKSUM_ANNOTATION.to_owned(), content_checksum(source))]);
    let mut owner_references = None;
    if mirror {
        annotations.insert(
            MIRROR_OF_ANNOTATION.into(),
            format!(
                "{}/{}",
                source.namespace().unwrap_or_default(),
                source.name_any()
            ),
        );
        annotations.insert(
            MIRROR_OF_UID_ANNOTATION.into(),
            source.uid().unwrap_or_default(),
        );
    } else {
        owner_references = Some(vec![
            k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
                api_version: "v1".into(),
                kind: "ConfigMap".into(),
                name: source.name_any(),
                uid: source.uid().unwrap_or_default(),
                controller: Some(true),
                block_owner_deletion: None,
            },
        ]);
    }
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(namespace.into()),
            labels: Some(BTreeMap::from([(
                "app.kubernetes.io/managed-by".to_owned(),
                "configmap-mirror".to_owned(),
            )])),
            annotations: Some(annotations),
            owner_references,
            ..ObjectMeta::default()
        },
        data: source.data.clone(),
        ..ConfigMap::default()
    }
}

/// An upgrade from a release that did not mark copies: what changed while
/// no controller ran ends right. A mirror of a deleted source goes (its
/// companion went with the garbage collector), a kept source's copies are
/// updated and marked, and an unmarked copy of a source this install does
/// not manage, which another install may, is left alone.
#[tokio::test]
async fn copies_of_a_release_without_the_install_marker_end_right_after_an_upgrade() {
    let mut world = World::<ConfigMap>::new("mt-upgrade").await;
    world.stop();
    let b = world.namespace("b", true, &[]).await;
    let home = world.scene.namespace.clone();
    let gone = world.mirrored("gone", &[to(&b)]).await;
    let kept = world.mirrored("kept", &[to(&b)]).await;
    let theirs = world
        .scene
        .configmaps()
        .create(&mk_unmanaged("theirs", &[("color", "red")]))
        .await;
    for (source, mirror_too) in [(&gone, true), (&kept, true), (&theirs, false)] {
        let companion = format!("{}-synced", source.name_any());
        world
            .scene
            .configmaps()
            .create(&unmarked_copy(source, &home, &companion, false))
            .await;
        if mirror_too {
            world
                .configmaps(&b)
                .create(
                    &PostParams::default(),
                    &unmarked_copy(source, &b, &source.name_any(), true),
                )
                .await
                .expect("create the mirror");
        }
    }
    let theirs_mirror = world
        .configmaps(&b)
        .create(
            &PostParams::default(),
            &unmarked_copy(&theirs, &b, "theirs", true),
        )
        .await
        .expect("create the mirror");

    world.scene.configmaps().delete("gone").await;
    world
        .scene
        .configmaps()
        .patch("kept", json!({"data": {"color": "green"}}))
        .await;
    world.start().await;

    world.objects_in(&b).wait_gone("gone").await;
    let mirror = world.mirror_in_sync(&b, "kept").await;
    let companion = world.scene.configmaps().companion_in_sync("kept").await;
    for copy in [&mirror, &companion] {
        assert!(
            copy.annotations()
                .contains_key("workshop.io/source-selector"),
            "not marked: {copy:?}"
        );
    }
    let still = world
        .configmaps(&b)
        .get_opt("theirs")
        .await
        .expect("get")
        .expect("the unmarked mirror of a source this install does not manage stays");
    assert_eq!(still.resource_version(), theirs_mirror.resource_version());
    assert!(
        world
            .scene
            .configmaps()
            .get("theirs-synced")
            .await
            .is_some()
    );
    world.scene.configmaps().delete("theirs-synced").await;
    world
        .configmaps(&b)
        .delete("theirs", &Default::default())
        .await
        .expect("delete the unmarked mirror");
    world.clean_up().await;
}
