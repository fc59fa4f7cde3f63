//! A ClusterMirror's verdicts, from scenes as the cluster would hold them.

use serde_json::json;

use super::*;
use crate::{
    api::{StoredClusterMirror, cluster_mirror::reason},
    contract::CLUSTER_MIRROR_LABEL,
    decisions::cluster_mirror::Request,
};

fn request(namespace: &str, suspend: bool) -> Request {
    let meta = ObjectMeta {
        name: Some("corp-ca".into()),
        uid: Some("cm-uid".into()),
        generation: Some(2),
        ..ObjectMeta::default()
    };
    let spec = json!({
        "source": {"kind": "ConfigMap", "namespace": namespace, "name": "ca"},
        "target": {"namespaceSelector": {"matchLabels": {"env": "prod"}}},
        "suspend": suspend,
    });
    Request::of(&StoredClusterMirror::read(meta, Some(&spec), None)).unwrap()
}

fn source(namespace: &str) -> ConfigMap {
    let mut source = mk_configmap(namespace, "ca");
    source.metadata.uid = Some("source-uid".into());
    source.data = Some(mk_map(&[("ca.crt", "pem")]));
    source
}

fn prod(name: &str) -> NamespaceFacts {
    namespace(name, &[("env", "prod")], None)
}

/// The copy the controller writes in `namespace`.
fn copy_in(request: &Request, namespace: &str) -> ConfigMap {
    let bound = request.bound_source(&source(&request.source_namespace));
    let asked = request.copy_request(None);
    stored(desired(&bound, &asked, namespace, &mk_install(), &()).unwrap())
}

fn scene(
    request: Request,
    namespaces: Vec<NamespaceFacts>,
    at_name: Vec<ConfigMap>,
) -> ClusterMirrorScene<ConfigMap> {
    let copies = at_name
        .iter()
        .filter(|o| labels(&o.metadata).contains_key(CLUSTER_MIRROR_LABEL))
        .cloned()
        .collect();
    ClusterMirrorScene {
        key: crate::decisions::request_key::RequestKey::cluster_mirror("corp-ca"),
        generation: Some(2),
        class_name: request.class_name.clone(),
        source: Ok(Some(source(&request.source_namespace))),
        published: None,
        request: Ok(request),
        stored: None,
        namespaces: Ok(namespaces),
        at_name: Ok(at_name),
        copies: Ok(copies),
        every_namespace: true,
        outranking: Vec::new(),
    }
}

fn of(rows: &[Row], namespace: &str) -> Verdict {
    verdict(rows, What::ClusterMirrorCopy, namespace)
}

#[test]
fn each_namespace_gets_the_controller_s_verdict_and_the_status_counts_them() {
    let request = request("admin", false);
    let mut tenant = mk_configmap("prod-taken", "ca");
    tenant.metadata.uid = Some("tenant".into());
    let mut left = copy_in(&request, "team-left");
    left.metadata.namespace = Some("team-left".into());
    let scene = scene(
        request.clone(),
        vec![
            prod("prod-synced"),
            prod("prod-missing"),
            prod("prod-taken"),
            prod("kube-system"),
            prod("admin"),
            namespace("team-left", &[], None),
            namespace("team-plain", &[], None),
        ],
        vec![copy_in(&request, "prod-synced"), tenant, left],
    );
    let answer = explain_cluster_mirror(&scene, &rules(), &(), Timestamp::now());
    let rows = &answer.namespaces;
    assert_eq!(of(rows, "prod-synced"), Verdict::InSync);
    assert_eq!(of(rows, "prod-missing"), Verdict::Missing);
    assert_eq!(of(rows, "prod-taken"), Verdict::NameTaken);
    assert_eq!(of(rows, "kube-system"), Verdict::ProtectedNamespace);
    assert_eq!(of(rows, "admin"), Verdict::ProtectedNamespace);
    assert_eq!(of(rows, "team-left"), Verdict::Unwanted);
    assert!(rows.iter().all(|row| row.namespace != "team-plain"));
    assert_eq!(answer.own.verdict, Verdict::PartiallySynced);
    let status = answer.status.unwrap();
    assert_eq!((status.selected, status.synced, status.failed), (3, 1, 1));
    assert_eq!(status.failures[0].namespace, "prod-taken");
    assert_eq!(status.failures[0].reason, reason::NAME_TAKEN);
}

#[test]
fn what_blocks_the_whole_request_is_its_verdict_and_each_namespace_s() {
    let elsewhere = request("elsewhere", false);
    let scene = scene(
        elsewhere.clone(),
        vec![prod("prod-a")],
        vec![copy_in(&elsewhere, "prod-a")],
    );
    let answer = explain_cluster_mirror(&scene, &rules(), &(), Timestamp::now());
    assert_eq!(answer.own.verdict, Verdict::SourceNamespaceNotAllowed);
    assert_eq!(of(&answer.namespaces, "prod-a"), Verdict::NotCopied);
    assert!(answer.namespaces[0].detail.contains("kept as it is"));
    let counts = |answer: &super::super::cluster_mirror::ClusterMirrorAnswer| {
        let status = answer.status.as_ref().unwrap();
        (status.selected, status.synced, status.failed)
    };
    assert_eq!(counts(&answer), (1, 0, 0), "selected by the spec alone");

    let namespaces = vec![prod("prod-a"), prod("prod-b"), prod("admin")];
    let mut missing = self::scene(request("admin", false), namespaces, vec![]);
    missing.source = Ok(None);
    let answer = explain_cluster_mirror(&missing, &rules(), &(), Timestamp::now());
    assert_eq!(answer.own.verdict, Verdict::SourceNotFound);
    assert_eq!(counts(&answer), (2, 0, 0), "selected by the spec alone");

    let mut no_kind = rules();
    no_kind.kinds = vec!["Secret"];
    let scene = self::scene(request("admin", false), vec![prod("prod-a")], vec![]);
    let answer = explain_cluster_mirror(&scene, &no_kind, &(), Timestamp::now());
    assert_eq!(answer.own.verdict, Verdict::InvalidSpec);
    assert_eq!(counts(&answer), (0, 0, 0), "a refused spec selects nothing");
}

#[test]
fn a_suspended_mirror_keeps_what_it_no_longer_wants() {
    let request = request("admin", true);
    let mut left = copy_in(&request, "team-left");
    left.metadata.namespace = Some("team-left".into());
    let scene = scene(
        request,
        vec![prod("prod-a"), namespace("team-left", &[], None)],
        vec![left],
    );
    let answer = explain_cluster_mirror(&scene, &rules(), &(), Timestamp::now());
    assert_eq!(answer.own.verdict, Verdict::Suspended);
    assert_eq!(of(&answer.namespaces, "prod-a"), Verdict::Missing);
    let kept = &answer.namespaces[1];
    assert_eq!(kept.verdict, Verdict::Unwanted);
    assert!(kept.detail.contains("suspended"), "{}", kept.detail);
}

#[test]
fn a_namespace_left_out_is_said_so_in_its_own_view() {
    let scene = scene(
        request("admin", false),
        vec![namespace("team-plain", &[], None)],
        vec![],
    );
    let rows = in_namespace(&scene, "team-plain", &rules(), &());
    assert_eq!(of(&rows, "team-plain"), Verdict::NotTargeted);
    assert!(rows[0].verdict.ok());
}

#[test]
fn a_key_never_carry_adds_makes_the_spec_invalid_as_the_controller_reads_it() {
    let meta = ObjectMeta {
        name: Some("corp-ca".into()),
        ..ObjectMeta::default()
    };
    let spec = json!({
        "source": {"kind": "ConfigMap", "namespace": "admin", "name": "ca"},
        "target": {"namespaceSelector": {}, "labels": {"example.com/team": "a"}},
    });
    let request = Request::of(&StoredClusterMirror::read(meta, Some(&spec), None)).unwrap();
    let scene = self::scene(request, vec![prod("prod-a")], vec![]);
    let mut never = rules();
    never.install.never_carried = crate::contract::NeverCarried::new(&["example.com/*".to_owned()]);
    let answer = explain_cluster_mirror(&scene, &never, &(), Timestamp::now());
    assert_eq!(answer.own.verdict, Verdict::InvalidSpec);
    assert!(
        answer.own.detail.contains("example.com/team"),
        "{}",
        answer.own.detail
    );
    let answer = explain_cluster_mirror(&scene, &rules(), &(), Timestamp::now());
    assert_ne!(answer.own.verdict, Verdict::InvalidSpec);
}

#[test]
fn a_clustermirror_of_another_class_is_another_install_s_and_nothing_is_compared() {
    let mut scene = scene(request("admin", false), vec![prod("prod-a")], vec![]);
    scene.class_name = "platform".into();
    let answer = explain_cluster_mirror(&scene, &rules(), &(), Timestamp::now());
    assert_eq!(answer.own.verdict, Verdict::OtherClass);
    assert!(
        answer.own.detail.contains(r#"class "platform""#),
        "{}",
        answer.own.detail
    );
    assert!(
        answer.own.detail.contains("no class"),
        "{}",
        answer.own.detail
    );
    assert!(answer.namespaces.is_empty() && answer.status.is_none());
    assert!(in_namespace(&scene, "prod-a", &rules(), &()).is_empty());
    // Read as that class, it is this install's.
    let mut platform = rules();
    platform.cluster_mirror_class = "platform".into();
    let answer = explain_cluster_mirror(&scene, &platform, &(), Timestamp::now());
    assert_eq!(answer.own.verdict, Verdict::PartiallySynced);
}

#[test]
fn a_label_of_the_source_selector_on_the_copies_makes_the_spec_invalid() {
    let meta = ObjectMeta {
        name: Some("corp-ca".into()),
        ..ObjectMeta::default()
    };
    let spec = json!({
        "source": {"kind": "ConfigMap", "namespace": "admin", "name": "ca"},
        "target": {"namespaceSelector": {}, "labels": {"team": "a"}},
    });
    let request = Request::of(&StoredClusterMirror::read(meta, Some(&spec), None)).unwrap();
    let scene = self::scene(request, vec![prod("prod-a")], vec![]);
    let mut team = rules();
    team.install.source_label_keys = vec!["team".into()];
    let answer = explain_cluster_mirror(&scene, &team, &(), Timestamp::now());
    assert_eq!(answer.own.verdict, Verdict::InvalidSpec);
    assert!(
        answer.own.detail.contains("--selector"),
        "{}",
        answer.own.detail
    );
}

#[test]
fn a_copy_of_a_clustermirror_that_is_gone_is_an_orphan_of_this_install_only() {
    let request = request("admin", false);
    let orphan = copy_in(&request, "team-a");
    let mut other_install = copy_in(&request, "team-b");
    other_install
        .metadata
        .annotations
        .as_mut()
        .unwrap()
        .insert(SOURCE_SELECTOR_ANNOTATION.into(), "other=true".into());
    let copies = [orphan.metadata.clone(), other_install.metadata];
    let gone = orphan_rows("ConfigMap", &copies, &rules(), &BTreeSet::new(), None);
    assert_eq!(gone.len(), 1, "{gone:?}");
    assert_eq!(gone[0].verdict, Verdict::Orphaned);
    assert_eq!(gone[0].namespace, "team-a");
    assert_eq!(gone[0].source.as_deref(), Some("admin/ca"));
    assert_eq!(
        gone[0].request,
        Some(crate::decisions::request_key::RequestKey::cluster_mirror(
            "corp-ca"
        ))
    );
    assert!(gone[0].detail.contains("apply ClusterMirror corp-ca again"));
    let present = BTreeSet::from(["corp-ca".to_owned()]);
    assert!(orphan_rows("ConfigMap", &copies, &rules(), &present, None).is_empty());
    // One that records its CRD is removed (or released) once a leader runs,
    // if that CRD is live.
    let mut marked = orphan.metadata.clone();
    let mark = crate::decisions::cluster_mirror::DeletionMark {
        policy: crate::api::DeletionPolicy::Orphan,
        crd_uid: "crd-1",
    };
    mark.write(marked.annotations.get_or_insert_with(Default::default));
    let marked = [marked];
    let rows_under = |crd| orphan_rows("ConfigMap", &marked, &rules(), &BTreeSet::new(), crd);
    let live = rows_under(Some(Some("crd-1")));
    assert_eq!(live.len(), 1, "{live:?}");
    assert_eq!(live[0].verdict, Verdict::Unwanted);
    assert!(live[0].detail.contains("releases it"), "{}", live[0].detail);
    // Its CRD replaced (or none live): an orphan, as the controller keeps it.
    for crd in [Some(Some("crd-2")), Some(None)] {
        let replaced = rows_under(crd);
        assert_eq!(replaced[0].verdict, Verdict::Orphaned, "{crd:?}");
        assert!(replaced[0].detail.contains("deleted or replaced"));
    }
    let unread = rows_under(None);
    assert_eq!(unread[0].verdict, Verdict::CannotRead);
    assert!(
        unread[0].detail.contains("could not be read"),
        "{}",
        unread[0].detail
    );
}

#[test]
fn a_tenant_s_mirror_of_this_install_at_the_copy_s_name_is_taken_over() {
    let request = request("admin", false);
    let mut tenant_source = source("tenant");
    tenant_source.metadata.name = Some("ca".into());
    tenant_source.metadata.uid = Some("tenant-uid".into());
    let theirs = mirror_in(&tenant_source, "prod-a", &());
    let mut frozen = mirror_in(&tenant_source, "prod-b", &());
    frozen.immutable = Some(true);
    let mut other_install = mirror_in(&tenant_source, "prod-c", &());
    other_install
        .metadata
        .annotations
        .as_mut()
        .unwrap()
        .insert(SOURCE_SELECTOR_ANNOTATION.into(), "other=1".into());
    let scene = scene(
        request,
        vec![prod("prod-a"), prod("prod-b"), prod("prod-c")],
        vec![theirs, frozen, other_install],
    );
    let answer = explain_cluster_mirror(&scene, &rules(), &(), Timestamp::now());
    let rows = &answer.namespaces;
    assert_eq!(of(rows, "prod-a"), Verdict::TakenOver);
    assert_eq!(of(rows, "prod-b"), Verdict::TakenOver);
    assert_eq!(of(rows, "prod-c"), Verdict::NameTaken, "another install's");
    let detail = &rows
        .iter()
        .find(|r| r.namespace == "prod-a")
        .unwrap()
        .detail;
    assert!(
        detail.contains("the mirror of tenant/ca's own request"),
        "{detail}"
    );
}

#[test]
fn copies_that_would_be_too_large_fail_in_every_namespace_as_the_controller_counts_them() {
    let meta = ObjectMeta {
        name: Some("corp-ca".into()),
        uid: Some("cm-uid".into()),
        ..ObjectMeta::default()
    };
    let keys: Vec<_> = (0..3)
        .map(|at| json!({"key": "ca.crt", "as": format!("ca-{at}.crt")}))
        .collect();
    let spec = json!({
        "source": {"kind": "ConfigMap", "namespace": "admin", "name": "ca"},
        "target": {"namespaceSelector": {"matchLabels": {"env": "prod"}}, "keys": keys},
    });
    let request = Request::of(&StoredClusterMirror::read(meta, Some(&spec), None)).unwrap();
    let mut scene = scene(request, vec![prod("prod-a"), prod("prod-b")], vec![]);
    let mut large = source("admin");
    large.data = Some(mk_map(&[("ca.crt", &"x".repeat(400_000))]));
    scene.source = Ok(Some(large));
    let answer = explain_cluster_mirror(&scene, &rules(), &(), Timestamp::now());
    assert_eq!(of(&answer.namespaces, "prod-a"), Verdict::CopyTooLarge);
    let status = answer.status.unwrap();
    assert_eq!((status.selected, status.synced, status.failed), (2, 0, 2));
    assert_eq!(status.failures[0].reason, reason::COPY_TOO_LARGE);
    assert!(status.failures[0].message.contains("1,200,000 bytes"));
}
