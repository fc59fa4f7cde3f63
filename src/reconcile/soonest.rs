//! Which failure of a reconcile's parts stands for the reconcile.

use crate::reconcile::error::Error;

/// Of the outcomes of a reconcile's parts (the companion, each mirror), the
/// failure to be retried soonest stands for all: a part that can wait must
/// not delay the retry of one that cannot. Among equals, the first. When
/// that failure is one a person must hear of, every such condition found is
/// kept with it ([`Error::Several`]), in the order found: one reconcile may
/// find a mirror name taken and a protected namespace asked for, and
/// telling one must not hide the other.
pub fn soonest(outcomes: impl IntoIterator<Item = Result<(), Error>>) -> Result<(), Error> {
    let mut errors: Vec<Error> = outcomes
        .into_iter()
        .filter_map(Result::err)
        .flat_map(|error| match error {
            Error::Several(parts) => parts,
            error => vec![error],
        })
        .collect();
    let Some(chosen) = soonest_at(&errors) else {
        return Ok(());
    };
    if errors[chosen].event_reason().is_none() {
        return Err(errors.swap_remove(chosen));
    }
    // Once each: every copy too large says the same.
    let mut said = std::collections::HashSet::new();
    let told = errors.into_iter().filter(|e| e.event_reason().is_some());
    let mut told: Vec<Error> = told.filter(|e| said.insert(e.to_string())).collect();
    Err(match told.len() {
        1 => told.remove(0),
        _ => Error::Several(told),
    })
}

/// Where in `errors` the one to be retried soonest is: the first of the
/// most urgent. None when there is none.
pub fn soonest_at(errors: &[Error]) -> Option<usize> {
    errors
        .iter()
        .enumerate()
        .min_by_key(|(at, error)| (error.retry().urgency(), *at))
        .map(|(at, _)| at)
}

#[cfg(test)]
mod tests;
