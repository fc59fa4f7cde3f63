//! What a ClusterMirror may not do: take a name someone else holds, write
//! into a protected namespace or its source's, copy from a namespace it is
//! not allowed to, copy what is never copied, or copy Secrets while the
//! install mirrors none.

use super::*;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};

async fn names_held_by_others_stay_theirs<K: TestKind>(tag: &str) {
    let world = super::world::<K>(tag).await;
    world
        .objects()
        .create(&K::with_data("app", &[("k", "admin")], false))
        .await;
    let tenant = world.namespace("tenant", true, &[("env", "prod")]).await;
    let open = world.namespace("open", false, &[("env", "prod")]).await;
    // A tenant's own object, and a label-driven mirror, under the name.
    let mut mine = K::with_data("app", &[("k", "tenant's")], false);
    mine.meta_mut().namespace = Some(tenant.clone());
    world
        .api(&tenant)
        .create(&PostParams::default(), &mine)
        .await
        .expect("tenant object");
    create(&world, "first", "app").await;
    cluster_copy_in_sync(&world, &open, "app", "first").await;

    let partial = ready(&world, "first", "PartiallySynced").await;
    let status = &partial.data["status"];
    assert_eq!(status["selected"], 2);
    assert_eq!(status["synced"], 1);
    assert_eq!(status["failed"], 1);
    assert_eq!(status["failures"][0]["namespace"], tenant.as_str());
    assert_eq!(status["failures"][0]["reason"], "NameTaken");
    assert!(
        !status.to_string().contains("tenant's"),
        "never any content"
    );
    let untouched = world
        .api(&tenant)
        .get("app")
        .await
        .expect("the tenant's object");
    assert_eq!(untouched.value("k").as_deref(), Some("tenant's"));
    assert!(!untouched.labels().contains_key(CLUSTER_MIRROR_LABEL));

    // A second ClusterMirror of the same name: the first keeps its copy.
    create(&world, "second", "app").await;
    let second = ready(&world, "second", "PartiallySynced").await;
    assert_eq!(second.data["status"]["synced"], 0);
    let kept = world.api(&open).get("app").await.expect("the first's copy");
    assert_eq!(
        kept.labels().get(CLUSTER_MIRROR_LABEL).map(String::as_str),
        Some("first")
    );
    clean_up(world, &["first", "second"]).await;
}

#[tokio::test]
async fn a_configmap_name_held_by_someone_else_stays_theirs() {
    names_held_by_others_stay_theirs::<ConfigMap>("cmir-taken-cm").await;
}

#[tokio::test]
async fn a_secret_name_held_by_someone_else_stays_theirs() {
    names_held_by_others_stay_theirs::<Secret>("cmir-taken-secret").await;
}

#[tokio::test]
async fn protected_and_disallowed_namespaces_and_refused_sources_get_nothing() {
    let world = super::world::<Secret>("cmir-refused").await;
    world
        .objects()
        .create(&Secret::with_data("pull", &[("k", "v")], false))
        .await;
    let prod = world.namespace("a", false, &[("env", "prod")]).await;
    // Selects everything: never kube-system, nor the source's namespace.
    create_with(&world, "everywhere", json!({
        "source": {"kind": "Secret", "namespace": world.prefix, "name": "pull"},
        "target": {"namespaceSelector": {}, "namespaces": [format!("{}*", world.prefix), "kube-system"]},
    }))
    .await;
    cluster_copy_in_sync(&world, &prod, "pull", "everywhere").await;
    ready(&world, "everywhere", "Synced").await;
    let system: Api<Secret> = Api::namespaced(world.scene.client.clone(), "kube-system");
    assert!(
        system.get_opt("pull").await.unwrap().is_none(),
        "kube-system is protected"
    );

    // A source outside the allowed namespaces: nothing written.
    let elsewhere = world.namespace("elsewhere", false, &[]).await;
    let mut outside = Secret::with_data("outside", &[("k", "v")], false);
    outside.metadata.namespace = Some(elsewhere.clone());
    world
        .api(&elsewhere)
        .create(&PostParams::default(), &outside)
        .await
        .expect("create");
    create_with(&world, "outside", json!({
        "source": {"kind": "Secret", "namespace": elsewhere, "name": "outside"},
        "target": {"namespaceSelector": {"matchLabels": {"env": "prod"}}, "namespaces": [format!("{}-*", world.prefix)]},
    }))
    .await;
    let refused = ready(&world, "outside", "SourceNamespaceNotAllowed").await;
    assert_eq!(condition(&refused, "Stalled").unwrap()["status"], "True");
    // Selected by the spec alone, whatever blocks it; none synced.
    assert_eq!(counts(&refused), (1, 0, 0, vec![]));

    // A refused type stays refused.
    let mut token = Secret::with_data("token", &[("k", "v")], false);
    token.type_ = Some("bootstrap.kubernetes.io/token".into());
    world.objects().create(&token).await;
    create(&world, "token", "token").await;
    let never = ready(&world, "token", "SourceNotCopyable").await;
    assert_eq!(counts(&never), (1, 0, 0, vec![]));
    // A missing source.
    create(&world, "missing", "no-such-secret").await;
    ready(&world, "missing", "SourceNotFound").await;
    // Each refusal's reason is in the status its reconcile wrote after it
    // decided, and wrote no copy; every later one decides the same.
    assert!(world.api(&prod).get_opt("outside").await.unwrap().is_none());
    assert!(world.api(&prod).get_opt("token").await.unwrap().is_none());
    clean_up(world, &["everywhere", "outside", "token", "missing"]).await;
}

#[tokio::test]
async fn a_helm_2_release_record_is_never_copied() {
    let world = super::world::<ConfigMap>("cmir-tiller").await;
    let record = crate::common::with_json(
        ConfigMap::with_data("web.v1", &[("release", "H4sI")], false),
        json!({"metadata": {"labels": {"OWNER": "TILLER", "NAME": "web", "STATUS": "DEPLOYED"}}}),
    );
    world.objects().create(&record).await;
    let prod = world.namespace("a", false, &[("env", "prod")]).await;
    create(&world, "tiller", "web.v1").await;
    let refused = ready(&world, "tiller", "SourceNotCopyable").await;
    let message = condition(&refused, "Ready").unwrap()["message"].to_string();
    assert!(message.contains("OWNER=TILLER"), "{message}");
    // Written by the reconcile that refused, after it decided.
    assert!(world.api(&prod).get_opt("web.v1").await.unwrap().is_none());
    clean_up(world, &["tiller"]).await;
}

/// The CRD's rules refuse only the built-in never-carried keys: the
/// controller refuses those `--never-carry` adds.
#[tokio::test]
async fn a_key_never_carry_adds_makes_the_spec_invalid() {
    let mut world = World::<ConfigMap>::new_stopped("cmir-never").await;
    install_crd(&world.scene.client).await;
    let sources = world.prefix.clone();
    world
        .start_with(&[
            "--cluster-mirror-source-namespaces",
            &sources,
            "--never-carry=example.com/team,corp.example/*",
        ])
        .await;
    world
        .objects()
        .create(&ConfigMap::with_data("colors", &[("k", "v")], false))
        .await;
    let prod = world.namespace("a", false, &[("env", "prod")]).await;
    let target = |labels: Value, annotations: Value| {
        json!({
            "source": {"kind": "ConfigMap", "namespace": world.prefix, "name": "colors"},
            "target": {
                "namespaceSelector": {"matchLabels": {"env": "prod"}},
                "namespaces": [format!("{}-*", world.prefix)],
                "labels": labels,
                "annotations": annotations,
            },
        })
    };
    create_with(
        &world,
        "team",
        target(
            json!({"example.com/team": "a"}),
            json!({"corp.example/owner": "b"}),
        ),
    )
    .await;
    let refused = ready(&world, "team", "InvalidSpec").await;
    assert_eq!(condition(&refused, "Stalled").unwrap()["status"], "True");
    let message = condition(&refused, "Ready").unwrap()["message"].to_string();
    assert!(
        message.contains("example.com/team") && message.contains("corp.example/owner"),
        "{message}"
    );
    // Written by the reconcile that refused the spec, before any copy.
    assert!(world.api(&prod).get_opt("colors").await.unwrap().is_none());
    // Without the keys, the same ClusterMirror copies (a merge patch: null
    // removes a key).
    patch_spec(
        &world,
        "team",
        json!({"target": {
            "labels": {"example.com/team": null, "example.com/tier": "1"},
            "annotations": {"corp.example/owner": null},
        }}),
    )
    .await;
    cluster_copy_in_sync(&world, &prod, "colors", "team").await;
    clean_up(world, &["team"]).await;
}

#[tokio::test]
async fn a_secret_clustermirror_while_secrets_are_not_mirrored_says_so() {
    let world = super::world::<ConfigMap>("cmir-nosecrets").await;
    world.namespace("a", false, &[]).await;
    let everywhere =
        json!({"namespaceSelector": {}, "namespaces": [format!("{}-*", world.prefix)]});
    secret_clustermirror(&world, "secret", crate::explain::VALUE, everywhere).await;
    let disabled = ready(&world, "secret", "SecretsDisabled").await;
    assert_eq!(condition(&disabled, "Stalled").unwrap()["status"], "True");
    assert_eq!(counts(&disabled), (1, 0, 0, vec![]), "selected by the spec");
    // explain, told the install's --kinds, says so as the controller does.
    let run = super::explain::explain_as_admin(&world, &["clustermirror/secret", "-o", "json"]);
    assert_eq!(run.code, Some(1));
    let json = run.json();
    let own = crate::explain::verdict(&json, "clustermirror", "");
    assert_eq!(own, "secrets-disabled");
    assert_eq!(super::explain::ready_reason(&json), "SecretsDisabled");
    assert_eq!(json["clusterMirror"]["status"]["selected"], 1);
    clean_up(world, &["secret"]).await;
}

/// The digest key lives in the install's namespace, which is also where
/// ClusterMirror sources come from by default: named by a ClusterMirror,
/// it is still never copied. Its label taken off by hand, the install puts
/// it back, and it stays refused.
#[tokio::test]
async fn a_clustermirror_naming_the_digest_key_copies_nothing() {
    let world = super::world::<Secret>("cmir-key").await;
    let key_name = "configmap-mirror-digest-key";
    let secrets: Api<Secret> = Api::namespaced(world.scene.client.clone(), &world.prefix);
    let key = testenv::wait_for("the digest key", PATIENCE, || async {
        secrets.get_opt(key_name).await.ok()?
    })
    .await
    .unwrap_or_else(|e| panic!("{e:#}"));
    let prod = world.namespace("a", false, &[("env", "prod")]).await;
    create(&world, "key", key_name).await;
    let refused = ready(&world, "key", "SourceNotCopyable").await;
    let message = condition(&refused, "Ready").unwrap()["message"].to_string();
    assert!(message.contains("workshop.io/install-owned"), "{message}");

    let unmark = json!({"metadata": {"labels": {"workshop.io/install-owned": null}}});
    let unmarked = secrets
        .patch(key_name, &PatchParams::default(), &Patch::Merge(&unmark))
        .await
        .expect("unmark the key");
    testenv::wait_for("the key labelled again", PATIENCE, || async {
        let key = secrets.get_opt(key_name).await.ok()??;
        let marked = key.labels().get("workshop.io/install-owned")?;
        (marked == "digest-key" && key.resource_version() != unmarked.resource_version())
            .then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{e:#}\n{}", world.controller().log_text()));
    // The status says SourceNotCopyable still, unwritten: the barrier is a
    // later event of the same source watch, followed to its copy.
    caught_up(&world, None).await;
    ready(&world, "key", "SourceNotCopyable").await;
    assert!(world.api(&prod).get_opt(key_name).await.unwrap().is_none());

    // explain, told where the key is, says the same.
    let place = format!("--digest-key-secret={}/{key_name}", world.prefix);
    let run =
        super::explain::explain_as_admin(&world, &["clustermirror/key", "-o", "json", &place]);
    assert_eq!(run.code, Some(1));
    let json = run.json();
    assert_eq!(
        crate::explain::verdict(&json, "clustermirror", ""),
        "source-not-copyable"
    );
    // The key's value is printed nowhere: not by explain, not in the log.
    let value = key.data.as_ref().and_then(|d| d.get("key")).expect("a key");
    let encoded = serde_json::to_value(value).expect("base64");
    let printed = [run.stdout, run.stderr, world.controller().log_text()];
    let leaked = printed.iter().any(|text| {
        text.contains(encoded.as_str().unwrap_or("?")) || text.contains(&hex::encode(&value.0))
    });
    assert!(!leaked, "the digest key's value was printed");
    clean_up(world, &["key"]).await;
}

/// A key of the install's own `--selector` set on every copy would make
/// each a source, and be removed and put back at each comparison: the
/// spec is refused, and no copy is written.
#[tokio::test]
async fn a_label_of_the_install_s_selector_on_the_copies_makes_the_spec_invalid() {
    let mut world = World::<ConfigMap>::new_stopped("cmir-selector-key").await;
    install_crd(&world.scene.client).await;
    let sources = world.prefix.clone();
    world
        .start_with(&[
            "--cluster-mirror-source-namespaces",
            &sources,
            "--selector",
            "mirror-test.example/source=yes",
        ])
        .await;
    world
        .objects()
        .create(&ConfigMap::with_data("colors", &[("k", "v")], false))
        .await;
    let prod = world.namespace("a", false, &[("env", "prod")]).await;
    create_with(
        &world,
        "looping",
        json!({
            "source": {"kind": "ConfigMap", "namespace": world.prefix, "name": "colors"},
            "target": {
                "namespaceSelector": {"matchLabels": {"env": "prod"}},
                "namespaces": [format!("{}-*", world.prefix)],
                "labels": {"mirror-test.example/source": "yes"},
            },
        }),
    )
    .await;
    let refused = ready(&world, "looping", "InvalidSpec").await;
    assert_eq!(condition(&refused, "Stalled").unwrap()["status"], "True");
    let message = condition(&refused, "Ready").unwrap()["message"].to_string();
    assert!(
        message.contains("mirror-test.example/source") && message.contains("--selector"),
        "{message}"
    );
    // Written by the reconcile that refused the spec, before any copy.
    assert!(world.api(&prod).get_opt("colors").await.unwrap().is_none());
    assert_eq!(
        world.controller().writes().await,
        0.0,
        "no copy was written"
    );
    clean_up(world, &["looping"]).await;
}
