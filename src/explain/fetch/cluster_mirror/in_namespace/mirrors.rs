//! What the Mirrors put in a namespace, for `--namespace`: those that ask
//! for it or hold a copy there, and the copies whose Mirror is gone.

use super::*;

/// The rows of the Mirrors that ask for `namespace` or hold a copy there,
/// and of their orphans there. A user who may not list Mirrors across
/// namespaces (a tenant) is shown those of the copies here, with a note.
pub(super) async fn in_a_namespace(
    client: &Client,
    install: &Rules,
    namespace: &NamespaceFacts,
    kinds: Kinds,
    notes: &mut Vec<String>,
) -> Vec<Row> {
    let mut copies = Vec::new();
    if kinds.configmaps {
        copies.extend(copies_here::<ConfigMap>(client, namespace, notes).await);
    }
    if kinds.secrets {
        copies.extend(copies_here::<Secret>(client, namespace, notes).await);
    }
    let Some((objects, unreadable)) = mirrors(client, &copies, notes).await else {
        return Vec::new();
    };
    // Those that could not be read are not told gone.
    let present: BTreeSet<RequestKey> = (objects.iter())
        .map(|object| RequestKey::of_meta(&object.metadata))
        .chain(unreadable)
        .collect();
    let gone = |(_, copy): &&(&'static str, ObjectMeta)| {
        RequestKey::of_copy(copy).is_some_and(|key| !present.contains(&key))
            && crate::contract::is_managed_by_us(copy)
            && crate::contract::written_under(copy, &install.install.selector)
    };
    let crd = match copies.iter().any(|copy| gone(&copy)) {
        true => live_crd_uid(client, RequestKind::Mirror).await,
        false => None,
    };
    let crd = crd.as_ref().map(Option::as_deref);
    let mut rows: Vec<Row> = (copies.iter().filter(gone))
        .filter_map(|(kind, copy)| Some(orphan_row(kind, copy, &RequestKey::of_copy(copy)?, crd)))
        .collect();
    let holding: BTreeSet<RequestKey> = copies
        .iter()
        .filter_map(|(_, copy)| RequestKey::of_copy(copy))
        .collect();
    for object in objects
        .iter()
        .filter(|object| object.class() == install.cluster_mirror_class)
    {
        let key = RequestKey::of_meta(&object.metadata);
        let asks = Request::of(object).is_ok_and(|request| request.asks_for(namespace));
        // Only those that ask for it or hold a copy here: every tenant's
        // other Mirrors are no business of this namespace.
        if asks || holding.contains(&key) {
            let found = request_rows(client, install, object, namespace, kinds).await;
            rows.extend(
                found
                    .into_iter()
                    .filter(|row| row.verdict != Verdict::NotTargeted),
            );
        }
    }
    rows
}

/// The copies here of kind K that a Mirror's label marks.
async fn copies_here<K: Explained>(
    client: &Client,
    namespace: &NamespaceFacts,
    notes: &mut Vec<String>,
) -> Vec<(&'static str, ObjectMeta)> {
    let api: Api<K> = Api::namespaced(client.clone(), &namespace.name);
    let labelled = ListParams::default().labels(crate::contract::MIRROR_LABEL);
    match api.list_metadata(&labelled).await {
        Ok(list) => (list.items.into_iter())
            .map(|copy| (K::NAME, copy.metadata))
            .filter(|(_, copy)| RequestKey::of_copy(copy).is_some_and(|key| key.is_mirror()))
            .collect(),
        Err(error) => {
            notes.push(format!(
                "cannot list the {}s of Mirrors here, so they and their orphans are not shown: {}",
                K::NAME,
                why(error)
            ));
            Vec::new()
        }
    }
}

/// Every Mirror; for a user who may not list them across namespaces, the
/// Mirrors the copies here name, each read in its namespace, and those
/// that could not be read. None without a Mirror CRD: there is no Mirror.
async fn mirrors(
    client: &Client,
    copies: &[(&'static str, ObjectMeta)],
    notes: &mut Vec<String>,
) -> Option<(Vec<StoredClusterMirror>, Vec<RequestKey>)> {
    let all: Api<StoredMirror> = Api::all(client.clone());
    let error = match all.list(&ListParams::default()).await {
        Ok(list) => {
            let mirrors = list.items.into_iter().map(|mirror| mirror.0).collect();
            return Some((mirrors, Vec::new()));
        }
        Err(kube::Error::Api(status)) if status.code == 404 => return None,
        Err(error) => error,
    };
    notes.push(format!(
        "cannot list the Mirrors across namespaces, so only those holding a copy here are shown: {}",
        why(error)
    ));
    let named: BTreeSet<RequestKey> = (copies.iter())
        .filter_map(|(_, copy)| RequestKey::of_copy(copy))
        .collect();
    let (mut found, mut unreadable) = (Vec::new(), Vec::new());
    for key in named {
        match get_request(client, &key).await {
            Ok(Some(object)) => found.push(object),
            Ok(None) => {}
            Err(error) => {
                notes.push(format!("cannot read {}: {}", key.said(), why(error)));
                unreadable.push(key);
            }
        }
    }
    Some((found, unreadable))
}
