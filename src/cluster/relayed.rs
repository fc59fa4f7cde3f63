//! What of the API server's answer to a failed call reaches Events and logs.
//!
//! An admission webhook or a ValidatingAdmissionPolicy writes the message of
//! its denial, and a policy's `messageExpression` may build it from the
//! object itself: for a Secret, from its data. Events are read by many who
//! may not read Secrets (the `view` role), and logs go to log pipelines. So
//! a message is cut to [`MAX_RELAYED`] bytes, and about an object whose
//! content is confidential nothing is passed on but who refused (the policy
//! and its binding, or the webhook) and the status code.
//!
//! Pure.

use kube::core::{Status, response::reason};

/// The longest message relayed, in bytes.
pub const MAX_RELAYED: usize = 512;
/// The longest name of a policy, binding or webhook: a DNS subdomain.
const MAX_NAME_LEN: usize = 253;

/// `status` as it may be told: its message relayed, its reason kept only
/// when it is one Kubernetes defines (a webhook may write any), and the
/// causes' messages cut, or, when confidential, the causes dropped.
pub fn relayable(mut status: Status, confidential: bool) -> Status {
    status.message = relayed(&status.message, status.code, confidential);
    if confidential && !reason::is_known(&status.reason) {
        status.reason.clear();
    }
    if let Some(details) = &mut status.details {
        match confidential {
            true => details.causes.clear(),
            false => {
                for cause in &mut details.causes {
                    cause.message = cut(&cause.message);
                    cause.field = cut(&cause.field);
                }
            }
        }
    }
    status
}

/// A message of the API server about a call, as it may be told: cut, or,
/// when the object's content is confidential, replaced by who refused.
pub fn relayed(message: &str, code: u16, confidential: bool) -> String {
    if !confidential || is_authorization_denial(message) {
        return cut(message);
    }
    let who = refused_by(message).unwrap_or_else(|| "the API server".into());
    format!("{who} refused it ({code}); its message is withheld, as it may hold the Secret's data")
}

/// Whether the message is RBAC's (or another authorizer's) refusal, which
/// the API server writes before it reads the object: `<resource> "<name>"
/// is forbidden: User "<user>" cannot <verb> ...`, which the Secret's owner
/// needs to hear, and which cannot hold its data.
fn is_authorization_denial(message: &str) -> bool {
    let Some((object, refusal)) = message.split_once(" is forbidden: ") else {
        return false;
    };
    let (resource, name) = match object.split_once(' ') {
        Some((resource, quoted)) => (
            resource,
            quoted.strip_prefix('"').and_then(|q| q.strip_suffix('"')),
        ),
        None => (object, Some("")),
    };
    let resource_like = !resource.is_empty()
        && resource
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '.');
    let name_like = name.is_some_and(|name| name.chars().all(is_name_char));
    resource_like && name_like && refusal.starts_with("User \"")
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | ':' | '_')
}

/// Who refused, as the API server words it at the start of its message:
/// a ValidatingAdmissionPolicy (and its binding) or an admission webhook.
/// The first occurrence is the API server's own: it precedes anything the
/// refuser wrote, and an object's name cannot hold a quote.
fn refused_by(message: &str) -> Option<String> {
    if let Some((policy, rest)) = quoted_after(message, "ValidatingAdmissionPolicy '", '\'') {
        const BINDING: &str = " with binding '";
        let binding = match rest.starts_with(BINDING) {
            true => quoted_after(rest, BINDING, '\''),
            false => None,
        };
        return Some(match binding {
            Some((binding, _)) => {
                format!("ValidatingAdmissionPolicy '{policy}' with binding '{binding}'")
            }
            None => format!("ValidatingAdmissionPolicy '{policy}'"),
        });
    }
    ["admission webhook \"", "failed calling webhook \""]
        .into_iter()
        .find_map(|before| quoted_after(message, before, '"'))
        .map(|(webhook, _)| format!("admission webhook \"{webhook}\""))
}

/// The name between the first `before` in `message` and the next `close`,
/// if it has the shape of a Kubernetes name (nothing else is relayed), and
/// what follows it.
fn quoted_after<'m>(message: &'m str, before: &str, close: char) -> Option<(&'m str, &'m str)> {
    let start = message.find(before)? + before.len();
    let rest = &message[start..];
    let end = rest.find(close)?;
    let name = &rest[..end];
    let name_like =
        !name.is_empty() && name.len() <= MAX_NAME_LEN && name.chars().all(is_name_char);
    name_like.then_some((name, &rest[end + close.len_utf8()..]))
}

/// `text` cut to [`MAX_RELAYED`] bytes, on a character boundary, marked
/// when cut.
fn cut(text: &str) -> String {
    if text.len() <= MAX_RELAYED {
        return text.to_owned();
    }
    let mut end = MAX_RELAYED - "... (cut)".len();
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}... (cut)", &text[..end])
}

#[cfg(test)]
mod tests;
