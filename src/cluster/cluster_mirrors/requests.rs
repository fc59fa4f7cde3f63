//! The parsed requests, by key, and the Mirrors by the copies they ask
//! for: a copy's event wakes the Mirrors that contend for its name by one
//! lookup, not by a scan of every request.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use crate::{
    api::SourceKind,
    decisions::cluster_mirror::{Origin, Request},
    decisions::request_key::RequestKey,
};

/// The readable requests, and the Mirrors among them by (copies' kind,
/// copies' name).
#[derive(Default)]
pub(super) struct Requests {
    by_key: HashMap<RequestKey, Arc<Request>>,
    mirrors_by_copy: HashMap<(SourceKind, String), BTreeSet<RequestKey>>,
}

/// Where a Mirror's copies are indexed; None for a ClusterMirror.
fn copy_of(request: &Request) -> Option<(SourceKind, String)> {
    match request.origin {
        Origin::ClusterMirror => None,
        Origin::Mirror { .. } => Some((request.copy_kind(), request.target_name.clone())),
    }
}

impl Requests {
    pub(super) fn get(&self, key: &RequestKey) -> Option<&Arc<Request>> {
        self.by_key.get(key)
    }

    pub(super) fn values(&self) -> impl Iterator<Item = &Arc<Request>> {
        self.by_key.values()
    }

    pub(super) fn insert(&mut self, key: RequestKey, request: Arc<Request>) {
        let at = copy_of(&request);
        if let Some(before) = self.by_key.insert(key.clone(), request) {
            self.unindex(&key, &before);
        }
        if let Some(at) = at {
            self.mirrors_by_copy.entry(at).or_default().insert(key);
        }
    }

    pub(super) fn remove(&mut self, key: &RequestKey) {
        if let Some(before) = self.by_key.remove(key) {
            self.unindex(key, &before);
        }
    }

    pub(super) fn retain(&mut self, keep: impl Fn(&RequestKey) -> bool) {
        let gone: Vec<RequestKey> = (self.by_key.keys())
            .filter(|key| !keep(key))
            .cloned()
            .collect();
        for key in gone {
            self.remove(&key);
        }
    }

    /// The Mirrors whose copies are of `kind` and named `name`.
    pub(super) fn mirrors_copying(&self, kind: SourceKind, name: &str) -> Vec<Arc<Request>> {
        let keys = self.mirrors_by_copy.get(&(kind, name.to_owned()));
        (keys.into_iter().flatten())
            .filter_map(|key| self.by_key.get(key).cloned())
            .collect()
    }

    fn unindex(&mut self, key: &RequestKey, before: &Request) {
        let Some(at) = copy_of(before) else {
            return;
        };
        if let Some(keys) = self.mirrors_by_copy.get_mut(&at) {
            keys.remove(key);
            if keys.is_empty() {
                self.mirrors_by_copy.remove(&at);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use serde_json::json;

    use super::*;
    use crate::api::mirror::stored::StoredMirror;

    fn mirror(namespace: &str, name: &str, target: &str) -> (RequestKey, Arc<Request>) {
        let meta = ObjectMeta {
            name: Some(name.into()),
            namespace: Some(namespace.into()),
            uid: Some(format!("{namespace}-{name}")),
            ..ObjectMeta::default()
        };
        let spec = json!({
            "source": {"kind": "ConfigMap", "name": "src"},
            "target": {"namespaces": ["b"], "name": target},
        });
        let stored = StoredMirror::read(meta, Some(&spec), None).0;
        let request = Request::of(&stored).expect("a readable spec");
        (request.key(), Arc::new(request))
    }

    fn keys(requests: &Requests, name: &str) -> Vec<String> {
        let found = requests.mirrors_copying(SourceKind::ConfigMap, name);
        found.iter().map(|r| r.key().to_string()).collect()
    }

    #[test]
    fn the_index_follows_each_mirror_s_copies_name_through_changes_and_removals() {
        let mut requests = Requests::default();
        let (a, first) = mirror("team-a", "ca", "ca");
        let (b, second) = mirror("team-c", "ca", "ca");
        requests.insert(a.clone(), first);
        requests.insert(b.clone(), second);
        assert_eq!(
            keys(&requests, "ca"),
            ["mirror/team-a/ca", "mirror/team-c/ca"]
        );
        assert!(
            requests
                .mirrors_copying(SourceKind::Secret, "ca")
                .is_empty()
        );

        let (_, renamed) = mirror("team-a", "ca", "bundle");
        requests.insert(a.clone(), renamed);
        assert_eq!(keys(&requests, "ca"), ["mirror/team-c/ca"]);
        assert_eq!(keys(&requests, "bundle"), ["mirror/team-a/ca"]);

        requests.remove(&b);
        assert!(keys(&requests, "ca").is_empty());
        requests.retain(|key| key != &a);
        assert!(keys(&requests, "bundle").is_empty());
        assert!(
            requests.mirrors_by_copy.is_empty(),
            "no empty entry is kept"
        );
        assert_eq!(requests.values().count(), 0);
    }
}
