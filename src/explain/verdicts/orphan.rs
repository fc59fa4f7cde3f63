//! A ClusterMirror's copy whose ClusterMirror is gone: an orphan, which
//! the controller keeps as it is (`decisions::cluster_mirror::fate`).

use super::*;

/// The row of `copy`, a copy of kind `kind` whose ClusterMirror
/// `cluster_mirror` is not there.
pub fn orphan_row(kind: &'static str, copy: &ObjectMeta, cluster_mirror: &str) -> Row {
    Row {
        what: What::ClusterMirrorCopy,
        kind,
        namespace: copy.namespace.clone().unwrap_or_default(),
        name: copy.name.clone().unwrap_or_default(),
        source: mirror_of(copy).map(|(namespace, name)| format!("{namespace}/{name}")),
        cluster_mirror: Some(cluster_mirror.to_owned()),
        verdict: Verdict::Orphaned,
        detail: format!(
            "its ClusterMirror {cluster_mirror} is gone, and the controller did not see it deleted (its CRD was deleted or replaced, or the controller was not running): kept as it is, neither updated nor removed; apply ClusterMirror {cluster_mirror} again to adopt it, then delete that to remove it"
        ),
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
