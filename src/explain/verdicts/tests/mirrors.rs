//! A Mirror's verdicts: the consent each namespace gives it, by labels or
//! by a grant, and the namespaces it names that refuse it, counted as the
//! controller counts them.

use serde_json::json;

use super::*;
use crate::{
    api::{cluster_mirror::reason, mirror::stored::StoredMirror},
    decisions::{
        cluster_mirror::Request,
        grants::{Grant, NamespaceGrants},
    },
    explain::render::{Is, Report, Subject},
};

fn mirror(targets: &[&str]) -> Request {
    let meta = ObjectMeta {
        name: Some("team-ca".into()),
        namespace: Some("team-a".into()),
        uid: Some("mirror-uid".into()),
        generation: Some(1),
        ..ObjectMeta::default()
    };
    let spec = json!({
        "source": {"kind": "ConfigMap", "name": "ca"},
        "target": {"namespaces": targets},
    });
    Request::of(&StoredMirror::read(meta, Some(&spec), None).0).unwrap()
}

fn source() -> ConfigMap {
    let mut source = mk_configmap("team-a", "ca");
    source.metadata.uid = Some("source-uid".into());
    source.data = Some(mk_map(&[("ca.crt", "pem")]));
    source
}

fn copy_in(request: &Request, namespace: &str) -> ConfigMap {
    let bound = request.bound_source(&source());
    let asked = request.copy_request(None);
    stored(desired(&bound, &asked, namespace, &mk_install(), &()).unwrap())
}

fn granted(name: &str, from: &str) -> NamespaceFacts {
    let spec = json!({"from": [{"namespace": from, "kinds": ["ConfigMap"]}]});
    NamespaceFacts {
        grants: NamespaceGrants::known(vec![Grant::parse("from-team-a", Some(&spec))]),
        ..namespace(name, &[], None)
    }
}

fn scene(request: &Request, namespaces: Vec<NamespaceFacts>) -> ClusterMirrorScene<ConfigMap> {
    let held = copy_in(request, "team-c");
    ClusterMirrorScene {
        key: request.key(),
        generation: Some(1),
        class_name: String::new(),
        source: Ok(Some(source())),
        published: None,
        request: Ok(request.clone()),
        stored: None,
        namespaces: Ok(namespaces),
        at_name: Ok(vec![held.clone()]),
        copies: Ok(vec![held]),
        every_namespace: true,
        outranking: Vec::new(),
    }
}

#[test]
fn a_mirror_s_rows_say_how_each_namespace_consents_and_count_the_named_refusals() {
    let request = mirror(&[
        "team-b",
        "team-c",
        "team-d",
        "kube-system",
        "team-gone",
        "team-x-*",
    ]);
    let mut unknown = namespace("team-x-2", &[], None);
    unknown.grants = NamespaceGrants::NotKnown;
    let namespaces = vec![
        namespace("team-a", &[], None),
        granted("team-b", "team-a"),
        consenting("team-c"),
        granted("team-d", "someone-else"),
        consenting("kube-system"),
        namespace("team-x-1", &[], None),
        unknown,
    ];
    let answer = explain_cluster_mirror(
        &scene(&request, namespaces),
        &rules(),
        &(),
        Timestamp::now(),
    );
    let rows = &answer.namespaces;
    let of = |namespace| verdict(rows, What::NamespacedMirrorCopy, namespace);
    let detail = |namespace: &str| {
        let row = rows.iter().find(|row| row.namespace == namespace).unwrap();
        row.detail.clone()
    };
    assert_eq!(of("team-b"), Verdict::Missing);
    assert!(detail("team-b").contains("consents by MirrorGrant from-team-a"));
    assert_eq!(of("team-c"), Verdict::InSync);
    assert!(detail("team-c").contains("consents by its labels"));
    assert_eq!(of("team-d"), Verdict::NotConsenting);
    assert_eq!(of("kube-system"), Verdict::Protected);
    assert_eq!(of("team-gone"), Verdict::NotConsenting);
    assert_eq!(of("team-x-1"), Verdict::DoesNotAccept, "reached by a glob");
    assert!(Verdict::DoesNotAccept.ok(), "no failure: not counted");
    assert_eq!(of("team-x-2"), Verdict::GrantsNotKnown);
    assert!(rows.iter().all(|row| row.namespace != "team-a"), "its own");
    assert!(
        (rows.iter()).all(|row| row.request == Some(request.key())),
        "{rows:#?}"
    );
    let status = answer.status.unwrap();
    assert_eq!((status.selected, status.synced, status.failed), (5, 1, 3));
    let failures: Vec<(&str, &str)> = (status.failures.iter())
        .map(|failure| (failure.namespace.as_str(), failure.reason.as_str()))
        .collect();
    assert_eq!(
        failures,
        [
            ("kube-system", reason::NAMESPACE_PROTECTED),
            ("team-d", reason::NOT_CONSENTING),
            ("team-gone", reason::NOT_CONSENTING),
        ]
    );
}

#[test]
fn in_one_namespace_a_mirror_names_no_absent_namespace() {
    let request = mirror(&["team-c", "team-gone"]);
    let mut scene = scene(&request, vec![consenting("team-c")]);
    scene.every_namespace = false;
    let answer = explain_cluster_mirror(&scene, &rules(), &(), Timestamp::now());
    assert_eq!(answer.namespaces.len(), 1, "{:#?}", answer.namespaces);
    assert_eq!(answer.namespaces[0].verdict, Verdict::InSync);
}

#[test]
fn a_mirror_s_report_names_it_by_namespace_in_json_and_its_table() {
    let request = mirror(&["team-b"]);
    let answer = explain_cluster_mirror(
        &scene(&request, vec![granted("team-b", "team-a")]),
        &rules(),
        &(),
        Timestamp::now(),
    );
    let mut report = Report::about(Subject {
        kind: "Mirror".into(),
        namespace: Some("team-a".into()),
        name: "team-ca".into(),
        is: Is::Mirror,
    });
    report.rows.push(answer.own);
    report.rows.extend(answer.namespaces);
    report.status = answer.status;
    let json = report.to_json();
    assert_eq!(json["subject"]["is"], "mirror");
    assert_eq!(json["rows"][0]["what"], "namespaced-mirror");
    assert_eq!(json["rows"][1]["what"], "namespaced-mirror-copy");
    assert_eq!(json["rows"][1]["mirror"], "team-a/team-ca");
    assert!(json["rows"][1].get("clusterMirror").is_none());
    assert_eq!(json["mirror"]["status"]["selected"], 1);
    assert_eq!(report.exit_code(), 1, "its copy is missing");
    let table = report.to_table();
    assert!(
        table.starts_with("Mirror team-a/team-ca: copies ConfigMap team-a/ca\n"),
        "{table}"
    );
}

fn cluster_mirror(suspend: bool) -> Request {
    let meta = ObjectMeta {
        name: Some("corp".into()),
        uid: Some("cm-uid".into()),
        ..ObjectMeta::default()
    };
    let spec = json!({
        "source": {"kind": "ConfigMap", "namespace": "admin", "name": "corp"},
        "target": {"namespaces": ["team-*"], "namespaceSelector": {}, "name": "ca"},
        "suspend": suspend,
    });
    let stored = crate::api::StoredClusterMirror::read(meta, Some(&spec), None);
    Request::of(&stored).unwrap()
}

#[test]
fn a_clustermirror_that_writes_claims_a_mirror_s_name_as_the_controller_says() {
    let request = mirror(&["team-c"]);
    let mut writing = scene(&request, vec![consenting("team-c")]);
    writing.outranking = vec![cluster_mirror(false)];
    let answer = explain_cluster_mirror(&writing, &rules(), &(), Timestamp::now());
    let row = &answer.namespaces[0];
    assert_eq!(row.verdict, Verdict::NameTaken, "{row:#?}");
    assert!(
        row.detail
            .contains("ca is claimed by ClusterMirror corp, which outranks a Mirror")
    );
    let status = answer.status.unwrap();
    assert_eq!((status.selected, status.synced, status.failed), (1, 0, 1));
    assert_eq!(status.failures[0].reason, reason::NAME_TAKEN);

    // Suspended, and not holding the name: the Mirror's copy stays in sync.
    let mut suspended = scene(&request, vec![consenting("team-c")]);
    suspended.outranking = vec![cluster_mirror(true)];
    let answer = explain_cluster_mirror(&suspended, &rules(), &(), Timestamp::now());
    assert_eq!(answer.namespaces[0].verdict, Verdict::InSync);
}

#[test]
fn a_copy_where_the_grants_are_unknown_gets_one_row_that_says_so() {
    let request = mirror(&["team-*"]);
    let mut unknown = namespace("team-c", &[], None);
    unknown.grants = NamespaceGrants::NotKnown;
    let answer = explain_cluster_mirror(
        &scene(&request, vec![unknown]),
        &rules(),
        &(),
        Timestamp::now(),
    );
    assert_eq!(answer.namespaces.len(), 1, "{:#?}", answer.namespaces);
    assert_eq!(answer.namespaces[0].verdict, Verdict::GrantsNotKnown);
    assert!(answer.namespaces[0].detail.contains("not known here"));
}
