//! A published ConfigMap that cannot be whole: an exact key the Secret
//! lacks is a failure of each copy, written without it; a tenant's own
//! ConfigMap at the copy's name stays theirs, untouched.

use k8s_openapi::api::admissionregistration::v1::{
    ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding,
};

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
    let theirs = world
        .configmaps(taken)
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
    let untouched = world
        .configmaps(taken)
        .get("corp-tls")
        .await
        .expect("theirs");
    assert_eq!(
        untouched.resource_version(),
        theirs.resource_version(),
        "never written"
    );
    assert_eq!(untouched.value("ca.crt").as_deref(), Some("the tenant's"));
    world
        .configmaps(taken)
        .delete("corp-tls", &DeleteParams::default())
        .await
        .expect("delete the tenant's ConfigMap");
    clean_up_published(world, &["taken"]).await;
}

/// A ValidatingAdmissionPolicy refusing ConfigMaps in `namespace`, its
/// message built from the refused object's data, as a policy may be.
fn quoting_policy(name: &str, namespace: &str) -> (Value, Value) {
    let policy = json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": [{
                "apiGroups": [""], "apiVersions": ["v1"],
                "operations": ["CREATE", "UPDATE"], "resources": ["configmaps"],
            }]},
            "validations": [{
                "expression": "false",
                "messageExpression": "'refused, holding ' + object.data['ca.crt']",
                // What the API server says when the expression cannot be
                // evaluated: the same words.
                "message": format!("refused, holding {}", CA.replace('\n', " ")),
            }],
        },
    });
    let binding = json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name},
        "spec": {
            "policyName": name,
            "validationActions": ["Deny"],
            "matchResources": {"namespaceSelector": {
                "matchLabels": {"kubernetes.io/metadata.name": namespace},
            }},
        },
    });
    (policy, binding)
}

/// A published ConfigMap's content came from a Secret: what the API server
/// says of a refused write of it (a policy may quote the content) is told,
/// in the status and the Events, as a Secret's: who refused it, not what
/// it said.
#[tokio::test]
async fn a_policy_refusing_a_published_configmap_is_named_and_its_message_withheld() {
    let (world, targets) = with_a_tls_secret("pub-quoted", &["guarded"]).await;
    let guarded = &targets[0];
    let name = format!("{}-quoting", world.prefix);
    let (policy, binding) = quoting_policy(&name, guarded);
    let policies: Api<ValidatingAdmissionPolicy> = Api::all(world.scene.client.clone());
    let bindings: Api<ValidatingAdmissionPolicyBinding> = Api::all(world.scene.client.clone());
    let policy = serde_json::from_value(policy).expect("a policy");
    let binding = serde_json::from_value(binding).expect("a binding");
    policies
        .create(&PostParams::default(), &policy)
        .await
        .expect("create the policy");
    bindings
        .create(&PostParams::default(), &binding)
        .await
        .expect("create the binding");
    // The policy is in force once it refuses a write (a dry run, which
    // admission sees as any write and which stores nothing).
    let probe = ConfigMap::with_data("probe", &[("a", "b")], false);
    let dry_run = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    testenv::wait_for("the quoting policy in force", PATIENCE, || async {
        let refused = world.configmaps(guarded).create(&dry_run, &probe).await;
        let by_policy =
            matches!(refused, Err(kube::Error::Api(status)) if status.message.contains(&name));
        by_policy.then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{e:#}"));

    publish_ca(&world, "quoted").await;
    let stalled = counted(&world, "quoted", (1, 0, 1)).await;
    let failure = &stalled.data["status"]["failures"][0];
    let message = failure["message"].as_str().unwrap_or_default().to_owned();
    assert!(message.contains(&name), "names the policy: {message}");
    assert!(!message.contains("MIIBpublicCA0"), "withheld: {message}");
    assert!(message.contains("withheld"), "{message}");
    let events = events_in(&world, &[guarded, &world.prefix, "default"]).await;
    let quoted = events.iter().any(|e| e.contains("MIIBpublicCA0"));
    assert!(!quoted, "an Event quotes the published content");
    let log = world.controller().log_text();
    assert!(
        !log.contains("MIIBpublicCA0"),
        "the log quotes the published content"
    );

    let _ = bindings.delete(&name, &DeleteParams::default()).await;
    let _ = policies.delete(&name, &DeleteParams::default()).await;
    clean_up_published(world, &["quoted"]).await;
}
