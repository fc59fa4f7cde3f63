//! What becomes of published ConfigMaps when their ClusterMirror goes
//! (`Delete` removes them, `Orphan` releases them) or switches its copies'
//! kind (the old kind's copies are pruned), and the sources never
//! published: the install's digest key, a service-account token, and any
//! Secret while the install mirrors no Secrets.

use super::*;

/// Waits until `namespace/name` is a Secret copy of the ClusterMirror
/// `cluster_mirror` holding only `ca.crt`, of type Opaque.
async fn secret_copy(world: &World<Secret>, namespace: &str, name: &str, cluster_mirror: &str) {
    let api = world.api(namespace);
    testenv::wait_for(
        &format!("a Secret copy {namespace}/{name}"),
        PATIENCE,
        || async {
            let copy = api.get_opt(name).await.ok()??;
            let keys: Vec<&String> = copy.data.iter().flat_map(|d| d.keys()).collect();
            let ours =
                copy.labels().get(CLUSTER_MIRROR_LABEL).map(String::as_str) == Some(cluster_mirror);
            (ours && keys == ["ca.crt"] && copy.type_.as_deref() == Some("Opaque")).then_some(())
        },
    )
    .await
    .unwrap_or_else(|e| panic!("{e:#}\n{}", world.controller().log_text()));
}

#[tokio::test]
async fn deleting_a_publishing_clustermirror_deletes_or_releases_its_configmaps() {
    let (world, targets) = with_a_tls_secret("pub-delete", &["a", "b"]).await;
    let ca = [("ca.crt", "ca.crt")];
    publish_ca(&world, "gone").await;
    let kept = json!({"name": "corp-ca-kept", "keys": [{"key": "ca.crt"}]});
    publish(&world, "kept", "corp-tls", kept).await;
    patch_spec(&world, "kept", json!({"deletionPolicy": "Orphan"})).await;
    let mut before = Vec::new();
    for namespace in &targets {
        published(&world, namespace, "corp-tls", "gone", "corp-tls", &ca).await;
        before.push(published(&world, namespace, "corp-ca-kept", "kept", "corp-tls", &ca).await);
    }
    ready(&world, "kept", "Synced").await;

    let api = cluster_mirrors(&world.scene.client);
    api.delete("gone", &DeleteParams::default())
        .await
        .expect("delete gone");
    api.delete("kept", &DeleteParams::default())
        .await
        .expect("delete kept");
    for (namespace, before) in targets.iter().zip(&before) {
        no_configmap(&world, namespace, "corp-tls").await;
        let copies = world.configmaps(namespace);
        let released = testenv::wait_for("the copy released", PATIENCE, || async {
            let copy = copies.get_opt("corp-ca-kept").await.ok()??;
            (!copy.labels().contains_key(MANAGED_BY_LABEL)).then_some(copy)
        })
        .await
        .unwrap_or_else(|e| panic!("{e:#}\n{}", world.controller().log_text()));
        assert_eq!(released.uid(), before.uid(), "left in place");
        assert_eq!(held(&released), held(before), "with its content");
        let marks = released
            .labels()
            .keys()
            .chain(released.annotations().keys());
        let marks: Vec<&String> = marks
            .filter(|key| key.starts_with("workshop.io/"))
            .collect();
        assert!(marks.is_empty(), "still marked: {marks:?}");
        copies
            .delete("corp-ca-kept", &DeleteParams::default())
            .await
            .expect("delete the released copy");
    }
    clean_up_published(world, &[]).await;
}

#[tokio::test]
async fn switching_target_kind_replaces_the_secret_copies_by_configmaps_and_back() {
    let (world, targets) = with_a_tls_secret("pub-switch", &["a", "b"]).await;
    let as_secret = json!({"kind": "Secret", "type": "Opaque", "keys": [{"key": "ca.crt"}]});
    create_with(&world, "switch", spec_with(&world, "corp-tls", as_secret)).await;
    for namespace in &targets {
        secret_copy(&world, namespace, "corp-tls", "switch").await;
    }
    ready(&world, "switch", "Synced").await;

    let to_configmap = json!({"target": {"kind": "ConfigMap", "type": null}});
    patch_spec(&world, "switch", to_configmap).await;
    for namespace in &targets {
        published(
            &world,
            namespace,
            "corp-tls",
            "switch",
            "corp-tls",
            &[("ca.crt", "ca.crt")],
        )
        .await;
        world.objects_in(namespace).wait_gone("corp-tls").await;
    }
    ready(&world, "switch", "Synced").await;

    let back = json!({"target": {"kind": "Secret", "type": "Opaque"}});
    patch_spec(&world, "switch", back).await;
    for namespace in &targets {
        secret_copy(&world, namespace, "corp-tls", "switch").await;
        no_configmap(&world, namespace, "corp-tls").await;
    }
    ready(&world, "switch", "Synced").await;
    clean_up_published(world, &["switch"]).await;
}

#[tokio::test]
async fn a_secret_published_while_the_install_mirrors_no_secrets_says_so_and_writes_nothing() {
    let world = world_with::<ConfigMap>("pub-nosecrets", &["--kinds=configmaps"]).await;
    let secrets: Api<Secret> = Api::namespaced(world.scene.client.clone(), &world.prefix);
    secrets
        .create(&PostParams::default(), &tls_secret("corp-tls"))
        .await
        .expect("create the TLS Secret");
    let prod = world.namespace("prod", false, &[("env", "prod")]).await;
    let spec = json!({
        "source": {"kind": "Secret", "namespace": world.prefix, "name": "corp-tls"},
        "target": {
            "kind": "ConfigMap",
            "keys": [{"key": "ca.crt"}],
            "namespaceSelector": {"matchLabels": {"env": "prod"}},
            "namespaces": [format!("{}-*", world.prefix)],
        },
    });
    create_with(&world, "disabled", spec).await;
    let disabled = ready(&world, "disabled", "SecretsDisabled").await;
    assert_eq!(
        condition(&disabled, "Stalled").map(|c| &c["status"]),
        Some(&json!("True"))
    );
    assert_eq!(counts(&disabled), (1, 0, 0, vec![]), "selected by the spec");
    assert!(
        world
            .api(&prod)
            .get_opt("corp-tls")
            .await
            .expect("get")
            .is_none()
    );
    never_holds_the_private_key("the log", &[world.controller().log_text()]);
    clean_up(world, &["disabled"]).await;
}

#[tokio::test]
async fn the_digest_key_and_a_service_account_token_are_never_published() {
    let (world, targets) = with_a_tls_secret("pub-never", &["prod"]).await;
    let prod = &targets[0];
    let key_name = "configmap-mirror-digest-key";
    let secrets: Api<Secret> = world.api(&world.prefix);
    testenv::wait_for("the digest key", PATIENCE, || async {
        secrets.get_opt(key_name).await.ok()?
    })
    .await
    .unwrap_or_else(|e| panic!("{e:#}"));
    publish(&world, "key", key_name, json!({"keys": [{"key": "key"}]})).await;
    let refused = ready(&world, "key", "SourceNotCopyable").await;
    assert_eq!(counts(&refused), (1, 0, 0, vec![]));

    let mut token = Secret::with_data("token", &[("ca.crt", CA)], false);
    token.type_ = Some("kubernetes.io/service-account-token".into());
    let service_account = (
        "kubernetes.io/service-account.name".into(),
        "default".into(),
    );
    token.metadata.annotations = Some(BTreeMap::from([service_account]));
    world.objects().create(&token).await;
    publish(
        &world,
        "token",
        "token",
        json!({"keys": [{"key": "ca.crt"}]}),
    )
    .await;
    let refused = ready(&world, "token", "SourceNotCopyable").await;
    let message = condition(&refused, "Ready").map(|c| c["message"].to_string());
    assert!(
        message.unwrap_or_default().contains("service-account"),
        "{refused:?}"
    );
    for name in [key_name, "token"] {
        assert!(
            world
                .configmaps(prod)
                .get_opt(name)
                .await
                .expect("get")
                .is_none()
        );
    }
    clean_up_published(world, &["key", "token"]).await;
}
