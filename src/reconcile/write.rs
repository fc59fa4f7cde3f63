//! Carries out the write a plan asks for, and says what it did.

use std::time::Instant;

use k8s_openapi::api::core::v1::Secret;
use kube::{
    ResourceExt,
    api::{DeleteParams, PostParams, Preconditions},
};

use crate::{
    contract::object_key,
    contract::{CopyRole, MANAGER_NAME, Operation},
    decisions::cache_form::CachedCopy,
    decisions::plan::{Difference, SeenVersion, Write},
    kind::MirroredKind,
    reconcile::contest::{Fingerprint, WriteKind},
    reconcile::context::Context,
    reconcile::copy_budget::{self, HeldBytes},
    reconcile::source_read::Source,
    reconcile::{
        api_outcome::{ApiOutcome, classify},
        error::Error,
    },
};

fn post_params() -> PostParams {
    PostParams {
        field_manager: Some(MANAGER_NAME.into()),
        ..PostParams::default()
    }
}

/// What became of a write.
pub enum Performed<K: MirroredKind> {
    /// Written, or nothing to write.
    Done,
    /// A create found the name taken by an object the cache had not seen
    /// (it lacks the managed-by label, or was just made): here it is as
    /// read, for the caller to plan again from.
    PlanAgain(CachedCopy<K>),
}

/// Performs `write` for a copy of `source`.
pub async fn perform<K: MirroredKind>(
    ctx: &Context<K>,
    source: &Source<'_, K>,
    write: Write<K>,
) -> Result<Performed<K>, Error> {
    let (copy, kind) = match &write {
        Write::Nothing => return Ok(Performed::Done),
        Write::Create(copy) => (copy, WriteKind::Create),
        Write::Replace { copy, .. } => (copy, WriteKind::Replace),
        Write::DeleteToRecreate { copy, .. } => (copy, WriteKind::DeleteToRecreate),
    };
    let name = object_key(copy.meta());
    let fingerprint = Fingerprint::of(copy);
    if let Some(times) = ctx.contests.contested(&name, fingerprint, Instant::now()) {
        ctx.metrics.restore_held_back();
        return Err(Error::Contested { name, times });
    }
    let performed = apply(ctx, source, write).await;
    if let Ok(Performed::Done) = performed {
        ctx.contests.wrote(&name, fingerprint, kind, Instant::now());
    }
    performed
}

async fn apply<K: MirroredKind>(
    ctx: &Context<K>,
    source: &Source<'_, K>,
    write: Write<K>,
) -> Result<Performed<K>, Error> {
    match write {
        Write::Nothing => Ok(Performed::Done),
        Write::Create(copy) => {
            let _held = hold_copy_bytes(ctx, source).await?;
            create(ctx, source, with_content(ctx, source, copy).await?).await
        }
        // A replace with the resourceVersion, not a server-side apply: a key
        // someone added to a copy's data must be removed, and an apply only
        // removes what the same field manager applied before. The
        // resourceVersion also makes the write a compare-and-swap.
        Write::Replace { copy, why } => {
            let _held = hold_copy_bytes(ctx, source).await?;
            let copy = with_content(ctx, source, copy).await?;
            let api = ctx.api(&copy.namespace().unwrap_or_default());
            ctx.ensure_leading()?;
            (api.replace(&copy.name_any(), &post_params(), &copy).await)
                .map_err(|err| failed_writing(source, err))?;
            let verb = match why {
                Difference::SourceChanged => "updated",
                Difference::TakenOver => "took over",
                Difference::DeletionUnmarked => "marked",
                Difference::None | Difference::Drifted => "restored",
            };
            let why = format!(" ({})", why.reason());
            Ok(done(ctx, source, &copy, Operation::Update, (verb, &why)))
        }
        Write::DeleteToRecreate { copy, seen } => {
            let namespace = copy.namespace().unwrap_or_default();
            let deleted = delete(ctx, &namespace, &copy.name_any(), seen).await?;
            Ok(match recreate_told(deleted) {
                Some(told) => done(ctx, source, &copy, Operation::Recreate, told),
                None => Performed::Done,
            })
        }
    }
}

/// What the delete that precedes a recreate is told as: only a deletion
/// this delete made. A copy someone else removed since it was read is no
/// deletion of ours; the create that follows is the write.
fn recreate_told(deleted: Deleted) -> Option<(&'static str, &'static str)> {
    match deleted {
        Deleted::Now => Some(("deleted immutable", " to recreate it (content changed)")),
        Deleted::AlreadyGone => None,
    }
}

async fn create<K: MirroredKind>(
    ctx: &Context<K>,
    source: &Source<'_, K>,
    copy: K,
) -> Result<Performed<K>, Error> {
    let api = ctx.api(&copy.namespace().unwrap_or_default());
    let name = copy.name_any();
    ctx.ensure_leading()?;
    match api.create(&post_params(), &copy).await {
        Ok(_) => Ok(done(ctx, source, &copy, Operation::Create, ("created", ""))),
        Err(err) if is_already_exists(&err) => {
            let existing = api_call::<K, _>(api.get_opt(&name)).await?;
            let Some(existing) = existing else {
                return Err(Error::Stale(format!(
                    "{name} was deleted while being created"
                )));
            };
            Ok(Performed::PlanAgain(CachedCopy::of(&existing)))
        }
        Err(err) => Err(failed_writing(source, err)),
    }
}

/// Waits for room in the budget of copies in flight for one copy of
/// `source`, before the copy is built: held until the write returns. The
/// copy is counted at the cost its plan gives, or the floor of a write
/// (the read and the plan are the ones `with_content` then uses).
async fn hold_copy_bytes<K: MirroredKind>(
    ctx: &Context<K>,
    source: &Source<'_, K>,
) -> Result<HeldBytes, Error> {
    // The copy's own cost, from the plan: a copy refused as too large
    // holds nothing, and one of a few chosen keys holds no more than them.
    let bytes = copy_budget::write_cost(source.plan(source.read(ctx).await?)?.cost);
    let namespace = source.cached.namespace().unwrap_or_default();
    Ok(ctx.copy_budget.hold(&namespace, bytes).await)
}

/// `copy` with the source's content as the API server holds it now, and
/// that content's checksum: the cache holds only a hash, which the plan
/// compared.
async fn with_content<K: MirroredKind>(
    ctx: &Context<K>,
    source: &Source<'_, K>,
    copy: K,
) -> Result<K, Error> {
    let content = source.read(ctx).await?;
    let (plan, checksum) = source.planned(content)?;
    Ok(plan.fill(copy, content, checksum))
}

/// What a delete of a copy found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deleted {
    /// This delete removed it.
    Now,
    /// It was gone already (404): someone else removed it.
    AlreadyGone,
}

/// Deletes a copy as it was seen, guarded by its uid and resourceVersion:
/// an object recreated under the same name, or changed since, is never
/// removed (the API server answers 409, and the reconcile runs again from
/// what the cache holds by then). Gone already is success, told apart.
pub async fn delete<K: MirroredKind>(
    ctx: &Context<K>,
    namespace: &str,
    name: &str,
    seen: SeenVersion,
) -> Result<Deleted, Error> {
    let params = delete_params(seen);
    ctx.ensure_leading()?;
    let answer = ctx.api(namespace).delete(name, &params).await;
    deleted(answer.map(drop)).map_err(failed::<K>)
}

/// What the API server's answer to a delete says was deleted.
fn deleted(answer: Result<(), kube::Error>) -> Result<Deleted, kube::Error> {
    match answer {
        Ok(()) => Ok(Deleted::Now),
        Err(kube::Error::Api(status)) if status.is_not_found() => Ok(Deleted::AlreadyGone),
        Err(err) => Err(err),
    }
}

fn delete_params(seen: SeenVersion) -> DeleteParams {
    DeleteParams {
        preconditions: Some(Preconditions {
            uid: Some(seen.uid),
            resource_version: Some(seen.resource_version),
        }),
        ..DeleteParams::default()
    }
}

async fn api_call<K: MirroredKind, T>(
    call: impl Future<Output = Result<T, kube::Error>>,
) -> Result<T, Error> {
    call.await.map_err(failed::<K>)
}

/// A terminating namespace is no failure: everything in it is going away.
fn failed<K: MirroredKind>(err: kube::Error) -> Error {
    match classify::<K>(err) {
        ApiOutcome::Failed(error) => error,
        ApiOutcome::NamespaceTerminating => Error::NamespaceTerminating,
    }
}

/// A failed write of a copy of `source`: told as a Secret's when the
/// content came from one, since an admission policy may quote the content
/// it refuses.
fn failed_writing<K: MirroredKind>(source: &Source<'_, K>, err: kube::Error) -> Error {
    match source.content_is_secret() {
        true => failed::<Secret>(err),
        false => failed::<K>(err),
    }
}

fn is_already_exists(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(status) if status.is_already_exists())
}

/// Logs, counts and (where the source tells each copy) records as an
/// Event the write `operation` made of `copy`: "`verb` companion|mirror
/// namespace/name`after`".
fn done<K: MirroredKind>(
    ctx: &Context<K>,
    source: &Source<'_, K>,
    copy: &K,
    operation: Operation,
    (verb, after): (&str, &str),
) -> Performed<K> {
    let message = format!(
        "{verb} {} {}{after}",
        CopyRole::of(copy.meta()),
        object_key(copy.meta())
    );
    tracing::info!(source = %object_key(source.cached.meta()), "{message}");
    ctx.metrics.copy_written(operation);
    if source.tells_each_copy() {
        ctx.events.normal(
            source.cached,
            CopyRole::of(copy.meta()).event_reason(operation),
            message,
        );
    }
    Performed::Done
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_fixtures::mk_api_error;

    #[test]
    fn a_delete_is_of_the_very_version_seen() {
        let seen = SeenVersion {
            uid: "copy-uid".into(),
            resource_version: "42".into(),
        };
        let preconditions = delete_params(seen).preconditions.unwrap();
        assert_eq!(preconditions.uid.as_deref(), Some("copy-uid"));
        assert_eq!(preconditions.resource_version.as_deref(), Some("42"));
    }

    #[test]
    fn a_copy_gone_before_its_recreate_s_delete_is_not_told_as_deleted() {
        let gone = mk_api_error(404, "NotFound", "configmaps \"x\" not found");
        let told = deleted(Err(gone)).ok().map(recreate_told);
        assert_eq!(told, Some(None), "gone already: no deletion to tell");
        let told = deleted(Ok(())).ok().map(recreate_told);
        let recreated = ("deleted immutable", " to recreate it (content changed)");
        assert_eq!(told, Some(Some(recreated)));
    }

    #[test]
    fn a_delete_refused_as_stale_is_no_deletion() {
        let changed = mk_api_error(409, "Conflict", "the object has been modified");
        assert!(deleted(Err(changed)).is_err());
    }
}
