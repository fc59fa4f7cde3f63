//! What explain reads of a ClusterMirror: the object, its source, the
//! namespaces, the objects at its copies' name and those carrying its
//! label; for `--namespace`, the same within that namespace, for every
//! ClusterMirror.

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;

mod in_namespace;

pub use in_namespace::in_a_namespace;

use super::*;
use crate::kind::ChecksumKey;
use crate::{
    api::{ClusterMirror, ClusterMirrorStatus, SourceKind, StoredClusterMirror},
    contract::CLUSTER_MIRROR_LABEL,
    decisions::cluster_mirror::Request,
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

/// The uid of the ClusterMirror CRD live (None: none, or being deleted),
/// as read now; None when it cannot be read (the user may not `get`
/// CRDs): orphans are then explained either way.
pub(super) async fn live_crd_uid(client: &Client) -> Option<Option<String>> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd = crds
        .get_metadata_opt(ClusterMirror::crd_name())
        .await
        .ok()?;
    Some(
        crd.filter(|crd| crd.metadata.deletion_timestamp.is_none())
            .and_then(|crd| crd.metadata.uid),
    )
}

/// Reads the ClusterMirror `name`; when it cannot, the row that says why.
async fn read_cluster_mirror(client: &Client, name: &str) -> Result<StoredClusterMirror, Row> {
    let unread = |verdict, detail| Row {
        what: What::ClusterMirror,
        kind: "",
        namespace: String::new(),
        name: name.to_owned(),
        source: None,
        cluster_mirror: Some(name.to_owned()),
        verdict,
        detail,
    };
    match cluster_mirrors(client).get_opt(name).await {
        Ok(Some(object)) => Ok(object),
        Ok(None) => Err(unread(
            Verdict::NotFound,
            format!("there is no ClusterMirror {name}"),
        )),
        // No CRD: the API server knows no such resource, and answers 404
        // without a Status (so without the reason NotFound).
        Err(kube::Error::Api(status)) if status.code == 404 => Err(unread(
            Verdict::NotFound,
            format!("there is no ClusterMirror {name}: the ClusterMirror CRD is not installed"),
        )),
        Err(error) => Err(unread(
            Verdict::CannotRead,
            format!("cannot read it: {}", why(error)),
        )),
    }
}

/// Explains the ClusterMirror `name`.
pub async fn cluster_mirror(client: &Client, install: &Rules, name: &str) -> Report {
    let mut report = Report::about(Subject {
        kind: <StoredClusterMirror as kube::Resource>::kind(&()),
        namespace: None,
        name: name.to_owned(),
        is: Is::Unknown,
    });
    let object = match read_cluster_mirror(client, name).await {
        Ok(object) => object,
        Err(row) => {
            report.rows.push(row);
            return report;
        }
    };
    report.subject.is = Is::ClusterMirror;
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
    if install.cluster_mirror_sources.is_empty() {
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
        "default",
        &format!(
            "involvedObject.kind={},involvedObject.name={name},type=Warning",
            <StoredClusterMirror as kube::Resource>::kind(&())
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
    let name = object.metadata.name.clone().unwrap_or_default();
    let empty = || ClusterMirrorScene {
        name: name.clone(),
        generation: object.metadata.generation,
        request: Err(String::new()),
        class_name: object.class().to_owned(),
        stored: object.stored_status().cloned(),
        source: Ok(None),
        published: None,
        namespaces: Ok(Vec::new()),
        at_name: Ok(Vec::new()),
        copies: Ok(Vec::new()),
    };
    // Another install's, or unreadable: nothing more is read.
    let theirs = object.class() != install.cluster_mirror_class;
    let spec = match &request {
        Ok(spec) if !theirs => spec,
        _ => return ClusterMirrorScene { request, ..empty() },
    };
    let (source, published) = read_source::<K>(client, spec).await;
    let labelled = ListParams::default().labels(&format!("{CLUSTER_MIRROR_LABEL}={name}"));
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
            (
                live_namespaces(client).await,
                api.list(&at_name).await.map(|list| list.items).map_err(why),
                api.list(&labelled)
                    .await
                    .map(|list| list.items)
                    .map_err(why),
            )
        }
    };
    ClusterMirrorScene {
        source,
        published,
        namespaces,
        at_name,
        copies,
        request,
        ..empty()
    }
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

/// Explains a copy carrying the label of ClusterMirror `cluster_mirror`:
/// that ClusterMirror's row for it, as in `--namespace`.
pub async fn copy_of<K: Explained>(
    client: &Client,
    install: &Rules,
    copy: K,
    cluster_mirror: &str,
) -> Report {
    let meta = copy.meta().clone();
    let namespace = meta.namespace.clone().unwrap_or_default();
    let name = meta.name.clone().unwrap_or_default();
    let mut report = Report::about(subject::<K>(&namespace, &name, Is::Copy));
    let row = |verdict, detail| Row {
        what: What::ClusterMirrorCopy,
        kind: K::NAME,
        namespace: namespace.clone(),
        name: name.clone(),
        source: mirror_of(&meta).map(|(ns, n)| format!("{ns}/{n}")),
        cluster_mirror: Some(cluster_mirror.to_owned()),
        verdict,
        detail,
    };
    let facts = match namespace_facts(client, &namespace).await {
        Ok(Some(facts)) => facts,
        Ok(None) => return report,
        Err(why) => {
            let detail = format!("cannot read its namespace: {why}");
            report.rows.push(row(Verdict::CannotRead, detail));
            return report;
        }
    };
    let object = match cluster_mirrors(client).get_opt(cluster_mirror).await {
        Ok(Some(object)) => object,
        Ok(None) => {
            let crd = live_crd_uid(client).await;
            let crd = crd.as_ref().map(Option::as_deref);
            report
                .rows
                .push(orphan_row(K::NAME, copy.meta(), cluster_mirror, crd));
            return report;
        }
        Err(kube::Error::Api(status)) if status.code == 404 => {
            let detail = "the ClusterMirror CRD is not installed: no ClusterMirror copy is removed while it is missing".into();
            report.rows.push(row(Verdict::NoSource, detail));
            return report;
        }
        Err(error) => {
            let detail = format!("cannot read ClusterMirror {cluster_mirror}: {}", why(error));
            report.rows.push(row(Verdict::CannotRead, detail));
            return report;
        }
    };
    let class = object.class();
    if class != install.cluster_mirror_class {
        let detail = format!(
            "its ClusterMirror {cluster_mirror} is of {}, served by another install: this one \
             leaves it alone (explain it with --cluster-mirror-class={class})",
            class_words(class)
        );
        report.rows.push(row(Verdict::OtherInstall, detail));
        return report;
    }
    let request = Request::of(&object);
    if let Ok(request) = &request
        && request.copy_kind() != K::SOURCE_KIND
    {
        let detail = format!(
            "its ClusterMirror's copies are {}s now: the controller removes it",
            request.copy_kind()
        );
        report.rows.push(row(Verdict::Unwanted, detail));
        return report;
    }
    let key = comparison_key::<K>(&request);
    let scene = scene::<K>(client, install, &object, request, Some(&facts)).await;
    let rows = in_namespace(&scene, &namespace, install, &key);
    report.rows.extend(
        rows.into_iter()
            .filter(|row| row.name == name || row.verdict == Verdict::CannotRead),
    );
    report
}
