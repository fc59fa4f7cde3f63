use kube::runtime::{reflector::store::Writer, watcher::Event};
use serde_json::{Value, json};

use super::*;
use crate::api::StoredStatus;

/// The cache with no API server behind it: `observe` reads none.
fn mirrors() -> (ClusterMirrors, Writer<StoredClusterMirror>) {
    let no_api_server = tower::service_fn(|_: http::Request<kube::client::Body>| async {
        Err::<http::Response<kube::client::Body>, _>(std::io::Error::other("no API server"))
    });
    let writer = Writer::default();
    let client = Client::new(no_api_server, "default");
    let served = |kind| Served {
        kind,
        listed: watch::channel(false).1,
        crd: watch::channel(None).1,
        crd_reads: CrdReads::new(client.clone(), kind),
        deletions: Deletions::default(),
        confirming: Arc::default(),
        made_under: Arc::default(),
    };
    let mirrors = ClusterMirrors {
        store: writer.as_reader(),
        requests: Arc::default(),
        listeners: Arc::default(),
        cluster_mirrors: served(RequestKind::ClusterMirror),
        mirrors: served(RequestKind::Mirror),
        client,
    };
    (mirrors, writer)
}

fn observe(
    mirrors: &ClusterMirrors,
    event: &Event<StoredClusterMirror>,
    before: Option<Option<StoredStatus>>,
) -> Vec<Change> {
    let kind = match event {
        Event::Apply(o) | Event::InitApply(o) | Event::Delete(o) => {
            RequestKind::of(&RequestKey::of_meta(&o.metadata))
        }
        _ => RequestKind::ClusterMirror,
    };
    mirrors.observe(mirrors.served(kind), event, before)
}

fn key(name: &str) -> RequestKey {
    RequestKey::cluster_mirror(name)
}

fn stored(name: &str, generation: i64, spec: Value, status: Value) -> StoredClusterMirror {
    serde_json::from_value(json!({
        "metadata": {"name": name, "uid": format!("uid-{name}"), "generation": generation},
        "spec": spec,
        "status": status,
    }))
    .unwrap()
}

fn spec() -> Value {
    json!({
        "source": {"kind": "ConfigMap", "namespace": "platform", "name": "corp-ca"},
        "target": {"namespaceSelector": {}},
    })
}

/// What `observe` said of an applied object whose status the cache held
/// as `before`, as words.
fn applied(
    mirrors: &ClusterMirrors,
    object: StoredClusterMirror,
    before: Option<&StoredClusterMirror>,
) -> Vec<String> {
    let before = before.map(|before| before.status.clone());
    let changes = observe(mirrors, &Event::Apply(object), before);
    changes.iter().map(said).collect()
}

fn said(change: &Change) -> String {
    match change {
        Change::Request { key, after } => {
            format!("request {} readable={}", key.name, after.is_some())
        }
        Change::StatusWritten { key } => format!("status of {} written", key.name),
        Change::Listed => "listed".to_owned(),
    }
}

#[tokio::test]
async fn a_status_write_of_only_fields_this_version_does_not_read_is_a_write() {
    let (mirrors, _writer) = mirrors();
    let ours = json!({"observedGeneration": 1, "selected": 2, "synced": 2});
    let first = stored("a", 1, spec(), ours.clone());
    assert_eq!(
        applied(&mirrors, first.clone(), None),
        ["request a readable=true"]
    );
    let mut newer = ours.clone();
    newer["keysCopied"] = json!(3);
    let rewritten = stored("a", 1, spec(), newer);
    assert_eq!(
        rewritten.stored_status(),
        first.stored_status(),
        "the same as read"
    );
    assert_eq!(
        applied(&mirrors, rewritten, Some(&first)),
        ["status of a written"]
    );
}

#[tokio::test]
async fn an_unreadable_status_replaced_by_another_is_a_write() {
    let (mirrors, _writer) = mirrors();
    let one = stored("a", 1, spec(), json!({"selected": "many"}));
    let other = stored("a", 1, spec(), json!({"selected": "more"}));
    applied(&mirrors, one.clone(), None);
    assert_eq!(
        applied(&mirrors, other, Some(&one)),
        ["status of a written"]
    );
}

#[tokio::test]
async fn an_object_changed_but_not_its_spec_or_status_says_nothing() {
    let (mirrors, _writer) = mirrors();
    let status = json!({"observedGeneration": 1, "selected": 1});
    let first = stored("a", 1, spec(), status.clone());
    applied(&mirrors, first.clone(), None);
    let mut relabelled = stored("a", 1, spec(), status);
    relabelled.metadata.labels = Some([("team".to_owned(), "q".to_owned())].into());
    assert!(applied(&mirrors, relabelled, Some(&first)).is_empty());
}

#[tokio::test]
async fn a_spec_changed_or_made_unreadable_is_a_request_changed() {
    let (mirrors, _writer) = mirrors();
    let first = stored("a", 1, spec(), json!({}));
    applied(&mirrors, first.clone(), None);
    let mut narrower = spec();
    narrower["target"]["namespaces"] = json!(["team-*"]);
    let second = stored("a", 2, narrower, json!({}));
    assert_eq!(
        applied(&mirrors, second.clone(), Some(&first)),
        ["request a readable=true"]
    );
    assert_eq!(mirrors.request(&key("a")).unwrap().generation, Some(2));
    let mut unknown = spec();
    unknown["target"]["keys"] = json!(["ca.crt"]);
    let third = stored("a", 3, unknown, json!({}));
    assert_eq!(
        applied(&mirrors, third, Some(&second)),
        ["request a readable=false"]
    );
    assert!(
        mirrors.request(&key("a")).is_none(),
        "an unreadable spec asks for nothing"
    );
}

#[tokio::test]
async fn a_list_keeps_the_requests_of_the_listed_only() {
    let (mirrors, mut writer) = mirrors();
    applied(&mirrors, stored("gone", 1, spec(), json!({})), None);
    let kept = stored("kept", 1, spec(), json!({}));
    for event in [Event::Init, Event::InitApply(kept), Event::InitDone] {
        writer.apply_watcher_event(&event);
        let said: Vec<String> = observe(&mirrors, &event, None).iter().map(said).collect();
        let listed = matches!(event, Event::InitDone);
        assert_eq!(said, if listed { vec!["listed"] } else { vec![] });
    }
    let names: Vec<String> = mirrors.requests().iter().map(|r| r.name.clone()).collect();
    assert_eq!(names, ["kept"]);
}

#[tokio::test]
async fn a_deletion_is_a_request_for_nothing() {
    let (mirrors, _writer) = mirrors();
    let object = stored("a", 1, spec(), json!({}));
    applied(&mirrors, object.clone(), None);
    let changes = observe(&mirrors, &Event::Delete(object), None);
    assert_eq!(
        changes.iter().map(said).collect::<Vec<_>>(),
        ["request a readable=false"]
    );
    assert!(mirrors.request(&key("a")).is_none());
}

#[tokio::test]
async fn a_list_of_clustermirrors_keeps_the_mirrors_requests() {
    let (mirrors, mut writer) = mirrors();
    let mirror: StoredClusterMirror = StoredMirror::read(
        serde_json::from_value(json!({"name": "m", "namespace": "team-a", "uid": "u-m"})).unwrap(),
        Some(
            &json!({"source": {"kind": "ConfigMap", "name": "s"}, "target": {"namespaces": ["b"]}}),
        ),
        None,
    )
    .0;
    writer.apply_watcher_event(&Event::Apply(mirror.clone()));
    observe(&mirrors, &Event::Apply(mirror), None);
    let listed = stored("kept", 1, spec(), json!({}));
    writer.apply_watcher_event(&Event::Apply(listed.clone()));
    for event in [Event::Init, Event::InitApply(listed), Event::InitDone] {
        observe(&mirrors, &event, None);
    }
    let mut keys: Vec<String> = mirrors
        .requests()
        .iter()
        .map(|r| r.key().to_string())
        .collect();
    keys.sort();
    assert_eq!(keys, ["clustermirror/kept", "mirror/team-a/m"]);
}
