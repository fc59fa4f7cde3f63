use std::collections::BTreeMap;

use super::*;

/// Every row of the table, with its condition.
fn rows() -> impl Iterator<Item = (Condition, ConditionRow)> {
    Condition::ALL
        .iter()
        .map(|condition| (*condition, condition.row()))
}

#[test]
fn every_warning_reason_is_one_the_contract_names() {
    let declared = include_str!("../warning.rs");
    for (condition, row) in rows() {
        if let Some(reason) = row.reason {
            let constant = format!(": &str = \"{reason}\";");
            assert!(
                declared.contains(&constant),
                "{condition:?}'s reason {reason} is not a constant of contract::warning"
            );
        }
    }
}

#[test]
fn metric_labels_are_unique_but_for_a_name_taken_either_way() {
    let mut by_label: BTreeMap<&str, Vec<Condition>> = BTreeMap::new();
    for (condition, row) in rows() {
        assert!(
            row.metric_label
                .chars()
                .all(|c| c.is_ascii_lowercase() || c == '_'),
            "{condition:?}'s label {}",
            row.metric_label
        );
        by_label
            .entry(row.metric_label)
            .or_default()
            .push(condition);
    }
    let shared: Vec<_> = by_label.values().filter(|each| each.len() > 1).collect();
    assert_eq!(
        shared,
        [&vec![Condition::NameClaimed, Condition::MirrorNameTaken]]
    );
    let told_as_taken = ConditionRow {
        verdict: None,
        ..Condition::MirrorNameTaken.row()
    };
    assert_eq!(
        Condition::NameClaimed.row(),
        told_as_taken,
        "a name claimed is told as any mirror name taken, but for explain's verdict",
    );
}

#[test]
fn a_condition_a_person_is_told_of_is_never_retried_soon() {
    for (condition, row) in rows() {
        if row.reason.is_some() {
            assert_ne!(row.retry, Retry::Soon, "{condition:?}");
        }
    }
}

#[test]
fn a_cluster_mirror_lists_a_failure_by_its_warning_if_it_has_one() {
    for (condition, row) in rows() {
        let expected = match (condition, row.reason) {
            (Condition::NameTaken, _) => NAME_TAKEN,
            (_, Some(reason)) => reason,
            (_, None) => WRITE_FAILED,
        };
        assert_eq!(row.failure, expected, "{condition:?}");
    }
}

#[test]
fn explain_gives_a_verdict_of_its_own_only_to_conditions_a_person_is_told_of() {
    for (condition, row) in rows() {
        let Some(verdict) = row.verdict else { continue };
        assert!(row.reason.is_some(), "{condition:?}");
        assert!(
            verdict.chars().all(|c| c.is_ascii_lowercase() || c == '-'),
            "{condition:?}'s verdict {verdict}"
        );
    }
}
