//! What `explain` reads, as the caller, with get and list only; what it
//! cannot read becomes a `cannot-read` row or a note, never a failure.

use std::collections::{BTreeMap, BTreeSet};

use futures::{StreamExt, stream};
use k8s_openapi::{
    api::core::v1::{Event, Namespace},
    apimachinery::pkg::apis::meta::v1::ObjectMeta,
    jiff::Timestamp,
};
use kube::{
    Api, Client,
    api::{ListParams, PartialObjectMeta},
};

use super::{
    render::{Is, Report, Subject},
    verdicts::{
        self, CopyScene, Explained, NamespaceScene, Namespaces, Preview, Read, Row, Rules,
        SourceScene, Verdict, Warning, What,
    },
};
use crate::{
    contract::{self, mirror_of},
    decisions::consent::NamespaceFacts,
    decisions::mirror_name::mirror_name,
    decisions::ownership::claimed_source,
    decisions::request_key::RequestKey,
};

/// How many objects are read at once.
const READS_AT_ONCE: usize = 16;
/// How many of an object's last Warnings are shown.
const WARNINGS_SHOWN: usize = 10;

/// Why a read failed, in a few words.
fn why(error: kube::Error) -> String {
    match error {
        kube::Error::Api(status) if status.is_forbidden() => {
            format!("forbidden: {}", status.message)
        }
        kube::Error::Api(status) => format!("{} ({})", status.message, status.code),
        other => other.to_string(),
    }
}

fn subject<K: Explained>(namespace: &str, name: &str, is: Is) -> Subject {
    Subject {
        kind: K::NAME.into(),
        namespace: Some(namespace.to_owned()),
        name: name.to_owned(),
        is,
    }
}

/// Explains the object `namespace/name` of kind K: a source, or a copy.
pub async fn object<K: Explained>(
    client: &Client,
    rules: &Rules,
    namespace: &str,
    name: &str,
    preview: Option<&Preview>,
) -> Report {
    let api: Api<K> = Api::namespaced(client.clone(), namespace);
    let unread = |verdict, detail| Report {
        subject: subject::<K>(namespace, name, Is::Unknown),
        preview: preview.cloned(),
        rows: vec![Row {
            what: What::Source,
            kind: K::NAME,
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            source: None,
            request: None,
            verdict,
            detail,
        }],
        warnings: Vec::new(),
        notes: Vec::new(),
        status: None,
        classes: None,
    };
    let object = match api.get_opt(name).await {
        Err(error) => {
            return unread(
                Verdict::CannotRead,
                format!("cannot read it: {}", why(error)),
            );
        }
        Ok(None) => {
            return unread(
                Verdict::NotFound,
                format!("there is no {} {namespace}/{name}", K::NAME),
            );
        }
        Ok(Some(object)) => object,
    };
    let companion_of = match contract::is_managed_by_us(object.meta()) {
        true => None,
        false => verdicts::companion_source_name(name, rules),
    };
    let existing_source = match companion_of {
        Some(source) => api.get_opt(&source).await.ok().flatten().is_some(),
        None => false,
    };
    if let Some(asker) = RequestKey::of_copy(object.meta())
        && contract::is_managed_by_us(object.meta())
    {
        return cluster_mirror::copy_of(client, rules, object, &asker).await;
    }
    match verdicts::is_copy(&object, rules, existing_source) {
        true => copy::<K>(client, rules, object, preview.is_some()).await,
        false => source::<K>(client, rules, object, preview).await,
    }
}

async fn source<K: Explained>(
    client: &Client,
    rules: &Rules,
    object: K,
    preview: Option<&Preview>,
) -> Report {
    let meta = object.meta().clone();
    let namespace = meta.namespace.clone().unwrap_or_default();
    let name = meta.name.clone().unwrap_or_default();
    let source = match preview {
        Some(preview) => preview.apply(&object),
        None => object,
    };
    let api: Api<K> = Api::namespaced(client.clone(), &namespace);
    let companion = api
        .get_opt(&verdicts::companion_of(&meta, rules))
        .await
        .map_err(why);
    let namespaces = namespaces(client, &verdicts::named_namespaces(&source)).await;
    let wanted = verdicts::mirror_namespaces(&source, &namespaces, rules);
    let mirrors_name = mirror_name(source.meta()).unwrap_or_default().to_owned();
    let at_name = objects_at(client, &wanted, &mirrors_name).await;
    let mut notes = Vec::new();
    let all: Api<K> = Api::all(client.clone());
    let copies = match all.list_metadata(&copies()).await {
        Ok(list) => Some(list.items.into_iter().map(|copy| copy.metadata).collect()),
        Err(error) => {
            notes.push(format!(
                "cannot list the {} copies across namespaces, so mirrors left where the source no longer asks are not shown: {}",
                K::NAME,
                why(error)
            ));
            None
        }
    };
    let warnings = warnings_about::<K>(client, &namespace, &name, &mut notes).await;
    let scene = SourceScene {
        source,
        preview: preview.is_some(),
        companion,
        namespaces,
        at_name,
        copies,
        contested: verdicts::contested_copies(&warnings, Timestamp::now()),
    };
    let key = K::comparison_key();
    Report {
        subject: subject::<K>(&namespace, &name, Is::Source),
        preview: preview.cloned(),
        rows: verdicts::explain_source(&scene, rules, &key),
        warnings,
        notes,
        status: None,
        classes: None,
    }
}

async fn copy<K: Explained>(client: &Client, rules: &Rules, copy: K, previewed: bool) -> Report {
    let meta = copy.meta().clone();
    let namespace = meta.namespace.clone().unwrap_or_default();
    let name = meta.name.clone().unwrap_or_default();
    let mut notes = Vec::new();
    if previewed {
        notes.push("--mirror-to and --mirror-to-selector preview a source; this is a copy".into());
    }
    let claimed = claimed_source::<K>(&meta, &rules.install.suffix).or_else(|| {
        verdicts::companion_source_name(&name, rules).map(|source| (namespace.clone(), source))
    });
    let source = match &claimed {
        Some((source_namespace, source_name)) => {
            let api: Api<K> = Api::namespaced(client.clone(), source_namespace);
            Some(api.get_opt(source_name).await.map_err(why))
        }
        None => None,
    };
    let mut warnings = Vec::new();
    if let Some((source_namespace, source_name)) = &claimed {
        warnings = warnings_about::<K>(client, source_namespace, source_name, &mut notes).await;
    }
    let scene = CopyScene {
        contested: verdicts::contested_copies(&warnings, Timestamp::now()),
        successor: successor(client, &copy, source.as_ref()).await,
        copy,
        source,
        namespace: namespace_facts(client, &namespace).await,
    };
    let key = K::comparison_key();
    Report {
        subject: subject::<K>(&namespace, &name, Is::Copy),
        preview: None,
        rows: verdicts::explain_copy(&scene, rules, &key),
        warnings,
        notes,
        status: None,
        classes: None,
    }
}

/// Explains a namespace: its consent, and for each kind its mirrors and
/// the sources that ask for it.
pub async fn namespace(client: &Client, rules: &Rules, name: &str, kinds: Kinds) -> Report {
    let mut report = Report::about(Subject {
        kind: <Namespace as k8s_openapi::Resource>::KIND.into(),
        namespace: None,
        name: name.to_owned(),
        is: Is::Unknown,
    });
    let unread = |verdict, detail| Row {
        what: What::Consent,
        kind: "",
        namespace: name.to_owned(),
        name: String::new(),
        source: None,
        request: None,
        verdict,
        detail,
    };
    let facts = match namespace_facts(client, name).await {
        Err(why) => {
            report.rows.push(unread(
                Verdict::CannotRead,
                format!("cannot read it: {why}"),
            ));
            return report;
        }
        Ok(None) => {
            report.rows.push(unread(
                Verdict::NotFound,
                format!("there is no namespace {name}"),
            ));
            return report;
        }
        Ok(Some(facts)) => facts,
    };
    report.subject.is = Is::Namespace;
    report.rows = verdicts::consent_rows(&facts, rules);
    if kinds.configmaps {
        let rows =
            namespace_kind::<k8s_openapi::api::core::v1::ConfigMap>(client, rules, &facts).await;
        report.rows.extend(rows);
    }
    if kinds.secrets {
        let rows =
            namespace_kind::<k8s_openapi::api::core::v1::Secret>(client, rules, &facts).await;
        report.rows.extend(rows);
    }
    let rows = cluster_mirror::in_a_namespace(client, rules, &facts, kinds, &mut report.notes);
    report.rows.extend(rows.await);
    // Events about a cluster-scoped object are recorded in `default`.
    report.warnings = warnings(
        client,
        "default",
        &format!(
            "involvedObject.kind={},involvedObject.name={name},type=Warning",
            <Namespace as k8s_openapi::Resource>::KIND
        ),
        &mut report.notes,
    )
    .await;
    report
}

/// The kinds a namespace is explained for.
#[derive(Debug, Clone, Copy)]
pub struct Kinds {
    pub configmaps: bool,
    pub secrets: bool,
}

async fn namespace_kind<K: Explained>(
    client: &Client,
    rules: &Rules,
    namespace: &NamespaceFacts,
) -> Vec<Row> {
    let in_namespace: Api<K> = Api::namespaced(client.clone(), &namespace.name);
    let mirrors: Read<Vec<CopyScene<K>>> = match in_namespace.list(&copies()).await {
        Err(error) => Err(why(error)),
        Ok(list) => {
            let mirrors = list
                .items
                .into_iter()
                .filter(|copy| mirror_of(copy.meta()).is_some())
                // A ClusterMirror's or a Mirror's copy has its own rows.
                .filter(|copy| RequestKey::of_copy(copy.meta()).is_none());
            Ok(stream::iter(mirrors)
                .map(|mirror| mirror_scene(client, namespace, mirror))
                .buffered(READS_AT_ONCE)
                .collect()
                .await)
        }
    };
    let all: Api<K> = Api::all(client.clone());
    let sources: Read<Vec<ObjectMeta>> = all
        .list_metadata(&ListParams::default().labels(&rules.install.selector))
        .await
        .map(|list| list.items.into_iter().map(|s| s.metadata).collect())
        .map_err(why);
    let mirrored: BTreeSet<(String, String)> = match &mirrors {
        Ok(mirrors) => mirrors
            .iter()
            .filter_map(|m: &CopyScene<K>| {
                let at = m.copy.meta().name.clone().unwrap_or_default();
                mirror_of(m.copy.meta()).map(|(ns, n)| (format!("{ns}/{n}"), at))
            })
            .collect(),
        Err(_) => BTreeSet::new(),
    };
    let mut names = Vec::new();
    if let Ok(sources) = &sources {
        for (source, refused) in verdicts::sources_asking::<K>(namespace, sources, rules) {
            let at = mirror_name(source).unwrap_or_default().to_owned();
            if refused.is_none() && !mirrored.contains(&(contract::object_key(source), at.clone()))
            {
                names.push(at);
            }
        }
    }
    let at_name = stream::iter(names)
        .map(|name| {
            let api = in_namespace.clone();
            async move {
                let found = api.get_opt(&name).await.map_err(why);
                (name, found)
            }
        })
        .buffered(READS_AT_ONCE)
        .collect()
        .await;
    let scene = NamespaceScene {
        mirrors,
        sources,
        at_name,
    };
    verdicts::explain_namespace(namespace, &scene, rules, &K::comparison_key())
}

/// A mirror found in `namespace`, with its source read.
async fn mirror_scene<K: Explained>(
    client: &Client,
    namespace: &NamespaceFacts,
    mirror: K,
) -> CopyScene<K> {
    let source = match mirror_of(mirror.meta()) {
        Some((source_namespace, source_name)) => {
            let api: Api<K> = Api::namespaced(client.clone(), &source_namespace);
            Some(api.get_opt(&source_name).await.map_err(why))
        }
        None => None,
    };
    CopyScene {
        successor: successor(client, &mirror, source.as_ref()).await,
        copy: mirror,
        source,
        namespace: Ok(Some(namespace.clone())),
        contested: BTreeSet::new(),
    }
}

mod cluster_mirror;
mod grants;
mod reads;

pub use cluster_mirror::request;

use reads::{copies, namespace_facts, namespaces, objects_at, successor, warnings, warnings_about};
