//! The MirrorGrants explain reads, as the caller: each namespace's, or
//! none known when they cannot be listed (a grant CRD not installed means
//! that none exists).

use std::collections::HashMap;

use kube::{
    Api, Client, ResourceExt,
    api::{ApiResource, DynamicObject, ListParams},
};

use crate::{
    api::mirror_grant::MirrorGrant,
    decisions::grants::{Grant, NamespaceGrants},
};

/// The grants of every namespace (or of `namespace` only), by namespace;
/// None when they cannot be listed.
pub(super) async fn grants(
    client: &Client,
    namespace: Option<&str>,
) -> Option<HashMap<String, Vec<Grant>>> {
    let resource = ApiResource::erase::<MirrorGrant>(&());
    let api: Api<DynamicObject> = match namespace {
        Some(namespace) => Api::namespaced_with(client.clone(), namespace, &resource),
        None => Api::all_with(client.clone(), &resource),
    };
    let listed = match api.list(&ListParams::default()).await {
        Ok(listed) => listed.items,
        Err(kube::Error::Api(status)) if status.code == 404 => Vec::new(),
        Err(_) => return None,
    };
    let mut by_namespace: HashMap<String, Vec<Grant>> = HashMap::new();
    for object in &listed {
        let grant = Grant::parse(&object.name_any(), object.data.get("spec"));
        let held = by_namespace.entry(object.namespace().unwrap_or_default());
        held.or_default().push(grant);
    }
    Some(by_namespace)
}

/// What `listed` (from [`grants`]) says of `namespace`'s grants.
pub(super) fn of(listed: Option<&HashMap<String, Vec<Grant>>>, namespace: &str) -> NamespaceGrants {
    match listed {
        None => NamespaceGrants::NotKnown,
        Some(listed) => NamespaceGrants::known(listed.get(namespace).cloned().unwrap_or_default()),
    }
}
