//! Which objects at a ClusterMirror's copy's name it takes over, and which
//! keep their name.

use super::*;
use crate::contract::cluster_mirror_of;

/// The request's copy of `source` in `team-a` at the source's own name,
/// where the source's label-driven mirror would be.
fn copy_at_the_source_s_name(request: &Request, source: &ConfigMap) -> ConfigMap {
    let mut desired = copy_of(request, source, "team-a", "sel=1");
    desired.metadata.name = source.metadata.name.clone();
    desired
}

#[test]
fn a_clustermirror_takes_over_this_install_s_own_label_driven_mirror_only() {
    let request = prod_teams();
    let source = mk_source("colors", &[("a", "1")]);
    let bound = request.bound_source(&source);
    let desired = copy_at_the_source_s_name(&request, &source);
    let ours = mirror_of_by(&source, "sel=1");
    let mut unmarked = ours.clone();
    unmarked
        .metadata
        .annotations
        .as_mut()
        .unwrap()
        .remove(SOURCE_SELECTOR_ANNOTATION);
    let plan_over = |existing: &ConfigMap| {
        plan::plan(
            desired.clone(),
            Some(&CachedCopy::of(existing)),
            &bound.metadata,
            &[],
            &(),
        )
    };
    match plan_over(&ours) {
        Ok(Write::Replace { copy, why }) => {
            assert_eq!(why, plan::Difference::TakenOver);
            assert_eq!(cluster_mirror_of(&copy.metadata), Some("corp-ca"));
            assert_eq!(
                copy.metadata.annotations.as_ref().unwrap()[MIRROR_OF_UID_ANNOTATION],
                "uid-1.cm-uid"
            );
        }
        other => panic!("this install's label-driven mirror is taken over: {other:?}"),
    }
    let mut frozen = ours.clone();
    frozen.immutable = Some(true);
    assert!(
        matches!(plan_over(&frozen), Ok(Write::DeleteToRecreate { .. })),
        "an immutable one is recreated"
    );
    let another_install = mirror_of_by(&source, "sel=2");
    for (existing, whose) in [
        (&unmarked, "an older release's, with no selector"),
        (&another_install, "another install's"),
    ] {
        assert_eq!(
            plan_over(existing),
            Err(plan::NameTaken),
            "{whose} label-driven mirror keeps its name"
        );
    }
}

#[test]
fn a_clustermirror_s_copy_is_taken_by_neither_another_clustermirror_nor_the_label_path() {
    let request = prod_teams();
    let source = mk_source("colors", &[("a", "1")]);
    let bound = request.bound_source(&source);
    let desired = copy_at_the_source_s_name(&request, &source);
    let mut other = desired.clone();
    other
        .metadata
        .labels
        .as_mut()
        .unwrap()
        .insert(CLUSTER_MIRROR_LABEL.into(), "another".into());
    let taken = plan::plan(
        desired.clone(),
        Some(&CachedCopy::of(&other)),
        &bound.metadata,
        &[],
        &(),
    );
    assert_eq!(
        taken,
        Err(plan::NameTaken),
        "another ClusterMirror keeps its name"
    );
    let ours = plan::plan(
        desired.clone(),
        Some(&CachedCopy::of(&desired)),
        &bound.metadata,
        &[],
        &(),
    );
    assert_eq!(ours, Ok(Write::Nothing));
    let label_desired = mirror_of_by(&source, "sel=1");
    let taken = plan::plan(
        label_desired,
        Some(&CachedCopy::of(&desired)),
        &source.metadata,
        &[],
        &(),
    );
    assert_eq!(
        taken,
        Err(plan::NameTaken),
        "the label path never takes a ClusterMirror's copy"
    );
}

#[test]
fn a_claim_on_a_name_takes_effect_only_where_the_clustermirror_writes() {
    let writing = prod_teams();
    let mut suspended = prod_teams();
    suspended.suspend = true;
    let selected = prod("team-a");
    // (writing now, its copy holds the name already) -> claims
    let cases = [
        (&writing, true, false, true),
        (&writing, false, false, false),
        (&writing, false, true, true),
        (&suspended, true, false, false),
        (&suspended, true, true, true),
    ];
    for (request, writes, holds, claims) in cases {
        assert_eq!(
            request.claims(&selected, &consent(), writes, holds),
            claims,
            "suspended {}, writing {writes}, holds {holds}",
            request.suspend
        );
    }
    let not_selected = mk_namespace("team-b", mk_map(&[]));
    assert!(!writing.claims(&not_selected, &consent(), true, true));
}
