//! Attack 6, as the API server sees it: one tenant's sources, each
//! mirrored into many namespaces. The API server and etcd work through
//! every request in flight before or beside a later one, whoever sends
//! it, so what one tenant keeps in flight is what another tenant's heal
//! waits behind. Half the workers each writing 16 copies at once kept up
//! to 128 of one tenant's writes at the API server; one namespace's
//! sources now keep at most 16 (`reconcile::copy_budget`).
//!
//! Counted from kube-apiserver's own audit log: each write's
//! `requestReceivedTimestamp` and `stageTimestamp` (its response
//! complete), and the most of them open at once. No duration is
//! asserted, only how many overlap.

use std::path::PathBuf;

use serde_json::Value;

use super::*;

use crate::common::to;

const SOURCES: usize = 16;
/// Enough for each fan-out to keep its 16 writes going for a while:
/// 1,024 mirrors in all.
const NAMESPACES: usize = 64;
/// One namespace's share of the budget of copies in flight, over the
/// least one copy counts for (`copy_budget::WRITE_FLOOR_BYTES`).
const MOST_AT_ONCE: usize = 16;

/// Where the hostile plane's kube-apiserver writes its audit log: apart
/// for each test process, in the build's scratch directory.
fn audit_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("hostile-audit-{}", std::process::id()))
}

fn audit_log() -> PathBuf {
    audit_dir().join("audit.log")
}

/// kube-apiserver's flags for an audit log of every ConfigMap write, its
/// metadata only, one line per write once its response is complete.
pub(super) fn audit_args() -> Vec<String> {
    let dir = audit_dir();
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("create {}: {e}", dir.display()));
    let policy = dir.join("policy.yaml");
    let rules = r#"apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived", "ResponseStarted"]
rules:
  - level: Metadata
    verbs: ["create", "update", "patch"]
    resources:
      - group: ""
        resources: ["configmaps"]
  - level: None
"#;
    std::fs::write(&policy, rules).unwrap_or_else(|e| panic!("write {}: {e}", policy.display()));
    vec![
        format!("--audit-policy-file={}", policy.display()),
        format!("--audit-log-path={}", audit_log().display()),
        "--audit-log-mode=blocking".to_owned(),
    ]
}

/// One write as the audit log tells it: when the API server received it
/// and when its response was complete, as kube-apiserver writes them
/// (RFC 3339, UTC, always six digits of microseconds), so that they
/// compare as text.
#[derive(Debug)]
struct AuditedWrite {
    received: String,
    completed: String,
}

/// The ConfigMap writes the audit log holds into namespaces whose names
/// begin with `prefix`.
fn audited_writes(prefix: &str) -> Vec<AuditedWrite> {
    let text = std::fs::read_to_string(audit_log()).unwrap_or_default();
    text.lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|event| event["stage"] == "ResponseComplete")
        .filter(|event| {
            event["objectRef"]["namespace"]
                .as_str()
                .is_some_and(|namespace| namespace.starts_with(prefix))
        })
        .filter_map(|event| {
            Some(AuditedWrite {
                received: event["requestReceivedTimestamp"].as_str()?.to_owned(),
                completed: event["stageTimestamp"].as_str()?.to_owned(),
            })
        })
        .collect()
}

/// The most writes open at once: a write ending at the very moment
/// another begins is not counted with it.
fn most_at_once(writes: &[AuditedWrite]) -> usize {
    let mut edges: Vec<(&str, i32)> = writes
        .iter()
        .flat_map(|w| [(w.received.as_str(), 1), (w.completed.as_str(), -1)])
        .collect();
    edges.sort();
    let (mut open, mut most) = (0i32, 0i32);
    for (_, step) in edges {
        open += step;
        most = most.max(open);
    }
    usize::try_from(most).unwrap_or(0)
}

#[test]
fn overlapping_writes_are_counted_and_touching_ones_are_not() {
    let write = |received: &str, completed: &str| AuditedWrite {
        received: format!("2026-11-29T10:00:00.{received}Z"),
        completed: format!("2026-11-29T10:00:00.{completed}Z"),
    };
    assert_eq!(most_at_once(&[]), 0);
    let apart = [write("000001", "000002"), write("000002", "000003")];
    assert_eq!(most_at_once(&apart), 1);
    let nested = [
        write("000001", "000009"),
        write("000002", "000004"),
        write("000003", "000005"),
        write("000006", "000007"),
    ];
    assert_eq!(most_at_once(&nested), 3);
}

#[tokio::test]
async fn one_namespace_s_fan_outs_keep_at_most_sixteen_writes_at_the_api_server() {
    let mut tenants = Tenants::new("ht-writes").await;
    tenants.consenting_namespaces(NAMESPACES).await;
    let targets = format!("{}-t", tenants.hostile.namespace);
    let sources = (0..SOURCES).map(|i| {
        let name = format!("fan{i:02}");
        source_with(&name, &[("v", &name)], &[to(&format!("{targets}*"))])
    });
    tenants.create_all(sources.collect()).await;
    // At a cold start every fan-out is due at once.
    tenants.start(&[]).await;
    let wanted = SOURCES * NAMESPACES;
    tenants.wait_for_mirrors(wanted).await;

    // Each write's line is written once its response is complete, which
    // may be just after the mirror can be listed.
    let logged = testenv::wait_for("every mirror's write in the audit log", PATIENCE, || {
        let writes = audited_writes(&targets);
        async move { (writes.len() >= wanted).then_some(writes) }
    })
    .await;
    let writes = logged.unwrap_or_else(|e| panic!("{e:#}"));
    let most = most_at_once(&writes);
    eprintln!(
        "{} writes of {wanted} mirrors: the API server worked on {most} at once at most",
        writes.len()
    );
    assert!(
        most <= MOST_AT_ONCE,
        "the API server worked on {most} of one tenant's writes at once, over {MOST_AT_ONCE}"
    );
    tenants.other_heals().await;
    tenants.still_leads().await;
}
