//! A namespace's rows: its consent, its mirrors, and the sources that
//! ask for it.

use super::*;

/// Everything read about one kind in a namespace.
pub struct NamespaceScene<K> {
    /// The mirrors in it, each with what was read about it.
    pub mirrors: Read<Vec<CopyScene<K>>>,
    /// The managed sources of the cluster (metadata only).
    pub sources: Read<Vec<ObjectMeta>>,
    /// The object at each name that a source should have a mirror at, for
    /// the sources no mirror in `mirrors` belongs to.
    pub at_name: BTreeMap<String, Read<Option<K>>>,
}

/// A namespace's consent, kind by kind, and where it accepts from.
pub fn consent_rows(namespace: &NamespaceFacts, rules: &Rules) -> Vec<Row> {
    let mut rows = vec![
        consent_row::<ConfigMap>(namespace, rules),
        consent_row::<Secret>(namespace, rules),
    ];
    let (verdict, detail) = match namespace.accept_from.as_deref() {
        None => (
            Verdict::FromAny,
            format!("no {ACCEPT_MIRRORS_FROM_ANNOTATION}: it accepts mirrors from any namespace"),
        ),
        Some(list) => match patterns::parse_patterns(ACCEPT_MIRRORS_FROM_ANNOTATION, list) {
            Ok(_) => (
                Verdict::FromListed,
                format!("it accepts mirrors only from the namespaces matching {list}"),
            ),
            Err(why) => (
                Verdict::InvalidAcceptMirrorsFrom,
                format!(
                    "it accepts nothing until fixed: {why} (Warning {})",
                    warning::INVALID_ACCEPT_MIRRORS_FROM
                ),
            ),
        },
    };
    rows.push(Row {
        what: What::AcceptFrom,
        kind: "",
        namespace: namespace.name.clone(),
        name: String::new(),
        source: None,
        request: None,
        verdict,
        detail,
    });
    rows
}

fn consent_row<K: Explained>(namespace: &NamespaceFacts, rules: &Rules) -> Row {
    let consent = K::consent(rules);
    let (verdict, detail) = if consent.is_protected(&namespace.name) {
        (
            Verdict::ProtectedNamespace,
            format!(
                "protected: it never receives {} mirrors, whatever its labels",
                K::NAME
            ),
        )
    } else if consent.selector.matches(&namespace.labels) {
        (
            Verdict::Accepts,
            format!("its labels match {}", consent.selector),
        )
    } else {
        by_grants::<K>(namespace, rules)
    };
    row_at::<K>(What::Consent, &namespace.name, "", None, verdict, detail)
}

/// The consent of a namespace whose labels do not consent to kind K: that
/// of its MirrorGrants, each named with the source namespaces it lets K
/// in from, and each that cannot be read with why.
fn by_grants<K: Explained>(namespace: &NamespaceFacts, rules: &Rules) -> (Verdict, String) {
    let consent = K::consent(rules);
    let labels = format!("its labels do not match {}", consent.selector);
    let NamespaceGrants::Known(grants) = &namespace.grants else {
        return (
            Verdict::GrantsNotKnown,
            format!("{labels}, and its MirrorGrants cannot be read"),
        );
    };
    let admitting: Vec<String> = grants
        .iter()
        .filter(|grant| grant.lets_in_any(consent.kind()))
        .map(|grant| {
            let from = grant.namespaces_letting_in(consent.kind()).join(", ");
            format!(
                "MirrorGrant {} lets {} mirrors in from {from}",
                grant.name(),
                K::NAME
            )
        })
        .collect();
    let malformed: Vec<String> = namespace
        .grants
        .malformed()
        .map(|(name, why)| format!("MirrorGrant {name} lets nothing in: {why}"))
        .collect();
    let said = admitting
        .iter()
        .chain(&malformed)
        .cloned()
        .collect::<Vec<_>>();
    match (admitting.is_empty(), said.is_empty()) {
        (false, _) => (
            Verdict::AcceptsByGrant,
            format!("{labels}; {}", said.join("; ")),
        ),
        (true, true) => (
            Verdict::DoesNotAccept,
            format!("{labels}, and no MirrorGrant lets {} mirrors in", K::NAME),
        ),
        (true, false) => (
            Verdict::DoesNotAccept,
            format!("{labels}; {}", said.join("; ")),
        ),
    }
}

/// The sources of kind K that ask for `namespace`, and for each, why it
/// receives no mirror (None: it should hold one).
pub fn sources_asking<'a, K: Explained>(
    namespace: &NamespaceFacts,
    sources: &'a [ObjectMeta],
    rules: &Rules,
) -> Vec<(&'a ObjectMeta, Option<(Verdict, String)>)> {
    sources
        .iter()
        .filter(|source| source.namespace.as_deref() != Some(&namespace.name))
        .filter(|source| rules.install.source_selector.matches(labels(source)))
        .filter_map(|source| {
            let targets = Targets::of(source).ok()??;
            if !targets.includes(&namespace.name, &namespace.labels) {
                return None;
            }
            let name = match mirror_name(source) {
                Ok(name) => name.to_owned(),
                Err(why) => return Some((source, Some(invalid_mirror_name(&why)))),
            };
            if rules.install.reserved_names.contains(&name) {
                return Some((
                    source,
                    Some((
                        Verdict::ReservedName,
                        format!("{name} is reserved: never mirrored"),
                    )),
                ));
            }
            Some((source, refusal::<K>(&targets, source, namespace, rules)))
        })
        .collect()
}

/// A namespace's rows for kind K: its mirrors, and every source that asks
/// for it without a mirror there.
pub fn explain_namespace<K: Explained>(
    namespace: &NamespaceFacts,
    scene: &NamespaceScene<K>,
    rules: &Rules,
    key: &dyn ChecksumKey<K>,
) -> Vec<Row> {
    let mut rows = Vec::new();
    let mut mirrored = BTreeSet::new();
    match &scene.mirrors {
        Err(why) => rows.push(row_at::<K>(
            What::Mirror,
            &namespace.name,
            "",
            None,
            Verdict::CannotRead,
            format!("cannot list the copies in it: {why}"),
        )),
        Ok(mirrors) => {
            for mirror in mirrors {
                let meta = mirror.copy.meta();
                let at = meta.name.clone().unwrap_or_default();
                mirrored.extend(mirror_of(meta).map(|(ns, n)| (format!("{ns}/{n}"), at)));
                rows.push(copy_itself(mirror, rules, key));
            }
        }
    }
    let sources = match &scene.sources {
        Err(why) => {
            rows.push(row_at::<K>(
                What::Mirror,
                &namespace.name,
                "",
                None,
                Verdict::CannotRead,
                format!("cannot list the sources that may ask for it: {why}"),
            ));
            return rows;
        }
        Ok(sources) => sources,
    };
    for (source, refused) in sources_asking::<K>(namespace, sources, rules) {
        let source_key = object_key(source);
        // A mirror of it under an earlier name tells of itself above, and
        // is no mirror at the name it asks for now.
        let name = mirror_name(source).unwrap_or_default().to_owned();
        if mirrored.contains(&(source_key.clone(), name.clone())) {
            continue;
        }
        let (verdict, detail) = match refused {
            Some(refused) => refused,
            None => match scene.at_name.get(&name) {
                None => (Verdict::CannotRead, "it was not read".into()),
                Some(Err(why)) => (Verdict::CannotRead, format!("cannot read it: {why}")),
                Some(Ok(None)) => (
                    Verdict::Missing,
                    "it consents, and has no mirror yet: the controller writes it".into(),
                ),
                Some(Ok(Some(actual))) => (
                    Verdict::NameTaken,
                    format!(
                        "the name is taken by {}; it is left untouched",
                        whose(actual.meta(), rules)
                    ),
                ),
            },
        };
        rows.push(row_at::<K>(
            What::Mirror,
            &namespace.name,
            &name,
            Some(source_key),
            verdict,
            detail,
        ));
    }
    rows
}
