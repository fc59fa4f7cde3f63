//! A ClusterMirror's copy whose ClusterMirror is gone: an orphan, which
//! the controller keeps as it is (`decisions::cluster_mirror::fate`).

use super::*;
use crate::{api::DeletionPolicy, decisions::cluster_mirror::DeletionMark};

/// The row of `copy`, a copy of kind `kind` whose ClusterMirror
/// `cluster_mirror` is not there: an orphan, unless it records what its
/// ClusterMirror's deletion does to it and under which CRD it was made.
pub fn orphan_row(kind: &'static str, copy: &ObjectMeta, cluster_mirror: &str) -> Row {
    let (verdict, detail) = match DeletionMark::on(copy) {
        Some(mark) => {
            let done = match mark.policy {
                DeletionPolicy::Delete => "deletes it",
                DeletionPolicy::Orphan => "releases it (deletionPolicy Orphan)",
            };
            (
                Verdict::Unwanted,
                format!(
                    "its ClusterMirror {cluster_mirror} is gone; the copy records the CRD it was made under ({}): if that CRD is live, the ClusterMirror was deleted by someone and the controller {done}; if the CRD was deleted or replaced, it keeps it as an orphan",
                    mark.crd_uid
                ),
            )
        }
        None => (
            Verdict::Orphaned,
            format!(
                "its ClusterMirror {cluster_mirror} is gone, and nothing tells whether it was deleted by someone (its CRD was deleted or replaced, or the copy was written by an earlier release and the controller was not running): kept as it is, neither updated nor removed; apply ClusterMirror {cluster_mirror} again to adopt it, then delete that to remove it"
            ),
        ),
    };
    Row {
        what: What::ClusterMirrorCopy,
        kind,
        namespace: copy.namespace.clone().unwrap_or_default(),
        name: copy.name.clone().unwrap_or_default(),
        source: mirror_of(copy).map(|(namespace, name)| format!("{namespace}/{name}")),
        cluster_mirror: Some(cluster_mirror.to_owned()),
        verdict,
        detail,
    }
}

/// The orphans among `copies` of kind `kind` (objects carrying a
/// ClusterMirror's label), given the names of the ClusterMirrors there
/// are: this install's copies whose ClusterMirror is not among them.
pub fn orphan_rows(
    kind: &'static str,
    copies: &[ObjectMeta],
    rules: &Rules,
    present: &BTreeSet<String>,
) -> Vec<Row> {
    copies
        .iter()
        .filter(|copy| {
            is_managed_by_us(copy) && crate::contract::written_under(copy, &rules.install.selector)
        })
        .filter_map(|copy| {
            let name = cluster_mirror_of(copy)?;
            (!present.contains(name)).then(|| orphan_row(kind, copy, name))
        })
        .collect()
}
