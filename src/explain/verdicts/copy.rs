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
    /// For a mirror under a name its source no longer gives its mirrors:
    /// the object at the name it gives now, in the same namespace, if any.
    pub successor: Option<ObjectMeta>,
}

/// Whether an object is to be explained as a copy: it carries the
/// managed-by label, or is named as the companion of `existing_source`
/// (an object that exists) without being a source itself.
pub fn is_copy<K: MirroredKind>(object: &K, rules: &Rules, existing_source: bool) -> bool {
    let meta = object.meta();
    is_managed_by_us(meta)
        || (existing_source && !rules.install.source_selector.matches(labels(meta)))
}

/// The rows of a copy (or of an object at a companion's name): whose it
/// is, whether it is still wanted and in sync, and its source's row.
pub fn explain_copy<K: Explained>(
    scene: &CopyScene<K>,
    rules: &Rules,
    key: &dyn ChecksumKey<K>,
) -> Vec<Row> {
    let meta = scene.copy.meta();
    let mut rows = vec![copy_itself(scene, rules, key)];
    if let Some(Ok(Some(source))) = &scene.source {
        rows.push(source_row(source, &managed(source, rules, key), rules));
    }
    if rules.install.source_selector.matches(labels(meta)) && is_managed_by_us(meta) {
        rows.push(row::<K>(
            What::Source,
            meta,
            None,
            Verdict::IsACopy,
            format!(
                "it matches the source selector {}, but carries the label of a copy: a copy is never a source",
                rules.install.selector
            ),
        ));
    }
    rows
}

pub(super) fn copy_itself<K: Explained>(
    scene: &CopyScene<K>,
    rules: &Rules,
    key: &dyn ChecksumKey<K>,
) -> Row {
    let meta = scene.copy.meta();
    let namespace = meta.namespace.clone().unwrap_or_default();
    let name = meta.name.clone().unwrap_or_default();
    let what = match CopyRole::of(meta) {
        CopyRole::Mirror => What::Mirror,
        CopyRole::Companion => What::Companion,
    };
    let claimed = claimed_source::<K>(meta, &rules.install.suffix)
        .or_else(|| companion_source_name(&name, rules).map(|n| (namespace, n)));
    let source_key = claimed.as_ref().map(|(ns, n)| format!("{ns}/{n}"));
    match judged(scene, what, claimed, rules, key) {
        Ok(row) => row,
        Err((verdict, detail)) => row::<K>(what, meta, source_key, verdict, detail),
    }
}

/// A row's verdict and what it says.
type Said = (Verdict, String);

/// The row of a copy of `claimed` (the source it names) compared with
/// what its source wants; else why there is nothing to compare.
fn judged<K: Explained>(
    scene: &CopyScene<K>,
    what: What,
    claimed: Option<(String, String)>,
    rules: &Rules,
    key: &dyn ChecksumKey<K>,
) -> Result<Row, Said> {
    let copy = &scene.copy;
    let meta = copy.meta();
    if let Some(said) = not_this_installs(meta, rules) {
        return Err(said);
    }
    let Some(claimed) = claimed else {
        return Err((
            Verdict::NoSource,
            "it names no source (no workshop.io/mirror-of, no controller owner, not a companion's name): the controller leaves it alone".into(),
        ));
    };
    let (source, facts) = read(scene, what)?;
    let managed_source = source.filter(|s| rules.install.source_selector.matches(labels(s.meta())));
    let seen = Seen {
        claimed: &claimed,
        source,
        managed_source,
        facts: facts.as_ref(),
        successor: scene.successor.as_ref(),
    };
    if let Some(said) = unwanted(meta, &seen, rules) {
        return Err(said);
    }
    let Some(source) = managed_source else {
        return Err((
            Verdict::NoSource,
            format!(
                "{}; the controller cannot prove it is its own, and leaves it alone",
                gone(source, rules)
            ),
        ));
    };
    let namespace = meta.namespace.clone().unwrap_or_default();
    if let Some(said) = under_earlier_name(meta, what, source.meta()) {
        return Err(said);
    }
    let desired = desired_of(source, what, &namespace, rules, key)?;
    if what == What::Mirror && Targets::of(source.meta()).is_err() {
        return Err((
            Verdict::InvalidTargets,
            "its source's mirror annotations are malformed: kept as it is until they are fixed"
                .into(),
        ));
    }
    let compared = compare(desired, copy, source.meta(), rules, key);
    let name = meta.name.clone().unwrap_or_default();
    Ok(copy_row::<K>(
        what,
        &namespace,
        &name,
        source.meta(),
        compared,
        &scene.contested,
    ))
}

/// Why this install leaves a copy alone before looking at its source: it
/// is none of the controller's, or another install's.
fn not_this_installs(meta: &ObjectMeta, rules: &Rules) -> Option<Said> {
    if !is_managed_by_us(meta) {
        return Some((
            Verdict::NotACopy,
            format!(
                "{}, named as a companion: the controller leaves it alone, and its source has no companion while it is there",
                whose(meta, rules)
            ),
        ));
    }
    let selector = annotation(meta, SOURCE_SELECTOR_ANNOTATION)
        .filter(|selector| *selector != rules.install.selector)?;
    Some((
        Verdict::OtherInstall,
        format!(
            "{}: this install leaves it alone (explain it with --selector {selector:?})",
            whose(meta, rules)
        ),
    ))
}

/// The copy's source as read (None: it names none, or it is gone), and
/// its namespace, which a mirror's verdict needs.
#[allow(clippy::type_complexity)]
fn read<K: Explained>(
    scene: &CopyScene<K>,
    what: What,
) -> Result<(Option<&K>, Option<NamespaceFacts>), Said> {
    let source = match &scene.source {
        None => None,
        Some(Err(why)) => {
            return Err((
                Verdict::CannotRead,
                format!("cannot read its source: {why}"),
            ));
        }
        Some(Ok(source)) => source.as_ref(),
    };
    let facts = match (what, &scene.namespace) {
        (What::Mirror, Err(why)) => {
            return Err((
                Verdict::CannotRead,
                format!("cannot read its namespace: {why}"),
            ));
        }
        (_, Ok(facts)) => facts.clone(),
        (_, Err(_)) => None,
    };
    Ok((source, facts))
}

/// What was read of a copy's source and namespace.
struct Seen<'a, K> {
    /// The source it names: namespace and name.
    claimed: &'a (String, String),
    source: Option<&'a K>,
    /// The source, when this install manages it.
    managed_source: Option<&'a K>,
    facts: Option<&'a NamespaceFacts>,
    successor: Option<&'a ObjectMeta>,
}

/// What explain read, as the copy's verdict asks: only the source the
/// copy names, and the copy at the name that source gives its mirrors now
/// (its successor), were read.
impl<K: Explained> copy_verdict::CopyFacts<K> for Seen<'_, K> {
    type Source<'f>
        = &'f K
    where
        Self: 'f;

    fn managed_source(&self, namespace: &str, name: &str) -> Option<&K> {
        let (source_namespace, source_name) = self.claimed;
        (self.managed_source).filter(|_| namespace == source_namespace && name == source_name)
    }

    fn namespace(&self, _: &str) -> Option<NamespaceFacts> {
        self.facts.cloned()
    }

    fn copy_at(&self, _: &str, _: &str) -> Option<ObjectMeta> {
        self.successor.cloned()
    }
}

/// Why the prune loop removes the copy (or keeps it only while its
/// source exists), if it does.
fn unwanted<K: Explained>(meta: &ObjectMeta, seen: &Seen<'_, K>, rules: &Rules) -> Option<Said> {
    let verdict = copy_verdict::copy_verdict(
        meta,
        &rules.install,
        K::consent(rules),
        seen,
        &copy_verdict::ClusterMirrorsNotRead,
    );
    match verdict {
        CopyVerdict::Unwanted(why) => {
            let why = match (why, seen.managed_source) {
                (Unwanted::ReservedName, _) => why.said().to_owned(),
                (_, None) => gone(seen.source, rules),
                (Unwanted::Renamed, Some(source)) => {
                    let now = mirror_name(source.meta()).unwrap_or_default();
                    format!("its source names its mirrors {now} now")
                }
                (_, Some(source)) => unwanted_mirror_why::<K>(source, seen.facts, rules),
            };
            Some((
                Verdict::Unwanted,
                format!("{why}: the controller removes it"),
            ))
        }
        CopyVerdict::UnwantedIfSourceGone(recorded, _) => {
            let uid = seen.source.and_then(|s| s.meta().uid.as_deref());
            Some(match uid == Some(recorded.uid.as_str()) {
                true => (
                    Verdict::Unmarked,
                    "written by a release that did not mark copies with their install, for a source this install does not manage: it stays while that source exists".into(),
                ),
                false => (
                    Verdict::Unwanted,
                    "written by a release that did not mark copies with their install, and its source is gone: the controller removes it".into(),
                ),
            })
        }
        // A ClusterMirror's copy is explained with its ClusterMirror.
        CopyVerdict::Keep | CopyVerdict::ClusterMirrorDeleted(_) | CopyVerdict::Orphaned => None,
    }
}

/// Why a copy's source no longer wants it: gone, or no longer selected.
fn gone<K: Explained>(source: Option<&K>, rules: &Rules) -> String {
    match source {
        None => "its source is gone".to_owned(),
        Some(_) => format!(
            "its source no longer matches the source selector {}",
            rules.install.selector
        ),
    }
}

/// The copy `source` wants where this one is, as the controller decides
/// it; else why it wants none.
fn desired_of<K: Explained>(
    source: &K,
    what: What,
    namespace: &str,
    rules: &Rules,
    key: &dyn ChecksumKey<K>,
) -> Result<K, Said> {
    let request = match what {
        What::Mirror => CopyRequest::SOURCE_MIRRORS,
        _ => CopyRequest::COMPANION,
    };
    match desired(source, &request, namespace, &rules.install, key) {
        Ok(desired) => Ok(desired),
        Err(Refusal::InvalidCopyList(why)) => Err((
            Verdict::InvalidCopyList,
            format!("{why}: nothing of its source is written until it is fixed"),
        )),
        Err(Refusal::InvalidMirrorName(why)) => Err(invalid_mirror_name(&why)),
        Err(_) => {
            let (verdict, detail) = match managed(source, rules, key) {
                Managed::No(verdict, detail) => (verdict, detail),
                Managed::Yes {
                    companion: Err(why),
                } => (Verdict::NameTooLong, why),
                Managed::Yes { companion: Ok(_) } => (Verdict::NoSource, String::new()),
            };
            Err((verdict, format!("its source is not copied: {detail}")))
        }
    }
}

/// Why a mirror of a managed source is not wanted in its namespace.
fn unwanted_mirror_why<K: Explained>(
    source: &K,
    namespace: Option<&NamespaceFacts>,
    rules: &Rules,
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
    match K::consent(rules).verdict(source_namespace, namespace) {
        Err(refusal) => format!("the namespace refuses it: {refusal}"),
        Ok(()) => "the source no longer wants it here".into(),
    }
}

/// A mirror under a name its source no longer gives its mirrors, kept
/// (the prune loop found no mirror under the new name yet): said so.
fn under_earlier_name(meta: &ObjectMeta, what: What, source: &ObjectMeta) -> Option<Said> {
    let now = mirror_name(source).ok()?;
    (what == What::Mirror && meta.name.as_deref() != Some(now)).then(|| {
        (
            Verdict::EarlierName,
            format!(
                "a mirror under a name its source gave before: kept until its mirror under {now} is written here, then removed"
            ),
        )
    })
}
