//! What becomes of a copy a ClusterMirror wrote, and how a released one
//! looks.

use super::*;
use crate::decisions::copy_verdict::{
    CopyVerdict, PruneRules, Seen, Unwanted, Witnessed, copy_fate,
};

fn prune_rules<'a>(kind: SourceKind, install: &'a Install, consent: &'a Consent) -> PruneRules<'a> {
    PruneRules {
        kind,
        install,
        consent,
    }
}

/// The install of selector `sel=1` whose reserved names are `reserved`.
fn install_reserving(reserved: &[&str]) -> Install {
    Install {
        reserved_names: reserved.iter().map(|&name| name.to_owned()).collect(),
        ..install_of("sel=1")
    }
}

fn seen(request: Option<&Request>, deletion: Option<Witnessed>) -> Seen<'_> {
    Seen {
        listed: true,
        exists: request.is_some(),
        request,
        deletion,
    }
}

#[test]
fn a_suspended_clustermirror_keeps_every_copy_whatever_its_spec_becomes() {
    let request = prod_teams();
    let copy = copy_of(
        &request,
        &mk_source("colors", &[("a", "1")]),
        "team-a",
        "sel=1",
    );
    let consent = consent();
    let reserving = install_reserving(&["shared"]);
    let reserving_none = install_reserving(&[]);
    let unselected = mk_namespace("team-a", mk_map(&[]));
    let mut suspended = request.clone();
    suspended.suspend = true;
    suspended.kind = SourceKind::Secret;
    suspended.source_name = "other".into();
    suspended.target_name = "renamed".into();
    let fate = |request: &Request, install: &Install| {
        copy_fate(
            &copy.metadata,
            Some(&unselected),
            &prune_rules(SourceKind::ConfigMap, install, &consent),
            &seen(Some(request), None),
        )
    };
    assert_eq!(fate(&suspended, &reserving), CopyVerdict::Keep);
    let mut resumed = suspended.clone();
    resumed.suspend = false;
    let not_asked = CopyVerdict::Unwanted(Unwanted::NotAskedByClusterMirror);
    assert_eq!(fate(&resumed, &reserving_none), not_asked);
    let selected = copy_fate(
        &copy.metadata,
        Some(&prod("team-a")),
        &prune_rules(SourceKind::ConfigMap, &reserving, &consent),
        &seen(Some(&request), None),
    );
    assert_eq!(selected, not_asked, "a name reserved later");
}

#[test]
fn only_a_deletion_seen_with_its_crd_live_removes_copies_and_an_absence_orphans_them() {
    let request = prod_teams();
    let copy = copy_of(
        &request,
        &mk_source("colors", &[("a", "1")]),
        "team-a",
        "sel=1",
    );
    assert_eq!(bound_cluster_mirror_uid(&copy.metadata), Some("cm-uid"));
    let consent = consent();
    let install = install_reserving(&[]);
    let rules = prune_rules(SourceKind::ConfigMap, &install, &consent);
    let fate = |seen: Seen<'_>| copy_fate(&copy.metadata, Some(&prod("team-a")), &rules, &seen);
    let witnessed = |policy, crd_live| Witnessed { policy, crd_live };
    assert_eq!(
        fate(seen(None, None)),
        CopyVerdict::Orphaned,
        "absent, unseen"
    );
    assert_eq!(
        fate(seen(None, Some(witnessed(DeletionPolicy::Delete, None)))),
        CopyVerdict::ClusterMirrorDeleted(DeletionPolicy::Delete)
    );
    assert_eq!(
        fate(seen(
            None,
            Some(witnessed(DeletionPolicy::Orphan, Some(true)))
        )),
        CopyVerdict::ClusterMirrorDeleted(DeletionPolicy::Orphan)
    );
    assert_eq!(
        fate(seen(
            None,
            Some(witnessed(DeletionPolicy::Delete, Some(false)))
        )),
        CopyVerdict::Orphaned,
        "gone with its CRD"
    );
    let unlisted = Seen {
        listed: false,
        ..seen(None, None)
    };
    assert_eq!(fate(unlisted), CopyVerdict::Keep);
    let unreadable = Seen {
        exists: true,
        ..seen(None, None)
    };
    assert_eq!(fate(unreadable), CopyVerdict::Keep, "there, if unreadable");
    let mut other_install = copy.metadata.clone();
    other_install
        .annotations
        .as_mut()
        .unwrap()
        .insert(SOURCE_SELECTOR_ANNOTATION.into(), "sel=2".into());
    let theirs = copy_fate(
        &other_install,
        Some(&prod("team-a")),
        &rules,
        &seen(None, None),
    );
    assert_eq!(theirs, CopyVerdict::Keep);
}

#[test]
fn an_absence_nobody_saw_goes_by_the_policy_its_copy_records_until_settled_otherwise() {
    let request = prod_teams();
    let source = mk_source("colors", &[("a", "1")]);
    let bound = request.bound_source(&source);
    let asked = request.copy_request(Some("crd-1"));
    let install = install_reserving(&[]);
    let copy = desired(&bound, &asked, "team-a", &install, &()).unwrap();
    assert_eq!(
        DeletionMark::on(&copy.metadata),
        Some(DeletionMark {
            policy: DeletionPolicy::Delete,
            crd_uid: "crd-1"
        }),
        "its copy records the CRD it was made under"
    );
    let consent = consent();
    let rules = prune_rules(SourceKind::ConfigMap, &install, &consent);
    let fate = |seen: Seen<'_>| copy_fate(&copy.metadata, Some(&prod("team-a")), &rules, &seen);
    assert_eq!(
        fate(seen(None, None)),
        CopyVerdict::ClusterMirrorDeleted(DeletionPolicy::Delete),
        "absent, unseen: the API server is asked"
    );
    let settled = |crd_live| {
        Some(Witnessed {
            policy: DeletionPolicy::Delete,
            crd_live: Some(crd_live),
        })
    };
    assert_eq!(fate(seen(None, settled(false))), CopyVerdict::Orphaned);
    assert_eq!(
        fate(seen(None, settled(true))),
        CopyVerdict::ClusterMirrorDeleted(DeletionPolicy::Delete)
    );
    let there = Seen {
        exists: true,
        ..seen(None, None)
    };
    assert_eq!(fate(there), CopyVerdict::Keep);
    // Not proven made under a CRD: it records none, and is an orphan.
    let unproven = desired(&bound, &request.copy_request(None), "team-a", &install, &()).unwrap();
    assert_eq!(DeletionMark::on(&unproven.metadata), None);
    assert_eq!(
        copy_fate(
            &unproven.metadata,
            Some(&prod("team-a")),
            &rules,
            &seen(None, None)
        ),
        CopyVerdict::Orphaned
    );
}

#[test]
fn a_released_copy_keeps_its_content_and_the_labels_it_was_given_and_loses_every_mark() {
    let request = prod_teams();
    let mut copy = copy_of(
        &request,
        &mk_source("colors", &[("a", "1")]),
        "team-a",
        "sel=1",
    );
    copy.metadata
        .annotations
        .as_mut()
        .unwrap()
        .insert("workshop.io/future".into(), "x".into());
    copy.metadata
        .labels
        .as_mut()
        .unwrap()
        .insert(MANAGED_BY_LABEL.into(), "configmap-mirror".into());
    let data = copy.data.clone();
    release(&mut copy.metadata);
    let keys: Vec<&String> = copy
        .metadata
        .labels
        .iter()
        .flatten()
        .chain(copy.metadata.annotations.iter().flatten())
        .map(|(key, _)| key)
        .collect();
    assert_eq!(keys, ["tier", "note"], "only what the spec asked for");
    assert_eq!(copy.data, data, "the content is not touched");
    assert_eq!(copy.metadata.name.as_deref(), Some("shared"));
}
