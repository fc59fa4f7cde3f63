//! The answer's exit code, JSON and table.

use super::*;
use crate::explain::verdicts::{Verdict, What};

fn row(what: What, name: &str, verdict: Verdict) -> Row {
    Row {
        what,
        kind: "ConfigMap",
        namespace: "team-a".into(),
        name: name.into(),
        source: Some("team-a/colors".into()),
        request: None,
        verdict,
        detail: format!("{} detail", verdict.as_str()),
    }
}

fn report(rows: Vec<Row>) -> Report {
    Report {
        subject: Subject {
            kind: "ConfigMap".into(),
            namespace: Some("team-a".into()),
            name: "colors".into(),
            is: Is::Source,
        },
        preview: None,
        rows,
        warnings: Vec::new(),
        notes: Vec::new(),
        status: None,
        classes: None,
    }
}

#[test]
fn one_row_not_in_place_makes_exit_code_1() {
    let fine = report(vec![
        row(What::Source, "colors", Verdict::Managed),
        row(What::Companion, "colors-synced", Verdict::InSync),
    ]);
    assert_eq!(fine.exit_code(), 0);
    let mut broken = fine.clone();
    broken
        .rows
        .push(row(What::Mirror, "colors", Verdict::NotConsenting));
    assert_eq!(broken.exit_code(), 1);
    assert_eq!(broken.to_json()["ok"], false);
    assert!(broken.to_table().contains("Not in place: 1 of 3."));
}

#[test]
fn the_json_has_its_version_and_every_row_s_verdict() {
    let json = report(vec![row(What::Mirror, "colors", Verdict::NameTaken)]).to_json();
    assert_eq!(json["version"], 1);
    assert_eq!(json["subject"]["is"], "source");
    assert_eq!(json["rows"][0]["verdict"], "name-taken");
    assert_eq!(json["rows"][0]["ok"], false);
    assert_eq!(json["rows"][0]["what"], "mirror");
    assert_eq!(json["preview"], Value::Null);
}

#[test]
fn the_table_s_columns_are_aligned_and_the_source_shown_only_when_it_varies() {
    let table = report(vec![
        row(What::Source, "colors", Verdict::Managed),
        row(What::Companion, "colors-synced", Verdict::InSync),
    ])
    .to_table();
    let header = table
        .lines()
        .find(|l| l.starts_with("WHAT"))
        .expect("a header");
    assert!(!header.contains("SOURCE"), "{table}");
    let verdict_at = header.find("VERDICT").expect("a verdict column");
    for line in table.lines().filter(|l| l.starts_with("companion")) {
        assert_eq!(line.find("in-sync"), Some(verdict_at), "{table}");
    }
}

#[test]
fn the_explain_page_documents_every_verdict() {
    let explain = include_str!("../../../docs/user/explain.md");
    for verdict in Verdict::ALL {
        let line = format!(
            "| `{}` | {} |",
            verdict.as_str(),
            match verdict.ok() {
                true => "yes",
                false => "no",
            }
        );
        assert!(
            explain.contains(&line),
            "docs/user/explain.md lacks the line {line:?}"
        );
    }
}

#[test]
fn every_verdict_has_its_own_name() {
    let mut names: Vec<&str> = Verdict::ALL.iter().map(|v| v.as_str()).collect();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), Verdict::ALL.len());
}

#[test]
fn a_clustermirror_s_classes_are_named_in_its_json_and_when_set_in_its_table() {
    let mut answer = report(vec![row(
        What::ClusterMirror,
        "corp-ca",
        Verdict::OtherClass,
    )]);
    answer.subject = Subject {
        kind: "ClusterMirror".into(),
        namespace: None,
        name: "corp-ca".into(),
        is: Is::ClusterMirror,
    };
    answer.classes = Some(Classes::default());
    let json = answer.to_json();
    assert_eq!(json["clusterMirror"]["class"], "");
    assert_eq!(json["clusterMirror"]["className"], "");
    assert!(
        !answer.to_table().contains("Read as"),
        "the defaults say nothing"
    );
    answer.classes = Some(Classes {
        read_as: String::new(),
        class_name: "platform".into(),
    });
    assert_eq!(answer.to_json()["clusterMirror"]["className"], "platform");
    let table = answer.to_table();
    assert!(
        table.contains(r#"Read as the install of class "" (--cluster-mirror-class); its spec.className is "platform""#),
        "{table}"
    );
}
