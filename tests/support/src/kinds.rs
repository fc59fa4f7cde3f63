//! The mirrored kinds as the tests use them: one generic test body runs for
//! ConfigMaps and for Secrets through [`TestKind`] and [`Objects`].

use std::collections::BTreeMap;

use configmap_mirror::{
    contract::{self, CHECKSUM_ANNOTATION, MANAGED_BY_LABEL, MANAGER_NAME},
    kind::{MirroredKind, secret::SecretDigestKey},
};
use k8s_openapi::{
    ByteString,
    api::core::v1::{ConfigMap, Secret},
    apimachinery::pkg::apis::meta::v1::ObjectMeta,
};
use kube::{
    Api, ResourceExt,
    api::{Patch, PatchParams, PostParams},
};
use serde_json::{Value, json};
use testenv::wait_for;

use crate::{ControllerProcess, PATIENCE, SOURCE_LABEL, Scene};

/// What a test needs to know of a mirrored kind.
pub trait TestKind: MirroredKind {
    /// The controller's flags that turn the kind on.
    const ARGS: &'static [&'static str];

    /// The namespace label that consents to mirrors of the kind (the
    /// default `--accept-mirrors-selector` or
    /// `--accept-secret-mirrors-selector`).
    const CONSENT_LABEL: &'static str;

    /// An object with string data, labeled as a source or not.
    fn with_data(name: &str, data: &[(&str, &str)], labeled: bool) -> Self;

    /// A merge patch setting (or, with None, removing) data entries.
    fn data_patch(entries: &[(&str, Option<&str>)]) -> Value;

    /// One data entry as a string.
    fn value(&self, key: &str) -> Option<String>;

    /// Whether two objects hold the same content.
    fn same_content(&self, other: &Self) -> bool;

    /// The digest key of the controller watching `scene`'s namespace.
    fn digest_key(objects: &Objects<'_, Self>) -> impl Future<Output = Self::DigestKey>;
}

impl TestKind for ConfigMap {
    const ARGS: &'static [&'static str] = &[];
    const CONSENT_LABEL: &'static str = "workshop.io/accept-mirrors";

    fn with_data(name: &str, data: &[(&str, &str)], labeled: bool) -> Self {
        let mut cm = crate::mk_source(name, data);
        if !labeled {
            cm.metadata.labels = None;
        }
        cm
    }

    fn data_patch(entries: &[(&str, Option<&str>)]) -> Value {
        let data: serde_json::Map<String, Value> = entries
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.map_or(Value::Null, |v| json!(v))))
            .collect();
        json!({ "data": data })
    }

    fn value(&self, key: &str) -> Option<String> {
        self.data.as_ref()?.get(key).cloned()
    }

    fn same_content(&self, other: &Self) -> bool {
        self.data.clone().unwrap_or_default() == other.data.clone().unwrap_or_default()
            && self.binary_data.clone().unwrap_or_default()
                == other.binary_data.clone().unwrap_or_default()
            && self.immutable.unwrap_or(false) == other.immutable.unwrap_or(false)
    }

    async fn digest_key(_: &Objects<'_, Self>) {}
}

/// Where a namespaced controller keeps its key: its own namespace.
pub const KEY_SECRET: &str = "configmap-mirror-digest-key";

impl TestKind for Secret {
    const ARGS: &'static [&'static str] = &["--kinds=configmaps,secrets"];
    const CONSENT_LABEL: &'static str = "workshop.io/accept-secret-mirrors";

    fn with_data(name: &str, data: &[(&str, &str)], labeled: bool) -> Self {
        Secret {
            metadata: ObjectMeta {
                name: Some(name.into()),
                labels: labeled.then(|| BTreeMap::from([(SOURCE_LABEL.into(), "true".into())])),
                ..ObjectMeta::default()
            },
            type_: Some("Opaque".into()),
            data: Some(
                data.iter()
                    .map(|(k, v)| ((*k).to_owned(), ByteString(v.as_bytes().to_vec())))
                    .collect(),
            ),
            ..Secret::default()
        }
    }

    fn data_patch(entries: &[(&str, Option<&str>)]) -> Value {
        let data: serde_json::Map<String, Value> = entries
            .iter()
            .map(|(k, v)| {
                let value = v.map_or(Value::Null, |v| {
                    serde_json::to_value(ByteString(v.as_bytes().to_vec())).expect("base64")
                });
                ((*k).to_owned(), value)
            })
            .collect();
        json!({ "data": data })
    }

    fn value(&self, key: &str) -> Option<String> {
        let bytes = self.data.as_ref()?.get(key)?;
        Some(String::from_utf8_lossy(&bytes.0).into_owned())
    }

    fn same_content(&self, other: &Self) -> bool {
        self.data.clone().unwrap_or_default() == other.data.clone().unwrap_or_default()
            && self.type_ == other.type_
            && self.immutable.unwrap_or(false) == other.immutable.unwrap_or(false)
    }

    async fn digest_key(objects: &Objects<'_, Self>) -> SecretDigestKey {
        let secret = wait_for("the digest key", PATIENCE, || async {
            objects.api.get_opt(KEY_SECRET).await.ok()?
        })
        .await
        .unwrap_or_else(|e| panic!("{e:#}"));
        let bytes = secret.data.and_then(|d| d.get("key").cloned());
        SecretDigestKey::from_bytes(&bytes.expect("a key entry").0).expect("a 32-byte key")
    }
}

/// `object` with `extra` merged into its JSON (metadata, type, ...): maps
/// are merged key by key, anything else is replaced.
pub fn with_json<K: TestKind>(object: K, extra: Value) -> K {
    let mut json = serde_json::to_value(object).expect("an object as JSON");
    merge(&mut json, extra);
    serde_json::from_value(json).expect("an object from JSON")
}

fn merge(into: &mut Value, from: Value) {
    match (into, from) {
        (Value::Object(into), Value::Object(from)) => {
            for (key, value) in from {
                merge(into.entry(key).or_insert(Value::Null), value);
            }
        }
        (into, from) => *into = from,
    }
}

/// The objects of kind `K` in one scene's namespace, and what tests wait
/// for about them.
pub struct Objects<'s, K> {
    pub scene: &'s Scene<'s>,
    pub api: Api<K>,
}

impl<'s, K: TestKind> Objects<'s, K> {
    pub fn of(scene: &'s Scene<'s>) -> Objects<'s, K> {
        Objects::in_namespace(scene, &scene.namespace)
    }

    /// The objects of kind `K` in `namespace`, another than the scene's.
    pub fn in_namespace(scene: &'s Scene<'s>, namespace: &str) -> Objects<'s, K> {
        Objects {
            scene,
            api: Api::namespaced(scene.client.clone(), namespace),
        }
    }

    /// The controller watching the scene's namespace, with the kind turned
    /// on.
    pub async fn start_controller(&self, extra: &[&str]) -> ControllerProcess {
        let mut args = K::ARGS.to_vec();
        args.extend_from_slice(extra);
        self.scene.start_controller_with_env(&args, &[]).await
    }

    /// The install's digest key (none for a kind without one), from where
    /// the controller keeps it.
    pub async fn digest_key(&self) -> K::DigestKey {
        K::digest_key(self).await
    }

    /// Creates a labeled source with `data` and `annotations`.
    pub async fn source(
        &self,
        name: &str,
        data: &[(&str, &str)],
        annotations: &[(&str, &str)],
    ) -> K {
        let mut source = K::with_data(name, data, true);
        if !annotations.is_empty() {
            let annotations = annotations.iter().map(|(k, v)| ((*k).into(), (*v).into()));
            source.meta_mut().annotations = Some(annotations.collect());
        }
        self.create(&source).await
    }

    /// Creates a labeled source with `data`, and waits until its companion
    /// is exact.
    pub async fn source_in_sync(&self, name: &str, data: &[(&str, &str)]) -> K {
        self.source(name, data, &[]).await;
        self.companion_in_sync(name).await
    }

    /// `object`, made immutable.
    pub fn immutable(object: K) -> K {
        let mut json = serde_json::to_value(object).expect("an object as JSON");
        json["immutable"] = json!(true);
        serde_json::from_value(json).expect("an object from JSON")
    }

    pub async fn create(&self, object: &K) -> K {
        self.api
            .create(&PostParams::default(), object)
            .await
            .unwrap_or_else(|e| panic!("create {}: {e}", object.name_any()))
    }

    pub async fn get(&self, name: &str) -> Option<K> {
        self.api.get_opt(name).await.expect("get")
    }

    pub async fn patch(&self, name: &str, patch: Value) -> K {
        self.api
            .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .unwrap_or_else(|e| panic!("patch {name}: {e}"))
    }

    pub async fn set_data(&self, name: &str, entries: &[(&str, Option<&str>)]) -> K {
        self.patch(name, K::data_patch(entries)).await
    }

    pub async fn delete(&self, name: &str) {
        self.api
            .delete(name, &Default::default())
            .await
            .unwrap_or_else(|e| panic!("delete {name}: {e}"));
    }

    pub async fn unlabel(&self, name: &str) {
        self.patch(name, json!({"metadata": {"labels": {SOURCE_LABEL: null}}}))
            .await;
    }

    /// Waits until `<source>-synced` is an exact companion of the source as
    /// it is now, and returns it.
    pub async fn companion_in_sync(&self, source_name: &str) -> K {
        let key = K::digest_key(self).await;
        let name = contract::companion_name(source_name, "-synced");
        wait_for(
            &format!("{name} to match {source_name}"),
            PATIENCE,
            || async {
                let source = self.api.get_opt(source_name).await.ok()??;
                let companion = self.api.get_opt(&name).await.ok()??;
                is_exact_companion(&companion, &source, &key).then_some(companion)
            },
        )
        .await
        .unwrap_or_else(|e| panic!("{e:#}"))
    }

    /// Waits until no object named `name` is there.
    pub async fn wait_gone(&self, name: &str) {
        let api = &self.api;
        wait_for(&format!("{name} to be deleted"), PATIENCE, || async {
            matches!(api.get_opt(name).await, Ok(None)).then_some(())
        })
        .await
        .unwrap_or_else(|e| panic!("{e:#}"));
    }
}

/// The companion has exactly the source's content, its digest, one
/// controller reference to this very source, our label, and none of the
/// source's labels.
pub fn is_exact_companion<K: TestKind>(companion: &K, source: &K, key: &K::DigestKey) -> bool {
    let owners = companion.owner_references();
    let owned = owners.len() == 1
        && owners[0].uid == source.uid().unwrap_or_default()
        && owners[0].name == source.name_any()
        && owners[0].kind == K::kind(&())
        && owners[0].controller == Some(true);
    let labels = companion.labels();
    owned
        && labels.get(MANAGED_BY_LABEL).map(String::as_str) == Some(MANAGER_NAME)
        && !labels.contains_key(SOURCE_LABEL)
        && companion.same_content(source)
        && companion.annotations().get(CHECKSUM_ANNOTATION) == Some(&source.content_digest(key))
}

/// One `#[tokio::test]` per kind for each generic test body named:
/// `<module>::configmap::<test>` and `<module>::secret::<test>`.
#[macro_export]
macro_rules! for_each_kind {
    ($($test:ident),* $(,)?) => {
        mod configmap {
            $(
                #[tokio::test]
                async fn $test() {
                    super::$test::<k8s_openapi::api::core::v1::ConfigMap>().await;
                }
            )*
        }
        mod secret {
            $(
                #[tokio::test]
                async fn $test() {
                    super::$test::<k8s_openapi::api::core::v1::Secret>().await;
                }
            )*
        }
    };
}
