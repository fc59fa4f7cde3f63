//! A ClusterMirror's rows: its own (its Ready condition, as the
//! controller computes it) and one per namespace it selects, is asked for
//! by its spec, or holds one of its copies.
//!
//! The decisions are the controller's: [`Request::blocked`] for what stops
//! the whole request, [`Request::selects`] and the cluster consent for the
//! namespaces, [`desired`] of [`Request::copy_request`] and the plan (through
//! [`compare`]) for each copy, [`copy_fate`] for the copies it holds
//! elsewhere, and [`status::status`] for its conditions.

mod class;
mod rows;

use k8s_openapi::jiff::Timestamp;

use super::*;
use crate::kind::ChecksumKey;
use crate::{
    api::ClusterMirrorStatus,
    decisions::cluster_mirror::{
        Request,
        status::{self, Blocked, Failure, Tally},
    },
    decisions::copy_verdict::copy_fate,
    decisions::request_key::RequestKey,
};
pub use class::class_words;
use class::other_class;
use rows::{Seen, namespace_row, namespace_rows};

/// Everything read about one ClusterMirror or Mirror of kind K.
pub struct ClusterMirrorScene<K> {
    pub key: RequestKey,
    pub generation: Option<i64>,
    /// Its spec as the controller reads it, or why it cannot be read.
    pub request: Result<Request, String>,
    /// The class its spec names (read even when the rest does not read).
    pub class_name: String,
    /// The status it holds: its conditions' transition times are kept.
    pub stored: Option<ClusterMirrorStatus>,
    pub source: Read<Option<K>>,
    /// For a Secret whose keys are published as ConfigMaps
    /// (`target.kind: ConfigMap`): the Secret as read, which is checked as
    /// the controller checks it; `source` then holds the ConfigMap that
    /// publishes its keys.
    pub published: Option<Read<Option<Secret>>>,
    /// The namespaces looked at (every one, or the one explained), less
    /// those being deleted, which the controller no longer writes to.
    pub namespaces: Read<Vec<NamespaceFacts>>,
    /// The objects at its copies' name in those namespaces.
    pub at_name: Read<Vec<K>>,
    /// Its copies (those carrying its label, and for a Mirror its
    /// namespace in their `mirror-of`) in those namespaces.
    pub copies: Read<Vec<K>>,
    /// Whether every namespace was looked at, not one alone: only then
    /// is a namespace a Mirror names and that is not there a failure.
    pub every_namespace: bool,
    /// For a Mirror: the ClusterMirrors this install serves that ask for
    /// copies of its kind and name, which outrank it where they write.
    pub outranking: Vec<Request>,
}

/// What explain says of a ClusterMirror.
pub struct ClusterMirrorAnswer {
    /// Its own row.
    pub own: Row,
    /// One row per namespace it selects, is asked for, or has a copy in.
    pub namespaces: Vec<Row>,
    /// Its status as the controller computes it from what was read; None
    /// when something it needs could not be read.
    pub status: Option<ClusterMirrorStatus>,
}

/// The rows and status of the ClusterMirror in `scene`.
pub fn explain_cluster_mirror<K: Explained>(
    scene: &ClusterMirrorScene<K>,
    rules: &Rules,
    key: &dyn ChecksumKey<K>,
    now: Timestamp,
) -> ClusterMirrorAnswer {
    if scene.class_name != rules.cluster_mirror_class {
        return other_class(scene, rules);
    }
    // As the controller reads it.
    let invalid = match &scene.request {
        Err(why) => Some(why.clone()),
        Ok(request) => request.refused_by(&rules.install),
    };
    let (Ok(request), None) = (&scene.request, invalid.as_ref()) else {
        let blocked = Blocked::InvalidSpec(invalid.unwrap_or_default());
        return finish(scene, None, Some(&blocked), Tally::default(), vec![], now);
    };
    let source = &scene.source;
    let blocked = match source_blocked(scene, request, rules) {
        Ok(blocked) => blocked,
        Err(why) => return unread(scene, request, format!("cannot read its source: {why}")),
    };
    let (namespaces, at_name, copies) = match (&scene.namespaces, &scene.at_name, &scene.copies) {
        (Ok(namespaces), Ok(at_name), Ok(copies)) => (namespaces, at_name, copies),
        (Err(why), _, _) => {
            return unread(scene, request, format!("cannot list the namespaces: {why}"));
        }
        (_, Err(why), _) | (_, _, Err(why)) => {
            return unread(
                scene,
                request,
                format!("cannot read the {} objects: {why}", K::NAME),
            );
        }
    };
    let bound = match (&blocked, source) {
        (None, Ok(Some(source))) => Some(request.bound_source(source)),
        _ => None,
    };
    let seen = Seen {
        namespaces,
        at_name,
        copies,
        every_namespace: scene.every_namespace,
        outranking: &scene.outranking,
    };
    let (tally, rows) = namespace_rows(request, bound.as_ref(), blocked.as_ref(), seen, rules, key);
    finish(scene, Some(request), blocked.as_ref(), tally, rows, now)
}

/// What stops the whole request before any namespace is looked at, as
/// the controller decides it from the source read (for a Secret whose
/// keys are published, from the Secret itself); an error when the source
/// could not be read from an allowed namespace.
fn source_blocked<K: Explained>(
    scene: &ClusterMirrorScene<K>,
    request: &Request,
    rules: &Rules,
) -> Result<Option<Blocked>, String> {
    let allowed = request.may_copy_from_its_namespace(
        rules
            .cluster_mirror_sources
            .contains(&request.source_namespace),
    );
    let reserved = &rules.install.reserved_names;
    // The copies' kind first: an install that mirrors no ConfigMaps does
    // not publish a Secret's keys either.
    if let Some(secret) = scene
        .published
        .as_ref()
        .filter(|_| rules.kinds.contains(&K::NAME))
    {
        return match secret {
            _ if !rules.kinds.contains(&Secret::NAME) => Ok(Some(Blocked::SecretsDisabled)),
            Err(why) if allowed => Err(why.clone()),
            Err(_) => Ok(request.blocked::<Secret>(false, None, &Secret::source_rules(rules), &[])),
            Ok(secret) => Ok(request
                .blocked(
                    allowed,
                    secret.as_ref(),
                    &Secret::source_rules(rules),
                    reserved,
                )
                .or_else(|| request.keys_missing(secret.as_ref()?).err())),
        };
    }
    match &scene.source {
        _ if !rules.kinds.contains(&K::NAME) => Ok(Some(match K::NAME {
            "Secret" => Blocked::SecretsDisabled,
            kind => Blocked::InvalidSpec(format!("spec.source.kind {kind:?} is not mirrored")),
        })),
        Err(why) if allowed => Err(why.clone()),
        Err(_) => Ok(request.blocked::<K>(false, None, &K::source_rules(rules), &[])),
        Ok(source) => Ok(request
            .blocked(allowed, source.as_ref(), &K::source_rules(rules), reserved)
            .or_else(|| request.keys_missing(source.as_ref()?).err())),
    }
}

fn source_key(request: &Request) -> String {
    format!("{}/{}", request.source_namespace, request.source_name)
}

/// The answer when what the status needs could not be read.
fn unread<K: Explained>(
    scene: &ClusterMirrorScene<K>,
    request: &Request,
    detail: String,
) -> ClusterMirrorAnswer {
    ClusterMirrorAnswer {
        own: own_row::<K>(scene, Some(request), Verdict::CannotRead, detail),
        namespaces: Vec::new(),
        status: None,
    }
}

/// The answer, with the status the controller would write.
fn finish<K: Explained>(
    scene: &ClusterMirrorScene<K>,
    request: Option<&Request>,
    blocked: Option<&Blocked>,
    tally: Tally,
    namespaces: Vec<Row>,
    now: Timestamp,
) -> ClusterMirrorAnswer {
    let suspended = request.is_some_and(|r| r.suspend);
    let status = status::status(
        scene.generation,
        &tally,
        blocked,
        suspended,
        scene.stored.as_ref(),
        now,
    );
    let reason = status::ready_reason(&tally, blocked, suspended);
    let message = status
        .conditions
        .first()
        .map(|ready| ready.message.clone())
        .unwrap_or_default();
    ClusterMirrorAnswer {
        own: own_row::<K>(scene, request, Verdict::of_ready_reason(reason), message),
        namespaces,
        status: Some(status),
    }
}

fn own_row<K: Explained>(
    scene: &ClusterMirrorScene<K>,
    request: Option<&Request>,
    verdict: Verdict,
    detail: String,
) -> Row {
    // The kind it copies: a Secret whose keys it publishes as ConfigMaps.
    let kind = match request.is_some_and(Request::publishes_secret) {
        true => Secret::NAME,
        false => K::NAME,
    };
    Row {
        what: What::of_request(&scene.key),
        kind,
        namespace: scene.key.namespace.clone().unwrap_or_default(),
        name: scene.key.name.clone(),
        source: request.map(source_key),
        request: Some(scene.key.clone()),
        verdict,
        detail,
    }
}

/// The rows `explain --namespace` gives for one ClusterMirror (its scene
/// read in that namespace only): what it puts there, would, or cannot;
/// that its selection leaves the namespace out; or, when that cannot be
/// told, the ClusterMirror's own row.
pub fn in_namespace<K: Explained>(
    scene: &ClusterMirrorScene<K>,
    namespace: &str,
    rules: &Rules,
    key: &dyn ChecksumKey<K>,
) -> Vec<Row> {
    // Another install's: what it puts here is that install's to say.
    if scene.class_name != rules.cluster_mirror_class {
        return Vec::new();
    }
    let answer = explain_cluster_mirror(scene, rules, key, Timestamp::now());
    if !answer.namespaces.is_empty() {
        return answer.namespaces;
    }
    match (&scene.request, answer.own.verdict) {
        (Ok(request), verdict) if verdict != Verdict::CannotRead => vec![namespace_row::<K>(
            request,
            namespace,
            Verdict::NotTargeted,
            "its spec.target (namespaceSelector, namespaces) leaves this namespace out".into(),
        )],
        _ => vec![answer.own],
    }
}
