//! A source's rows: whether it is managed, its companion, each namespace
//! it asks for, and its mirrors where it no longer asks.

use super::*;

mod leftover;
mod unmatched;
use leftover::{leftover_rows, no_mirror_rows};
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
    key: &dyn ChecksumKey<K>,
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
        .filter(|pattern| !pattern.has_star())
        .map(|pattern| pattern.as_str().to_owned())
        .collect()
}

/// The rows of a source: whether it is managed, its companion, each
/// namespace it asks for, and the mirrors it has where it no longer should.
pub fn explain_source<K: Explained>(
    scene: &SourceScene<K>,
    rules: &Rules,
    key: &dyn ChecksumKey<K>,
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
    key: &dyn ChecksumKey<K>,
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
                "{why}: no mirror is written, and those written before stay, until it is fixed"
            );
            let refused = Verdict::told(Condition::InvalidTargets, why);
            return no_mirror_rows(scene, rules, &name, source_key, refused);
        }
    };
    let name = match mirror_name(meta) {
        Ok(name) => name.to_owned(),
        Err(why) => {
            let refused = super::invalid_mirror_name(&why);
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
    key: &dyn ChecksumKey<K>,
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
        let (verdict, why) = Verdict::told(
            Condition::ReservedName,
            format!(
                "{name} is reserved (published by Kubernetes into every namespace, or listed by --reserved-names): never mirrored"
            ),
        );
        return at(verdict, why);
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
    key: &dyn ChecksumKey<K>,
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
            let request = &CopyRequest::SOURCE_MIRRORS;
            match desired(source, request, namespace, &rules.install, key) {
                Ok(desired) => compare(desired, actual, source.meta(), rules, key),
                Err(_) => (Verdict::NoSource, "no mirror can be built of it".into()),
            }
        }
    }
}

/// The desired companion's name of a source, as the install names it.
pub fn companion_of(source: &ObjectMeta, rules: &Rules) -> String {
    companion_name(
        source.name.as_deref().unwrap_or_default(),
        &rules.install.suffix,
    )
}
