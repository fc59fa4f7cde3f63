//! What explain reads of a ClusterMirror or a Mirror: the object, its
//! source, the namespaces (with their MirrorGrants, for a Mirror), the
//! objects at its copies' name and those carrying its label; for
//! `--namespace`, the same within that namespace, for every ClusterMirror.

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

mod copy;
mod in_namespace;

pub use copy::copy_of;
pub use in_namespace::in_a_namespace;

use super::*;
use crate::kind::ChecksumKey;
use crate::{
    api::{ClusterMirrorStatus, SourceKind, StoredClusterMirror, mirror::stored::StoredMirror},
    contract::CLUSTER_MIRROR_LABEL,
    decisions::cluster_mirror::Request,
    decisions::grants::NamespaceGrants,
    decisions::request_key::{RequestKey, RequestKind},
    explain::render::Classes,
    explain::verdicts::{
        ClusterMirrorScene, class_words, explain_cluster_mirror, in_namespace, orphan_row,
        orphan_rows,
    },
};

/// The ClusterMirrors, read leniently (see `StoredClusterMirror`): one
/// whose spec this version cannot read is still explained.
fn cluster_mirrors(client: &Client) -> Api<StoredClusterMirror> {
    Api::all(client.clone())
}

/// The uid of the CRD of `kind` live (None: none, or being deleted), as
/// read now; None when it cannot be read (the user may not `get` CRDs):
/// orphans are then explained either way.
pub(super) async fn live_crd_uid(client: &Client, kind: RequestKind) -> Option<Option<String>> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd = crds.get_metadata_opt(kind.crd_name()).await.ok()?;
    Some(
        crd.filter(|crd| crd.metadata.deletion_timestamp.is_none())
            .and_then(|crd| crd.metadata.uid),
    )
}

/// The ClusterMirror or Mirror `key`, as read; None when there is none.
async fn get_request(
    client: &Client,
    key: &RequestKey,
) -> kube::Result<Option<StoredClusterMirror>> {
    match &key.namespace {
        None => cluster_mirrors(client).get_opt(&key.name).await,
        Some(namespace) => {
            let mirrors: Api<StoredMirror> = Api::namespaced(client.clone(), namespace);
            Ok(mirrors.get_opt(&key.name).await?.map(|mirror| mirror.0))
        }
    }
}

/// Reads the ClusterMirror or Mirror `key`; when it cannot, the row that
/// says why.
async fn read_request(client: &Client, key: &RequestKey) -> Result<StoredClusterMirror, Row> {
    let unread = |verdict, detail| Row {
        what: What::of_request(key),
        kind: "",
        namespace: key.namespace.clone().unwrap_or_default(),
        name: key.name.clone(),
        source: None,
        request: Some(key.clone()),
        verdict,
        detail,
    };
    let said = key.said();
    match get_request(client, key).await {
        Ok(Some(object)) => Ok(object),
        Ok(None) => Err(unread(Verdict::NotFound, format!("there is no {said}"))),
        // No CRD: the API server knows no such resource, and answers 404
        // without a Status (so without the reason NotFound).
        Err(kube::Error::Api(status)) if status.code == 404 => Err(unread(
            Verdict::NotFound,
            format!(
                "there is no {said}: the {} CRD is not installed",
                key.kind().name()
            ),
        )),
        Err(error) => Err(unread(
            Verdict::CannotRead,
            format!("cannot read it: {}", why(error)),
        )),
    }
}

/// Explains the ClusterMirror or Mirror `key`.
pub async fn request(client: &Client, install: &Rules, key: &RequestKey) -> Report {
    let mut report = Report::about(Subject {
        kind: key.kind().name().into(),
        namespace: key.namespace.clone(),
        name: key.name.clone(),
        is: Is::Unknown,
    });
    let object = match read_request(client, key).await {
        Ok(object) => object,
        Err(row) => {
            report.rows.push(row);
            return report;
        }
    };
    report.subject.is = match key.is_mirror() {
        false => Is::ClusterMirror,
        true => Is::Mirror,
    };
    let request = Request::of(&object);
    let answer = match request.as_ref().map(Request::copy_kind) {
        Ok(SourceKind::Secret) => {
            let key = comparison_key::<Secret>(&request);
            let scene = scene::<Secret>(client, install, &object, request, None).await;
            explain_cluster_mirror(&scene, install, &key, Timestamp::now())
        }
        _ => {
            let key = comparison_key::<ConfigMap>(&request);
            let scene = scene::<ConfigMap>(client, install, &object, request, None).await;
            explain_cluster_mirror(&scene, install, &key, Timestamp::now())
        }
    };
    report.notes.extend(status_differs(
        answer.status.as_ref(),
        object.stored_status(),
    ));
    if install.cluster_mirror_sources.is_empty() && !key.is_mirror() {
        report.notes.push(
            "no namespace is allowed as a ClusterMirror source: give the install's --cluster-mirror-source-namespaces (its default is the namespace it runs in, --install-namespaces)".into(),
        );
    }
    report.rows.push(answer.own);
    report.rows.extend(answer.namespaces);
    report.status = answer.status;
    report.classes = Some(Classes {
        read_as: install.cluster_mirror_class.clone(),
        class_name: object.class().to_owned(),
    });
    // Events about a cluster-scoped object are recorded in `default`.
    report.warnings = warnings(
        client,
        key.namespace.as_deref().unwrap_or("default"),
        &format!(
            "involvedObject.kind={},involvedObject.name={},type=Warning",
            key.kind().name(),
            key.name
        ),
        &mut report.notes,
    )
    .await;
    report
}

/// The key explain compares a ClusterMirror's copies of kind `K` under:
/// the kind's, or for a Secret's keys published as ConfigMaps, a Secret
/// content's.
fn comparison_key<K: Explained>(request: &Result<Request, String>) -> Box<dyn ChecksumKey<K>> {
    match request.as_ref().is_ok_and(Request::publishes_secret) {
        true => K::secret_content_key(),
        false => Box::new(K::comparison_key()),
    }
}

/// A note when the status a ClusterMirror holds and the one computed from
/// the cluster as read now differ in their Ready condition.
fn status_differs(
    computed: Option<&ClusterMirrorStatus>,
    stored: Option<&ClusterMirrorStatus>,
) -> Option<String> {
    let ready = |status: &ClusterMirrorStatus| {
        let ready = status.conditions.iter().find(|c| c.type_ == "Ready");
        ready.map(|c| format!("Ready={} ({})", c.status, c.reason))
    };
    let (computed, stored) = (computed?, stored?);
    (ready(computed) != ready(stored)).then(|| {
        format!(
            "the status it holds says {}, the cluster as read now {}: the controller has not acted on it yet, or is not running with these flags",
            ready(stored).unwrap_or_else(|| "nothing".into()),
            ready(computed).unwrap_or_default()
        )
    })
}

/// What a ClusterMirror's verdicts need, read in every namespace, or in
/// `only`.
async fn scene<K: Explained>(
    client: &Client,
    install: &Rules,
    object: &StoredClusterMirror,
    request: Result<Request, String>,
    only: Option<&NamespaceFacts>,
) -> ClusterMirrorScene<K> {
    let key = RequestKey::of_meta(&object.metadata);
    let empty = || ClusterMirrorScene {
        key: key.clone(),
        generation: object.metadata.generation,
        request: Err(String::new()),
        class_name: object.class().to_owned(),
        stored: object.stored_status().cloned(),
        source: Ok(None),
        published: None,
        namespaces: Ok(Vec::new()),
        at_name: Ok(Vec::new()),
        copies: Ok(Vec::new()),
        every_namespace: only.is_none(),
        outranking: Vec::new(),
    };
    // Another install's, or unreadable: nothing more is read.
    let theirs = object.class() != install.cluster_mirror_class;
    let spec = match &request {
        Ok(spec) if !theirs => spec,
        _ => return ClusterMirrorScene { request, ..empty() },
    };
    let (source, published) = read_source::<K>(client, spec).await;
    let labelled = ListParams::default().labels(&key.copies_selector());
    let (namespaces, at_name, copies) = match only {
        Some(namespace) => {
            let api: Api<K> = Api::namespaced(client.clone(), &namespace.name);
            let at = api.get_opt(&spec.target_name).await.map_err(why);
            let copies = api.list(&labelled).await.map_err(why);
            (
                Ok(vec![namespace.clone()]),
                at.map(|found| found.into_iter().collect()),
                copies.map(|list| list.items),
            )
        }
        None => {
            let api: Api<K> = Api::all(client.clone());
            let at_name =
                ListParams::default().fields(&format!("metadata.name={}", spec.target_name));
            let namespaces = match key.is_mirror() {
                false => live_namespaces(client).await,
                true => consenting(client, spec).await,
            };
            (
                namespaces,
                api.list(&at_name).await.map(|list| list.items).map_err(why),
                api.list(&labelled)
                    .await
                    .map(|list| list.items)
                    .map_err(why),
            )
        }
    };
    // Those of Mirrors of its name in other namespaces are not its own.
    let copies = copies.map(|copies| {
        (copies.into_iter())
            .filter(|copy| key.marks(copy.meta()))
            .collect()
    });
    let outranking = match key.is_mirror() {
        true => outranking(client, install, spec).await,
        false => Vec::new(),
    };
    ClusterMirrorScene {
        source,
        published,
        namespaces,
        at_name,
        copies,
        outranking,
        request,
        ..empty()
    }
}

/// The ClusterMirrors this install serves that ask for copies of the kind
/// and name of the Mirror `mirror`'s; none when they cannot be listed.
async fn outranking(client: &Client, install: &Rules, mirror: &Request) -> Vec<Request> {
    let listed = cluster_mirrors(client).list(&ListParams::default()).await;
    let objects = listed.map(|list| list.items).unwrap_or_default();
    (objects.iter())
        .filter(|object| object.class() == install.cluster_mirror_class)
        .filter_map(|object| Request::of(object).ok())
        .filter(|r| r.copy_kind() == mirror.copy_kind() && r.target_name == mirror.target_name)
        .collect()
}

/// The source `request` copies, of kind `K`; for a Secret whose keys are
/// published as ConfigMaps, the ConfigMap that publishes them, with the
/// Secret as read.
async fn read_source<K: Explained>(
    client: &Client,
    request: &Request,
) -> (Read<Option<K>>, Option<Read<Option<Secret>>>) {
    let namespace = &request.source_namespace;
    if !request.publishes_secret() {
        let sources: Api<K> = Api::namespaced(client.clone(), namespace);
        return (
            sources.get_opt(&request.source_name).await.map_err(why),
            None,
        );
    }
    let secrets: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let secret = secrets.get_opt(&request.source_name).await.map_err(why);
    let published = |secret: &Secret| Some(K::FROM_SECRET?(secret, &request.shape));
    let source = secret
        .as_ref()
        .map(|found| found.as_ref().and_then(published));
    (source.map_err(Clone::clone), Some(secret))
}

/// The namespaces not being deleted, each with its MirrorGrants, which a
/// Mirror's copies need unless the namespace's labels let them in: all
/// of them, or, for a user who may not list them across namespaces, those
/// of the namespaces `request` names.
async fn consenting(client: &Client, request: &Request) -> Read<Vec<NamespaceFacts>> {
    let mut namespaces = live_namespaces(client).await?;
    let listed = super::grants::grants(client, None).await;
    for facts in &mut namespaces {
        facts.grants = match &listed {
            Some(_) => super::grants::of(listed.as_ref(), &facts.name),
            None if request.named().contains(&facts.name) => {
                let in_it = super::grants::grants(client, Some(&facts.name)).await;
                super::grants::of(in_it.as_ref(), &facts.name)
            }
            None => NamespaceGrants::NotKnown,
        };
    }
    Ok(namespaces)
}

/// The namespaces not being deleted.
async fn live_namespaces(client: &Client) -> Read<Vec<NamespaceFacts>> {
    let api: Api<Namespace> = Api::all(client.clone());
    let list = api
        .list_metadata(&ListParams::default())
        .await
        .map_err(why)?;
    Ok(list
        .items
        .iter()
        .filter(|ns| ns.metadata.deletion_timestamp.is_none())
        .map(|ns| NamespaceFacts::of(&ns.metadata))
        .collect())
}
