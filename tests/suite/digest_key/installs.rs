//! One key per install, and the key as the install's own object: never a
//! source, whoever made it.

use super::*;
use configmap_mirror::contract::install::{DIGEST_KEY_ROLE, INSTALL_OWNED_LABEL};

/// A Secret source labeled for the install with selector `team=<team>`.
fn team_secret(name: &str, team: &str) -> Secret {
    let mut secret = mk_secret(name, "Opaque", &[("password", "same")]);
    secret.metadata.labels = Some(BTreeMap::from([("team".to_owned(), team.to_owned())]));
    secret
}

#[tokio::test]
async fn two_installs_in_one_namespace_keep_two_keys() {
    let scene = Scene::new("key-two").await;
    let secrets = Objects::<Secret>::of(&scene);
    let mut controllers = Vec::new();
    for team in ["a", "b"] {
        let selector = format!("team={team}");
        let lease = format!("mirror-{team}");
        let args = [
            BOTH_KINDS,
            "--selector",
            &selector,
            "--leader-elect",
            "--leader-election-namespace",
            &scene.namespace,
            "--leader-election-id",
            &lease,
            "--leader-election-identity",
            &lease,
        ];
        controllers.push(scene.configmaps().start_controller(&args).await);
        secrets.create(&team_secret(team, team)).await;
    }
    let key_of = |team: &'static str| {
        let api = secrets.api.clone();
        async move {
            let name = format!("mirror-{team}-digest-key");
            let secret = wait_for(&format!("the key {name}"), PATIENCE, || async {
                api.get_opt(&name).await.ok()?
            })
            .await
            .unwrap_or_else(|e| panic!("{e:#}"));
            key_in(&secret).expect("a 32-byte key")
        }
    };
    let (key_a, key_b) = (key_of("a").await, key_of("b").await);
    assert_ne!(key_a, key_b, "two installs share a key");
    for (team, key) in [("a", &key_a), ("b", &key_b)] {
        let source = secrets.get(team).await.expect("the source");
        let copy = wait_for(&format!("the copy of {team}"), PATIENCE, || async {
            let copy = secrets.get(&format!("{team}-synced")).await?;
            (copy.annotations().get(CHECKSUM_ANNOTATION) == Some(&source.content_digest(key)))
                .then_some(copy)
        })
        .await;
        assert!(
            copy.is_ok(),
            "{team}'s copy is checksummed under its own install's key"
        );
    }
    assert!(
        secrets.get(KEY_SECRET).await.is_none(),
        "the installs fell back to one shared name"
    );
}

/// The key lives where the install runs, beside the sources there: labelled
/// as a source, it is refused as other objects that are never a source are
/// (a Warning, no companion), whether it carries the label the controller
/// marks its key with or not (a key made by an earlier release, or by
/// hand). Its value is printed nowhere.
#[tokio::test]
async fn the_digest_key_labelled_as_a_source_gets_no_companion() {
    let scene = Scene::new("key-source").await;
    let secrets = Objects::<Secret>::of(&scene);
    // Unmarked, labelled a source from the start.
    let mut planted = key_secret(KEY_SECRET, &[0x44; 32]);
    planted.metadata.labels = Some(BTreeMap::from([(SOURCE_LABEL.into(), "true".into())]));
    let planted = secrets.create(&planted).await;
    let controller = secrets.start_controller(&[]).await;
    let warning = scene.wait_event(KEY_SECRET, "SourceNotCopyable").await;
    let note = warning.note.unwrap_or_default();
    assert!(note.contains("this install's digest key"), "{note}");

    // The key the controller makes is marked as the install's own.
    secrets.delete(KEY_SECRET).await;
    let made = wait_for("a new key", PATIENCE, || async {
        let key = secrets.get(KEY_SECRET).await?;
        (key.uid() != planted.uid()).then_some(key)
    })
    .await
    .unwrap_or_else(|e| panic!("{e:#}"));
    secrets
        .patch(
            KEY_SECRET,
            json!({"metadata": {"labels": {SOURCE_LABEL: "true"}}}),
        )
        .await;
    // Both refusals were reconciled (never retried).
    controller
        .metric_reaching(
            "controller_runtime_terminal_reconcile_errors_total",
            "",
            2.0,
        )
        .await;
    let log = controller.log_text();
    assert!(
        log.contains("labeled workshop.io/install-owned=digest-key"),
        "{log}"
    );
    assert_eq!(
        secrets
            .get(&format!("{KEY_SECRET}-synced"))
            .await
            .map(|s| s.name_any()),
        None
    );
    for key in [&planted, &made] {
        let value = key.data.as_ref().and_then(|d| d.get("key")).expect("a key");
        let encoded = serde_json::to_value(value).expect("base64");
        let leaked =
            log.contains(encoded.as_str().unwrap_or("?")) || log.contains(&hex::encode(&value.0));
        assert!(!leaked, "the digest key's value was logged");
    }
}

/// A key made before the controller marked its own (by an earlier release,
/// or by hand) is labelled as the install's own once read, its value kept:
/// every install then refuses it as a source, not only this one.
#[tokio::test]
async fn a_key_made_before_keys_were_marked_is_labelled_as_the_install_s_own_and_kept() {
    let scene = Scene::new("key-marked").await;
    let secrets = Objects::<Secret>::of(&scene);
    let planted = secrets.create(&key_secret(KEY_SECRET, &[0x45; 32])).await;
    let controller = secrets.start_controller(&[]).await;
    let marked = wait_for(
        "the key labelled as the install's own",
        PATIENCE,
        || async {
            let key = secrets.get(KEY_SECRET).await?;
            let label = key.labels().get(INSTALL_OWNED_LABEL).cloned();
            (label.as_deref() == Some(DIGEST_KEY_ROLE)).then_some(key)
        },
    )
    .await
    .unwrap_or_else(|e| panic!("{e:#}\n{}", controller.log_text()));
    assert_eq!(
        marked.uid(),
        planted.uid(),
        "the same Secret, not a new one"
    );
    assert!(
        key_in(&marked).is_some() && key_in(&marked) == key_in(&planted),
        "its key kept"
    );
    // Still the key in use: a Secret copy is written under it.
    secrets
        .create(&mk_secret("db", "Opaque", &[("password", "p")]))
        .await;
    secrets.companion_in_sync("db").await;
}
