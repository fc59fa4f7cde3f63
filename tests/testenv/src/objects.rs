//! Creating the API objects tests commonly need.

use anyhow::{Context, bail};
use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use kube::api::{ObjectMeta, PostParams};
use kube::{Api, Client};
use rand::distr::{Alphanumeric, SampleString};

/// Creates a namespace named `<prefix>-<random suffix>` and returns the name,
/// so tests sharing a control plane never see each other's objects.
pub async fn fresh_namespace(client: &Client, prefix: &str) -> anyhow::Result<String> {
    let prefix = dns_label_prefix(prefix);
    let namespaces: Api<Namespace> = Api::all(client.clone());
    for _ in 0..5 {
        let suffix = Alphanumeric
            .sample_string(&mut rand::rng(), 6)
            .to_ascii_lowercase();
        let name = format!("{prefix}-{suffix}");
        let namespace = Namespace {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                ..ObjectMeta::default()
            },
            ..Namespace::default()
        };
        match namespaces.create(&PostParams::default(), &namespace).await {
            Ok(_) => return Ok(name),
            Err(kube::Error::Api(status)) if status.is_already_exists() => continue,
            Err(e) => return Err(e).with_context(|| format!("creating namespace {name}")),
        }
    }
    bail!("could not find an unused namespace name starting with {prefix}-")
}

/// A namespace name is a DNS label: at most 63 lowercase alphanumerics or
/// '-', starting and ending alphanumeric; 7 characters go to the suffix.
fn dns_label_prefix(prefix: &str) -> String {
    let cleaned: String = prefix
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .take(56)
        .collect();
    let cleaned = cleaned.trim_matches('-');
    if cleaned.is_empty() {
        "test".to_owned()
    } else {
        cleaned.to_owned()
    }
}

/// A token for `service_account` from the TokenRequest API, valid for the
/// apiserver's default audience for two hours.
pub async fn mint_token(
    client: &Client,
    namespace: &str,
    service_account: &str,
) -> anyhow::Result<String> {
    let service_accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), namespace);
    let request = TokenRequest {
        spec: Some(TokenRequestSpec {
            expiration_seconds: Some(2 * 60 * 60),
            ..TokenRequestSpec::default()
        }),
        ..TokenRequest::default()
    };
    let response = service_accounts
        .create_token_request(service_account, &PostParams::default(), &request)
        .await
        .with_context(|| {
            format!("requesting a token for serviceaccount {namespace}/{service_account}")
        })?;
    response
        .status
        .and_then(|status| status.token)
        .with_context(|| {
            format!("the TokenRequest for {namespace}/{service_account} returned no token")
        })
}

#[cfg(test)]
mod tests {
    use super::dns_label_prefix;

    #[test]
    fn namespace_prefixes_are_made_valid_dns_labels() {
        assert_eq!(dns_label_prefix("Garbage_Collector"), "garbage-collector");
        assert_eq!(dns_label_prefix("--x--"), "x");
        assert_eq!(dns_label_prefix("!!"), "test");
        assert_eq!(dns_label_prefix(&"a".repeat(100)).len(), 56);
    }
}
