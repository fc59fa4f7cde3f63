//! A source's content, read from the API server when a write needs it.
//!
//! The sources' cache keeps each source's hash, not its content, so the
//! controller's memory does not follow what the sources hold (nor keep a
//! copy of every Secret value). A reconcile that writes reads its source
//! once, however many copies it writes; one that writes nothing reads
//! nothing.
//!
//! The read asks for the source no older than the cached one (its
//! resourceVersion), which the API server answers from its watch cache
//! rather than with a quorum read of etcd. The reads of one namespace
//! waited for at the same time are made together ([`coalesced`]): one
//! LIST instead of a GET each where that costs less. Whatever is newer
//! than the cache comes to the watch too and is compared again.

use std::{borrow::Cow, sync::OnceLock};

use k8s_openapi::api::core::v1::Secret;
use kube::{Api, ResourceExt, api::GetParams};
use tokio::sync::OnceCell;

pub(crate) mod batch;
pub(crate) mod cached_sizes;
pub mod coalesced;
pub(crate) mod still_decides;

use crate::{
    contract::object_key,
    decisions::cache_form::content_size,
    decisions::copy_request::{CopyRequest, ShapeAsked},
    decisions::desired_copy::{
        Answered, Refusal, Resolved, ShapeKeys, answered, copies_checksum, planned_checksum,
        shape_asked, shape_keys,
    },
    decisions::install::Install,
    decisions::key_shape::{
        KeyShape,
        checksum::CopyForm,
        copy_plan::{ContentPlan, CopyTooLarge, content_plan},
    },
    decisions::secret_published::SecretAs,
    kind::{ChecksumKey, MirroredKind},
    reconcile::context::Context,
    reconcile::copy_budget::HeldBytes,
    reconcile::{
        api_outcome::{ApiOutcome, classify},
        error::Error,
    },
};

/// The source of one reconcile.
pub struct Source<'a, K: MirroredKind> {
    /// As cached: its metadata, and its content's hash in place of it.
    pub cached: &'a K,
    /// The key every checksum of this reconcile is computed under: read
    /// once, so that one reconcile never mixes two keys. It is the key of
    /// where the content came from, which may be another kind than `K`.
    pub key: Box<dyn ChecksumKey<K>>,
    /// As read afresh, with the bytes of the budget of reads it holds
    /// until the reconcile ends.
    content: OnceCell<(K, HeldBytes)>,
    /// For a ClusterMirror's request, the source's own uid: `cached` then
    /// carries the uid its copies are bound to (`decisions::cluster_mirror`),
    /// and the request, not the source's labels, decides what is copied.
    requested_uid: Option<String>,
    /// Which keys its copies hold and in which form, as their request
    /// asks: one answer for every copy of the reconcile.
    shape: ShapeAsked<'a>,
    /// What its copies hold of its keys, decided once from `cached` for
    /// every copy of the reconcile (a shape may cost the work of its every
    /// key against each of its globs).
    shape_keys: OnceLock<Result<ShapeKeys<'a>, Refusal>>,
    /// The checksum those copies record, decided once with them.
    checksum: OnceLock<String>,
    /// What every copy takes from the content read now, and the checksum
    /// that content records, decided once.
    plan: OnceLock<Result<(ContentPlan, String), PlanRefusal>>,
    /// How the content becomes this kind's when it is read from a Secret
    /// whose keys the copies publish (`target.kind: ConfigMap`): the
    /// source's own kind is then not the copies'.
    secret_as: Option<SecretAs<K>>,
}

/// Why no copy can be made of the content read now.
#[derive(Debug, Clone)]
enum PlanRefusal {
    InvalidMirrorKeys(String),
    KeysBreakType(String),
    TooLarge(CopyTooLarge),
}

impl From<PlanRefusal> for Error {
    fn from(refusal: PlanRefusal) -> Error {
        match refusal {
            PlanRefusal::InvalidMirrorKeys(why) => Error::InvalidMirrorKeys(why),
            PlanRefusal::KeysBreakType(why) => Error::KeysBreakType(why),
            PlanRefusal::TooLarge(too_large) => Error::CopyTooLarge(too_large),
        }
    }
}

impl<'a, K: MirroredKind> Source<'a, K> {
    pub fn new(cached: &'a K, key: K::DigestKey) -> Source<'a, K> {
        Source::keyed(cached, Box::new(key))
    }

    /// A source whose content came from where `key` says.
    fn keyed(cached: &'a K, key: Box<dyn ChecksumKey<K>>) -> Source<'a, K> {
        Source {
            cached,
            key,
            content: OnceCell::new(),
            requested_uid: None,
            shape: ShapeAsked::Annotated,
            shape_keys: OnceLock::new(),
            checksum: OnceLock::new(),
            plan: OnceLock::new(),
            secret_as: None,
        }
    }

    /// This source, whose copies' [`ShapeKeys`] were decided already.
    pub fn knowing(self, keys: Result<ShapeKeys<'a>, Refusal>) -> Source<'a, K> {
        let _ = self.shape_keys.set(keys);
        self
    }

    /// What its copies hold of its keys (see [`ShapeKeys`]), decided once.
    pub fn shape_keys(&self) -> Result<&ShapeKeys<'a>, Refusal> {
        let decided = (self.shape_keys).get_or_init(|| shape_keys(self.cached, self.shape));
        decided.as_ref().map_err(Clone::clone)
    }

    /// What `request` asks of this source, answered once for every
    /// namespace it has a copy in (`decisions::desired_copy::answered`),
    /// its keys decided once from this source's shape, which is the
    /// request's; else why the request is refused as a whole.
    pub fn answered<'s>(
        &'s self,
        request: &CopyRequest<'s>,
        install: &Install,
    ) -> Result<Answered<'s, 'a, K>, Refusal> {
        debug_assert_eq!(request.shape, self.shape, "one shape for every copy");
        let resolved = self.shape_keys().map(|keys| Resolved {
            keys,
            checksum: (self.checksum).get_or_init(|| copies_checksum(self.cached, keys, &self.key)),
        });
        answered(self.cached, request, install, resolved)
    }

    /// The source of a ClusterMirror's copies: `bound` is the cached source
    /// under the uid its copies are bound to, `uid` its own, and `request`
    /// what its copies are.
    pub fn requested(
        bound: &'a K,
        key: Box<dyn ChecksumKey<K>>,
        uid: String,
        request: &CopyRequest<'a>,
    ) -> Source<'a, K> {
        Source {
            requested_uid: Some(uid),
            shape: request.shape,
            ..Source::keyed(bound, key)
        }
    }

    /// Whether each copy written is told on the source in an Event: not for
    /// a ClusterMirror's copies, whose ClusterMirror reports them as a whole.
    pub fn tells_each_copy(&self) -> bool {
        self.requested_uid.is_none()
    }

    /// Which keys the copies of `fresh` (this source, read now) hold, and
    /// in which form.
    fn shape_of(&self, fresh: &K) -> Result<(Cow<'a, KeyShape>, CopyForm<'a>), PlanRefusal> {
        shape_asked(fresh.meta(), self.shape).map_err(PlanRefusal::InvalidMirrorKeys)
    }

    /// What every copy of `fresh` (this source, read now) takes from it,
    /// decided once: refused, before any copy is built, when it would break
    /// the Secret's type or be larger than the API server accepts.
    pub fn plan(&self, fresh: &K) -> Result<&ContentPlan, Error> {
        Ok(&self.planned(fresh)?.0)
    }

    /// [`Source::plan`], and the checksum of the content it takes, decided
    /// with it (`decisions::desired_copy::planned_checksum`).
    pub fn planned(&self, fresh: &K) -> Result<&(ContentPlan, String), Error> {
        let planned = self.plan.get_or_init(|| {
            let (shape, form) = self.shape_of(fresh)?;
            let plan = content_plan(fresh, &shape, form).map_err(|breaks| {
                PlanRefusal::KeysBreakType(match self.tells_each_copy() {
                    true => breaks.label_path_message(),
                    false => breaks.cluster_mirror_message(),
                })
            })?;
            match plan.too_large(&K::kind(&())) {
                Some(too_large) => Err(PlanRefusal::TooLarge(too_large)),
                None => {
                    let checksum = planned_checksum(&plan, self.cached.meta(), &self.key);
                    Ok((plan, checksum))
                }
            }
        });
        planned.as_ref().map_err(|refusal| refusal.clone().into())
    }

    /// Whether the copies' content came from a Secret (one whose keys they
    /// publish as ConfigMaps, or a Secret copy): then nothing the API
    /// server says of a write of them is passed on beyond who refused it.
    pub fn content_is_secret(&self) -> bool {
        let asked_as_configmap =
            matches!(self.shape, ShapeAsked::Given { form, .. } if form.as_configmap);
        K::CONFIDENTIAL || asked_as_configmap || self.secret_as.is_some()
    }

    /// This source, whose content is read from the Secret it publishes
    /// the keys of and made this kind's by `secret_as`, if given.
    pub fn reading_secret_as(self, secret_as: Option<SecretAs<K>>) -> Source<'a, K> {
        Source { secret_as, ..self }
    }

    /// The keys asked for and how they become this kind's, when the source
    /// is a Secret whose keys its copies publish.
    fn publishes_secret(&self) -> Option<(&'a KeyShape, SecretAs<K>)> {
        match self.shape {
            ShapeAsked::Given { shape, .. } => Some((shape, self.secret_as?)),
            ShapeAsked::Annotated => None,
        }
    }

    /// The source as the API server holds it now: the same object (by
    /// uid) as the cached one, with its content, and still deciding what
    /// the cached one decided (else the cache is stale, and the reconcile
    /// runs again from the newer source the watch brings).
    pub async fn read(&self, ctx: &Context<K>) -> Result<&K, Error> {
        let read = self.content.get_or_try_init(|| async {
            let namespace = self.cached.namespace().unwrap_or_default();
            // Held before the read, and before any copy's bytes (see
            // `reconcile::copy_budget`).
            let cost = content_size::kept(self.cached.meta());
            let held = ctx.read_budget.hold(&namespace, cost).await;
            let source = self.read_afresh(ctx, &namespace).await?;
            let read_cost = content_size::read_cost(&source);
            if !outgrew(cost, read_cost) {
                return Ok::<_, Error>((source, held));
            }
            // It grew while this reconcile waited (the watch has not told
            // yet): let go of both, wait for room for what it costs now,
            // and read it again, once. Nothing is held while waiting.
            drop((source, held));
            let held = ctx.read_budget.hold(&namespace, read_cost).await;
            Ok((self.read_afresh(ctx, &namespace).await?, held))
        });
        Ok(&read.await?.0)
    }

    /// The source as the API server holds it now, checked against the
    /// cached one (see [`Source::read`]).
    async fn read_afresh(&self, ctx: &Context<K>, namespace: &str) -> Result<K, Error> {
        let name = self.cached.name_any();
        let cached_version = self.cached.meta().resource_version.as_deref();
        let read = match self.publishes_secret() {
            Some((shape, secret_as)) => {
                let read = (ctx.client.clone(), namespace, name.as_str());
                published_secret(read, cached_version, shape, secret_as).await
            }
            None => ctx
                .fresh_reads
                .read(namespace, &name, cached_version)
                .await
                .map_err(classified::<K>),
        };
        let gone = || Error::Stale(format!("{} is gone", object_key(self.cached.meta())));
        match read {
            Ok(Some(source)) if self.requested_uid.is_some() => {
                match source.uid() == self.requested_uid {
                    true => Ok(source),
                    false => Err(gone()),
                }
            }
            Ok(Some(source)) if source.uid() == self.cached.uid() => {
                let changed = still_decides::changed_decision(
                    self.cached.meta(),
                    source.meta(),
                    &ctx.install.source_selector,
                );
                match changed {
                    None => Ok(source),
                    Some(why) => Err(Error::Stale(format!(
                        "{} changed since it was cached: {why}",
                        object_key(self.cached.meta())
                    ))),
                }
            }
            Ok(_) => Err(gone()),
            Err(error) => Err(error),
        }
    }
}

/// Whether a source read at `read_cost` costs so much more than the
/// `held` its cached form said that the budget must be asked again: twice
/// as much, and 64 KiB more.
fn outgrew(held: u64, read_cost: u64) -> bool {
    read_cost > held.saturating_mul(2).max(held.saturating_add(64 << 10))
}

/// The Secret `namespace/name`, no older than `cached_version`, as the
/// object of kind `K` that publishes the keys `shape` copies (its other
/// values are dropped as it is read); None when the API server no longer
/// holds it. An error of the read is told as a Secret's: nothing the API
/// server says of it is passed on beyond who refused it.
async fn published_secret<K: MirroredKind>(
    (client, namespace, name): (kube::Client, &str, &str),
    cached_version: Option<&str>,
    shape: &KeyShape,
    secret_as: SecretAs<K>,
) -> Result<Option<K>, Error> {
    let api = Api::<Secret>::namespaced(client, namespace);
    let not_older = match cached_version {
        Some(version) => GetParams::at(version),
        None => GetParams::default(),
    };
    match api.get_with(name, &not_older).await {
        Ok(secret) => Ok(Some(secret_as(&secret, shape))),
        Err(kube::Error::Api(status)) if status.is_not_found() => Ok(None),
        Err(error) => Err(classified::<Secret>(error)),
    }
}

/// A failed read of an object of kind `K`, as a reconcile is told it.
fn classified<K: MirroredKind>(error: kube::Error) -> Error {
    match classify::<K>(error) {
        ApiOutcome::Failed(error) => error,
        ApiOutcome::NamespaceTerminating => Error::NamespaceTerminating,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        contract::MIRROR_KEYS_ANNOTATION,
        test_fixtures::{mk_map, mk_source, with_annotations},
    };

    #[test]
    fn a_copy_too_large_is_refused_from_the_plan_made_once_for_every_copy() {
        let names: Vec<String> = (1..100).map(|at| format!("a=b{at}")).collect();
        let keys = format!("a,{}", names.join(","));
        let cached = with_annotations(mk_source("big", &[]), &[(MIRROR_KEYS_ANNOTATION, &keys)]);
        let mut fresh = cached.clone();
        fresh.data = Some(mk_map(&[("a", &"x".repeat(1_000_000))]));
        let source = Source::new(&cached, ());
        let refused = source.plan(&fresh).unwrap_err();
        assert_eq!(refused.metric_label(), "copy_too_large");
        assert!(
            refused.to_string().contains("100,000,000 bytes"),
            "{refused}"
        );
        // Decided once: the same answer whatever is asked after.
        let refused_again = source.plan(&cached).unwrap_err();
        assert_eq!(refused_again.to_string(), refused.to_string());
        let small = Source::new(&cached, ());
        assert_eq!(small.plan(&cached).unwrap().size, 0);
    }

    #[test]
    fn a_source_that_grew_past_its_cached_cost_asks_the_budget_again() {
        assert!(!outgrew(1_000, 2_000), "a little more is within the slack");
        assert!(!outgrew(1 << 20, 2 << 20), "twice as much is within it");
        assert!(outgrew(300, 10 << 20), "a few keys become 60,000");
        assert!(outgrew(0, 1 << 20), "an unsized source read big");
        assert!(!outgrew(0, 1_000), "an unsized source read small");
    }

    #[test]
    fn a_copy_of_many_empty_keys_costs_its_keys_in_the_plan() {
        let keys: Vec<(String, String)> = (0..1_000)
            .map(|i| (format!("k{i}"), String::new()))
            .collect();
        let pairs: Vec<(&str, &str)> = keys.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let cached = mk_source("many", &pairs);
        let plan = Source::new(&cached, ()).plan(&cached).cloned();
        let plan = plan.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(plan.size, 0, "no byte of values");
        assert!(
            plan.cost >= 1_000 * crate::kind::DECODED_ENTRY_BYTES,
            "{}",
            plan.cost
        );
    }
}
