//! `explain`'s answer, and its two forms: an aligned table for people and
//! JSON for programs (schema version [`SCHEMA_VERSION`], documented in
//! docs/user/explain.md). Pure.

use std::borrow::Cow;

use serde_json::{Value, json};

use super::verdicts::{Preview, Row, Warning};
use crate::{api::ClusterMirrorStatus, decisions::request_key::RequestKey};

/// The version of the JSON output's schema. A field is never renamed or
/// given another meaning within one version; new fields may appear.
pub const SCHEMA_VERSION: u32 = 1;

/// What was asked about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subject {
    /// `ConfigMap`, `Secret`, `Namespace` or `ClusterMirror`, as its type
    /// names it.
    pub kind: Cow<'static, str>,
    pub namespace: Option<String>,
    pub name: String,
    pub is: Is,
}

/// What the subject turned out to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Is {
    Source,
    Copy,
    Namespace,
    ClusterMirror,
    Mirror,
    /// It could not be read, or does not exist.
    Unknown,
}

impl Is {
    fn as_str(self) -> &'static str {
        match self {
            Is::Source => "source",
            Is::Copy => "copy",
            Is::Namespace => "namespace",
            Is::ClusterMirror => "clustermirror",
            Is::Mirror => "mirror",
            Is::Unknown => "unknown",
        }
    }

    /// A ClusterMirror or a Mirror: a request for copies.
    fn is_request(self) -> bool {
        matches!(self, Is::ClusterMirror | Is::Mirror)
    }
}

#[derive(Debug, Clone)]
pub struct Report {
    pub subject: Subject,
    pub preview: Option<Preview>,
    pub rows: Vec<Row>,
    /// The last Warning Events about the subject (and, for a copy, about
    /// its source), oldest first.
    pub warnings: Vec<Warning>,
    /// What could not be checked, which does not change the exit code.
    pub notes: Vec<String>,
    /// A ClusterMirror's status as the controller computes it from what
    /// was read.
    pub status: Option<ClusterMirrorStatus>,
    /// A ClusterMirror's class, and the install's it was read as.
    pub classes: Option<Classes>,
}

/// The class explain read a ClusterMirror as (`--cluster-mirror-class`),
/// and the one its spec names: the install serves it when they are equal.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Classes {
    pub read_as: String,
    pub class_name: String,
}

impl Report {
    /// A report about `subject` with nothing in it yet.
    pub fn about(subject: Subject) -> Report {
        Report {
            subject,
            preview: None,
            rows: Vec::new(),
            warnings: Vec::new(),
            notes: Vec::new(),
            status: None,
            classes: None,
        }
    }

    /// Whether everything asked for is in place.
    pub fn ok(&self) -> bool {
        self.rows.iter().all(|row| row.verdict.ok())
    }

    /// 0 when everything asked for is in place, 1 when something is not.
    pub fn exit_code(&self) -> u8 {
        match self.ok() {
            true => 0,
            false => 1,
        }
    }

    pub fn to_json(&self) -> Value {
        let rows: Vec<Value> = self
            .rows
            .iter()
            .map(|row| {
                let mut json = json!({
                    "what": row.what.as_str(),
                    "kind": row.kind,
                    "namespace": row.namespace,
                    "name": row.name,
                    "source": row.source,
                    "verdict": row.verdict.as_str(),
                    "ok": row.verdict.ok(),
                    "detail": row.detail,
                });
                // Only on the rows of ClusterMirrors and Mirrors: the
                // others' stay as they were.
                match &row.request {
                    None => {}
                    Some(RequestKey {
                        namespace: None,
                        name,
                    }) => json["clusterMirror"] = json!(name),
                    Some(RequestKey {
                        namespace: Some(namespace),
                        name,
                    }) => json["mirror"] = json!(format!("{namespace}/{name}")),
                }
                json
            })
            .collect();
        let warnings: Vec<Value> = self
            .warnings
            .iter()
            .map(|warning| {
                json!({
                    "regarding": warning.regarding,
                    "reason": warning.reason,
                    "message": warning.message,
                    "count": warning.count,
                    "lastSeen": warning.last_seen.map(|t| t.to_string()),
                })
            })
            .collect();
        let mut json = json!({
            "version": SCHEMA_VERSION,
            "subject": {
                "kind": self.subject.kind,
                "namespace": self.subject.namespace,
                "name": self.subject.name,
                "is": self.subject.is.as_str(),
            },
            "preview": self.preview.as_ref().map(|p| json!({
                "mirrorTo": p.mirror_to,
                "mirrorToSelector": p.mirror_to_selector,
            })),
            "ok": self.ok(),
            "rows": rows,
            "warnings": warnings,
            "notes": self.notes,
        });
        let request = match self.subject.is {
            Is::ClusterMirror => Some("clusterMirror"),
            Is::Mirror => Some("mirror"),
            _ => None,
        };
        if let Some(request) = request {
            json[request] = json!({"status": self.status});
            if let Some(classes) = &self.classes {
                json[request]["class"] = json!(classes.read_as);
                json[request]["className"] = json!(classes.class_name);
            }
        }
        json
    }

    /// The table: a heading line, one line per row (the kind and source
    /// columns only when they vary), the Warnings, the notes and a summary.
    pub fn to_table(&self) -> String {
        let mut out = self.heading();
        out.push('\n');
        out.push_str(&self.rows_table());
        out.push_str(&self.warnings_table());
        for note in &self.notes {
            out.push_str(&format!("\nNote: {note}"));
        }
        if !self.notes.is_empty() {
            out.push('\n');
        }
        let missing = self.rows.iter().filter(|row| !row.verdict.ok()).count();
        out.push_str(&match missing {
            0 => "\nEverything asked for is in place.\n".to_owned(),
            n => format!("\nNot in place: {n} of {}.\n", self.rows.len()),
        });
        out
    }

    /// What is explained, the classes when either is not the default, and
    /// the preview's annotations: a line each.
    fn heading(&self) -> String {
        let subject = match &self.subject.namespace {
            Some(namespace) => format!("{} {namespace}/{}", self.subject.kind, self.subject.name),
            None => format!("{} {}", self.subject.kind, self.subject.name),
        };
        let own = self.rows.first().filter(|_| self.subject.is.is_request());
        // Copies of another kind than their source's: a Secret's keys
        // published as ConfigMaps.
        let copies_as = |own: &Row| {
            let kinds = self.rows.iter().skip(1).map(|row| row.kind);
            match kinds
                .into_iter()
                .find(|kind| !kind.is_empty() && *kind != own.kind)
            {
                Some(kind) => format!(" as {kind}s"),
                None => String::new(),
            }
        };
        let mut out = match (self.subject.is, own) {
            (Is::ClusterMirror | Is::Mirror, Some(own)) => format!(
                "{subject}: copies {} {}{}\n",
                own.kind,
                own.source.as_deref().unwrap_or_default(),
                copies_as(own)
            ),
            (Is::Unknown | Is::ClusterMirror | Is::Mirror, _) => format!("{subject}\n"),
            (is, _) => format!("{subject}: a {}\n", is.as_str()),
        };
        // Said when either is not the default: two installs are told apart.
        if let Some(classes) = self.classes.as_ref().filter(|c| *c != &Classes::default()) {
            out.push_str(&format!(
                "Read as the install of class {:?} (--cluster-mirror-class); its spec.className is {:?}\n",
                classes.read_as, classes.class_name
            ));
        }
        if let Some(preview) = &self.preview {
            let given: Vec<String> = [
                ("mirror-to", &preview.mirror_to),
                ("mirror-to-selector", &preview.mirror_to_selector),
            ]
            .iter()
            .filter_map(|(key, value)| value.as_ref().map(|v| format!("{key}={v}")))
            .collect();
            out.push_str(&format!(
                "Preview, as if annotated {}: nothing is written\n",
                given.join(" ")
            ));
        }
        out
    }

    /// The rows, aligned; the kind, source and ClusterMirror columns only
    /// when they vary.
    fn rows_table(&self) -> String {
        let subject_key = self
            .subject
            .namespace
            .as_ref()
            .map(|ns| format!("{ns}/{}", self.subject.name));
        // A ClusterMirror's or a Mirror's heading says its kind and source.
        let one_cluster_mirror = self.subject.is.is_request();
        let kinds_vary = !one_cluster_mirror
            && self
                .rows
                .iter()
                .filter(|row| !row.kind.is_empty())
                .any(|row| row.kind != self.subject.kind);
        let sources_vary = !one_cluster_mirror
            && self
                .rows
                .iter()
                .any(|row| row.source.is_some() && row.source != subject_key);
        let requests_shown = |mirror: bool| {
            !one_cluster_mirror
                && (self.rows.iter()).any(|row| {
                    row.request
                        .as_ref()
                        .is_some_and(|r| r.is_mirror() == mirror)
                })
        };
        let (cluster_mirrors_shown, mirrors_shown) = (requests_shown(false), requests_shown(true));
        let mut header = vec!["WHAT"];
        if kinds_vary {
            header.push("KIND");
        }
        header.extend(["NAMESPACE", "NAME"]);
        if sources_vary {
            header.push("SOURCE");
        }
        if cluster_mirrors_shown {
            header.push("CLUSTERMIRROR");
        }
        if mirrors_shown {
            header.push("MIRROR");
        }
        header.extend(["VERDICT", "DETAIL"]);
        let mut lines = vec![header.iter().map(|h| h.to_string()).collect::<Vec<_>>()];
        for row in &self.rows {
            let mut line = vec![row.what.as_str().to_owned()];
            if kinds_vary {
                line.push(row.kind.to_owned());
            }
            line.extend([row.namespace.clone(), row.name.clone()]);
            if sources_vary {
                line.push(row.source.clone().unwrap_or_default());
            }
            let request = row.request.as_ref();
            if cluster_mirrors_shown {
                let name = request.filter(|r| !r.is_mirror()).map(|r| r.name.clone());
                line.push(name.unwrap_or_default());
            }
            if mirrors_shown {
                let mirror = request.filter(|r| r.is_mirror());
                let key = mirror
                    .map(|r| format!("{}/{}", r.namespace.as_deref().unwrap_or_default(), r.name));
                line.push(key.unwrap_or_default());
            }
            line.extend([row.verdict.as_str().to_owned(), row.detail.clone()]);
            lines.push(line);
        }
        aligned(&lines)
    }

    /// The last Warnings, oldest first, aligned; nothing when there are none.
    fn warnings_table(&self) -> String {
        if self.warnings.is_empty() {
            return String::new();
        }
        let mut lines = vec![
            ["LAST SEEN", "REGARDING", "REASON", "COUNT", "MESSAGE"]
                .map(str::to_owned)
                .to_vec(),
        ];
        for warning in &self.warnings {
            lines.push(vec![
                warning
                    .last_seen
                    .map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
                    .unwrap_or_default(),
                warning.regarding.clone(),
                warning.reason.clone(),
                warning.count.to_string(),
                warning.message.clone(),
            ]);
        }
        format!("\nLast Warnings, oldest first:\n{}", aligned(&lines))
    }
}

/// Lines of cells, each column as wide as its widest cell; the last column
/// is not padded.
fn aligned(lines: &[Vec<String>]) -> String {
    let columns = lines.iter().map(Vec::len).max().unwrap_or_default();
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            lines
                .iter()
                .filter_map(|line| line.get(c))
                .map(|cell| cell.chars().count())
                .max()
                .unwrap_or_default()
        })
        .collect();
    let mut out = String::new();
    for line in lines {
        let cells: Vec<String> = line
            .iter()
            .enumerate()
            .map(|(c, cell)| match c + 1 == line.len() {
                true => cell.clone(),
                false => format!("{cell:<width$}", width = widths[c]),
            })
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests;
