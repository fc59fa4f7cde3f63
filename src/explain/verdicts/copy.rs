//! A copy's rows: whose it is, whether it is still wanted and in sync.

use super::*;

/// Everything read about a copy (or an object at a companion's name).
pub struct CopyScene<K> {
    pub copy: K,
    /// The source it names, read (None: it names none).
    pub source: Option<Read<Option<K>>>,
    /// The copy's namespace, as consent reads it.
    pub namespace: Read<Option<NamespaceFacts>>,
    pub contested: BTreeSet<String>,
}

/// Whether an object is to be explained as a copy: it carries the
/// managed-by label, or is named as the companion of `existing_source`
/// (an object that exists) without being a source itself.
pub fn is_copy<K: MirroredKind>(object: &K, install: &Install, existing_source: bool) -> bool {
    let meta = object.meta();
    is_managed_by_us(meta) || (existing_source && !install.source_selector.matches(labels(meta)))
}

/// The rows of a copy (or of an object at a companion's name): whose it
/// is, whether it is still wanted and in sync, and its source's row.
pub fn explain_copy<K: Explained>(
    scene: &CopyScene<K>,
    install: &Install,
    key: &K::DigestKey,
) -> Vec<Row> {
    let meta = scene.copy.meta();
    let mut rows = vec![copy_itself(scene, install, key)];
    if let Some(Ok(Some(source))) = &scene.source {
        rows.push(source_row(source, &managed(source, install, key), install));
    }
    if install.source_selector.matches(labels(meta)) && is_managed_by_us(meta) {
        rows.push(row::<K>(
            What::Source,
            meta,
            None,
            Verdict::IsACopy,
            format!(
                "it matches the source selector {}, but carries the label of a copy: a copy is never a source",
                install.selector
            ),
        ));
    }
    rows
}

pub(super) fn copy_itself<K: Explained>(
    scene: &CopyScene<K>,
    install: &Install,
    key: &K::DigestKey,
) -> Row {
    let copy = &scene.copy;
    let meta = copy.meta();
    let namespace = meta.namespace.clone().unwrap_or_default();
    let name = meta.name.clone().unwrap_or_default();
    let what = match CopyRole::of(meta) {
        CopyRole::Mirror => What::Mirror,
        CopyRole::Companion => What::Companion,
    };
    let claimed = claimed_source::<K>(meta, &install.suffix)
        .or_else(|| companion_source_name(&name, install).map(|n| (namespace.clone(), n)));
    let source_key = claimed.as_ref().map(|(ns, n)| format!("{ns}/{n}"));
    let at = |verdict, detail| row::<K>(what, meta, source_key.clone(), verdict, detail);
    if !is_managed_by_us(meta) {
        return at(
            Verdict::NotACopy,
            format!(
                "{}, named as a companion: the controller leaves it alone, and its source has no companion while it is there",
                whose(meta, install)
            ),
        );
    }
    if let Some(selector) = annotation(meta, SOURCE_SELECTOR_ANNOTATION)
        && selector != install.selector
    {
        return at(
            Verdict::OtherInstall,
            format!(
                "{}: this install leaves it alone (explain it with --selector {selector:?})",
                whose(meta, install)
            ),
        );
    }
    let Some((source_namespace, source_name)) = claimed else {
        return at(
            Verdict::NoSource,
            "it names no source (no workshop.io/mirror-of, no controller owner, not a companion's name): the controller leaves it alone".into(),
        );
    };
    let source = match &scene.source {
        None => None,
        Some(Err(why)) => {
            return at(
                Verdict::CannotRead,
                format!("cannot read its source: {why}"),
            );
        }
        Some(Ok(source)) => source.as_ref(),
    };
    let facts = match (what, &scene.namespace) {
        (What::Mirror, Err(why)) => {
            return at(
                Verdict::CannotRead,
                format!("cannot read its namespace: {why}"),
            );
        }
        (_, Ok(facts)) => facts.clone(),
        (_, Err(_)) => None,
    };
    let managed_source = source.filter(|s| install.source_selector.matches(labels(s.meta())));
    let verdict = prune_verdict::copy_verdict::<K, _>(
        meta,
        &install.selector,
        &install.suffix,
        &install.reserved_names,
        K::consent(install),
        |ns, n| managed_source.filter(|_| ns == source_namespace && n == source_name),
        |_| facts.clone(),
    );
    let gone = |source: Option<&K>| match source {
        None => "its source is gone".to_owned(),
        Some(_) => format!(
            "its source no longer matches the source selector {}",
            install.selector
        ),
    };
    match verdict {
        CopyVerdict::Unwanted => {
            let why = match (what, managed_source) {
                (What::Mirror, _)
                    if prune_verdict::mirror_name_reserved(meta, &install.reserved_names) =>
                {
                    "its name is reserved".to_owned()
                }
                (_, None) => gone(source),
                (_, Some(source)) => unwanted_mirror_why::<K>(source, facts.as_ref(), install),
            };
            return at(
                Verdict::Unwanted,
                format!("{why}: the controller removes it"),
            );
        }
        CopyVerdict::UnwantedIfSourceGone(recorded) => {
            let same = source.and_then(|s| s.meta().uid.as_deref()) == Some(recorded.uid.as_str());
            return match same {
                true => at(
                    Verdict::Unmarked,
                    "written by a release that did not mark copies with their install, for a source this install does not manage: it stays while that source exists".into(),
                ),
                false => at(
                    Verdict::Unwanted,
                    "written by a release that did not mark copies with their install, and its source is gone: the controller removes it".into(),
                ),
            };
        }
        // A ClusterMirror's copy is explained with its ClusterMirror.
        CopyVerdict::Keep | CopyVerdict::ClusterMirrorDeleted(_) | CopyVerdict::Orphaned => {}
    }
    let Some(source) = managed_source else {
        return at(
            Verdict::NoSource,
            format!(
                "{}; the controller cannot prove it is its own, and leaves it alone",
                gone(source)
            ),
        );
    };
    let desired = match what {
        What::Mirror => desired_mirror(source, &namespace, key),
        _ => desired_companion(source, &install.suffix, key),
    };
    let desired = match desired {
        Ok(desired) => finished(
            desired,
            source,
            &install.selector,
            &install.never_carried,
            &install.source_label_keys,
        ),
        Err(_) => {
            let (verdict, detail) = match managed(source, install, key) {
                Managed::No(verdict, detail) => (verdict, detail),
                Managed::Yes {
                    companion: Err(why),
                } => (Verdict::NameTooLong, why),
                Managed::Yes { companion: Ok(_) } => (Verdict::NoSource, String::new()),
            };
            return at(verdict, format!("its source is not copied: {detail}"));
        }
    };
    let desired = match desired {
        Ok(desired) => desired,
        Err(why) => {
            return at(
                Verdict::InvalidCopyList,
                format!("{why}: nothing of its source is written until it is fixed"),
            );
        }
    };
    if what == What::Mirror && Targets::of(source.meta()).is_err() {
        return at(
            Verdict::InvalidTargets,
            "its source's mirror annotations are malformed: kept as it is until they are fixed"
                .into(),
        );
    }
    let compared = compare(desired, copy, source.meta(), install, key);
    copy_row::<K>(
        what,
        &namespace,
        &name,
        source.meta(),
        compared,
        &scene.contested,
    )
}

/// Why a mirror of a managed source is not wanted in its namespace.
fn unwanted_mirror_why<K: Explained>(
    source: &K,
    namespace: Option<&NamespaceFacts>,
    install: &Install,
) -> String {
    let meta = source.meta();
    let Some(namespace) = namespace else {
        return "its namespace is gone".into();
    };
    match Targets::of(meta) {
        Ok(None) => return "its source asks for no mirror any more".into(),
        Ok(Some(targets)) if !targets.includes(&namespace.name, &namespace.labels) => {
            return "its source no longer asks for this namespace".into();
        }
        _ => {}
    }
    let source_namespace = meta.namespace.as_deref().unwrap_or_default();
    match K::consent(install).verdict(source_namespace, namespace) {
        Err(refusal) => format!("the namespace refuses it: {refusal}"),
        Ok(()) => "the source no longer wants it here".into(),
    }
}
