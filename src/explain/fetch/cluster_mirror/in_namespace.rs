//! What explain reads of the ClusterMirrors and Mirrors for
//! `--namespace`: what each puts in the namespace (or would, or cannot),
//! and the orphans there.

use super::*;

mod mirrors;

/// What the ClusterMirrors put in `namespace` (or would, or cannot), for
/// the kinds asked; a ClusterMirror whose kind is unreadable is shown with
/// the ConfigMaps. No CRD means no ClusterMirror: nothing is said.
pub async fn in_a_namespace(
    client: &Client,
    install: &Rules,
    namespace: &NamespaceFacts,
    kinds: Kinds,
    notes: &mut Vec<String>,
) -> Vec<Row> {
    let mut rows = match cluster_mirrors(client).list(&ListParams::default()).await {
        Ok(list) => {
            cluster_mirror_rows(client, install, namespace, kinds, &list.items, notes).await
        }
        Err(kube::Error::Api(status)) if status.code == 404 => Vec::new(),
        Err(error) => {
            notes.push(format!(
                "cannot list the ClusterMirrors, so what they put here is not shown: {}",
                why(error)
            ));
            Vec::new()
        }
    };
    rows.extend(mirrors::in_a_namespace(client, install, namespace, kinds, notes).await);
    rows
}

/// What the ClusterMirrors `objects` (all there are) put in `namespace`,
/// and the orphans of those gone.
async fn cluster_mirror_rows(
    client: &Client,
    install: &Rules,
    namespace: &NamespaceFacts,
    kinds: Kinds,
    objects: &[StoredClusterMirror],
    notes: &mut Vec<String>,
) -> Vec<Row> {
    let present: BTreeSet<String> = objects
        .iter()
        .filter_map(|object| object.metadata.name.clone())
        .collect();
    let mut rows = Vec::new();
    if kinds.configmaps {
        rows.extend(orphans_in::<ConfigMap>(client, install, namespace, &present, notes).await);
    }
    if kinds.secrets {
        rows.extend(orphans_in::<Secret>(client, install, namespace, &present, notes).await);
    }
    let (ours, theirs): (Vec<_>, Vec<_>) = objects
        .iter()
        .partition(|o| o.class() == install.cluster_mirror_class);
    if !theirs.is_empty() {
        notes.push(format!(
            "{} ClusterMirror(s) of another class than this install's ({}, \
             --cluster-mirror-class) are not shown: other installs serve them",
            theirs.len(),
            class_words(&install.cluster_mirror_class)
        ));
    }
    for object in ours {
        rows.extend(request_rows(client, install, object, namespace, kinds).await);
    }
    rows
}

/// The rows of the ClusterMirror or Mirror `object` in `namespace`, when
/// its copies are of a kind asked.
async fn request_rows(
    client: &Client,
    install: &Rules,
    object: &StoredClusterMirror,
    namespace: &NamespaceFacts,
    kinds: Kinds,
) -> Vec<Row> {
    let request = Request::of(object);
    let secret = request
        .as_ref()
        .is_ok_and(|r| r.copy_kind() == SourceKind::Secret);
    match secret {
        true if kinds.secrets => {
            rows_in::<Secret>(client, install, object, request, namespace).await
        }
        false if kinds.configmaps => {
            rows_in::<ConfigMap>(client, install, object, request, namespace).await
        }
        _ => Vec::new(),
    }
}

/// The rows of ClusterMirror `object`, of kind K, in `namespace`.
async fn rows_in<K: Explained>(
    client: &Client,
    install: &Rules,
    object: &StoredClusterMirror,
    request: Result<Request, String>,
    namespace: &NamespaceFacts,
) -> Vec<Row> {
    let key = comparison_key::<K>(&request);
    let scene = scene::<K>(client, install, object, request, Some(namespace)).await;
    in_namespace(&scene, &namespace.name, install, &key)
}

/// The orphans of kind K in `namespace`: copies of ClusterMirrors that
/// are not among `present`.
async fn orphans_in<K: Explained>(
    client: &Client,
    install: &Rules,
    namespace: &NamespaceFacts,
    present: &BTreeSet<String>,
    notes: &mut Vec<String>,
) -> Vec<Row> {
    let api: Api<K> = Api::namespaced(client.clone(), &namespace.name);
    let labelled = ListParams::default().labels(CLUSTER_MIRROR_LABEL);
    match api.list_metadata(&labelled).await {
        Ok(list) => {
            let copies: Vec<_> = list.items.into_iter().map(|copy| copy.metadata).collect();
            let absent = |copy: &ObjectMeta| {
                crate::contract::cluster_mirror_of(copy).is_some_and(|name| !present.contains(name))
            };
            let crd = match copies.iter().any(absent) {
                true => super::live_crd_uid(client, RequestKind::ClusterMirror).await,
                false => None,
            };
            let crd = crd.as_ref().map(Option::as_deref);
            orphan_rows(K::NAME, &copies, install, present, crd)
        }
        Err(error) => {
            notes.push(format!(
                "cannot list the {}s of ClusterMirrors here, so orphans are not shown: {}",
                K::NAME,
                why(error)
            ));
            Vec::new()
        }
    }
}
