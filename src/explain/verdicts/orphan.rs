//! A copy whose ClusterMirror or Mirror is gone: an orphan, which
//! the controller keeps as it is (`decisions::cluster_mirror::fate`).

use super::*;
use crate::{api::DeletionPolicy, decisions::cluster_mirror::DeletionMark};

/// What explain read of the ClusterMirror CRD: the uid of the one live
/// (None: none live), or nothing (it could not be read).
pub type CrdRead<'a> = Option<Option<&'a str>>;

/// The row of `copy`, a copy of kind `kind` whose ClusterMirror or
/// Mirror `request` is not there: an orphan, unless it records the CRD
/// its request was made under and that CRD is live (`crd`): then it was
/// deleted by someone, and the controller removes (or releases) the copy
/// once it runs.
pub fn orphan_row(
    kind: &'static str,
    copy: &ObjectMeta,
    request: &RequestKey,
    crd: CrdRead<'_>,
) -> Row {
    let said = request.said();
    let mark = DeletionMark::on(copy);
    let (verdict, detail) = match (mark, crd) {
        (Some(mark), Some(live)) if live == Some(mark.crd_uid) => (
            Verdict::Unwanted,
            format!(
                "its {said} is gone, deleted by someone: the CRD it was made under ({}, as the copy records) is live, so the controller {} once it runs",
                mark.crd_uid,
                match mark.policy {
                    DeletionPolicy::Delete => "deletes it",
                    DeletionPolicy::Orphan => "releases it (deletionPolicy Orphan)",
                }
            ),
        ),
        (Some(mark), None) => (
            Verdict::CannotRead,
            format!(
                "its {said} is gone, and the CRD could not be read: if the CRD it was made under ({}, as the copy records) is live, the controller removes it by its deletionPolicy ({}); if that CRD was deleted or replaced, it keeps it as it is, an orphan",
                mark.crd_uid,
                mark.policy.as_str()
            ),
        ),
        (Some(mark), Some(_)) => (
            Verdict::Orphaned,
            format!(
                "its {said} went with the CRD it was made under ({}, as the copy records), which was deleted or replaced: kept as it is, neither updated nor removed; apply {said} again to adopt it, then delete that to remove it",
                mark.crd_uid
            ),
        ),
        (None, _) => (
            Verdict::Orphaned,
            format!(
                "its {said} is gone, and nothing tells whether it was deleted by someone (its CRD was deleted or replaced, or the copy was written by an earlier version and the controller was not running): kept as it is, neither updated nor removed; apply {said} again to adopt it, then delete that to remove it"
            ),
        ),
    };
    Row {
        what: What::copy_of_request(request),
        kind,
        namespace: copy.namespace.clone().unwrap_or_default(),
        name: copy.name.clone().unwrap_or_default(),
        source: mirror_of(copy).map(|(namespace, name)| format!("{namespace}/{name}")),
        request: Some(request.clone()),
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
    crd: CrdRead<'_>,
) -> Vec<Row> {
    copies
        .iter()
        .filter(|copy| {
            is_managed_by_us(copy) && crate::contract::written_under(copy, &rules.install.selector)
        })
        .filter_map(|copy| {
            let name = cluster_mirror_of(copy)?;
            (!present.contains(name))
                .then(|| orphan_row(kind, copy, &RequestKey::cluster_mirror(name), crd))
        })
        .collect()
}
