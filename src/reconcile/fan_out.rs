//! The engine of every request for copies in many namespaces: a copy
//! request ([`CopyRequest`]) of one source becomes its copies, one per
//! namespace, and they are written, with what their outcomes come to. A
//! source's own mirrors and a ClusterMirror's copies go through it alike;
//! each asker picks its namespaces (its consent), and tells the outcomes
//! its own way (Events on the source; a ClusterMirror's status).

use futures::{StreamExt, stream};

use crate::{
    decisions::desired_copy::Answered,
    kind::MirroredKind,
    reconcile::context::Context,
    reconcile::copy::sync_copy,
    reconcile::source_read::Source,
    reconcile::{
        error::{Error, Retry},
        soonest::soonest_at,
    },
};

/// How many copies of one source, or of one ClusterMirror, are written at
/// once.
const WRITES_AT_ONCE: usize = 16;
/// How many namespaces a reconcile compares before it lets the rest of the
/// process run.
const NAMESPACES_BETWEEN_YIELDS: usize = 256;

/// Lets the rest of the process run after every
/// `NAMESPACES_BETWEEN_YIELDS` namespaces compared (`checked` counts them
/// from 0): other reconciles, and the Lease renewal, share this thread, and
/// comparing thousands of namespaces awaits nothing.
pub(crate) async fn let_others_run(checked: usize) {
    if checked % NAMESPACES_BETWEEN_YIELDS == NAMESPACES_BETWEEN_YIELDS - 1 {
        tokio::task::yield_now().await;
    }
}

/// The copies of one request, answered once (`Source::answered`), one in
/// each of `namespaces`, as the install writes them: no namespace can
/// refuse one, as the request was refused or answered as a whole.
pub(crate) async fn desired_copies<K: MirroredKind>(
    answered: &Answered<'_, '_, K>,
    namespaces: Vec<String>,
    ctx: &Context<K>,
) -> Vec<(String, K)> {
    let mut copies = Vec::with_capacity(namespaces.len());
    for (built, namespace) in namespaces.into_iter().enumerate() {
        let_others_run(built).await;
        let copy = answered.copy_in(&namespace, &ctx.install);
        copies.push((namespace, copy));
    }
    copies
}

/// The copies of `source` `answered` in `namespaces` ([`desired_copies`]),
/// written ([`write_copies`]).
pub(crate) async fn fan_out<K: MirroredKind>(
    source: &Source<'_, K>,
    answered: &Answered<'_, '_, K>,
    namespaces: Vec<String>,
    ctx: &Context<K>,
) -> Outcomes {
    let copies = desired_copies(answered, namespaces, ctx).await;
    write_copies(source, copies, ctx).await
}

/// Writes each copy (with the namespace it is for), `WRITES_AT_ONCE` at a
/// time, and folds the outcomes.
pub(crate) async fn write_copies<K: MirroredKind>(
    source: &Source<'_, K>,
    copies: Vec<(String, K)>,
    ctx: &Context<K>,
) -> Outcomes {
    let outcomes: Vec<(String, Result<bool, Error>)> = stream::iter(copies)
        .map(|(namespace, copy)| async move {
            let outcome = sync_copy(source, copy, ctx).await.map(|()| true);
            (namespace, outcome)
        })
        .buffer_unordered(WRITES_AT_ONCE)
        .collect()
        .await;
    Outcomes::fold(outcomes)
}

/// What the copies of one fan-out came to.
#[derive(Debug, Default)]
pub(crate) struct Outcomes {
    /// The namespaces whose copy is as it should be.
    pub in_sync: Vec<String>,
    /// How many namespaces are being deleted: everything in them goes, so
    /// they are no target any more.
    pub terminating: usize,
    /// Each copy that could not be made what it should be: its namespace
    /// and why, in the order found.
    pub failed: Vec<(String, Error)>,
}

impl Outcomes {
    /// Folds each namespace's outcome: in sync (`Ok(true)`), left out of
    /// sync on purpose (`Ok(false)`, a suspended comparison), or failed.
    pub(crate) fn fold(
        outcomes: impl IntoIterator<Item = (String, Result<bool, Error>)>,
    ) -> Outcomes {
        let mut folded = Outcomes::default();
        for (namespace, outcome) in outcomes {
            match outcome {
                Ok(true) => folded.in_sync.push(namespace),
                Ok(false) => {}
                Err(Error::NamespaceTerminating) => folded.terminating += 1,
                Err(error) => folded.failed.push((namespace, error)),
            }
        }
        folded
    }

    /// The failure to be retried soonest (the first of equals), which the
    /// loop's backoff retries; None when every failure waits for a change.
    pub(crate) fn into_retry(self) -> Option<Error> {
        let mut errors: Vec<Error> = self.failed.into_iter().map(|(_, error)| error).collect();
        let chosen = soonest_at(&errors)?;
        (errors[chosen].retry() != Retry::OnChange).then(|| errors.swap_remove(chosen))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn taken(name: &str) -> Error {
        Error::NameTaken { name: name.into() }
    }

    #[test]
    fn copies_in_sync_going_away_and_failed_are_counted_apart() {
        let folded = Outcomes::fold([
            ("a".to_owned(), Ok(true)),
            ("b".to_owned(), Ok(false)),
            ("c".to_owned(), Err(Error::NamespaceTerminating)),
            ("d".to_owned(), Err(taken("d/x"))),
        ]);
        assert_eq!(folded.in_sync, ["a"]);
        assert_eq!(folded.terminating, 1);
        let failed: Vec<&str> = folded.failed.iter().map(|(ns, _)| ns.as_str()).collect();
        assert_eq!(failed, ["d"]);
    }

    #[test]
    fn the_failure_retried_is_the_soonest_and_the_first_of_equals() {
        let folded = Outcomes::fold([
            ("a".to_owned(), Err(taken("a/x"))),
            ("b".to_owned(), Err(Error::Stale("first".into()))),
            ("c".to_owned(), Err(Error::Stale("second".into()))),
        ]);
        let retry = folded.into_retry();
        assert!(
            matches!(&retry, Some(Error::Stale(why)) if why == "first"),
            "{retry:?}"
        );
    }

    #[test]
    fn a_failure_that_waits_for_a_change_is_not_retried() {
        let waits = Error::NeverASource {
            reason: "a copy".into(),
        };
        assert_eq!(waits.retry(), Retry::OnChange);
        let folded = Outcomes::fold([("a".to_owned(), Err(waits))]);
        assert_eq!(folded.failed.len(), 1, "still counted as failed");
        assert!(folded.into_retry().is_none());
    }
}
