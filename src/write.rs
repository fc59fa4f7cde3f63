//! Carries out the one write a plan asks for, and says what it did.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::{
    ResourceExt,
    api::{DeleteParams, PostParams, Preconditions},
};

use crate::{
    context::{Context, object_key},
    error::{ApiOutcome, Error, classify},
    metrics::Operation,
    plan::{self, Write},
};

fn post_params() -> PostParams {
    PostParams {
        field_manager: Some(crate::desired::MANAGER_NAME.into()),
        ..PostParams::default()
    }
}

/// Performs `write` for `source`. A create that finds the name taken (the
/// cache had not seen that object: it lacks the managed-by label, or was
/// just made) reads the object once and plans again from what it is.
pub async fn perform(ctx: &Context, source: &ConfigMap, write: Write) -> Result<(), Error> {
    match write {
        Write::Nothing => Ok(()),
        Write::Create(companion) => create(ctx, source, companion).await,
        Write::Replace { companion, why } => {
            let name = companion.name_any();
            api_call(
                ctx.configmaps(&ns(source))
                    .replace(&name, &post_params(), &companion),
            )
            .await?;
            let verb = if why == crate::desired::Difference::SourceChanged {
                "updated"
            } else {
                "restored"
            };
            done(
                ctx,
                source,
                Operation::update,
                &format!("{verb} companion {}/{name} ({})", ns(source), why.reason()),
            );
            Ok(())
        }
        Write::DeleteToRecreate { uid } => {
            let name = crate::desired::companion_name(&source.name_any(), &ctx.suffix);
            delete(ctx, &ns(source), &name, uid).await?;
            done(
                ctx,
                source,
                Operation::recreate,
                &format!(
                    "deleted immutable companion {}/{name} to recreate it (content changed)",
                    ns(source)
                ),
            );
            Ok(())
        }
    }
}

async fn create(ctx: &Context, source: &ConfigMap, companion: ConfigMap) -> Result<(), Error> {
    let api = ctx.configmaps(&ns(source));
    let name = companion.name_any();
    match api.create(&post_params(), &companion).await {
        Ok(_) => {
            done(
                ctx,
                source,
                Operation::create,
                &format!("created companion {}/{name}", ns(source)),
            );
            Ok(())
        }
        Err(err) if is_already_exists(&err) => {
            let existing = api_call(api.get_opt(&name)).await?;
            let Some(existing) = existing else {
                return Err(Error::Stale(format!(
                    "{name} was deleted while being created"
                )));
            };
            let replan = plan::plan(companion, Some(&existing), source, &ctx.source_label_keys)
                .map_err(|plan::NameTaken| Error::NameTaken {
                    name: format!("{}/{name}", ns(source)),
                })?;
            Box::pin(perform(ctx, source, replan)).await
        }
        Err(err) => Err(failed(err)),
    }
}

/// Deletes a companion guarded by its uid, so that an object recreated
/// under the same name meanwhile is never removed. Gone already is success.
pub async fn delete(ctx: &Context, namespace: &str, name: &str, uid: String) -> Result<(), Error> {
    let params = DeleteParams {
        preconditions: Some(Preconditions {
            uid: Some(uid),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    match ctx.configmaps(namespace).delete(name, &params).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.is_not_found() => Ok(()),
        Err(err) => Err(failed(err)),
    }
}

async fn api_call<T>(call: impl Future<Output = Result<T, kube::Error>>) -> Result<T, Error> {
    call.await.map_err(failed)
}

/// A terminating namespace is no failure: everything in it is going away.
fn failed(err: kube::Error) -> Error {
    match classify(err) {
        ApiOutcome::Failed(error) => error,
        ApiOutcome::NamespaceTerminating => Error::NamespaceTerminating,
    }
}

fn is_already_exists(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(status) if status.is_already_exists())
}

fn done(ctx: &Context, source: &ConfigMap, operation: Operation, message: &str) {
    tracing::info!(source = %object_key(source), "{message}");
    ctx.metrics.companion_written(operation);
    let reason = match operation {
        Operation::create => "CompanionCreated",
        Operation::update => "CompanionUpdated",
        Operation::delete => "CompanionDeleted",
        Operation::recreate => "CompanionRecreated",
    };
    ctx.reporter.normal(source, reason, message.to_owned());
}

fn ns(cm: &ConfigMap) -> String {
    cm.namespace().unwrap_or_default()
}
