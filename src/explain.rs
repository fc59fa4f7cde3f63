//! `configmap-mirror explain`: why a source is or is not copied where it
//! asks, what a copy is, and what a namespace receives and refuses. It
//! reads the cluster as the caller (their kubeconfig and rights, get and
//! list only) and decides with the controller's own rules
//! ([`verdicts`], no I/O); [`fetch`] does the reading, [`render`] the
//! table and the JSON. A Secret's value is never printed.

mod fetch;
pub(crate) mod render;
pub(crate) mod verdicts;

use std::{io::Write, process::ExitCode, time::Duration};

use k8s_openapi::api::core::v1::{ConfigMap, Secret};

use crate::{
    cluster::api_client,
    decisions::cluster_mirror::cluster_consent,
    decisions::request_key::RequestKey,
    kind::secret::SecretSourceRules,
    ops::cli::{ExplainArgs, ObjectArg, ObjectKind, Output},
    ops::config::Kind,
};
use verdicts::{Preview, Rules};

/// Longest wait for one read.
const READ_TIMEOUT: Duration = Duration::from_secs(30);

/// Runs `explain`: prints the answer, and says 0 when everything asked for
/// is in place, 1 when something is not, 2 on bad input (flags, or a
/// kubeconfig that cannot be used).
pub async fn run(args: ExplainArgs) -> ExitCode {
    let rules = match rules(&args) {
        Ok(rules) => rules,
        Err(error) => return bad_input(error),
    };
    let client = match client(&args).await {
        Ok(client) => client,
        Err(error) => return bad_input(error),
    };
    let preview =
        (args.mirror_to.is_some() || args.mirror_to_selector.is_some()).then(|| Preview {
            mirror_to: args.mirror_to.clone(),
            mirror_to_selector: args.mirror_to_selector.clone(),
        });
    let report = match (&args.object, &args.namespace) {
        (Some(ObjectArg::Mirror(..)), _) if preview.is_some() || args.kind.is_some() => {
            return bad_input(anyhow::anyhow!(
                "mirror/NAMESPACE/NAME is a Mirror: --kind, --mirror-to and --mirror-to-selector do not apply"
            ));
        }
        (Some(ObjectArg::Mirror(namespace, name)), _) => {
            fetch::request(&client, &rules, &RequestKey::mirror(namespace, name)).await
        }
        (Some(_), _) if args.cluster_mirror().is_some() && preview.is_some() => {
            return bad_input(anyhow::anyhow!(
                "--mirror-to and --mirror-to-selector preview a source, not a ClusterMirror"
            ));
        }
        (Some(_), _) if let Some(name) = args.cluster_mirror() => {
            fetch::request(&client, &rules, &RequestKey::cluster_mirror(name)).await
        }
        (Some(ObjectArg::Named(namespace, name)), _) => match args
            .kind
            .unwrap_or(ObjectKind::Configmap)
        {
            ObjectKind::Configmap => {
                fetch::object::<ConfigMap>(&client, &rules, namespace, name, preview.as_ref()).await
            }
            ObjectKind::Secret => {
                fetch::object::<Secret>(&client, &rules, namespace, name, preview.as_ref()).await
            }
        },
        (None, Some(namespace)) => {
            let kinds = fetch::Kinds {
                configmaps: args.kind != Some(ObjectKind::Secret),
                secrets: args.kind != Some(ObjectKind::Configmap),
            };
            fetch::namespace(&client, &rules, namespace, kinds).await
        }
        (None, None) => return bad_input(anyhow::anyhow!("give NAMESPACE/NAME or --namespace")),
    };
    let text = match args.output {
        Output::Table => report.to_table(),
        Output::Json => format!("{:#}\n", report.to_json()),
    };
    // A reader that stops early (`| head`) is no failure of explain's.
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
    ExitCode::from(report.exit_code())
}

fn bad_input(error: anyhow::Error) -> ExitCode {
    eprintln!("error: {error:#}");
    ExitCode::from(2)
}

/// The install's rules, from the controller's own flags. Its own
/// namespaces are protected, as the controller protects them.
fn rules(args: &ExplainArgs) -> anyhow::Result<Rules> {
    let rules = &args.rules;
    // The controller's default is the namespace it runs in: the install's.
    let cluster_mirror_sources = match rules.cluster_mirror_source_namespaces.is_empty() {
        false => rules.cluster_mirror_source_namespaces.clone(),
        true => args.install_namespaces.clone(),
    };
    let mut protected = rules.protected_namespaces.clone();
    protected.extend(args.install_namespaces.iter().cloned());
    protected.extend(args.leader_election_namespace.iter().cloned());
    protected.extend(cluster_mirror_sources.iter().cloned());
    Ok(Rules {
        install: rules.install()?,
        configmaps: rules.consent(Kind::Configmaps, &protected)?,
        secrets: rules.consent(Kind::Secrets, &protected)?,
        secret_rules: args.digest_key_places().into_iter().fold(
            SecretSourceRules::new(&rules.refused_secret_types),
            SecretSourceRules::with_own_secret,
        ),
        cluster_mirror_class: rules.cluster_mirror_class.clone(),
        kinds: rules
            .kinds
            .iter()
            .map(|kind| match kind {
                Kind::Configmaps => "ConfigMap",
                Kind::Secrets => "Secret",
            })
            .collect(),
        cluster_consent: cluster_consent(&protected, &cluster_mirror_sources),
        cluster_mirror_sources,
    })
}

async fn client(args: &ExplainArgs) -> anyhow::Result<kube::Client> {
    let config = api_client::infer_config(
        args.kube.kubeconfig.as_deref(),
        args.kube.context.as_deref(),
    )
    .await?;
    api_client::calls(&config, READ_TIMEOUT)
}

#[cfg(test)]
mod tests {
    use k8s_openapi::Resource;

    use super::*;
    use verdicts::Explained;

    #[test]
    fn each_kind_is_named_alike_by_the_api_the_clustermirror_spec_and_explain() {
        fn names<K: Explained + Resource>() -> [&'static str; 3] {
            [K::KIND, K::SOURCE_KIND.as_str(), K::NAME]
        }
        assert_eq!(names::<ConfigMap>(), ["ConfigMap"; 3]);
        assert_eq!(names::<Secret>(), ["Secret"; 3]);
        assert_eq!(<ConfigMap as Explained>::OTHER, Secret::KIND);
        assert_eq!(<Secret as Explained>::OTHER, ConfigMap::KIND);
    }
}
