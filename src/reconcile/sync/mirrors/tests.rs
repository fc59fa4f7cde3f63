use super::*;
use crate::reconcile::soonest::soonest;

/// The outcomes of writes to one namespace each, folded as the fan-out
/// folds them.
fn written(results: Vec<Result<(), Error>>) -> Outcomes {
    Outcomes::fold(
        results
            .into_iter()
            .enumerate()
            .map(|(at, result)| (format!("ns-{at}"), result.map(|()| true))),
    )
}

fn reasons(outcome: Result<(), Error>) -> Vec<&'static str> {
    let error = outcome.expect_err("a failure");
    error
        .parts()
        .iter()
        .filter_map(Error::event_reason)
        .collect()
}

#[test]
fn a_taken_mirror_name_does_not_hide_a_protected_namespace() {
    let taken = Err(Error::NameTaken {
        name: "team-a/settings".into(),
    });
    let outcome = mirror_outcome(written(vec![Ok(()), taken]), vec!["kube-system".into()]);
    assert_eq!(
        reasons(outcome),
        [
            warning::MIRROR_NAME_TAKEN,
            warning::MIRROR_NAMESPACE_PROTECTED
        ]
    );
}

#[test]
fn a_transient_failure_is_retried_soon_and_tells_nothing_yet() {
    let outcome = mirror_outcome(
        written(vec![
            Err(Error::Stale("conflict".into())),
            Err(Error::NameTaken { name: "b/s".into() }),
        ]),
        vec!["kube-system".into()],
    );
    assert!(matches!(outcome, Err(Error::Stale(_))));
}

#[test]
fn a_refused_key_is_told_beside_the_mirrors_conditions() {
    let mirrors = mirror_outcome(written(vec![]), vec!["kube-system".into()]);
    let outcome = soonest([Ok(()), mirrors, Err(Error::CopyKeyRefused("app".into()))]);
    assert_eq!(
        reasons(outcome),
        [
            warning::MIRROR_NAMESPACE_PROTECTED,
            warning::COPY_KEY_REFUSED
        ]
    );
}

#[test]
fn names_held_by_others_and_names_a_clustermirror_wants_are_one_condition() {
    let outcome = mirror_outcome(
        written(vec![
            Err(Error::NameClaimed {
                name: "prod/corp-ca".into(),
                cluster_mirror: "corp-ca".into(),
            }),
            Ok(()),
            Err(Error::NameTaken {
                name: "team-a/corp-ca".into(),
            }),
        ]),
        vec![],
    );
    let error = outcome.expect_err("a failure");
    assert_eq!(error.event_reason(), Some(warning::MIRROR_NAME_TAKEN));
    assert_eq!(error.parts().len(), 1, "{error}");
    assert_eq!(
        error.to_string(),
        "team-a/corp-ca already exist(s) and is not a mirror of this source; left untouched; \
         prod/corp-ca (ClusterMirror corp-ca) is a ClusterMirror's copy's name, which outranks \
         a source's own mirror; left to it"
    );
    assert_eq!(error.retry(), crate::reconcile::error::Retry::Slowly);
}
