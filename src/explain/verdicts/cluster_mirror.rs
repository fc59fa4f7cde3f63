//! A ClusterMirror's rows: its own (its Ready condition, as the
//! controller computes it) and one per namespace it selects, is asked for
//! by its spec, or holds one of its copies.
//!
//! The decisions are the controller's: [`Request::blocked`] for what stops
//! the whole request, [`Request::selects`] and the cluster consent for the
//! namespaces, [`Request::desired_copy`] and the plan (through
//! [`compare`]) for each copy, [`copy_fate`] for the copies it holds
//! elsewhere, and [`status::status`] for its conditions.

mod class;

use k8s_openapi::jiff::Timestamp;

use super::*;
use crate::{
    api::ClusterMirrorStatus,
    decisions::cluster_mirror::{
        CopyFate, Request, copy_fate,
        status::{self, Blocked, Failure, Tally},
    },
};
pub use class::class_words;
use class::other_class;

/// Everything read about one ClusterMirror of kind K.
pub struct ClusterMirrorScene<K> {
    pub name: String,
    pub generation: Option<i64>,
    /// Its spec as the controller reads it, or why it cannot be read.
    pub request: Result<Request, String>,
    /// The class its spec names (read even when the rest does not read).
    pub class_name: String,
    /// The status it holds: its conditions' transition times are kept.
    pub stored: Option<ClusterMirrorStatus>,
    pub source: Read<Option<K>>,
    /// The namespaces looked at (every one, or the one explained), less
    /// those being deleted, which the controller no longer writes to.
    pub namespaces: Read<Vec<NamespaceFacts>>,
    /// The objects at its copies' name in those namespaces.
    pub at_name: Read<Vec<K>>,
    /// The objects carrying its label in those namespaces.
    pub copies: Read<Vec<K>>,
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
    install: &Install,
    key: &K::DigestKey,
    now: Timestamp,
) -> ClusterMirrorAnswer {
    if scene.class_name != install.cluster_mirror_class {
        return other_class(scene, install);
    }
    // As the controller reads it: the CRD's rules know only the built-in
    // never-carried keys, and no install's source selector.
    let invalid = match &scene.request {
        Err(why) => Some(why.clone()),
        Ok(request) => request
            .sets_never_carried(&install.never_carried)
            .or_else(|| request.sets_selector_keys(&install.source_label_keys)),
    };
    let (Ok(request), None) = (&scene.request, invalid.as_ref()) else {
        let blocked = Blocked::InvalidSpec(invalid.unwrap_or_default());
        return finish(scene, None, Some(&blocked), Tally::default(), vec![], now);
    };
    let source = &scene.source;
    let allowed = install
        .cluster_mirror_sources
        .contains(&request.source_namespace);
    let blocked = match source {
        _ if !install.kinds.contains(&K::NAME) => Some(match K::NAME {
            "Secret" => Blocked::SecretsDisabled,
            kind => Blocked::InvalidSpec(format!("spec.source.kind {kind:?} is not mirrored")),
        }),
        Err(why) if allowed => {
            return unread(scene, request, format!("cannot read its source: {why}"));
        }
        Err(_) => request.blocked::<K>(false, None, &K::source_rules(install), &[]),
        Ok(source) => request.blocked(
            allowed,
            source.as_ref(),
            &K::source_rules(install),
            &install.reserved_names,
        ),
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
    let mut tally = Tally::default();
    let mut rows = Vec::new();
    let mut sorted: Vec<&NamespaceFacts> = namespaces.iter().collect();
    sorted.sort_by(|a, b| a.name.cmp(&b.name));
    for namespace in sorted {
        let here = |object: &&K| object.meta().namespace.as_deref() == Some(&namespace.name);
        let at = at_name
            .iter()
            .filter(here)
            .find(|object| object.meta().name.as_deref() == Some(&request.target_name));
        let selected = request.selects(namespace, &install.cluster_consent);
        if selected {
            if blocked.as_ref().is_none_or(Blocked::counts_selected) {
                tally.selected += 1;
            }
            let row = match &bound {
                Some(bound) => {
                    selected_row(request, bound, namespace, at, install, key, &mut tally)
                }
                None => not_copied(request, blocked.as_ref(), namespace, at, install),
            };
            rows.push(row);
        } else if request.asks_for(namespace) {
            rows.push(never_written::<K>(request, namespace));
        }
        for copy in copies.iter().filter(here) {
            let at_target = copy.meta().name.as_deref() == Some(&request.target_name);
            if !(selected && at_target) {
                rows.push(held(request, copy, namespace, install));
            }
        }
    }
    finish(scene, Some(request), blocked.as_ref(), tally, rows, now)
}

/// The row of one selected namespace, compared as the controller's plan
/// compares it; counted in `tally` as synced or failed as the controller
/// counts it.
fn selected_row<K: Explained>(
    request: &Request,
    bound: &K,
    namespace: &NamespaceFacts,
    actual: Option<&K>,
    install: &Install,
    key: &K::DigestKey,
    tally: &mut Tally,
) -> Row {
    let desired = request.desired_copy(bound, &namespace.name, key, &install.selector);
    let (verdict, detail) = match (desired, actual) {
        (Err(refusal), _) => (
            Verdict::NotCopied,
            format!("its copy cannot be built ({refusal:?}): nothing is written"),
        ),
        (Ok(_), None) => (
            Verdict::Missing,
            "it does not exist: the controller writes it".into(),
        ),
        (Ok(desired), Some(actual)) => compare(desired, actual, bound.meta(), install, key),
    };
    if verdict.ok() {
        tally.synced += 1;
    }
    if verdict == Verdict::NameTaken {
        // The controller's words, so that the status is the one it writes.
        tally.failures.push(Failure {
            namespace: namespace.name.clone(),
            reason: crate::api::cluster_mirror::reason::NAME_TAKEN,
            message: format!(
                "{}/{} already exists and was not written by this ClusterMirror; it is left untouched",
                namespace.name, request.target_name
            ),
            retried: false,
        });
    }
    let detail = match request.suspend && !verdict.ok() && verdict != Verdict::NameTaken {
        true => format!("{detail}; but it is suspended: nothing is written until it resumes"),
        false => detail,
    };
    namespace_row::<K>(request, &namespace.name, verdict, detail)
}

/// The row of a selected namespace while the ClusterMirror copies nothing.
fn not_copied<K: Explained>(
    request: &Request,
    blocked: Option<&Blocked>,
    namespace: &NamespaceFacts,
    at: Option<&K>,
    install: &Install,
) -> Row {
    let why = blocked.map_or_else(|| "its source cannot be read".into(), Blocked::message);
    let here = match at {
        None => "there is no copy here".to_owned(),
        Some(object) if cluster_mirror_of(object.meta()) == Some(request.name.as_str()) => {
            "its copy here is kept as it is".into()
        }
        Some(object) => format!("the name is held by {}", whose(object.meta(), install)),
    };
    namespace_row::<K>(
        request,
        &namespace.name,
        Verdict::NotCopied,
        format!("{why}; {here}"),
    )
}

/// The row of a namespace the spec asks for that no ClusterMirror writes.
fn never_written<K: Explained>(request: &Request, namespace: &NamespaceFacts) -> Row {
    let detail = match namespace.name == request.source_namespace {
        true => "the source's own namespace: never written, and not counted as selected",
        false => {
            "protected (or a namespace ClusterMirror sources may come from): never written, even when selected, and not counted as selected"
        }
    };
    namespace_row::<K>(
        request,
        &namespace.name,
        Verdict::ProtectedNamespace,
        detail.into(),
    )
}

/// The row of a copy carrying the ClusterMirror's label that is not its
/// copy in a selected namespace: another install's, or one the prune loop
/// removes (or keeps, while suspended).
fn held<K: Explained>(
    request: &Request,
    copy: &K,
    namespace: &NamespaceFacts,
    install: &Install,
) -> Row {
    let meta = copy.meta();
    let fate = copy_fate(
        meta,
        K::NAME,
        &install.selector,
        true,
        true,
        Some(request),
        Some(namespace),
        &install.cluster_consent,
    );
    let (verdict, detail) = match fate {
        _ if !crate::contract::written_under(meta, &install.selector) => (
            Verdict::OtherInstall,
            format!(
                "{}: this install leaves it alone",
                whose(meta, install)
            ),
        ),
        CopyFate::Keep => (
            Verdict::Unwanted,
            "not wanted here any more, but the ClusterMirror is suspended: kept until it resumes".into(),
        ),
        CopyFate::Unwanted | CopyFate::UnwantedIfCrdLive => (
            Verdict::Unwanted,
            "the ClusterMirror no longer selects this namespace, or copies another source or name: the controller removes it".into(),
        ),
    };
    let mut row = namespace_row::<K>(request, &namespace.name, verdict, detail);
    row.name = meta.name.clone().unwrap_or_default();
    row
}

fn namespace_row<K: Explained>(
    request: &Request,
    namespace: &str,
    verdict: Verdict,
    detail: String,
) -> Row {
    Row {
        what: What::ClusterMirrorCopy,
        kind: K::NAME,
        namespace: namespace.to_owned(),
        name: request.target_name.clone(),
        source: Some(source_key(request)),
        cluster_mirror: Some(request.name.clone()),
        verdict,
        detail,
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
    Row {
        what: What::ClusterMirror,
        kind: K::NAME,
        namespace: String::new(),
        name: scene.name.clone(),
        source: request.map(source_key),
        cluster_mirror: Some(scene.name.clone()),
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
    install: &Install,
    key: &K::DigestKey,
) -> Vec<Row> {
    // Another install's: what it puts here is that install's to say.
    if scene.class_name != install.cluster_mirror_class {
        return Vec::new();
    }
    let answer = explain_cluster_mirror(scene, install, key, Timestamp::now());
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
