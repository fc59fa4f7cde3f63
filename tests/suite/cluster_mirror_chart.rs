//! The chart's ClusterMirror and Mirror parts: the CRD installs from
//! `templates/` (behind `crds.enabled`, kept on uninstall with
//! `crds.keep`), the editor and viewer roles, and the admission policies by
//! which the API server refuses a ClusterMirror of a Secret, or a Mirror of
//! any source, to whoever may not `get` that source, asked of its own
//! authorizer (users impersonated).
//!
//! The CRD and the policy are cluster-wide: these run on a control plane
//! of their own, with one release installed by helm.

use configmap_mirror::api::{ClusterMirror, mirror::Mirror};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::{
    Api, Client, CustomResourceExt,
    api::{ApiResource, DynamicObject, Patch, PatchParams, PostParams},
};
use serde_json::json;
use testenv::{ControlPlane, LazyControlPlane, wait_for};
use tokio::sync::OnceCell;

use crate::{
    cluster_mirror_api::wait_established,
    common::{PATIENCE, helm_on, run_ok},
};

const CHART: &str = "charts/configmap-mirror";
/// It holds the chart's name: the objects are named exactly this.
const RELEASE: &str = "configmap-mirror-cmir";
/// Bound to the editor role, and may get the Secret `SOURCE`.
const LEAD: &str = "platform-lead";
/// Bound to the editor role, and may get no Secret.
const JUNIOR: &str = "platform-junior";
const SOURCE: &str = "corp-ca";
/// The release's `controller.neverCarry`.
const NEVER_CARRY: &str = "example.com/team";

fn control_plane() -> &'static ControlPlane {
    static CHART_CRD_PLANE: LazyControlPlane = LazyControlPlane::new();
    CHART_CRD_PLANE.get()
}

/// The release's namespace, once the chart is installed with its admission
/// policy, its CRD established, and the two users bound to its editor role
/// (the lead also to a Role getting the one Secret).
async fn installed() -> &'static str {
    static NAMESPACE: OnceCell<String> = OnceCell::const_new();
    NAMESPACE
        .get_or_init(|| async {
            let plane = control_plane();
            let admin = plane.client().await;
            let namespace = testenv::fresh_namespace(&admin, "cmir-chart")
                .await
                .expect("namespace");
            run_ok(
                &mut helm_on(
                    plane,
                    &[
                        "install",
                        RELEASE,
                        CHART,
                        "--namespace",
                        &namespace,
                        "--set",
                        "admissionPolicy.enabled=true",
                        "--set",
                        &format!("controller.neverCarry={{{NEVER_CARRY}}}"),
                    ],
                ),
                None,
            );
            wait_established(&admin).await;
            let bindings = format!(
                r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {{name: cmir-editors}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: {RELEASE}-clustermirror-editor}}
subjects:
  - {{apiGroup: rbac.authorization.k8s.io, kind: User, name: {LEAD}}}
  - {{apiGroup: rbac.authorization.k8s.io, kind: User, name: {JUNIOR}}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {{name: mir-editors, namespace: {namespace}}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: {RELEASE}-mirror-editor}}
subjects:
  - {{apiGroup: rbac.authorization.k8s.io, kind: User, name: {LEAD}}}
  - {{apiGroup: rbac.authorization.k8s.io, kind: User, name: {JUNIOR}}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {{name: get-corp-ca, namespace: {namespace}}}
rules:
  - {{apiGroups: [""], resources: [secrets], resourceNames: [{SOURCE}], verbs: [get]}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {{name: get-corp-ca, namespace: {namespace}}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: Role, name: get-corp-ca}}
subjects:
  - {{apiGroup: rbac.authorization.k8s.io, kind: User, name: {LEAD}}}
"#
            );
            run_ok(
                plane.kubectl().args(["apply", "-f", "-"]),
                Some(&bindings),
            );
            namespace
        })
        .await
}

/// The Mirrors of `namespace` as `user`, impersonated, once the Mirror CRD
/// serves.
async fn mirrors_as(user: &str, namespace: &str) -> Api<DynamicObject> {
    let mut config = control_plane().kube_config();
    config.auth_info.impersonate = Some(user.to_owned());
    let client = Client::try_from(config).expect("a client");
    let resource = ApiResource::erase::<Mirror>(&());
    let api = Api::namespaced_with(client, namespace, &resource);
    wait_for("the Mirror CRD to serve", PATIENCE, || async {
        api.list(&Default::default()).await.ok().map(drop)
    })
    .await
    .expect("the Mirror CRD serves");
    api
}

/// A Mirror `name` of the `kind` called `SOURCE` in its namespace.
fn tenant_mirror(name: &str, kind: &str) -> DynamicObject {
    let resource = ApiResource::erase::<Mirror>(&());
    let mut object = DynamicObject::new(name, &resource);
    object.data = json!({"spec": {
        "source": {"kind": kind, "name": SOURCE},
        "target": {"namespaces": ["elsewhere"]},
    }});
    object
}

/// A Mirror of any source is refused to whoever may not `get` that source,
/// and its message names the permission missing; whoever may, may.
#[tokio::test]
async fn a_mirror_is_refused_to_whoever_may_not_get_its_source() {
    let namespace = installed().await;
    let junior = mirrors_as(JUNIOR, namespace).await;
    let create = |api: Api<DynamicObject>, object: DynamicObject| async move {
        match api.create(&PostParams::default(), &object).await {
            Ok(_) => None,
            Err(kube::Error::Api(status)) if status.code == 403 => Some(status.message),
            Err(error) => panic!("refused for another cause: {error}"),
        }
    };
    let secret = tenant_mirror("junior-secret", "Secret");
    let message = wait_for("the Mirror policy to refuse the junior", PATIENCE, || {
        create(junior.clone(), secret.clone())
    })
    .await
    .expect("the policy refuses");
    assert!(
        message.contains(&format!("the Secret {namespace}/{SOURCE}"))
            && message.contains("get on secrets")
            && message.contains(JUNIOR),
        "{message}"
    );
    let configmap = tenant_mirror("junior-configmap", "ConfigMap");
    let message = create(junior.clone(), configmap).await.expect("refused");
    assert!(message.contains("get on configmaps"), "{message}");
    let lead = mirrors_as(LEAD, namespace).await;
    assert_eq!(
        create(lead, tenant_mirror("lead-secret", "Secret")).await,
        None,
        "who may get the Secret may mirror it"
    );
}

/// The ClusterMirror API as `user`, impersonated.
fn as_user(user: &str) -> Api<ClusterMirror> {
    let mut config = control_plane().kube_config();
    config.auth_info.impersonate = Some(user.to_owned());
    Api::all(Client::try_from(config).expect("a client"))
}

fn mirror_of(name: &str, kind: &str, namespace: &str) -> ClusterMirror {
    // Spelled out: the manifest a user writes, the contract pinned.
    serde_json::from_value(json!({
        "apiVersion": "mirror.workshop.io/v1alpha1",
        "kind": "ClusterMirror",
        "metadata": {"name": name},
        "spec": {
            "source": {"kind": kind, "namespace": namespace, "name": SOURCE},
            "target": {"namespaceSelector": {"matchLabels": {"env": "prod"}}},
        },
    }))
    .expect("a ClusterMirror")
}

/// The policy's refusal, as its message, or None if the API server took it.
async fn refused(
    api: &Api<ClusterMirror>,
    object: &ClusterMirror,
    dry_run: bool,
) -> Option<String> {
    let params = PostParams {
        dry_run,
        ..PostParams::default()
    };
    match api.create(&params, object).await {
        Ok(_) => None,
        Err(kube::Error::Api(status)) if status.code == 403 => Some(status.message),
        Err(error) => panic!("refused for another cause: {error}"),
    }
}

#[tokio::test]
async fn the_crd_installs_from_the_chart_owned_by_the_release_and_marked_to_be_kept() {
    installed().await;
    let admin = control_plane().client().await;
    let crd = Api::<CustomResourceDefinition>::all(admin)
        .get(ClusterMirror::crd_name())
        .await
        .expect("the CRD");
    let annotations = crd.metadata.annotations.unwrap_or_default();
    assert_eq!(
        annotations
            .get("helm.sh/resource-policy")
            .map(String::as_str),
        Some("keep")
    );
    assert_eq!(
        annotations
            .get("meta.helm.sh/release-name")
            .map(String::as_str),
        Some(RELEASE),
        "owned by the release, so that an upgrade updates it"
    );
    let listed = run_ok(control_plane().kubectl().args(["get", "cmir"]), None);
    assert!(!listed.contains("error"), "{listed}");
}

#[tokio::test]
async fn a_mirror_of_a_secret_is_refused_to_whoever_may_not_get_that_secret() {
    let namespace = installed().await;
    let junior = as_user(JUNIOR);
    let secret_mirror = mirror_of("junior-corp-ca", "Secret", namespace);
    // The policy is in force once it refuses: it is read by the API
    // server a moment after its creation.
    let message = wait_for("the policy to refuse the junior", PATIENCE, || {
        let junior = junior.clone();
        let secret_mirror = secret_mirror.clone();
        async move { refused(&junior, &secret_mirror, true).await }
    })
    .await
    .expect("the policy refuses");
    assert!(
        message.contains(&format!("the Secret {namespace}/{SOURCE}")) && message.contains(JUNIOR),
        "{message}"
    );
    assert_eq!(
        refused(&junior, &secret_mirror, false).await.as_deref(),
        Some(message.as_str())
    );

    // A ConfigMap of the same name is not asked about.
    let configmap_mirror = mirror_of("junior-colors", "ConfigMap", namespace);
    assert_eq!(refused(&junior, &configmap_mirror, false).await, None);

    // Who may get the Secret may mirror it; who may not, may not edit
    // that mirror either.
    let lead = as_user(LEAD);
    let lead_mirror = mirror_of("lead-corp-ca", "Secret", namespace);
    assert_eq!(refused(&lead, &lead_mirror, false).await, None);
    let edit = junior
        .patch(
            "lead-corp-ca",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"target": {"labels": {"team": "platform"}}}})),
        )
        .await;
    match edit {
        Err(kube::Error::Api(status)) if status.code == 403 => {
            assert!(status.message.contains(JUNIOR), "{}", status.message)
        }
        other => panic!("the junior edited the lead's mirror: {other:?}"),
    }
    // Nor point a ConfigMap's mirror at the Secret.
    let retarget = junior
        .patch(
            "junior-colors",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"source": {"kind": "Secret"}}})),
        )
        .await;
    assert!(
        matches!(retarget, Err(kube::Error::Api(ref status)) if status.code == 403),
        "{retarget:?}"
    );
}

/// The controller reads `className: null` as the empty class and serves it:
/// the policy of the release without a class must guard it too.
#[tokio::test]
async fn a_mirror_of_a_secret_with_a_null_class_is_refused_as_one_without_a_class() {
    let namespace = installed().await;
    let junior = as_user(JUNIOR);
    let plain = mirror_of("junior-plain-corp-ca", "Secret", namespace);
    wait_for("the policy to refuse the junior", PATIENCE, || {
        let (junior, plain) = (junior.clone(), plain.clone());
        async move { refused(&junior, &plain, true).await }
    })
    .await
    .expect("the policy refuses");

    let mut config = control_plane().kube_config();
    config.auth_info.impersonate = Some(JUNIOR.to_owned());
    let resource = ApiResource::erase::<ClusterMirror>(&());
    let raw =
        Api::<DynamicObject>::all_with(Client::try_from(config).expect("a client"), &resource);
    let mut null_class =
        serde_json::to_value(mirror_of("junior-null-corp-ca", "Secret", namespace)).expect("JSON");
    null_class["spec"]["className"] = serde_json::Value::Null;
    let null_class: DynamicObject = serde_json::from_value(null_class).expect("an object");
    match raw.create(&PostParams::default(), &null_class).await {
        Err(kube::Error::Api(status)) if status.code == 403 => assert!(
            status
                .message
                .contains(&format!("the Secret {namespace}/{SOURCE}"))
                && status.message.contains(JUNIOR),
            "{}",
            status.message
        ),
        other => panic!(
            "a ClusterMirror with className: null of a Secret the junior may not get: {other:?}"
        ),
    }
}

/// The CRD's rules know only the built-in never-carried keys: the policy
/// refuses those `controller.neverCarry` adds.
#[tokio::test]
async fn a_mirror_setting_a_key_never_carry_adds_is_refused() {
    let namespace = installed().await;
    let admin: Api<ClusterMirror> = Api::all(control_plane().client().await);
    let mut mirror = mirror_of("team-colors", "ConfigMap", namespace);
    mirror.spec.target.labels = [(NEVER_CARRY.to_owned(), "platform".to_owned())].into();
    let message = wait_for("the policy to refuse the key", PATIENCE, || {
        let (admin, mirror) = (admin.clone(), mirror.clone());
        async move {
            let dry_run = PostParams {
                dry_run: true,
                ..PostParams::default()
            };
            match admin.create(&dry_run, &mirror).await {
                Err(kube::Error::Api(status)) if status.code == 422 => Some(status.message),
                _ => None,
            }
        }
    })
    .await
    .expect("the policy refuses");
    assert!(
        message.contains(NEVER_CARRY) && message.contains("controller.neverCarry"),
        "{message}"
    );
    mirror.spec.target.labels = [("example.com/tier".to_owned(), "1".to_owned())].into();
    mirror.spec.target.annotations = [(NEVER_CARRY.to_owned(), "platform".to_owned())].into();
    match admin.create(&PostParams::default(), &mirror).await {
        Err(kube::Error::Api(status)) if status.code == 422 => {
            assert!(status.message.contains(NEVER_CARRY), "{}", status.message)
        }
        other => panic!("an annotation {NEVER_CARRY} was let through: {other:?}"),
    }
    mirror.spec.target.annotations = Default::default();
    admin
        .create(&PostParams::default(), &mirror)
        .await
        .expect("a ClusterMirror setting keys of no tool");
    // Another release's class is that release's policy's to guard.
    let mut theirs = mirror_of("their-colors", "ConfigMap", namespace);
    theirs.spec.class_name = Some("platform".into());
    theirs.spec.target.labels = [(NEVER_CARRY.to_owned(), "platform".to_owned())].into();
    admin
        .create(&PostParams::default(), &theirs)
        .await
        .expect("a ClusterMirror of another class, this release's key not refused");
}

mod render;
