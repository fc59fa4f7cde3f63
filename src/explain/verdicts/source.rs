//! A source's rows: whether it is managed, its companion, each namespace
//! it asks for, and its mirrors where it no longer asks.

use super::*;

mod unmatched;
use unmatched::unmatched_rows;

/// The namespaces as far as they could be read.
#[derive(Debug, Clone, Default)]
pub struct Namespaces {
    pub known: Vec<NamespaceFacts>,
    /// Why the namespaces could not be listed, if they could not: then
    /// `known` holds only those looked up by name.
    pub list_error: Option<String>,
    /// Namespaces looked up by name that could not be read, and why.
    pub unreadable: BTreeMap<String, String>,
}

impl Namespaces {
    fn get(&self, name: &str) -> Option<&NamespaceFacts> {
        self.known.iter().find(|ns| ns.name == name)
    }
}

/// Everything read about a source.
pub struct SourceScene<K> {
    /// The source, with any preview applied.
    pub source: K,
    pub preview: bool,
    /// The object at the companion's name.
    pub companion: Read<Option<K>>,
    pub namespaces: Namespaces,
    /// The object at its mirrors' name (`workshop.io/mirror-name`, else the
    /// source's) in each namespace that should hold its mirror
    /// ([`mirror_namespaces`]).
    pub at_name: BTreeMap<String, Read<Option<K>>>,
    /// The copies of this kind across the cluster, if they could be listed
    /// (metadata only).
    pub copies: Option<Vec<ObjectMeta>>,
    /// Copies (`namespace/name`) a recent `CopyContested` Warning names.
    pub contested: BTreeSet<String>,
}

/// The companion's row: the object at its name compared with the one the
/// source should have.
fn companion_row<K: Explained>(
    source: &K,
    desired: &K,
    actual: &Read<Option<K>>,
    rules: &Rules,
    key: &K::DigestKey,
    contested: &BTreeSet<String>,
) -> Row {
    let namespace = source.meta().namespace.clone().unwrap_or_default();
    let name = desired.meta().name.clone().unwrap_or_default();
    let compared = match actual {
        Err(why) => (Verdict::CannotRead, format!("cannot read it: {why}")),
        Ok(None) => (
            Verdict::Missing,
            "it does not exist: the controller creates it".into(),
        ),
        Ok(Some(actual)) => compare(desired.clone(), actual, source.meta(), rules, key),
    };
    copy_row::<K>(
        What::Companion,
        &namespace,
        &name,
        source.meta(),
        compared,
        contested,
    )
}

/// The namespaces where the source should have a mirror: those it asks for
/// that consent, as the controller's [`wants_mirror`] decides, unless its
/// mirrors' name is reserved or malformed. These are the ones whose object
/// at that name is to be read.
pub fn mirror_namespaces<K: Explained>(
    source: &K,
    namespaces: &Namespaces,
    rules: &Rules,
) -> Vec<String> {
    let meta = source.meta();
    let Ok(Some(targets)) = Targets::of(meta) else {
        return Vec::new();
    };
    let Ok(name) = mirror_name(meta) else {
        return Vec::new();
    };
    if rules.install.reserved_names.iter().any(|r| r == name) {
        return Vec::new();
    }
    let source_namespace = meta.namespace.as_deref().unwrap_or_default();
    namespaces
        .known
        .iter()
        .filter(|ns| wants_mirror(&targets, source_namespace, ns, K::consent(rules)))
        .map(|ns| ns.name.clone())
        .collect()
}

/// The namespaces a source names exactly (no glob): the ones to look up
/// one by one when the namespaces cannot be listed.
pub fn named_namespaces<K: MirroredKind>(source: &K) -> Vec<String> {
    annotation(source.meta(), MIRROR_TO_ANNOTATION)
        .and_then(|text| patterns::parse_patterns(MIRROR_TO_ANNOTATION, text).ok())
        .unwrap_or_default()
        .into_iter()
        .filter(|pattern| !pattern.contains('*'))
        .collect()
}

/// The rows of a source: whether it is managed, its companion, each
/// namespace it asks for, and the mirrors it has where it no longer should.
pub fn explain_source<K: Explained>(
    scene: &SourceScene<K>,
    rules: &Rules,
    key: &K::DigestKey,
) -> Vec<Row> {
    let source = &scene.source;
    let managed = managed(source, rules, key);
    let mut rows = vec![source_row(source, &managed, rules)];
    let Managed::Yes { companion } = &managed else {
        return rows;
    };
    if let Ok(desired) = companion {
        rows.push(companion_row(
            source,
            desired,
            &scene.companion,
            rules,
            key,
            &scene.contested,
        ));
    }
    rows.extend(mirror_rows(scene, rules, key));
    rows
}

fn mirror_rows<K: Explained>(
    scene: &SourceScene<K>,
    rules: &Rules,
    key: &K::DigestKey,
) -> Vec<Row> {
    let source = &scene.source;
    let meta = source.meta();
    let name = meta.name.clone().unwrap_or_default();
    let source_key = object_key(meta);
    let targets = match Targets::of(meta) {
        Ok(Some(targets)) => targets,
        Ok(None) => return leftover_rows(scene, rules, &BTreeSet::new()),
        Err(why) => {
            let why = format!(
                "{why}: no mirror is written, and those written before stay, until it is fixed (Warning {})",
                warning::INVALID_MIRROR_TARGETS
            );
            let refused = (Verdict::InvalidTargets, why);
            return no_mirror_rows(scene, rules, &name, source_key, refused);
        }
    };
    let name = match mirror_name(meta) {
        Ok(name) => name.to_owned(),
        Err(why) => {
            let refused = (Verdict::InvalidMirrorName, super::invalid_mirror_name(&why));
            return no_mirror_rows(scene, rules, &name, source_key, refused);
        }
    };
    let mut rows = Vec::new();
    let mut asked = BTreeSet::new();
    for namespace in &scene.namespaces.known {
        if !targets.includes(&namespace.name, &namespace.labels) {
            continue;
        }
        asked.insert(namespace.name.clone());
        rows.push(asked_row(scene, &targets, namespace, rules, key));
    }
    rows.extend(unmatched_rows::<K>(meta, &targets, scene, &asked, &name));
    rows.extend(leftover_rows(scene, rules, &asked));
    rows
}

/// The row of a namespace the source asks for: refused, or its mirror
/// there compared with the one the source wants.
fn asked_row<K: Explained>(
    scene: &SourceScene<K>,
    targets: &Targets,
    namespace: &NamespaceFacts,
    rules: &Rules,
    key: &K::DigestKey,
) -> Row {
    let meta = scene.source.meta();
    // `mirror_rows` tells of a malformed name before any namespace.
    let name = mirror_name(meta).unwrap_or_default().to_owned();
    let at = |verdict, detail| {
        row_at::<K>(
            What::Mirror,
            &namespace.name,
            &name,
            Some(object_key(meta)),
            verdict,
            detail,
        )
    };
    let reserved = rules.install.reserved_names.contains(&name);
    if reserved && namespace.name != meta.namespace.as_deref().unwrap_or_default() {
        return at(
            Verdict::ReservedName,
            format!(
                "{name} is reserved (published by Kubernetes into every namespace, or listed by --reserved-names): never mirrored (Warning {})",
                warning::MIRROR_NAME_RESERVED
            ),
        );
    }
    if let Some((verdict, detail)) = refusal::<K>(targets, meta, namespace, rules) {
        return at(verdict, detail);
    }
    let compared = mirror_compared(scene, &namespace.name, rules, key);
    copy_row::<K>(
        What::Mirror,
        &namespace.name,
        &name,
        meta,
        compared,
        &scene.contested,
    )
}

/// The object at the source's name in a namespace that consents,
/// compared with the mirror the source wants there.
fn mirror_compared<K: Explained>(
    scene: &SourceScene<K>,
    namespace: &str,
    rules: &Rules,
    key: &K::DigestKey,
) -> (Verdict, String) {
    let source = &scene.source;
    match scene.at_name.get(namespace) {
        None => (Verdict::CannotRead, "it was not read".into()),
        Some(Err(why)) => (Verdict::CannotRead, format!("cannot read it: {why}")),
        Some(Ok(None)) if scene.preview => (
            Verdict::WouldReceive,
            "it consents: the mirror is written once the annotation is".into(),
        ),
        Some(Ok(None)) => (
            Verdict::Missing,
            "it consents, and has no mirror yet: the controller writes it".into(),
        ),
        Some(Ok(Some(actual))) => {
            let asked = Asked::Mirror { namespace };
            match desired(source, &asked, &rules.install, key) {
                Ok(desired) => compare(desired, actual, source.meta(), rules, key),
                Err(_) => (Verdict::NoSource, "no mirror can be built of it".into()),
            }
        }
    }
}

/// Mirrors of the source in namespaces it does not (or no longer) ask for,
/// with the prune loop's verdict on each.
fn leftover_rows<K: Explained>(
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
    let managed_source = |namespace: &str, name: &str| {
        ((namespace, name) == (source_ref.0.as_str(), source_ref.1.as_str())
            && rules.install.source_selector.matches(labels(meta)))
        .then_some(&scene.source)
    };
    let named = mirror_name(meta).ok();
    let mut rows = Vec::new();
    for copy in copies {
        let namespace = copy.namespace.clone().unwrap_or_default();
        // The mirror at its name in a namespace asked for has its row; one
        // under another name there is left over from an earlier name.
        let asked_here = asked.contains(&namespace) && copy.name.as_deref() == named;
        // A ClusterMirror's copy is its ClusterMirror's to judge.
        if mirror_of(copy).as_ref() != Some(&source_ref)
            || asked_here
            || cluster_mirror_of(copy).is_some()
        {
            continue;
        }
        let verdict = prune_verdict::copy_verdict::<K, _>(
            copy,
            &rules.install,
            K::consent(rules),
            managed_source,
            |namespace| scene.namespaces.get(namespace).cloned(),
            |namespace, name| copy_at(copies, namespace, name),
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
        CopyVerdict::Unwanted if asked_there => (
            Verdict::Unwanted,
            format!(
                "a mirror under a name the source no longer gives its mirrors (now {}): the controller removes it",
                named.unwrap_or_default()
            ),
        ),
        CopyVerdict::Unwanted => (
            Verdict::Unwanted,
            "a mirror the source no longer wants here: the controller removes it".into(),
        ),
        // ClusterMirrors' copies are skipped above.
        CopyVerdict::UnwantedIfSourceGone(_)
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
fn no_mirror_rows<K: Explained>(
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

/// The desired companion's name of a source, as the install names it.
pub fn companion_of(source: &ObjectMeta, rules: &Rules) -> String {
    companion_name(
        source.name.as_deref().unwrap_or_default(),
        &rules.install.suffix,
    )
}

/// The copy among `copies` at `namespace/name`, if any.
fn copy_at(copies: &[ObjectMeta], namespace: &str, name: &str) -> Option<ObjectMeta> {
    let at = |copy: &&ObjectMeta| {
        copy.namespace.as_deref() == Some(namespace) && copy.name.as_deref() == Some(name)
    };
    copies.iter().find(at).cloned()
}
