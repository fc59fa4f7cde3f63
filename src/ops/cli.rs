//! The command line: without a subcommand the binary is the controller,
//! with every flag of [`Config`]; `explain` is a read-only subcommand of
//! the same binary, and `probe` a small check for images that hold nothing
//! else. Installed or linked as `kubectl-mirror`, it is a
//! kubectl plugin: `kubectl mirror explain ...`, subcommands only.

use std::{ffi::OsString, path::Path, process::ExitCode};

use clap::{ArgGroup, CommandFactory, Parser, Subcommand, ValueEnum};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::{
    api,
    decisions::targets::{MIRROR_TO_ANNOTATION, MIRROR_TO_SELECTOR_ANNOTATION, Targets},
    ops::config::{
        Config, DIGEST_KEY_NAME_SUFFIX, KubeconfigArgs, Rules, namespaced_name_of,
        parse_lease_name, parse_namespace, parse_namespaced_name, parse_optional_namespace,
    },
    ops::probe::ProbeArgs,
};

/// The name kubectl finds a plugin by, for `kubectl mirror ...`.
pub const PLUGIN_NAME: &str = "kubectl-mirror";

#[derive(Debug, Clone, Parser)]
#[command(
    name = "configmap-mirror",
    version,
    about = "Keeps an exact, self-healing copy of labeled ConfigMaps",
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    #[command(flatten)]
    pub controller: Config,

    #[command(subcommand)]
    pub command: Option<Command>,
}

/// As a kubectl plugin: the subcommands only, never the controller.
#[derive(Debug, Clone, Parser)]
#[command(
    name = "kubectl mirror",
    bin_name = "kubectl mirror",
    version,
    about = "configmap-mirror as a kubectl plugin",
    subcommand_required = true,
    arg_required_else_help = true
)]
struct Plugin {
    #[command(subcommand)]
    command: Command,
}

// Parsed once per process: boxing the larger variant would save nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, Subcommand)]
pub enum Command {
    /// Why a copy is or is not where its source asks (read-only)
    ///
    /// Explains a source (NAMESPACE/NAME): whether this install manages
    /// it, its companion, and each namespace it asks for; a copy: whose it
    /// is and whether it is in sync; a ClusterMirror (clustermirror/NAME):
    /// its conditions and each namespace it selects; a Mirror
    /// (mirror/NAMESPACE/NAME): the same, and how each namespace consents;
    /// or a namespace (--namespace): what it receives and what it refuses.
    /// It reads with the caller's kubeconfig
    /// and rights, and decides with the controller's own rules: give it the
    /// install's flags. Exit code 0 when everything asked for is in place,
    /// 1 when something is not, 2 on bad input.
    Explain(ExplainArgs),

    /// GET an http:// URL; exit 0 on a 2xx answer
    ///
    /// Any other answer, or none, prints why on one line and exits 1. For
    /// checks from this image, which has no shell nor curl (the Helm
    /// chart's `helm test`).
    Probe(ProbeArgs),

    /// Print the CustomResourceDefinitions of this controller's API (YAML)
    ///
    /// ClusterMirror and MirrorGrant (`mirror.workshop.io/v1alpha1`), as
    /// the chart and the plain manifests install them: `configmap-mirror crd
    /// | kubectl apply -f -`.
    Crd,
}

/// What to run.
#[derive(Debug, Clone)]
pub enum Invocation {
    Controller(Box<Config>),
    Explain(Box<ExplainArgs>),
    Probe(ProbeArgs),
    Crd,
}

/// `explain`'s flags. The install's rules (`--selector`, `--suffix`, the
/// consent selectors, `--protected-namespaces`, `--reserved-names`) are
/// the controller's own flags, with the same defaults and variables: give
/// them as the install was given them.
#[derive(Debug, Clone, clap::Args)]
#[command(group(ArgGroup::new("subject").required(true).args(["object", "namespace"])))]
pub struct ExplainArgs {
    /// The source or copy to explain; `clustermirror/NAME` (or
    /// `clustermirrors/NAME`, `cmir/NAME`) explains a ClusterMirror, unless
    /// --kind says it is an object in a namespace of that name;
    /// `mirror/NAMESPACE/NAME` (or `mirrors/`, `mir/`) a Mirror.
    #[arg(value_name = "NAMESPACE/NAME", value_parser = parse_object_ref)]
    pub object: Option<ObjectArg>,

    /// Explain a namespace instead: the mirrors it holds, the sources that
    /// ask for it, and what it accepts.
    #[arg(long, value_name = "NAMESPACE", value_parser = parse_namespace)]
    pub namespace: Option<String>,

    /// The kind of the object (default: configmap; with --namespace: both).
    #[arg(long, value_enum, value_name = "KIND")]
    pub kind: Option<ObjectKind>,

    /// Preview: explain the source as if its `workshop.io/mirror-to` were
    /// this (names and `*` globs, comma-separated).
    #[arg(long, value_name = "NAMES", conflicts_with = "namespace", value_parser = parse_mirror_to)]
    pub mirror_to: Option<String>,

    /// Preview: as if its `workshop.io/mirror-to-selector` were this.
    #[arg(long, value_name = "SELECTOR", conflicts_with = "namespace", value_parser = parse_mirror_to_selector)]
    pub mirror_to_selector: Option<String>,

    /// Output format: an aligned table, or JSON (its schema is in docs/user/explain.md).
    #[arg(short = 'o', long = "output", value_enum, value_name = "FORMAT", default_value_t = Output::Table)]
    pub output: Output,

    #[command(flatten)]
    pub rules: Rules,

    /// The namespaces the install itself uses (where it runs, its Lease's,
    /// its digest key's), comma-separated: the controller protects them
    /// too. In the controller's Pod, $POD_NAMESPACE says where it runs.
    #[arg(
        long,
        env = "POD_NAMESPACE",
        help_heading = "Mirroring",
        value_name = "NAMESPACES",
        value_delimiter = ',',
        value_parser = parse_optional_namespace
    )]
    pub install_namespaces: Vec<String>,

    /// The install's digest key, as NAMESPACE/NAME, as the controller's
    /// flag: never a source (default: `<--leader-election-id>-digest-key`
    /// in --leader-election-namespace, else in each of --install-namespaces).
    /// A key the controller labelled `workshop.io/install-owned` (its own
    /// key, whoever made it) is told by that label whatever this says.
    #[arg(long, env = "MIRROR_DIGEST_KEY_SECRET", help_heading = "Mirroring", value_name = "NAMESPACE/NAME", value_parser = parse_namespaced_name)]
    pub digest_key_secret: Option<(String, String)>,

    /// The install's Lease namespace, as the controller's flag: when given,
    /// the digest key's default place is there, as the controller keeps it
    /// (else in each of --install-namespaces), and it is protected.
    #[arg(
        long,
        env = "MIRROR_LEADER_ELECTION_NAMESPACE",
        help_heading = "Mirroring",
        value_name = "NAMESPACE",
        value_parser = parse_namespace
    )]
    pub leader_election_namespace: Option<String>,

    /// The install's Lease name, as the controller's flag: its digest
    /// key's default name is this followed by `-digest-key`.
    #[arg(
        long,
        env = "MIRROR_LEADER_ELECTION_ID",
        help_heading = "Mirroring",
        value_name = "NAME",
        default_value = "configmap-mirror",
        value_parser = parse_lease_name
    )]
    pub leader_election_id: String,

    #[command(flatten)]
    pub kube: KubeconfigArgs,
}

/// What `explain` is asked about by name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ObjectArg {
    /// `NAMESPACE/NAME`: an object; or, as `clustermirror/NAME`, a
    /// ClusterMirror (see [`ExplainArgs::cluster_mirror`]).
    Named(String, String),
    /// `mirror/NAMESPACE/NAME`: a Mirror.
    Mirror(String, String),
}

/// A kind `explain` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ObjectKind {
    Configmap,
    Secret,
}

/// Whether `word`, before the slash, names a ClusterMirror as kubectl
/// names the resource: its kind lower-cased, its plural or a short name.
fn names_cluster_mirror(word: &str) -> bool {
    names_resource::<api::ClusterMirror>(word)
}

/// Whether `word` names the resource of `R` as kubectl does.
fn names_resource<R>(word: &str) -> bool
where
    R: kube::CustomResourceExt + kube::Resource<DynamicType = ()>,
{
    let resource = R::kind(&()).to_lowercase() == word || R::plural(&()) == word;
    resource || R::shortnames().contains(&word)
}

impl ExplainArgs {
    /// Where the install's digest key may be: `--digest-key-secret`, or
    /// its default name in the Lease's namespace, else in each of the
    /// install's namespaces (the controller's: the Lease's namespace, else
    /// the one it runs in).
    pub fn digest_key_places(&self) -> Vec<(String, String)> {
        if let Some(place) = &self.digest_key_secret {
            return vec![place.clone()];
        }
        let name = format!("{}{DIGEST_KEY_NAME_SUFFIX}", self.leader_election_id);
        if let Some(namespace) = &self.leader_election_namespace {
            return vec![(namespace.clone(), name)];
        }
        self.install_namespaces
            .iter()
            .filter(|namespace| !namespace.is_empty())
            .map(|namespace| (namespace.clone(), name.clone()))
            .collect()
    }

    /// The ClusterMirror asked about: `clustermirror/NAME` (or its plural
    /// or short name) without `--kind`. With `--kind`, the same words are a
    /// namespace of that name, as a NAMESPACE/NAME always was.
    pub fn cluster_mirror(&self) -> Option<&str> {
        let Some(ObjectArg::Named(prefix, name)) = self.object.as_ref() else {
            return None;
        };
        (self.kind.is_none() && names_cluster_mirror(prefix)).then_some(name.as_str())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Output {
    Table,
    Json,
}

impl Invocation {
    /// What this process's arguments ask for; malformed arguments end it
    /// with a message and exit code 2, as clap does.
    pub fn from_args() -> Invocation {
        let args: Vec<OsString> = std::env::args_os().collect();
        match Invocation::parse(args) {
            Ok(invocation) => invocation,
            Err(error) => error.exit(),
        }
    }

    /// What `args` (the program's name first) ask for. Flags that can
    /// never work together are refused as malformed ones are.
    pub fn parse(args: Vec<OsString>) -> Result<Invocation, clap::Error> {
        let command = match is_plugin(args.first()) {
            true => Plugin::try_parse_from(args)?.command,
            false => {
                let cli = Cli::try_parse_from(args)?;
                match cli.command {
                    Some(command) => command,
                    None => {
                        let valid = cli
                            .controller
                            .leader
                            .validate()
                            .and_then(|()| cli.controller.validate_digest_key_secret());
                        if let Err(why) = valid {
                            return Err(
                                Cli::command().error(clap::error::ErrorKind::ArgumentConflict, why)
                            );
                        }
                        return Ok(Invocation::Controller(Box::new(cli.controller)));
                    }
                }
            }
        };
        Ok(match command {
            Command::Explain(args) => Invocation::Explain(Box::new(args)),
            Command::Probe(args) => Invocation::Probe(args),
            Command::Crd => Invocation::Crd,
        })
    }
}

/// `crd`: prints the CRDs; exit 1 if they cannot be written as YAML.
pub fn print_crds() -> ExitCode {
    match api::crds_yaml() {
        Ok(yaml) => {
            print!("{yaml}");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

/// Whether the binary runs as the kubectl plugin, as kubectl runs it.
fn is_plugin(program: Option<&OsString>) -> bool {
    program.is_some_and(|program| Path::new(program).to_string_lossy().ends_with(PLUGIN_NAME))
}

/// `NAMESPACE/NAME`, each checked as Kubernetes checks it.
fn parse_object_ref(value: &str) -> Result<ObjectArg, String> {
    match value.split_once('/') {
        Some((word, rest)) if rest.contains('/') && names_resource::<api::mirror::Mirror>(word) => {
            let (namespace, name) = namespaced_name_of(rest, "a Mirror")?;
            Ok(ObjectArg::Mirror(namespace, name))
        }
        _ => {
            let (namespace, name) = namespaced_name_of(value, "an object")?;
            Ok(ObjectArg::Named(namespace, name))
        }
    }
}

/// Checked as the controller reads the annotation.
fn parse_mirror_to(value: &str) -> Result<String, String> {
    targets_of(MIRROR_TO_ANNOTATION, value)
}

fn parse_mirror_to_selector(value: &str) -> Result<String, String> {
    targets_of(MIRROR_TO_SELECTOR_ANNOTATION, value)
}

fn targets_of(annotation: &str, value: &str) -> Result<String, String> {
    let meta = ObjectMeta {
        annotations: Some([(annotation.to_owned(), value.to_owned())].into()),
        ..ObjectMeta::default()
    };
    Targets::of(&meta).map(|_| value.to_owned())
}

#[cfg(test)]
mod tests;
