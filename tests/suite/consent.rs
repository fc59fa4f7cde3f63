//! Consent names who and what: a namespace accepts each kind on its own,
//! may name the source namespaces it accepts mirrors from, and protected
//! namespaces never receive mirrors, whatever their labels say. Each test
//! is a tenant trying to reach a namespace that did not agree to it.
//!
//! These run on the `mirroring` topic's control plane, one at a time, with
//! a cluster-wide controller (see `common::World`).

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::{Api, ResourceExt, api::PostParams};

use crate::common::{Objects, PATIENCE, TestKind, World, to};

const ACCEPT_FROM: &str = "workshop.io/accept-mirrors-from";

crate::for_each_kind!(
    a_namespace_receives_mirrors_only_from_the_source_namespaces_it_names,
    a_malformed_accept_mirrors_from_accepts_nothing_and_warns_the_namespace,
    a_namespace_made_protected_loses_its_mirrors_and_the_source_is_warned,
    a_tenant_cannot_mirror_into_kube_system_even_when_it_consents,
);

async fn a_namespace_receives_mirrors_only_from_the_source_namespaces_it_names<K: TestKind>() {
    let world = World::<K>::new("cs-from").await;
    let picky = world.namespace("picky", true, &[]).await;
    world
        .annotate_namespace(&picky, ACCEPT_FROM, Some("platform, other-*"))
        .await;
    let open = world.namespace("open", true, &[]).await;
    world
        .mirrored("shared", &[to(&format!("{picky},{open}"))])
        .await;
    // The mirror in `open` shows the source was reconciled: nothing went
    // to `picky`, which does not name the source's namespace.
    world.mirror_in_sync(&open, "shared").await;
    world.objects_in(&picky).wait_gone("shared").await;

    let glob = format!("platform,{}*", &world.prefix[..3]);
    world
        .annotate_namespace(&picky, ACCEPT_FROM, Some(&glob))
        .await;
    world.mirror_in_sync(&picky, "shared").await;

    world
        .annotate_namespace(&picky, ACCEPT_FROM, Some("platform"))
        .await;
    world.objects_in(&picky).wait_gone("shared").await;
    world.mirror_in_sync(&open, "shared").await;

    world.annotate_namespace(&picky, ACCEPT_FROM, None).await;
    world.mirror_in_sync(&picky, "shared").await;
    world.clean_up().await;
}

async fn a_malformed_accept_mirrors_from_accepts_nothing_and_warns_the_namespace<K: TestKind>() {
    let world = World::<K>::new("cs-typo").await;
    let typo = world.namespace("typo", true, &[]).await;
    world
        .annotate_namespace(
            &typo,
            ACCEPT_FROM,
            Some(&format!("{},Not_A_Name", world.prefix)),
        )
        .await;
    let open = world.namespace("open", true, &[]).await;
    world
        .mirrored("shared", &[to(&format!("{typo},{open}"))])
        .await;
    world.mirror_in_sync(&open, "shared").await;
    world.objects_in(&typo).wait_gone("shared").await;

    let warning = world
        .scene
        .namespace_event(&typo, "InvalidAcceptMirrorsFrom")
        .await;
    let note = warning.note.unwrap_or_default();
    assert!(
        note.contains(ACCEPT_FROM) && note.contains("Not_A_Name"),
        "{note}"
    );

    world
        .annotate_namespace(&typo, ACCEPT_FROM, Some(&world.prefix))
        .await;
    world.mirror_in_sync(&typo, "shared").await;
    world.clean_up().await;
}

async fn a_namespace_made_protected_loses_its_mirrors_and_the_source_is_warned<K: TestKind>() {
    let mut world = World::<K>::new("cs-protect").await;
    let guarded = world.namespace("guarded", true, &[]).await;
    let open = world.namespace("open", true, &[]).await;
    world
        .mirrored("shared", &[to(&format!("{}-*", world.prefix))])
        .await;
    world.mirror_in_sync(&guarded, "shared").await;
    world.mirror_in_sync(&open, "shared").await;

    world.stop();
    let flag = format!("--protected-namespaces=kube-system,{guarded}");
    world.start_with(&[&flag]).await;
    world.objects_in(&guarded).wait_gone("shared").await;
    world.mirror_in_sync(&open, "shared").await;
    let warning = world
        .scene
        .wait_event("shared", "MirrorNamespaceProtected")
        .await;
    assert!(
        warning.note.unwrap_or_default().contains(&guarded),
        "the Warning names the namespace"
    );
    world.clean_up().await;
}

/// A source named as programs in `kube-system` trust (a bootstrap token's
/// Secret, CoreDNS's extra configuration), asking for `kube-system`, which
/// an operator labelled to consent. It also asks for a namespace where its
/// name is taken: each condition is told, neither hides the other.
async fn a_tenant_cannot_mirror_into_kube_system_even_when_it_consents<K: TestKind>() {
    let world = World::<K>::new("cs-system").await;
    let name = match K::kind(&()).as_ref() {
        "Secret" => "bootstrap-token-abcdef",
        _ => "coredns-custom",
    };
    world
        .label_namespace("kube-system", K::CONSENT_LABEL, Some("true"))
        .await;
    let open = world.namespace("open", true, &[]).await;
    let taken = world.namespace("taken", true, &[]).await;
    world
        .api(&taken)
        .create(
            &PostParams::default(),
            &K::with_data(name, &[("theirs", "1")], false),
        )
        .await
        .expect("create the bystander");
    world
        .mirrored(name, &[to(&format!("kube-system,{open},{taken}"))])
        .await;
    world.mirror_in_sync(&open, name).await;
    let warning = world
        .scene
        .wait_event(name, "MirrorNamespaceProtected")
        .await;
    let name_taken = world.scene.wait_event(name, "MirrorNameTaken").await;
    assert!(
        name_taken.note.unwrap_or_default().contains(&taken),
        "the Warning names the namespace where the name is taken"
    );
    world
        .label_namespace("kube-system", K::CONSENT_LABEL, None)
        .await;
    assert!(
        warning.note.unwrap_or_default().contains("kube-system"),
        "the Warning names kube-system"
    );
    assert!(
        world
            .api("kube-system")
            .get_opt(name)
            .await
            .expect("get")
            .is_none(),
        "nothing was written into kube-system"
    );
    world.clean_up().await;
}

/// Consent is per kind: a namespace that accepts ConfigMaps receives no
/// Secret until it accepts Secrets too, and withdrawing Secret consent
/// removes only the Secret mirrors.
#[tokio::test]
async fn a_namespace_that_accepts_configmaps_receives_no_secret_until_it_accepts_secrets() {
    let world = World::<Secret>::new("cs-kinds").await;
    let target = world
        .namespace("t", false, &[(ConfigMap::CONSENT_LABEL, "true")])
        .await;
    world.mirrored("secret", &[to(&target)]).await;
    let configmaps = Objects::<ConfigMap>::of(&world.scene);
    let mut config = ConfigMap::with_data("config", &[("color", "blue")], true);
    config.metadata.annotations =
        Some([("workshop.io/mirror-to".to_owned(), target.clone())].into());
    configmaps.create(&config).await;

    let mirrored_configmaps: Api<ConfigMap> = Api::namespaced(world.scene.client.clone(), &target);
    testenv::wait_for("the ConfigMap mirror", PATIENCE, || async {
        mirrored_configmaps.get_opt("config").await.ok()?
    })
    .await
    .unwrap_or_else(|e| panic!("{e:#}"));
    world.objects().companion_in_sync("secret").await;
    world.objects_in(&target).wait_gone("secret").await;

    world
        .label_namespace(&target, Secret::CONSENT_LABEL, Some("true"))
        .await;
    world.mirror_in_sync(&target, "secret").await;

    world
        .label_namespace(&target, Secret::CONSENT_LABEL, None)
        .await;
    world.objects_in(&target).wait_gone("secret").await;
    let kept = mirrored_configmaps
        .get_opt("config")
        .await
        .expect("get")
        .expect("the ConfigMap mirror stays");
    assert!(kept.labels().contains_key("app.kubernetes.io/managed-by"));
    configmaps.delete("config").await;
    testenv::wait_for("the ConfigMap mirror to go", PATIENCE, || async {
        matches!(mirrored_configmaps.get_opt("config").await, Ok(None)).then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{e:#}"));
    world.clean_up().await;
}
