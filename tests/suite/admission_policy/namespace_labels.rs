//! `admissionPolicy.guardedNamespaceLabels`: whoever may create or label a
//! Namespace steers every ClusterMirror selecting by its labels into it, so
//! the listed label keys may be set, changed or removed only by holders of
//! the permission the chart's `<release>-namespace-labels` ClusterRole
//! grants. Other labels stay free.

use super::*;

/// The install's guarded keys: a plain one and one with a prefix.
pub(super) const GUARDED: [&str; 2] = ["env", "example.com/tier"];
/// May create, update and patch Namespaces, and nothing more.
const MAKER: &str = "namespace-maker";
/// May too, and holds the chart's ClusterRole for the guarded labels.
const STEWARD: &str = "namespace-steward";

/// The RBAC of the two users: both may write Namespaces; the steward is
/// bound to the chart's role for the guarded labels too.
fn users() -> String {
    format!(
        r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {{name: vap-namespace-writer}}
rules:
  - {{apiGroups: [""], resources: [namespaces], verbs: [get, create, update, patch]}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {{name: vap-namespace-writers}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: vap-namespace-writer}}
subjects:
  - {{apiGroup: rbac.authorization.k8s.io, kind: User, name: {MAKER}}}
  - {{apiGroup: rbac.authorization.k8s.io, kind: User, name: {STEWARD}}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {{name: vap-namespace-stewards}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: {RELEASE}-namespace-labels}}
subjects:
  - {{apiGroup: rbac.authorization.k8s.io, kind: User, name: {STEWARD}}}
"#
    )
}

/// Namespaces as `user`, impersonated.
fn as_user(user: &str) -> Api<Namespace> {
    let mut config = control_plane().kube_config();
    config.auth_info.impersonate = Some(user.to_owned());
    Api::all(Client::try_from(config).expect("a client"))
}

fn namespace(name: &str, labels: &[(&str, &str)]) -> Namespace {
    Namespace {
        metadata: kube::api::ObjectMeta {
            name: Some(name.into()),
            labels: Some(
                labels
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                    .collect(),
            ),
            ..Default::default()
        },
        ..Namespace::default()
    }
}

/// The policy's refusal of a guarded label by `user` for `what`: 403,
/// naming the label, the permission and the role that grants it.
fn refused_label(result: Result<Namespace, kube::Error>, label: &str, user: &str, what: &str) {
    let message = match result {
        Err(kube::Error::Api(status)) if status.code == 403 => status.message,
        Err(other) => panic!("{what}: not refused by the policy but with {other}"),
        Ok(_) => panic!("{what}: admitted"),
    };
    let expected = [
        format!("setting, changing or removing the label {label} of a Namespace"),
        "the right to update namespacelabels named as the label in mirror.workshop.io".into(),
        format!("the ClusterRole {RELEASE}-namespace-labels grants it"),
        format!("{user} lacks it"),
    ];
    for part in expected {
        assert!(message.contains(&part), "{what}: {message}");
    }
}

async fn relabel(
    api: &Api<Namespace>,
    name: &str,
    key: &str,
    value: Option<&str>,
) -> Result<Namespace, kube::Error> {
    let patch = json!({"metadata": {"labels": {key: value}}});
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
}

#[tokio::test]
async fn only_holders_of_the_permission_set_change_or_remove_guarded_namespace_labels() {
    let world = world::<ConfigMap>("vap-nslabels").await;
    run_ok(
        control_plane().kubectl().args(["apply", "-f", "-"]),
        Some(&users()),
    );
    let (maker, steward, admin) = (
        as_user(MAKER),
        as_user(STEWARD),
        Api::<Namespace>::all(world.scene.client.clone()),
    );
    let create = PostParams::default();
    let names: Vec<String> = ["made", "stewarded", "plain"]
        .iter()
        .map(|suffix| format!("{}-{suffix}", world.scene.namespace))
        .collect();
    let [made, stewarded, plain] = [&names[0], &names[1], &names[2]];

    // Who may only create namespaces cannot create one into a selection.
    let dry_run = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    wait_for("the namespace-label policy to refuse", PATIENCE, || async {
        let refused = maker
            .create(&dry_run, &namespace(made, &[("env", "prod")]))
            .await;
        matches!(refused, Err(kube::Error::Api(status)) if status.code == 403).then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{e:#}"));
    for (key, value) in [("env", "prod"), ("example.com/tier", "gold")] {
        refused_label(
            maker
                .create(&create, &namespace(made, &[(key, value)]))
                .await,
            key,
            MAKER,
            &format!("creating a namespace labelled {key}"),
        );
    }
    // Other labels are free: the namespace is made, and may be relabelled.
    maker
        .create(&create, &namespace(made, &[("team", "a")]))
        .await
        .expect("a namespace with other labels");
    relabel(&maker, made, "team", Some("b"))
        .await
        .expect("another label changed");
    refused_label(
        relabel(&maker, made, "env", Some("prod")).await,
        "env",
        MAKER,
        "adding env",
    );

    // Set by one who may, the label can be neither changed nor removed by
    // the maker; the rest of the namespace still can.
    relabel(&admin, made, "env", Some("prod"))
        .await
        .expect("the admin sets env");
    refused_label(
        relabel(&maker, made, "env", Some("staging")).await,
        "env",
        MAKER,
        "changing env",
    );
    refused_label(
        relabel(&maker, made, "env", None).await,
        "env",
        MAKER,
        "removing env",
    );
    relabel(&maker, made, "team", None)
        .await
        .expect("another label removed");
    let labels = admin
        .get(made)
        .await
        .expect("the namespace")
        .labels()
        .clone();
    assert_eq!(
        labels.get("env").map(String::as_str),
        Some("prod"),
        "{labels:?}"
    );

    // The holder of the permission does all of it, for both keys.
    steward
        .create(
            &create,
            &namespace(stewarded, &[("env", "prod"), ("example.com/tier", "gold")]),
        )
        .await
        .expect("the steward creates a namespace labelled env and example.com/tier");
    relabel(&steward, stewarded, "env", Some("staging"))
        .await
        .expect("the steward changes env");
    relabel(&steward, stewarded, "example.com/tier", None)
        .await
        .expect("the steward removes a label");
    relabel(&steward, made, "env", None)
        .await
        .expect("the steward removes env");
    // And nobody needs it for a namespace without the guarded labels.
    maker
        .create(&create, &namespace(plain, &[]))
        .await
        .expect("a namespace without labels");

    for name in &names {
        admin
            .delete(name, &DeleteParams::default())
            .await
            .unwrap_or_else(|e| panic!("delete namespace {name}: {e}"));
    }
    run_ok(
        control_plane().kubectl().args(["delete", "-f", "-"]),
        Some(&users()),
    );
    world.finish().await;
}
