//! The reads under explain's answers: lists of copies, namespaces, the
//! objects at a name and the Warnings about them, each a `Read` that says
//! what could not be read.

use super::*;

/// Every copy of a kind: what carries the managed-by label.
pub(super) fn copies() -> ListParams {
    ListParams::default().labels(&contract::copy_selector())
}

/// The namespaces, listed; when they cannot be, those in `by_name`, each
/// read on its own.
pub(super) async fn namespaces(client: &Client, by_name: &[String]) -> Namespaces {
    let api: Api<Namespace> = Api::all(client.clone());
    let listed = grants::grants(client, None).await;
    let facts = |ns: &PartialObjectMeta<Namespace>| {
        let facts = NamespaceFacts::of(&ns.metadata);
        let held = grants::of(listed.as_ref(), &facts.name);
        facts.with_grants(held)
    };
    match api.list_metadata(&ListParams::default()).await {
        Ok(list) => {
            let mut known: Vec<NamespaceFacts> = list.items.iter().map(facts).collect();
            if listed.is_none() {
                // Allowed to list them in some namespaces only, as `view`
                // bound in a namespace allows: those asked about, each.
                for facts in known.iter_mut().filter(|ns| by_name.contains(&ns.name)) {
                    let in_it = grants::grants(client, Some(&facts.name)).await;
                    facts.grants = grants::of(in_it.as_ref(), &facts.name);
                }
            }
            Namespaces {
                known,
                list_error: None,
                unreadable: BTreeMap::new(),
            }
        }
        Err(error) => {
            let mut namespaces = Namespaces {
                list_error: Some(why(error)),
                ..Namespaces::default()
            };
            for name in by_name {
                match namespace_facts(client, name).await {
                    Ok(Some(facts)) => namespaces.known.push(facts),
                    Ok(None) => {}
                    Err(why) => {
                        namespaces.unreadable.insert(name.clone(), why);
                    }
                }
            }
            namespaces
        }
    }
}

pub(super) async fn namespace_facts(client: &Client, name: &str) -> Read<Option<NamespaceFacts>> {
    let api: Api<Namespace> = Api::all(client.clone());
    let found = api.get_metadata_opt(name).await.map_err(why)?;
    let Some(found) = found else {
        return Ok(None);
    };
    let listed = grants::grants(client, Some(name)).await;
    let facts = NamespaceFacts::of(&found.metadata);
    Ok(Some(facts.with_grants(grants::of(listed.as_ref(), name))))
}

/// The object at `name` in each of `namespaces`.
pub(super) async fn objects_at<K: Explained>(
    client: &Client,
    namespaces: &[String],
    name: &str,
) -> BTreeMap<String, Read<Option<K>>> {
    stream::iter(namespaces.iter().cloned())
        .map(|namespace| {
            let api: Api<K> = Api::namespaced(client.clone(), &namespace);
            async move {
                let found = api.get_opt(name).await.map_err(why);
                (namespace, found)
            }
        })
        .buffered(READS_AT_ONCE)
        .collect()
        .await
}

/// The last Warnings about object `namespace/name` of kind K.
pub(super) async fn warnings_about<K: Explained>(
    client: &Client,
    namespace: &str,
    name: &str,
    notes: &mut Vec<String>,
) -> Vec<Warning> {
    let fields = format!(
        "involvedObject.kind={},involvedObject.name={name},type=Warning",
        K::NAME
    );
    warnings(client, namespace, &fields, notes).await
}

pub(super) async fn warnings(
    client: &Client,
    namespace: &str,
    fields: &str,
    notes: &mut Vec<String>,
) -> Vec<Warning> {
    let api: Api<Event> = Api::namespaced(client.clone(), namespace);
    let events = match api.list(&ListParams::default().fields(fields)).await {
        Ok(list) => list.items,
        Err(error) => {
            notes.push(format!(
                "cannot read the Events in {namespace}: {}",
                why(error)
            ));
            return Vec::new();
        }
    };
    let mut warnings: Vec<Warning> = events.into_iter().map(warning).collect();
    warnings.sort_by_key(|w| w.last_seen);
    let skip = warnings.len().saturating_sub(WARNINGS_SHOWN);
    warnings.split_off(skip)
}

fn warning(event: Event) -> Warning {
    let regarding = &event.involved_object;
    let regarding = match &regarding.namespace {
        Some(namespace) => format!(
            "{namespace}/{}",
            regarding.name.as_deref().unwrap_or_default()
        ),
        None => regarding.name.clone().unwrap_or_default(),
    };
    let last_seen = event
        .series
        .as_ref()
        .and_then(|s| s.last_observed_time.as_ref().map(|t| t.0))
        .or(event.last_timestamp.as_ref().map(|t| t.0))
        .or(event.event_time.as_ref().map(|t| t.0))
        .or(event.metadata.creation_timestamp.as_ref().map(|t| t.0));
    let count = event
        .series
        .as_ref()
        .and_then(|s| s.count)
        .or(event.count)
        .unwrap_or(1);
    Warning {
        regarding,
        reason: event.reason.unwrap_or_default(),
        message: event.message.unwrap_or_default(),
        count,
        last_seen,
    }
}

/// For a mirror under a name its source (as read) no longer gives its
/// mirrors: the object at the name it gives now, in the mirror's
/// namespace, if any (what the prune loop waits for before it removes
/// the mirror).
pub(super) async fn successor<K: Explained>(
    client: &Client,
    mirror: &K,
    source: Option<&Read<Option<K>>>,
) -> Option<ObjectMeta> {
    let Some(Ok(Some(source))) = source else {
        return None;
    };
    let name = mirror_name(source.meta()).ok()?;
    if mirror_of(mirror.meta()).is_none() || mirror.meta().name.as_deref() == Some(name) {
        return None;
    }
    let namespace = mirror.meta().namespace.as_deref().unwrap_or_default();
    let api: Api<K> = Api::namespaced(client.clone(), namespace);
    Some(api.get_opt(name).await.ok()??.meta().clone())
}
