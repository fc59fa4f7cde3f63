//! Objects applied as YAML, the way an administrator would.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::{Api, api::PostParams};

use crate::{PATIENCE, Scene, TestKind, mk_unmanaged};

/// `kubectl apply -f -` of a manifest, failing the test if it fails.
pub fn kubectl_apply(scene: &Scene, manifest: &str) {
    use std::io::Write;
    let mut child = scene
        .control_plane
        .kubectl()
        .args(["apply", "-f", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run kubectl");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(manifest.as_bytes())
        .expect("write manifest");
    let out = child.wait_with_output().expect("kubectl apply");
    assert!(
        out.status.success(),
        "kubectl apply failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A ServiceAccount, for running the controller with a token of its own.
pub fn service_account(namespace: &str, name: &str) -> String {
    format!(
        r#"
apiVersion: v1
kind: ServiceAccount
metadata: {{name: {name}, namespace: {namespace}}}
"#
    )
}

/// A Role with these verbs on configmaps (and Events, which the controller
/// always writes), bound to ServiceAccount `account`.
pub fn role_for(namespace: &str, account: &str, role: &str, configmap_verbs: &[&str]) -> String {
    bound_role(
        namespace,
        account,
        role,
        &[&configmaps_rule(configmap_verbs), EVENTS_RULE],
    )
}

/// What a leader-electing replica needs in its namespace: ConfigMaps,
/// Events, the Lease; a Role named `account`, bound to that ServiceAccount.
pub fn replica_role(namespace: &str, account: &str) -> String {
    let verbs = ["get", "list", "watch", "create", "update", "delete"];
    bound_role(
        namespace,
        account,
        account,
        &[&configmaps_rule(&verbs), EVENTS_RULE, LEASES_RULE],
    )
}

/// The Secret verbs the controller calls once `--kinds` names Secrets, in
/// a Role named `role`, bound to ServiceAccount `account`.
pub fn secrets_role(namespace: &str, account: &str, role: &str) -> String {
    let verbs = ["get", "list", "watch", "create", "update", "delete"];
    let rule = configmaps_rule(&verbs).replace("configmaps", "secrets");
    bound_role(namespace, account, role, &[&rule])
}

const EVENTS_RULE: &str =
    r#"{apiGroups: ["events.k8s.io"], resources: ["events"], verbs: ["create", "patch"]}"#;
const LEASES_RULE: &str = r#"{apiGroups: ["coordination.k8s.io"], resources: ["leases"], verbs: ["get", "create", "update"]}"#;

fn configmaps_rule(verbs: &[&str]) -> String {
    let verbs = verbs
        .iter()
        .map(|v| format!("{v:?}"))
        .collect::<Vec<_>>()
        .join(", ");
    format!(r#"{{apiGroups: [""], resources: ["configmaps"], verbs: [{verbs}]}}"#)
}

fn bound_role(namespace: &str, account: &str, role: &str, rules: &[&str]) -> String {
    let rules: String = rules.iter().map(|rule| format!("- {rule}\n")).collect();
    format!(
        r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {{name: {role}, namespace: {namespace}}}
rules:
{rules}---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {{name: {role}, namespace: {namespace}}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: Role, name: {role}}}
subjects: [{{kind: ServiceAccount, name: {account}, namespace: {namespace}}}]
"#
    )
}

/// An admission policy named `name`, and its binding of the same name,
/// bound in `namespace` only: it refuses a create or update of `resources`
/// (`configmaps`, `secrets`) whenever the CEL `allowed` is false, saying
/// `message`, a CEL message expression written as a YAML scalar.
pub fn refusing_policy(
    name: &str,
    namespace: &str,
    resources: &str,
    allowed: &str,
    message: &str,
) -> String {
    format!(
        r#"
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {{name: {name}}}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - {{apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE", "UPDATE"], resources: ["{resources}"]}}
  validations:
  - expression: "{allowed}"
    messageExpression: {message}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {{name: {name}}}
spec:
  policyName: {name}
  validationActions: [Deny]
  matchResources:
    namespaceSelector:
      matchLabels: {{kubernetes.io/metadata.name: {namespace}}}
"#
    )
}

/// A [`refusing_policy`] of any ConfigMap named `configmap` in `namespace`,
/// with the message "refused by policy <name>".
pub fn refusing_configmap(name: &str, namespace: &str, configmap: &str) -> String {
    refusing_policy(
        name,
        namespace,
        "configmaps",
        &format!("object.metadata.name != '{configmap}'"),
        &format!("\"'refused by policy {name}'\""),
    )
}

/// Admission policies take effect a moment after they are written: waits
/// until a dry-run create of `configmap` through `configmaps` is refused.
pub async fn policy_enforced(configmaps: &Api<ConfigMap>, configmap: &str) {
    refusal_enforced(configmaps, &mk_unmanaged(configmap, &[])).await;
}

/// Waits until a dry-run create of `probe` through `api` is refused.
pub async fn refusal_enforced<K: TestKind>(api: &Api<K>, probe: &K) {
    let dry_run = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    testenv::wait_for("the admission policy to be enforced", PATIENCE, || async {
        api.create(&dry_run, probe).await.is_err().then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{e:#}"));
}

/// Removes policy `name` of [`refusing_policy`] and its binding.
pub fn delete_policy(scene: &Scene<'_>, name: &str) {
    kubectl_delete(
        scene,
        "validatingadmissionpolicybinding,validatingadmissionpolicy",
        name,
    );
}

/// `kubectl delete <kinds> <name>`, which must succeed.
pub fn kubectl_delete(scene: &Scene<'_>, kinds: &str, name: &str) {
    let out = scene
        .control_plane
        .kubectl()
        .args(["delete", kinds, name])
        .output()
        .expect("kubectl delete");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
