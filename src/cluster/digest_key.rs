//! The key of Secret copies' digests (see `kind::secret`): read from one
//! Secret, created with 32 random bytes when it does not exist yet. Every
//! replica of an install reads the same key, so all agree on every digest,
//! across restarts too. Deleting that Secret makes a new key, and every
//! Secret copy is then written once more under it.
//!
//! Until the key is read, Secrets are not mirrored, and `/readyz` and the
//! log say why; ConfigMaps are mirrored meanwhile.

use std::{collections::BTreeMap, time::Duration};

use k8s_openapi::{ByteString, api::core::v1::Secret};
use kube::{Api, Client, api::PostParams, core::ObjectMeta};
use rand::RngCore;

use crate::{
    cluster::{api_client, relayed},
    contract::MANAGER_NAME,
    kind::secret::SecretDigestKey,
    ops::health::Health,
    ops::shutdown::Shutdown,
};

/// Where in the Secret the key is.
const KEY_ENTRY: &str = "key";
/// How `/readyz` names the kind while it waits.
const KIND: &str = "secrets";
const FIRST_RETRY: Duration = Duration::from_secs(1);
const LONGEST_RETRY: Duration = Duration::from_secs(60);

/// The key, once read or made; None if the process stops first.
pub async fn obtain(
    client: Client,
    (namespace, name): (String, String),
    health: &Health,
    shutdown: &Shutdown,
) -> Option<SecretDigestKey> {
    let secrets: Api<Secret> = Api::namespaced(client, &namespace);
    health.kind_waiting(KIND, Some("reading the digest key"));
    let mut retry = FIRST_RETRY;
    let mut reported: Option<String> = None;
    loop {
        let problem = match read_or_create(&secrets, &name).await {
            Ok(key) => {
                health.kind_waiting(KIND, None);
                tracing::info!(secret = %format!("{namespace}/{name}"), "Secret mirroring started: digest key read");
                return Some(key);
            }
            Err(problem) => problem,
        };
        let reason = format!("cannot read the digest key {namespace}/{name}: {problem}");
        health.kind_waiting(KIND, Some(&reason));
        if reported.as_ref() != Some(&reason) {
            tracing::warn!(%reason, "Secrets are not mirrored until this is fixed; ConfigMaps are");
            reported = Some(reason);
        }
        tokio::select! {
            () = tokio::time::sleep(retry) => {}
            _ = shutdown.requested() => return None,
        }
        retry = (retry * 2).min(LONGEST_RETRY);
    }
}

async fn read_or_create(secrets: &Api<Secret>, name: &str) -> Result<SecretDigestKey, String> {
    match secrets.get_opt(name).await.map_err(describe)? {
        Some(secret) => key_in(&secret),
        None => {
            let created = secrets
                .create(&PostParams::default(), &new_key_secret(name))
                .await;
            match created {
                Ok(secret) => key_in(&secret),
                // Another replica made it first: read theirs next time.
                Err(kube::Error::Api(status)) if status.is_already_exists() => {
                    Err("created by another replica meanwhile; reading it again".into())
                }
                Err(error) => Err(describe(error)),
            }
        }
    }
}

/// The key in `secret`; what is wrong with it, never its content.
fn key_in(secret: &Secret) -> Result<SecretDigestKey, String> {
    secret
        .data
        .as_ref()
        .and_then(|data| data.get(KEY_ENTRY))
        .and_then(|key| SecretDigestKey::from_bytes(&key.0))
        .ok_or_else(|| {
            format!(
                "it holds no {}-byte entry {KEY_ENTRY:?}; delete it to have a new key made",
                SecretDigestKey::LEN
            )
        })
}

fn new_key_secret(name: &str) -> Secret {
    let mut key = vec![0u8; SecretDigestKey::LEN];
    rand::rng().fill_bytes(&mut key);
    Secret {
        metadata: ObjectMeta {
            name: Some(name.into()),
            // Not the managed-by label: this is no copy, and must never be
            // taken for one.
            labels: Some(BTreeMap::from([(
                "app.kubernetes.io/part-of".into(),
                MANAGER_NAME.into(),
            )])),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([(KEY_ENTRY.into(), ByteString(key))])),
        type_: Some("Opaque".into()),
        ..Secret::default()
    }
}

/// An API error as it may be told (see `relayed`): RBAC's refusal whole,
/// else who refused and the status code, never the Secret's content.
fn describe(error: kube::Error) -> String {
    match error {
        // An admission policy refusing the key's Secret may quote the key.
        kube::Error::Api(status) => relayed::relayed(&status.message, status.code, true),
        kube::Error::SerdeError(parse) => api_client::unparsed(&parse),
        other => other.to_string(),
    }
}
