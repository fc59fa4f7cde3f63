//! The desired state: what a copy of a source must look like, decided in
//! one place for every copy there is, a source's companion, its mirrors,
//! and a ClusterMirror's copies, for the reconcilers and for `explain`.
//!
//! Everything here is pure, and the same for every kind. Given a source,
//! the copy asked for ([`Asked`]) and the install's settings ([`Install`]),
//! [`desired`] says what the copy's name, content, checksum, labels,
//! annotations and owner must be. Whether an existing object is that copy
//! is `ownership`'s question, how it differs is `plan`'s; the reconcilers
//! do the I/O.
//!
//! The measure of this module: a new option of what a copy holds (say,
//! only some keys, renamed) changes this decision (its one content step,
//! which [`desired`] and [`with_fresh_content`] share), its tests, the
//! parsing of the annotation or API field that asks for it, and the docs,
//! and no path that writes or explains copies.

use std::{borrow::Cow, collections::BTreeMap};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::{
    contract::{
        CHECKSUM_ANNOTATION, CLUSTER_MIRROR_LABEL, HELM_RELEASE_NAME_PREFIX, HELM_STORAGE_LABEL,
        MANAGED_BY_LABEL, MANAGER_NAME, MAX_NAME_LEN, MIRROR_OF_ANNOTATION,
        MIRROR_OF_UID_ANNOTATION, SOURCE_SELECTOR_ANNOTATION, TILLER_STORAGE_LABEL, companion_name,
        helm_storage_label, install::INSTALL_OWNED_LABEL, is_managed_by_us,
    },
    decisions::cache_form::{key_digests::source_copy_keys, source_checksum},
    decisions::carried::{Carried, Lists},
    decisions::install::Install,
    decisions::key_shape::{
        KeyShape, annotated_shape,
        checksum::{CopyForm, CopyKeys},
        content::shaped_content,
        copy_plan::ContentPlan,
        secret_type::KeysBreakType,
    },
    decisions::mirror_name::mirror_name,
    decisions::owner_ref::owner_reference,
    kind::{ChecksumKey, MirroredKind, SourceId},
};

/// Why a companion cannot be built for a source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The source has no name, namespace or uid yet (never true for a stored object).
    Incomplete,
    /// `<name><suffix>` would be longer than Kubernetes allows.
    NameTooLong { name: String, len: usize },
    /// The source is itself a companion; mirroring it would grow a chain.
    SourceIsCompanion,
    /// The source is being deleted: new copies would only be garbage.
    BeingDeleted,
    /// One of the source's lists of keys to carry is malformed (as it
    /// says): nothing of the source is written until it is fixed.
    InvalidCopyList(String),
    /// The source's `workshop.io/mirror-keys` cannot be read (as it says):
    /// no copy of it changes until it is fixed.
    InvalidMirrorKeys(String),
    /// The source's `workshop.io/mirror-name` cannot be its mirrors' name
    /// (as it says): no mirror is written until it is fixed.
    InvalidMirrorName(String),
    /// The keys copied leave out one the Secret's type requires, and no
    /// other type is asked for: the API server would refuse the copy.
    KeysBreakType(KeysBreakType),
}

/// Why `object` may never be a source, whatever its labels, if so: what an
/// install created for its own use (marked [`INSTALL_OWNED_LABEL`]), a Helm
/// release record of either kind, or what its kind refuses (some types of
/// Secret, this install's digest key). The reconcilers ask before anything
/// else: such an object has no copies, and those written before (by a
/// release that did not refuse it, or before its type was refused) are no
/// longer wanted.
pub fn never_a_source<K: MirroredKind>(object: &K, rules: &K::SourceRules) -> Option<String> {
    let meta = object.meta();
    let install_owned = meta
        .labels
        .as_ref()
        .and_then(|l| l.get(INSTALL_OWNED_LABEL));
    if let Some(role) = install_owned {
        return Some(format!(
            "it is an install's own object (labeled {INSTALL_OWNED_LABEL}={role}): what an \
             install keeps for itself is never copied"
        ));
    }
    let storage_label = helm_storage_label(meta);
    if let Some((label, value)) = storage_label.filter(|l| *l == TILLER_STORAGE_LABEL) {
        return Some(format!(
            "it is a Helm 2 release record (labeled {label}={value}): Tiller trusts its copies \
             as records of its releases"
        ));
    }
    let (label, value) = HELM_STORAGE_LABEL;
    let helm_labeled = storage_label.is_some();
    let helm_named = meta
        .name
        .as_deref()
        .is_some_and(|name| name.starts_with(HELM_RELEASE_NAME_PREFIX));
    if helm_labeled || helm_named {
        return Some(format!(
            "it is a Helm release record (named {HELM_RELEASE_NAME_PREFIX}*, or labeled \
             {label}={value}): Helm trusts its copies as records of its releases"
        ));
    }
    object.source_refusal(rules)
}

/// Name, namespace and uid of an object that may be copied: one that is
/// stored (so has all three) and is not itself a copy.
fn identity<K: MirroredKind>(object: &K) -> Result<(&str, &str, &str), Refusal> {
    let source = object.meta();
    if is_managed_by_us(source) {
        return Err(Refusal::SourceIsCompanion);
    }
    if source.deletion_timestamp.is_some() {
        return Err(Refusal::BeingDeleted);
    }
    match (
        source.name.as_deref(),
        source.namespace.as_deref(),
        source.uid.as_deref(),
    ) {
        (Some(name), Some(namespace), Some(uid)) => Ok((name, namespace, uid)),
        _ => Err(Refusal::Incomplete),
    }
}

/// The copy asked for, of one source.
#[derive(Debug, Clone, Copy)]
pub enum Asked<'a> {
    /// Its companion: `<name><suffix>` in its own namespace, owned by it.
    Companion,
    /// Its mirror in `namespace`, under the name its
    /// `workshop.io/mirror-name` gives, else its own. A namespace cannot
    /// own objects in another, so instead of an owner reference it names
    /// its source in annotations, and the prune loop removes it when the
    /// source no longer wants it.
    Mirror { namespace: &'a str },
    /// A ClusterMirror's copy.
    ClusterMirror(ClusterMirrorCopy<'a>),
}

/// A ClusterMirror's copy in one namespace, as its spec asks for it: a
/// mirror of its source under the target name, labeled with the
/// ClusterMirror's name, carrying what `spec.target` sets (never what its
/// source's own lists select). Its source is the one the ClusterMirror
/// binds its copies to (`Request::bound_source`), whose uid the copy's
/// checksum and `mirror-of-uid` name.
#[derive(Debug, Clone, Copy)]
pub struct ClusterMirrorCopy<'a> {
    pub namespace: &'a str,
    /// `spec.target.name`, or the source's name.
    pub name: &'a str,
    /// The ClusterMirror's name.
    pub cluster_mirror: &'a str,
    /// `spec.target.labels`.
    pub labels: &'a BTreeMap<String, String>,
    /// `spec.target.annotations`.
    pub annotations: &'a BTreeMap<String, String>,
    /// `spec.target.keys` and `spec.target.excludeKeys`.
    pub shape: &'a KeyShape,
    /// `spec.target.kind` and `spec.target.type`.
    pub form: CopyForm<'a>,
}

/// The copy `asked` of `source`, as `install` writes it: the source's
/// content under the copy's name, its checksum, the labels and annotations
/// that mark it as this install's copy and name its source, and what it
/// carries (with the record of the carried keys).
pub fn desired<K: MirroredKind>(
    source: &K,
    asked: &Asked<'_>,
    install: &Install,
    key: &dyn ChecksumKey<K>,
) -> Result<K, Refusal> {
    let keys = shape_keys(source, asked);
    desired_keys(
        source,
        asked,
        install,
        key,
        keys.as_ref().map_err(Clone::clone),
    )
}

/// Which keys the copies of a source hold, in which form, and by what hash
/// (None for a copy of every key, as it is): the same for every copy of
/// one reconcile, so decided once for all of them.
#[derive(Debug, Clone)]
pub struct ShapeKeys<'a> {
    pub shape: Cow<'a, KeyShape>,
    pub form: CopyForm<'a>,
    pub keys: Option<CopyKeys>,
}

/// [`ShapeKeys`] of the copy `asked` of `source`.
pub fn shape_keys<'a, K: MirroredKind>(
    source: &K,
    asked: &Asked<'a>,
) -> Result<ShapeKeys<'a>, Refusal> {
    let (shape, form) = shape_asked(source, asked)?;
    let keys = copy_keys(source, &shape, form)?;
    Ok(ShapeKeys { shape, form, keys })
}

/// [`desired`], with what its copies hold of `source`'s keys decided
/// before (`keys`, as [`shape_keys`] says): a refusal of those is told
/// only when nothing else refuses the copy first.
pub fn desired_keys<K: MirroredKind>(
    source: &K,
    asked: &Asked<'_>,
    install: &Install,
    key: &dyn ChecksumKey<K>,
    keys: Result<&ShapeKeys<'_>, Refusal>,
) -> Result<K, Refusal> {
    let (name, namespace, uid) = identity(source)?;
    let meta = match asked {
        Asked::Companion => companion_meta::<K>(name, namespace, uid, &install.suffix)?,
        Asked::Mirror { namespace: target } => {
            let copy_name = mirror_name(source.meta()).map_err(Refusal::InvalidMirrorName)?;
            mirror_meta(name, namespace, uid, target, copy_name)
        }
        Asked::ClusterMirror(copy) => {
            let mut meta = mirror_meta(name, namespace, uid, copy.namespace, copy.name);
            let labels = meta.labels.get_or_insert_with(BTreeMap::new);
            labels.insert(CLUSTER_MIRROR_LABEL.into(), copy.cluster_mirror.into());
            meta
        }
    };
    let lists;
    let carried = match asked {
        Asked::ClusterMirror(copy) => Carried::Given {
            labels: copy.labels,
            annotations: copy.annotations,
        },
        Asked::Companion | Asked::Mirror { .. } => {
            lists = Lists::of(source.meta()).map_err(Refusal::InvalidCopyList)?;
            Carried::Listed {
                source: source.meta(),
                lists: &lists,
            }
        }
    };
    let ShapeKeys { shape, form, keys } = keys?;
    let checksum = match keys {
        None => source_checksum(source, key),
        Some(keys) => K::checksum(&keys.hash, &SourceId::of(source.meta()), key).into_owned(),
    };
    let mut meta = carried.onto(meta, &install.never_carried, &install.source_label_keys);
    let annotations = meta.annotations.get_or_insert_with(BTreeMap::new);
    annotations.insert(CHECKSUM_ANNOTATION.into(), checksum);
    annotations.insert(SOURCE_SELECTOR_ANNOTATION.into(), install.selector.clone());
    Ok(content_under(meta, source, shape, *form))
}

/// Which keys the copy `asked` of `source` holds, and in which form: a
/// ClusterMirror's spec says; a source's own copies follow its
/// `workshop.io/mirror-keys` (absent: every key, as it is).
pub fn shape_asked<'a, K: MirroredKind>(
    source: &K,
    asked: &Asked<'a>,
) -> Result<(Cow<'a, KeyShape>, CopyForm<'a>), Refusal> {
    match asked {
        Asked::ClusterMirror(copy) => Ok((Cow::Borrowed(copy.shape), copy.form)),
        Asked::Companion | Asked::Mirror { .. } => {
            let shape = annotated_shape(source.meta()).map_err(Refusal::InvalidMirrorKeys)?;
            Ok((Cow::Owned(shape), CopyForm::default()))
        }
    }
}

/// What a copy of `source` (cached or full) under `shape` and `form`
/// holds of its keys, and the hash its checksum covers; None for a copy
/// of every key, as it is, whose checksum is the source's as ever.
pub fn copy_keys<K: MirroredKind>(
    source: &K,
    shape: &KeyShape,
    form: CopyForm<'_>,
) -> Result<Option<CopyKeys>, Refusal> {
    if shape.is_every_key() && form == CopyForm::default() {
        return Ok(None);
    }
    match source_copy_keys(source, shape, form) {
        Some(shaped) => shaped.map(Some).map_err(Refusal::KeysBreakType),
        // Never for a stored source: a source's cached form keeps what its
        // copies hold whenever its annotation can be read, a ClusterMirror
        // source's its keys' digests always.
        None => Err(Refusal::Incomplete),
    }
}

/// `copy`, which [`desired`] built from a cached source (which keeps its
/// content's hash, not its content), with its source's content as read
/// now (`fresh`), as `plan` (made from `fresh` once for every copy of the
/// reconcile) chooses it, and that content's checksum under the identity
/// the copy names (`named`: for a ClusterMirror's copy, bound to the
/// ClusterMirror too). A newer source only makes the copy newer.
pub fn with_fresh_content<K: MirroredKind>(
    mut copy: K,
    fresh: &K,
    named: &ObjectMeta,
    key: &dyn ChecksumKey<K>,
    plan: &ContentPlan,
) -> K {
    let checksum = K::checksum(&plan.hash, &SourceId::of(named), key).into_owned();
    let mut meta = std::mem::take(copy.meta_mut());
    let annotations = meta.annotations.get_or_insert_with(BTreeMap::new);
    annotations.insert(CHECKSUM_ANNOTATION.into(), checksum);
    let mut copy = plan.content(fresh);
    *copy.meta_mut() = meta;
    copy
}

/// What of `source` a copy holds, under `meta`: the one place the content
/// of every copy is taken from its source.
fn content_under<K: MirroredKind>(
    meta: ObjectMeta,
    source: &K,
    shape: &KeyShape,
    form: CopyForm<'_>,
) -> K {
    let mut copy = match shape.is_every_key() && form == CopyForm::default() {
        true => K::content_of(source),
        false => shaped_content(source, shape, form.copy_type).0,
    };
    *copy.meta_mut() = meta;
    copy
}

/// A companion's metadata: `<name><suffix>`, owned by its source.
fn companion_meta<K: MirroredKind>(
    name: &str,
    namespace: &str,
    uid: &str,
    suffix: &str,
) -> Result<ObjectMeta, Refusal> {
    let companion = companion_name(name, suffix);
    if companion.len() > MAX_NAME_LEN {
        let len = companion.len();
        return Err(Refusal::NameTooLong {
            name: companion,
            len,
        });
    }
    Ok(ObjectMeta {
        name: Some(companion),
        namespace: Some(namespace.into()),
        labels: Some(managed_by_us()),
        annotations: Some(BTreeMap::new()),
        owner_references: Some(vec![owner_reference::<K>(name, uid)]),
        ..ObjectMeta::default()
    })
}

/// A mirror's metadata: `copy_name` in `target`, naming its source.
fn mirror_meta(
    name: &str,
    namespace: &str,
    uid: &str,
    target: &str,
    copy_name: &str,
) -> ObjectMeta {
    ObjectMeta {
        name: Some(copy_name.into()),
        namespace: Some(target.into()),
        labels: Some(managed_by_us()),
        annotations: Some(BTreeMap::from([
            (MIRROR_OF_ANNOTATION.into(), format!("{namespace}/{name}")),
            (MIRROR_OF_UID_ANNOTATION.into(), uid.into()),
        ])),
        ..ObjectMeta::default()
    }
}

fn managed_by_us() -> BTreeMap<String, String> {
    BTreeMap::from([(MANAGED_BY_LABEL.into(), MANAGER_NAME.into())])
}

#[cfg(test)]
mod tests;
