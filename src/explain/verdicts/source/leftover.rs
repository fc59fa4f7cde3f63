//! A source's mirrors where it no longer asks for them, or under a name it
//! no longer gives them, with the prune loop's verdict on each.

use super::*;

/// Mirrors of the source in namespaces it does not (or no longer) ask for,
/// with the prune loop's verdict on each.
pub(super) fn leftover_rows<K: Explained>(
    scene: &SourceScene<K>,
    rules: &Rules,
    asked: &BTreeSet<String>,
) -> Vec<Row> {
    let Some(copies) = &scene.copies else {
        return Vec::new();
    };
    let meta = scene.source.meta();
    let source_ref = (
        meta.namespace.clone().unwrap_or_default(),
        meta.name.clone().unwrap_or_default(),
    );
    let facts = MirrorsRead {
        source_ref: (source_ref.0.as_str(), source_ref.1.as_str()),
        managed_source: (rules.install.source_selector.matches(labels(meta)))
            .then_some(&scene.source),
        namespaces: &scene.namespaces,
        copies,
    };
    let named = mirror_name(meta).ok();
    let mut rows = Vec::new();
    for copy in copies {
        let namespace = copy.namespace.clone().unwrap_or_default();
        // The mirror at its name in a namespace asked for has its row; one
        // under another name there is left over from an earlier name.
        let asked_here = asked.contains(&namespace) && copy.name.as_deref() == named;
        // A ClusterMirror's or a Mirror's copy is theirs to judge.
        if mirror_of(copy).as_ref() != Some(&source_ref)
            || asked_here
            || RequestKey::of_copy(copy).is_some()
        {
            continue;
        }
        let verdict = copy_verdict::copy_verdict(
            copy,
            &rules.install,
            K::consent(rules),
            &facts,
            &copy_verdict::ClusterMirrorsNotRead,
        );
        let asked_there = asked.contains(&namespace);
        let Some((verdict, detail)) = leftover_said(verdict, copy, asked_there, named, rules)
        else {
            continue;
        };
        rows.push(row::<K>(
            What::Mirror,
            copy,
            Some(object_key(meta)),
            verdict,
            detail,
        ));
    }
    rows
}

/// What a leftover mirror's row says of the prune loop's `verdict` on it
/// (`asked_there`: its namespace is still asked for; `named`: the name the
/// source gives its mirrors, None while malformed); None for no row.
fn leftover_said(
    verdict: CopyVerdict,
    copy: &ObjectMeta,
    asked_there: bool,
    named: Option<&str>,
    rules: &Rules,
) -> Option<(Verdict, String)> {
    let said = match verdict {
        CopyVerdict::Unwanted(_) if asked_there => (
            Verdict::Unwanted,
            format!(
                "a mirror under a name the source no longer gives its mirrors (now {}): the controller removes it",
                named.unwrap_or_default()
            ),
        ),
        CopyVerdict::Unwanted(_) => (
            Verdict::Unwanted,
            "a mirror the source no longer wants here: the controller removes it".into(),
        ),
        // ClusterMirrors' copies are skipped above.
        CopyVerdict::UnwantedIfSourceGone(..)
        | CopyVerdict::ClusterMirrorDeleted(_)
        | CopyVerdict::Orphaned => return None,
        CopyVerdict::Keep if !contract_written_under(copy, rules) => return None,
        CopyVerdict::Keep if named.is_some() && asked_there => (
            Verdict::EarlierName,
            format!(
                "a mirror under a name the source gave before: kept until its mirror under {} is written here, then removed",
                named.unwrap_or_default()
            ),
        ),
        CopyVerdict::Keep if named.is_none() => (
            Verdict::InvalidMirrorName,
            "a mirror written before: kept until the source's mirror name is fixed".into(),
        ),
        CopyVerdict::Keep => (
            Verdict::InvalidTargets,
            "a mirror written before: kept until the source's mirror annotations are fixed".into(),
        ),
    };
    Some(said)
}

/// A source whose mirror annotations are malformed: the row that says so
/// (`refused`), and those of the mirrors it wrote before.
pub(super) fn no_mirror_rows<K: Explained>(
    scene: &SourceScene<K>,
    rules: &Rules,
    name: &str,
    source_key: String,
    refused: (Verdict, String),
) -> Vec<Row> {
    let (verdict, detail) = refused;
    let mut rows = vec![row_at::<K>(
        What::Mirror,
        "",
        name,
        Some(source_key),
        verdict,
        detail,
    )];
    rows.extend(leftover_rows(scene, rules, &BTreeSet::new()));
    rows
}

fn contract_written_under(copy: &ObjectMeta, rules: &Rules) -> bool {
    crate::contract::written_under(copy, &rules.install.selector)
}

/// The copy among `copies` at `namespace/name`, if any.
/// What explain read of a source's mirrors, as their verdict asks: the
/// source (when this install manages it), the namespaces and the
/// source's mirrors.
struct MirrorsRead<'r, K> {
    source_ref: (&'r str, &'r str),
    managed_source: Option<&'r K>,
    namespaces: &'r Namespaces,
    copies: &'r [ObjectMeta],
}

impl<'r, K: Explained> copy_verdict::CopyFacts<K> for MirrorsRead<'r, K> {
    type Source<'f>
        = &'r K
    where
        Self: 'f;

    fn managed_source(&self, namespace: &str, name: &str) -> Option<&'r K> {
        (self.managed_source).filter(|_| (namespace, name) == self.source_ref)
    }

    fn namespace(&self, namespace: &str) -> Option<NamespaceFacts> {
        self.namespaces.get(namespace).cloned()
    }

    fn copy_at(&self, namespace: &str, name: &str) -> Option<ObjectMeta> {
        let at = |copy: &&ObjectMeta| {
            copy.namespace.as_deref() == Some(namespace) && copy.name.as_deref() == Some(name)
        };
        self.copies.iter().find(at).cloned()
    }
}
