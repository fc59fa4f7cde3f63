//! One ClusterMirror's or Mirror's copies made what they should be, with
//! the same plan and writes as a source's own mirrors (`reconcile::copy`),
//! and what its status says of them.

use kube::runtime::reflector::ObjectRef;

use crate::{
    decisions::cluster_mirror::{
        Request,
        standing::{MadeFrom, Standing},
        status::{Blocked, Failure, Tally},
    },
    decisions::scope::Scope,
    kind::MirroredKind,
    reconcile::context::Context,
    reconcile::error::{Error, Retry},
    reconcile::fan_out::{self, Outcomes},
    reconcile::source_read::Source,
};

use super::{
    caches::ClusterMirrorCaches,
    selected::{Selected, claimed_by, consent_for, selected},
    source::{Readable, Unreadable},
    suspended,
};

/// What one reconcile found.
#[derive(Debug, Default)]
pub struct Found {
    pub tally: Tally,
    pub blocked: Option<Blocked>,
    pub suspended: bool,
    /// Suspended, some of its copies are missing and their names free as
    /// last read.
    pub missing: bool,
    pub generation: Option<i64>,
    /// The failure to be retried soonest, which the loop's backoff
    /// retries: soon for one that goes away by itself, on the slow timer
    /// (`--slow-retry`) for one a person must fix (a name held by someone
    /// else, a refusal), which nothing else may wake once fixed.
    pub retry: Option<Error>,
}

impl Found {
    /// Whether a suspended comparison left copies missing: the name of
    /// each may be taken by an object no watch of this controller reports,
    /// so it is looked at again on the slow timer (`--slow-retry`).
    pub fn looks_again(&self) -> bool {
        self.suspended && self.blocked.is_none() && self.missing
    }

    /// Whether it wrote copies (compared them, and wrote those that
    /// differ): not when suspended or blocked.
    pub fn writes(&self) -> bool {
        !self.suspended && self.blocked.is_none()
    }

    /// A spec refused whole: nothing is copied, nothing counted
    /// (`Blocked::counts_selected`).
    pub fn invalid(generation: Option<i64>, why: String) -> Found {
        Found::blocked(generation, Blocked::InvalidSpec(why), 0)
    }

    /// Nothing is copied: `selected` namespaces are counted (the spec
    /// reaches them whatever blocks it), none as synced.
    fn blocked(generation: Option<i64>, blocked: Blocked, selected: usize) -> Found {
        Found {
            tally: Tally {
                selected,
                ..Tally::default()
            },
            blocked: Some(blocked),
            generation,
            ..Found::default()
        }
    }
}

/// Compares (and unless suspended, writes) the copies `request` asks for,
/// from its source as `read` gives it to the writer of the copies' kind:
/// those in `scope`, when where the others stand is known, else every
/// one. Only a condition that stops the whole reconcile (no digest key
/// yet, the caches not ready) is an error; each namespace's outcome is in
/// what it finds.
pub async fn sync<K: MirroredKind>(
    request: &Request,
    read: Result<Readable<K>, Unreadable>,
    scope: Scope,
    cluster_mirrors: &ClusterMirrorCaches,
    ctx: &Context<K>,
) -> Result<Found, Error> {
    let readable = match read {
        Ok(readable) => readable,
        Err(Unreadable::Failed(error)) => {
            // It writes nothing until its source can be read again (the
            // digest key back, say): it claims no name it has not written.
            cluster_mirrors.writes_for(&request.key(), false);
            return Err(error);
        }
        Err(Unreadable::Blocked(why)) => {
            return Ok(blocked(request, why, cluster_mirrors, ctx).await);
        }
    };
    // Its copies record the CRD it is made under, once that is proven; till
    // then they record none (an existing record stays), as before marks.
    if let Err(error) = cluster_mirrors.mirrors.prove_made_under(request).await {
        tracing::warn!(request = %request.key(), %error, "cannot read which CRD it is made under: its copies are written without recording it, until a later reconcile can");
    }
    // From before its first write: a source's mirror at its copies' name
    // yields to it from then on (`Request::claims`).
    cluster_mirrors.writes_for(&request.key(), !request.suspend);
    let Readable {
        cached,
        missing,
        key,
        from_secret,
    } = readable;
    let bound = request.bound_source(cached.as_ref());
    let uid = cached.meta().uid.clone().unwrap_or_default();
    let source = Source::requested(&bound, key, uid, &request.copy_request(None))
        .reading_secret_as(from_secret);
    let made_from = MadeFrom {
        uid: request.uid.clone(),
        generation: request.generation,
        source_uid: cached.meta().uid.clone(),
        source_version: cached.meta().resource_version.clone(),
    };
    let name = &request.key();
    if let Scope::Namespaces(some) = &scope
        && !request.suspend
        && let Some(standing) = cluster_mirrors
            .standing(name)
            .filter(|s| s.holds_for(&made_from))
        && let Some(found) = sync_some(
            request,
            &source,
            some,
            standing,
            &missing,
            cluster_mirrors,
            ctx,
        )
        .await
    {
        return Ok(found);
    }
    let found = sync_all(request, &source, &missing, cluster_mirrors, ctx).await?;
    let standing = (!request.suspend && found.blocked.is_none())
        .then(|| Standing::after_full(made_from, &found.tally))
        .flatten();
    cluster_mirrors.stand(name, standing);
    Ok(found)
}

/// What a reconcile finds while `why` blocks the whole request.
pub async fn blocked<K: MirroredKind>(
    request: &Request,
    why: Blocked,
    cluster_mirrors: &ClusterMirrorCaches,
    ctx: &Context<K>,
) -> Found {
    let selected = selected(request, cluster_mirrors, ctx).await.count();
    Found::blocked(request.generation, why, selected)
}

/// Compares every copy the request asks for.
async fn sync_all<K: MirroredKind>(
    request: &Request,
    source: &Source<'_, K>,
    missing: &[String],
    cluster_mirrors: &ClusterMirrorCaches,
    ctx: &Context<K>,
) -> Result<Found, Error> {
    let Selected {
        namespaces,
        refused,
    } = selected(request, cluster_mirrors, ctx).await;
    let count = namespaces.len() + refused.len();
    let made_under = cluster_mirrors.mirrors.proven_made_under(&request.uid);
    let copy_request = request.copy_request(made_under.as_deref());
    let wanted = match source.answered(&copy_request, &ctx.install) {
        Ok(answered) => fan_out::desired_copies(&answered, namespaces, ctx).await,
        // A source that is not a copy (checked above) is refused only
        // while it is being deleted, held by a finalizer: that blocks the
        // ClusterMirror only where it selects a namespace to write into.
        Err(_) if namespaces.is_empty() => Vec::new(),
        Err(refusal) => {
            let why = Blocked::SourceNotCopyable(format!("{refusal:?}"));
            return Ok(Found::blocked(request.generation, why, count));
        }
    };
    let mut copies_missing = false;
    let mut outcomes = match request.suspend {
        true => {
            let compared = suspended::compare(source, wanted, &request.target_name, ctx).await?;
            copies_missing = compared.missing;
            Outcomes::fold(compared.outcomes)
        }
        false => fan_out::write_copies(source, wanted, ctx).await,
    };
    written_without(&mut outcomes, missing);
    let mut failures = failures(request, &outcomes);
    failures.extend(refused);
    let tally = Tally {
        // A namespace being deleted is no target any more.
        selected: count - outcomes.terminating,
        synced: outcomes.in_sync.len(),
        failures,
    };
    Ok(Found {
        tally,
        suspended: request.suspend,
        missing: copies_missing,
        generation: request.generation,
        retry: outcomes.into_retry(),
        ..Found::default()
    })
}

/// Compares the copies in `namespaces` alone, and counts the others as
/// `standing` says they stand. None when that cannot be: one of them is no
/// longer selected, or is being deleted (then everything is compared).
async fn sync_some<K: MirroredKind>(
    request: &Request,
    source: &Source<'_, K>,
    namespaces: &std::collections::BTreeSet<String>,
    mut standing: Standing,
    missing: &[String],
    cluster_mirrors: &ClusterMirrorCaches,
    ctx: &Context<K>,
) -> Option<Found> {
    if !(namespaces.iter())
        .all(|namespace| still_selected(request, namespace, cluster_mirrors, ctx))
    {
        return None;
    }
    let namespaces = namespaces.iter().cloned().collect();
    let made_under = cluster_mirrors.mirrors.proven_made_under(&request.uid);
    let copy_request = request.copy_request(made_under.as_deref());
    let answered = source.answered(&copy_request, &ctx.install).ok()?;
    let mut outcomes = fan_out::fan_out(source, &answered, namespaces, ctx).await;
    written_without(&mut outcomes, missing);
    if outcomes.terminating > 0 {
        return None;
    }
    for namespace in &outcomes.in_sync {
        standing.compared(namespace, None);
    }
    for failure in failures(request, &outcomes) {
        standing.compared(&failure.namespace.clone(), Some(failure));
    }
    let found = Found {
        tally: standing.tally(),
        generation: request.generation,
        retry: outcomes.into_retry(),
        ..Found::default()
    };
    // A copy out of sync makes the next wakeup compare all.
    let keep = found.tally.failures.is_empty().then_some(standing);
    cluster_mirrors.stand(&request.key(), keep);
    Some(found)
}

/// A copy written without the exact keys its source lacks (`missing`)
/// does not hold what the spec asks for: each counts as failed, as
/// `KeyMissing`, until the source has them or the spec stops naming them.
fn written_without(outcomes: &mut Outcomes, missing: &[String]) {
    if missing.is_empty() {
        return;
    }
    let keys = missing.join(", ");
    let written = std::mem::take(&mut outcomes.in_sync).into_iter();
    let failed = written.map(|namespace| (namespace, Error::KeyMissing(keys.clone())));
    outcomes.failed.extend(failed);
}

/// Whether `namespace` is selected by the request now, and not being deleted.
fn still_selected<K: MirroredKind>(
    request: &Request,
    namespace: &str,
    cluster_mirrors: &ClusterMirrorCaches,
    ctx: &Context<K>,
) -> bool {
    let Some(store) = &ctx.caches.namespaces else {
        return false;
    };
    let consent = consent_for(request, cluster_mirrors, ctx);
    store.get(&ObjectRef::new(namespace)).is_some_and(|object| {
        let facts = ctx.caches.facts_of(&object.metadata);
        object.metadata.deletion_timestamp.is_none()
            && request.selects(&facts, consent)
            && claimed_by(request, &facts, ctx).is_none()
    })
}

/// How the status tells each failed copy, in the order found.
fn failures(request: &Request, outcomes: &Outcomes) -> Vec<Failure> {
    outcomes
        .failed
        .iter()
        .map(|(namespace, error)| failure(request, namespace.clone(), error))
        .collect()
}

/// The copy in `namespace` failed with `error`: how the status tells it.
fn failure(request: &Request, namespace: String, error: &Error) -> Failure {
    Failure {
        reason: error.condition().row().failure,
        message: match error {
            Error::NameTaken { name } => format!(
                "{name} already exists and was not written by this {}; it is left untouched",
                request.key().kind().name()
            ),
            error => error.to_string(),
        },
        namespace,
        retried: error.retry() == Retry::Soon,
    }
}
