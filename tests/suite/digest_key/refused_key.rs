//! With the key refused, no Secret copy is written, but those no longer
//! wanted still go.

use super::*;

#[tokio::test]
async fn with_the_key_refused_a_source_unlabeled_still_loses_its_copy() {
    let scene = Scene::new("key-prune").await;
    let secrets = Objects::<Secret>::of(&scene);
    let controller = secrets.start_controller(&[]).await;
    for name in ["db", "kept"] {
        secrets
            .create(&mk_secret(name, "Opaque", &[("password", name)]))
            .await;
        secrets.companion_in_sync(name).await;
    }
    assert!(controller.stop().success());
    // No release can use this key.
    secrets.patch(KEY_SECRET, key_patch(&[0x44; 31])).await;
    let kept = secrets.get("kept-synced").await.expect("the copy");

    let controller = start_unready(&scene, &[]).await;
    unready_because(&controller, "digest key").await;
    secrets
        .patch("db", json!({"metadata": {"labels": {SOURCE_LABEL: null}}}))
        .await;
    secrets.wait_gone("db-synced").await;
    let still = secrets.get("kept-synced").await.expect("the kept copy");
    assert_eq!(still.resource_version(), kept.resource_version());
    unready_because(&controller, "digest key").await;
}

/// Apart from the other tests' control planes: the controller of
/// [`with_the_key_refused_mirrors_still_go_when_consent_or_the_source_goes`]
/// watches the whole cluster.
fn cluster_wide() -> &'static ControlPlane {
    static CLUSTER_WIDE: LazyControlPlane = LazyControlPlane::new();
    CLUSTER_WIDE.get()
}

/// One cluster-wide test at a time.
async fn exclusive() -> MutexGuard<'static, ()> {
    static ONE_AT_A_TIME: Mutex<()> = Mutex::const_new(());
    ONE_AT_A_TIME.lock().await
}

/// The labels by which a namespace accepts mirrors of every kind.
const CONSENT: [&str; 2] = [
    "workshop.io/accept-mirrors",
    "workshop.io/accept-secret-mirrors",
];

#[tokio::test]
async fn with_the_key_refused_mirrors_still_go_when_consent_or_the_source_goes() {
    let _turn = exclusive().await;
    let scene = Scene::on(cluster_wide(), "key-mirrors").await;
    let secrets = Objects::<Secret>::of(&scene);
    let namespaces: Api<Namespace> = Api::all(scene.client.clone());
    let target = format!("{}-t", scene.namespace);
    let consent: BTreeMap<String, String> = CONSENT
        .iter()
        .map(|label| ((*label).to_owned(), "true".to_owned()))
        .collect();
    let namespace = Namespace {
        metadata: ObjectMeta {
            name: Some(target.clone()),
            labels: Some(consent),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    };
    namespaces
        .create(&PostParams::default(), &namespace)
        .await
        .expect("create the target namespace");
    let key_secret = format!("{}/{KEY_SECRET}", scene.namespace);
    let kubeconfig = scene.control_plane.kubeconfig_path().to_path_buf();
    let args = [BOTH_KINDS, "--digest-key-secret", &key_secret];
    let start = async |ready: bool| match ready {
        true => {
            ControllerProcess::start(scene.control_plane, &kubeconfig, &scene.namespace, &args)
                .await
        }
        false => {
            ControllerProcess::start_unready(
                scene.control_plane,
                &kubeconfig,
                &scene.namespace,
                &args,
            )
            .await
        }
    };
    let controller = start(true).await;
    let mirrors: Api<Secret> = Api::namespaced(scene.client.clone(), &target);
    for name in ["by-consent", "by-deletion"] {
        let mut source = mk_secret(name, "Opaque", &[("password", name)]);
        source.metadata.annotations = Some(BTreeMap::from([(
            "workshop.io/mirror-to".to_owned(),
            target.clone(),
        )]));
        secrets.create(&source).await;
        wait_for(&format!("the mirror of {name}"), PATIENCE, || async {
            mirrors.get_opt(name).await.ok()?
        })
        .await
        .unwrap_or_else(|e| panic!("{e:#}\n{}", controller.log_text()));
    }
    assert!(controller.stop().success());
    secrets.patch(KEY_SECRET, key_patch(&[0x55; 31])).await;

    let controller = start(false).await;
    unready_because(&controller, "digest key").await;
    secrets.delete("by-deletion").await;
    let gone = |name: &'static str| {
        let mirrors = mirrors.clone();
        async move {
            wait_for(&format!("the mirror {name} to go"), PATIENCE, || async {
                matches!(mirrors.get_opt(name).await, Ok(None)).then_some(())
            })
            .await
        }
    };
    gone("by-deletion")
        .await
        .unwrap_or_else(|e| panic!("{e:#}\n{}", controller.log_text()));
    let withdrawn: serde_json::Map<String, serde_json::Value> = CONSENT
        .iter()
        .map(|label| ((*label).to_owned(), serde_json::Value::Null))
        .collect();
    namespaces
        .patch(
            &target,
            &PatchParams::default(),
            &Patch::Merge(&json!({"metadata": {"labels": withdrawn}})),
        )
        .await
        .expect("withdraw consent");
    gone("by-consent")
        .await
        .unwrap_or_else(|e| panic!("{e:#}\n{}", controller.log_text()));
    namespaces
        .delete(&target, &Default::default())
        .await
        .expect("delete the target namespace");
}
