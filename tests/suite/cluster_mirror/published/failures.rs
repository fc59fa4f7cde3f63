//! A published ConfigMap that cannot be whole: an exact key the Secret
//! lacks is a failure of each copy, written without it; a tenant's own
//! ConfigMap at the copy's name stays theirs, untouched.

use super::*;

#[tokio::test]
async fn a_published_key_the_secret_lacks_is_key_missing_and_the_copy_is_written_without_it() {
    let world = super::world::<Secret>("pub-missing").await;
    let mut tls = tls_secret("corp-tls");
    tls.data.get_or_insert_default().remove("ca.crt");
    world.objects().create(&tls).await;
    let prod = world.namespace("prod", false, &[("env", "prod")]).await;
    let keys = json!({"keys": [{"key": "tls.crt"}, {"key": "ca.crt"}]});
    publish(&world, "lacking", "corp-tls", keys).await;
    let object = counted(&world, "lacking", (1, 0, 1)).await;
    let failure = &object.data["status"]["failures"][0];
    assert_eq!(failure["reason"], "KeyMissing");
    assert_eq!(failure["namespace"], prod.as_str());
    let message = failure["message"].as_str().unwrap_or_default();
    assert!(message.contains("ca.crt"), "{message}");
    published(
        &world,
        &prod,
        "corp-tls",
        "lacking",
        "corp-tls",
        &[("tls.crt", "tls.crt")],
    )
    .await;

    // The CA arrives: published, and the ClusterMirror is Ready.
    world
        .objects()
        .set_data("corp-tls", &[("ca.crt", Some(CA))])
        .await;
    let both = [("tls.crt", "tls.crt"), ("ca.crt", "ca.crt")];
    published(&world, &prod, "corp-tls", "lacking", "corp-tls", &both).await;
    ready(&world, "lacking", "Synced").await;
    clean_up_published(world, &["lacking"]).await;
}

#[tokio::test]
async fn a_tenant_s_configmap_at_the_published_name_stays_theirs() {
    let (world, targets) = with_a_tls_secret("pub-taken", &["open", "held"]).await;
    let (open, taken) = (&targets[0], &targets[1]);
    let mut theirs = ConfigMap::with_data("corp-tls", &[("ca.crt", "the tenant's")], false);
    theirs.metadata.namespace = Some(taken.clone());
    let theirs = configmaps(&world, taken)
        .create(&PostParams::default(), &theirs)
        .await
        .expect("the tenant's ConfigMap");
    publish_ca(&world, "taken").await;
    published(
        &world,
        open,
        "corp-tls",
        "taken",
        "corp-tls",
        &[("ca.crt", "ca.crt")],
    )
    .await;
    let partial = counted(&world, "taken", (2, 1, 1)).await;
    assert_eq!(counts(&partial).3, vec![taken.to_owned()]);
    let reason = condition(&partial, "Ready").map(|c| c["reason"].clone());
    assert_eq!(reason, Some(json!("PartiallySynced")));
    assert_eq!(partial.data["status"]["failures"][0]["reason"], "NameTaken");
    let untouched = configmaps(&world, taken)
        .get("corp-tls")
        .await
        .expect("theirs");
    assert_eq!(
        untouched.resource_version(),
        theirs.resource_version(),
        "never written"
    );
    assert_eq!(untouched.value("ca.crt").as_deref(), Some("the tenant's"));
    configmaps(&world, taken)
        .delete("corp-tls", &DeleteParams::default())
        .await
        .expect("delete the tenant's ConfigMap");
    clean_up_published(world, &["taken"]).await;
}
