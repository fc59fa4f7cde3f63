use super::*;

use crate::test_fixtures::{SUFFIX, mk_desired_companion, mk_source};
use k8s_openapi::api::core::v1::ConfigMap;

#[test]
fn a_deleted_source_wakes_the_prune_of_its_companion() {
    let wake = source_wakeups(
        &Event::Delete(mk_source("colors", &[])),
        SUFFIX,
        &CopyIndex::default(),
    );
    assert_eq!(
        wake.prune,
        vec![ObjectRef::new("colors-synced").within("ns")]
    );
    assert!(wake.sync.is_empty());
    assert!(!wake.resync, "no mirrors to look for");
}

#[test]
fn a_completed_list_asks_for_a_resync_and_its_objects_wake_nothing_alone() {
    let source = mk_source("colors", &[]);
    let companion = mk_desired_companion(&source, &()).unwrap();
    assert!(source_wakeups::<ConfigMap>(&Event::InitDone, SUFFIX, &CopyIndex::default()).resync);
    assert!(copy_wakeups::<ConfigMap>(&Event::InitDone, SUFFIX, None).resync);
    assert_eq!(
        source_wakeups(&Event::InitApply(source), SUFFIX, &CopyIndex::default()),
        Wake::default()
    );
    assert_eq!(
        copy_wakeups(&Event::InitApply(companion), SUFFIX, None),
        Wake::default()
    );
}

#[test]
fn a_deleted_companion_wakes_the_sync_of_its_source() {
    let source = mk_source("colors", &[]);
    let companion = mk_desired_companion(&source, &()).unwrap();
    let wake = copy_wakeups(&Event::Delete(companion), SUFFIX, None);
    assert_eq!(
        wake.sync,
        vec![(
            ObjectRef::new("colors").within("ns"),
            Reach::Namespace("ns".to_owned())
        )],
        "only the companion is compared again"
    );
}

#[test]
fn a_changed_mirror_wakes_its_source_for_that_namespace_and_a_changed_source_for_everything() {
    let mirror = crate::test_fixtures::mk_mirror("team-a", "home/colors");
    let wake = copy_wakeups(&Event::Apply(mirror), SUFFIX, None);
    assert_eq!(
        wake.sync,
        vec![(
            ObjectRef::new("colors").within("home"),
            Reach::Namespace("team-a".to_owned())
        )]
    );
    let wake = source_wakeups(
        &Event::Apply(mk_source("colors", &[])),
        SUFFIX,
        &CopyIndex::default(),
    );
    assert_eq!(
        wake.sync,
        vec![(ObjectRef::new("colors").within("ns"), Reach::Everything)]
    );
}

fn namespace(name: &str, labels: &[(&str, &str)]) -> NamespaceMeta {
    NamespaceMeta {
        metadata: kube::api::ObjectMeta {
            name: Some(name.to_owned()),
            labels: Some(crate::test_fixtures::mk_map(labels)),
            ..Default::default()
        },
        ..NamespaceMeta::default()
    }
}

fn caches() -> Caches<ConfigMap> {
    use kube::runtime::reflector::store;
    Caches {
        sources: store().0,
        copies: store().0,
        namespaces: Some(store().0),
        mirroring: Default::default(),
        source_bytes: Default::default(),
        index: CopyIndex::default(),
        admitting: Default::default(),
        grants: {
            let grants = crate::index::grants::GrantIndex::default();
            grants.none_exist();
            grants
        },
        ready: tokio::sync::watch::channel(true).1,
    }
}

#[test]
fn a_namespace_relabelled_or_deleted_tells_the_cluster_mirrors_what_it_was() {
    let (caches, consent) = (caches(), crate::test_fixtures::mk_consent());
    let mut seen = HashMap::new();
    let prod = namespace("team-a", &[("env", "prod")]);
    let plain = namespace("team-a", &[]);
    namespace_wakeups(
        &Event::InitApply(prod.clone()),
        &caches,
        &consent,
        &mut seen,
    );
    let facts = |ns: &NamespaceMeta| Some(caches.facts_of(&ns.metadata));
    let relabelled = namespace_wakeups(&Event::Apply(plain.clone()), &caches, &consent, &mut seen);
    assert_eq!(
        relabelled.cluster,
        vec![ClusterWake::Namespace {
            before: facts(&prod),
            after: facts(&plain),
        }]
    );
    let again = namespace_wakeups(&Event::Apply(plain.clone()), &caches, &consent, &mut seen);
    assert!(again.cluster.is_empty(), "nothing selection reads changed");
    let deleted = namespace_wakeups(&Event::Delete(plain.clone()), &caches, &consent, &mut seen);
    assert_eq!(
        deleted.cluster,
        vec![ClusterWake::Namespace {
            before: facts(&plain),
            after: None,
        }]
    );
}

/// A grant's change reaches the kinds as an event of its namespace: the
/// namespace's mirrors are looked at again, and the requests are told, for
/// the Mirrors' sake (a ClusterMirror, which selects by labels alone, is
/// not concerned: `Request::concerned_by`).
#[test]
fn a_grant_change_wakes_the_namespace_s_mirrors_and_tells_the_requests() {
    use crate::decisions::grants::Grant;
    use kube::api::{ApiResource, DynamicObject, GroupVersionKind};
    let (caches, consent) = (caches(), crate::test_fixtures::mk_consent());
    let mut seen = HashMap::new();
    let team = namespace("team-a", &[]);
    namespace_wakeups(
        &Event::InitApply(team.clone()),
        &caches,
        &consent,
        &mut seen,
    );
    let resource = ApiResource::from_gvk(&GroupVersionKind::gvk(
        "mirror.workshop.io",
        "v1alpha1",
        "MirrorGrant",
    ));
    let grant = DynamicObject::new("g", &resource)
        .within("team-a")
        .data(serde_json::json!({"spec": {"from": [{"namespace": "*", "kinds": ["ConfigMap"]}]}}));
    caches.grants.follow(&Event::Apply(grant));
    let granted = namespace_wakeups(&Event::Apply(team.clone()), &caches, &consent, &mut seen);
    let [ClusterWake::Namespace { before, after }] = &granted.cluster[..] else {
        panic!("one namespace change: {:?}", granted.cluster)
    };
    let grants = |facts: &Option<NamespaceFacts>| facts.as_ref().map(|f| f.grants.clone());
    assert_ne!(grants(before), grants(after), "the grants changed");
    let held = seen.get("team-a").map(|facts| facts.grants.clone());
    let lets_in = held.map(|grants| {
        grants
            .letting_in(crate::api::SourceKind::ConfigMap, "home")
            .map(|found| found.map(Grant::name).map(str::to_owned))
    });
    assert_eq!(
        lets_in,
        Some(Ok(Some("g".to_owned()))),
        "what consent read is remembered"
    );
}

#[test]
fn a_mirror_edited_to_name_another_source_wakes_the_source_it_was_taken_from() {
    let edited = crate::test_fixtures::mk_mirror("team-a", "other/colors");
    let taken_from = Some(("home".to_owned(), "colors".to_owned()));
    let wake = copy_wakeups(&Event::Apply(edited), SUFFIX, taken_from);
    let in_team_a = Reach::Namespace("team-a".to_owned());
    assert_eq!(
        wake.sync,
        vec![
            (ObjectRef::new("colors").within("other"), in_team_a.clone()),
            (ObjectRef::new("colors").within("home"), in_team_a),
        ]
    );
}

/// A ClusterMirror `name` copying `source` (`namespace/name`) into the
/// namespaces labelled env=prod.
fn cluster_mirror(name: &str, source: &str) -> Request {
    let (namespace, source_name) = source.split_once('/').unwrap();
    let meta = kube::api::ObjectMeta {
        name: Some(name.to_owned()),
        ..Default::default()
    };
    let spec = serde_json::json!({
        "source": {"kind": "ConfigMap", "namespace": namespace, "name": source_name},
        "target": {"namespaceSelector": {"matchLabels": {"env": "prod"}}},
    });
    Request::of(&crate::api::StoredClusterMirror::read(
        meta,
        Some(&spec),
        None,
    ))
    .unwrap()
}

#[test]
fn a_namespace_leaving_or_joining_the_selection_wakes_the_cluster_mirrors_that_select_it() {
    let served = [
        cluster_mirror("corp-ca", "ns/ca"),
        cluster_mirror("colors", "ns/colors"),
    ];
    let facts = |labels| Some(NamespaceFacts::of(&namespace("team-a", labels).metadata));
    let left = ClusterWake::Namespace {
        before: facts(&[("env", "prod")]),
        after: facts(&[]),
    };
    assert_eq!(left.woken(&served), [cm("corp-ca"), cm("colors")]);
    let elsewhere = ClusterWake::Namespace {
        before: facts(&[]),
        after: facts(&[("env", "dev")]),
    };
    assert!(elsewhere.woken(&served).is_empty());
    let copy = ClusterWake::Copy {
        mirror: cm("corp-ca"),
        name: "ca".into(),
        namespace: "team-a".into(),
    };
    assert_eq!(
        copy.woken(&served),
        [cm("corp-ca")],
        "that copy's ClusterMirror"
    );
}

#[test]
fn a_changed_source_wakes_the_cluster_mirrors_that_copy_it() {
    let served = [
        cluster_mirror("corp-ca", "ns/ca"),
        cluster_mirror("colors", "ns/colors"),
        cluster_mirror("other-ca", "elsewhere/ca"),
    ];
    let configmap = SourceKind::ConfigMap;
    assert_eq!(
        cluster_mirrors_copying(&served, configmap, "ns", "ca"),
        [cm("corp-ca")]
    );
    assert!(cluster_mirrors_copying(&served, configmap, "ns", "gone").is_empty());
    assert!(
        cluster_mirrors_copying(&served, SourceKind::Secret, "ns", "ca").is_empty(),
        "a Secret of that name is another source"
    );
}

#[test]
fn a_mirror_written_wakes_the_prune_of_its_source_s_other_mirrors_in_its_namespace() {
    use crate::test_fixtures::{mk_desired_mirror, mk_mirrored_source};
    let index = CopyIndex::<ConfigMap>::default();
    let source = mk_mirrored_source("team-a,team-b");
    let mirror = |namespace: &str, name: &str| {
        let mut copy = mk_desired_mirror(&source, namespace, &()).unwrap();
        copy.metadata.name = Some(name.into());
        index.observe(&Event::Apply(copy.clone()));
        copy
    };
    mirror("team-a", "colors");
    mirror("team-b", "colors");
    let palette = mirror("team-a", "palette");
    let woken = renamed_mirrors(&Event::Apply(palette.clone()), &index);
    let colors = source.metadata.name.clone().unwrap();
    assert_eq!(woken, [ObjectRef::new(&colors).within("team-a")]);
    assert!(renamed_mirrors(&Event::Delete(palette), &index).is_empty());
}

fn cm(name: &str) -> RequestKey {
    RequestKey::cluster_mirror(name)
}
