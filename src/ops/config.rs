//! Command-line flags, each with an environment-variable equivalent.

use std::{net::SocketAddr, time::Duration};

use clap::ValueEnum;

pub use leader::LeaderConfig;
pub(crate) use parsers::{
    namespaced_name_of, parse_class, parse_lease_name, parse_namespace, parse_namespaced_name,
    parse_never_carry, parse_object_name, parse_optional_namespace, parse_secret_type,
    parse_selector, parse_source_selector, parse_suffix,
};

use crate::{
    api::SourceKind,
    decisions::consent::Consent,
    decisions::install::Install,
    decisions::names,
    decisions::selector::Selector,
    ops::duration,
    ops::telemetry::{self, LogFormat},
};

/// The controller's flags: `configmap-mirror` with no subcommand
/// ([`crate::ops::cli`]).
#[derive(Debug, Clone, clap::Args)]
pub struct Config {
    #[command(flatten)]
    pub rules: Rules,

    /// Watch and write only this namespace (default: all namespaces).
    #[arg(long, env = "MIRROR_NAMESPACE", help_heading = "Sources", value_name = "NAMESPACE", value_parser = parse_namespace)]
    pub namespace: Option<String>,

    /// The Secret holding the key of Secret copies' checksums, as
    /// NAMESPACE/NAME; created with a random key if missing, and watched
    /// (default: `<Lease name>-digest-key`, so two installs never share a
    /// key, in the Lease's namespace, else $POD_NAMESPACE, else
    /// `--namespace`, else `default`). A Secret there that looks like a
    /// copy, or holds no 32-byte `key`, is refused and never changed.
    #[arg(long, env = "MIRROR_DIGEST_KEY_SECRET", help_heading = "Sources", value_name = "NAMESPACE/NAME", value_parser = parse_namespaced_name)]
    pub digest_key_secret: Option<(String, String)>,

    #[command(flatten)]
    pub leader: LeaderConfig,

    /// How many objects are reconciled at the same time.
    #[arg(long, env = "MIRROR_CONCURRENCY", help_heading = "Operations", value_name = "N", default_value_t = 16, value_parser = clap::value_parser!(u16).range(1..))]
    pub concurrency: u16,

    /// Threads running the controller. One is enough for the API server's
    /// write rate and keeps a single allocator arena (the least memory).
    #[arg(long, env = "MIRROR_WORKER_THREADS", help_heading = "Operations", value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..))]
    pub worker_threads: u16,

    /// Log format: `auto` is text on a terminal and JSON otherwise.
    #[arg(long, env = "MIRROR_LOG_FORMAT", help_heading = "Operations", value_name = "FORMAT", value_enum, default_value_t = LogFormat::Auto)]
    pub log_format: LogFormat,

    /// Log level: `error`, `warn`, `info`, `debug` or `trace`, or a tracing
    /// filter directive (`info,configmap_mirror::reconcile=debug`). The
    /// libraries beneath stay at warnings (kube's client and runtime at
    /// errors) unless a directive names them. `RUST_LOG`, when set, wins.
    #[arg(long, env = "MIRROR_LOG_LEVEL", help_heading = "Operations", value_name = "LEVEL", default_value = "info", value_parser = telemetry::parse_log_level)]
    pub log_level: String,

    /// Address of the one HTTP listener serving /metrics, /healthz and
    /// /readyz. `[::]` listens on IPv4 and IPv6 (IPv4 only on a host
    /// without IPv6).
    #[arg(
        long,
        env = "MIRROR_HTTP_ADDR",
        help_heading = "Operations",
        value_name = "ADDR",
        default_value = "[::]:8080"
    )]
    pub http_addr: SocketAddr,

    /// A watch that keeps failing this long once the API server answers
    /// makes /healthz fail; an outage (no answer, 429, 5xx) never does.
    #[arg(long, env = "MIRROR_WATCH_FAILURE_THRESHOLD", help_heading = "Operations", value_name = "DURATION", default_value = "60s", value_parser = duration::parse_positive)]
    pub watch_failure_threshold: Duration,

    /// First retry delay for conditions a person must fix (name taken,
    /// refused by the API server, forbidden); it doubles up to 5 minutes.
    /// Also how often a suspended ClusterMirror whose copies are missing
    /// somewhere looks again whether someone else took their name.
    #[arg(long, env = "MIRROR_SLOW_RETRY", help_heading = "Operations", value_name = "DURATION", default_value = "30s", value_parser = duration::parse_positive)]
    pub slow_retry: Duration,

    /// How each watch fetches its first full list. `auto` streams the list
    /// as watch events (WatchList: one object held at a time) and falls back
    /// to `list` for a watch whose API server refuses streaming, as servers
    /// with the WatchList feature gate off do (the default on Kubernetes
    /// 1.33). `stream` and `list` force one way.
    #[arg(long, env = "MIRROR_INITIAL_LIST", help_heading = "Operations", value_name = "MODE", value_enum, default_value_t = InitialList::Auto)]
    pub initial_list: InitialList,

    /// Longest wait for one API call (a write, a Lease read or renewal, an
    /// Event, a health probe). Watches are not bounded by it: they are
    /// long-lived by design and reconnect on their own.
    #[arg(long, env = "MIRROR_API_TIMEOUT", help_heading = "Operations", value_name = "DURATION", default_value = "10s", value_parser = duration::parse_positive)]
    pub api_timeout: Duration,

    /// Longest time from SIGTERM or SIGINT to exit: in-flight reconciles get
    /// two thirds of it, releasing the Lease the rest. Keep it under the
    /// Pod's termination grace period (30 s by default). A second signal
    /// exits at once.
    #[arg(long, env = "MIRROR_SHUTDOWN_TIMEOUT", help_heading = "Operations", value_name = "DURATION", default_value = "15s", value_parser = duration::parse_positive)]
    pub shutdown_timeout: Duration,

    #[command(flatten)]
    pub kube: KubeconfigArgs,
}

/// The flags the decisions depend on: which objects are sources, how
/// their copies are named, which namespaces take mirrors. The controller
/// and `explain` take them alike, so that `explain` decides as the install
/// it is told about does.
#[derive(Debug, Clone, clap::Args)]
pub struct Rules {
    /// Label selector of the source ConfigMaps to mirror.
    #[arg(
        long,
        env = "MIRROR_SELECTOR", help_heading = "Sources", value_name = "SELECTOR",
        default_value = "workshop.io/managed=true",
        value_parser = parse_source_selector
    )]
    pub selector: String,

    /// Appended to a source's name to name its companion.
    #[arg(long, env = "MIRROR_SUFFIX", help_heading = "Sources", value_name = "SUFFIX", default_value = "-synced", value_parser = parse_suffix)]
    pub suffix: String,

    /// The kinds mirrored: `configmaps`, and `secrets` when its RBAC is
    /// granted (see docs/user/secrets.md). The same label, names and rules apply to
    /// each. A ClusterMirror of a Secret while `secrets` is left out copies
    /// nothing (`SecretsDisabled`); with `secrets` alone, a ClusterMirror of
    /// a ConfigMap, one publishing a Secret's keys as ConfigMaps, one of a
    /// kind not known or with a spec that does not read gets no status at
    /// all (see docs/user/clustermirror.md).
    #[arg(
        long,
        env = "MIRROR_KINDS",
        help_heading = "Sources",
        value_name = "KINDS",
        value_delimiter = ',',
        default_value = "configmaps",
        value_enum
    )]
    pub kinds: Vec<Kind>,

    /// Label selector of the namespaces that accept mirrors from other
    /// namespaces. Empty accepts every namespace: then anyone who can label
    /// a ConfigMap can write into every namespace.
    #[arg(
        long,
        env = "MIRROR_ACCEPT_MIRRORS_SELECTOR", help_heading = "Mirroring", value_name = "SELECTOR",
        default_value = "workshop.io/accept-mirrors=true",
        value_parser = parse_selector
    )]
    pub accept_mirrors_selector: String,

    /// Label selector of the namespaces that accept Secret mirrors. A
    /// namespace that accepts ConfigMaps receives no Secret until it
    /// matches this too. Empty accepts every namespace: then anyone who can
    /// label a Secret can write Secrets into every namespace.
    #[arg(
        long,
        env = "MIRROR_ACCEPT_SECRET_MIRRORS_SELECTOR", help_heading = "Mirroring", value_name = "SELECTOR",
        default_value = "workshop.io/accept-secret-mirrors=true",
        value_parser = parse_selector
    )]
    pub accept_secret_mirrors_selector: String,

    /// Namespaces never mirrored into, whatever their labels say. The
    /// namespace this install runs in, and those of its Lease and digest
    /// key, are always protected too. Empty protects only those.
    #[arg(
        long,
        env = "MIRROR_PROTECTED_NAMESPACES", help_heading = "Mirroring", value_name = "NAMESPACES",
        value_delimiter = ',',
        default_value = "kube-system,kube-public,kube-node-lease",
        value_parser = parse_optional_namespace
    )]
    pub protected_namespaces: Vec<String>,

    /// The namespaces ClusterMirror sources may come from (default: the
    /// namespace this install runs in, $POD_NAMESPACE). Each is protected
    /// too: nothing is ever written there.
    #[arg(
        long,
        env = "MIRROR_CLUSTER_MIRROR_SOURCE_NAMESPACES", help_heading = "Mirroring", value_name = "NAMESPACES",
        value_delimiter = ',',
        value_parser = parse_namespace
    )]
    pub cluster_mirror_source_namespaces: Vec<String>,

    /// The class of ClusterMirrors this install serves: those whose
    /// `spec.className` is this one (empty: those without a class, or with
    /// an empty one). It writes no status, Event, metric or copy for any
    /// other, and leaves their copies alone. Give each install of a
    /// cluster its own class: two installs of the same class fight over
    /// each ClusterMirror (a Warning `ClusterMirrorClassConflict` says so).
    #[arg(
        long,
        env = "MIRROR_CLUSTER_MIRROR_CLASS", help_heading = "Mirroring", value_name = "CLASS",
        default_value = "",
        value_parser = parse_class
    )]
    pub cluster_mirror_class: String,

    /// More ConfigMap names never mirrored into other namespaces, nor
    /// written by a ClusterMirror, besides the built-in ones published into
    /// every namespace (`kube-root-ca.crt`, `istio-ca-root-cert`,
    /// `openshift-service-ca.crt`): a mirror there would fight its
    /// publisher. Copies already at such a name are removed.
    #[arg(long, env = "MIRROR_RESERVED_NAMES", help_heading = "Mirroring", value_name = "NAMES", value_delimiter = ',', value_parser = parse_object_name)]
    pub reserved_names: Vec<String>,

    /// More Secret types never copied, comma-separated, besides the built-in
    /// ones that other programs trust by type (`kubernetes.io/service-account-token`,
    /// `bootstrap.kubernetes.io/token`, `helm.sh/release.v1`).
    #[arg(long, env = "MIRROR_REFUSED_SECRET_TYPES", help_heading = "Sources", value_name = "TYPES", value_delimiter = ',', value_parser = parse_secret_type)]
    pub refused_secret_types: Vec<String>,

    /// More label and annotation keys no copy carries, comma-separated,
    /// besides the built-in ones (this controller's own, and those by which
    /// other tools claim, prune or trust objects; see docs/user/labels.md):
    /// an entry ending in `*` is a prefix, others are exact keys. For
    /// example a custom Argo CD `instanceLabelKey`. A ClusterMirror that
    /// sets one on its copies is refused.
    #[arg(long, env = "MIRROR_NEVER_CARRY", help_heading = "Sources", value_name = "KEYS", value_delimiter = ',', value_parser = parse_never_carry)]
    pub never_carry: Vec<String>,
}

/// Which cluster to talk to, and as whom: kubectl's flags.
#[derive(Debug, Clone, clap::Args)]
pub struct KubeconfigArgs {
    /// The kubeconfig file to use, as kubectl's flag (default: $KUBECONFIG,
    /// then ~/.kube/config, then the in-cluster configuration).
    #[arg(long, help_heading = "Operations", value_name = "PATH")]
    pub kubeconfig: Option<std::path::PathBuf>,

    /// The kubeconfig context to use, as kubectl's flag (default: its
    /// current context).
    #[arg(long, help_heading = "Operations", value_name = "CONTEXT")]
    pub context: Option<String>,
}

/// A kind of object the controller can mirror.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Kind {
    Configmaps,
    Secrets,
}

/// What the Lease's name is followed by in the name of the digest key's
/// Secret, unless `--digest-key-secret` names it.
pub const DIGEST_KEY_NAME_SUFFIX: &str = "-digest-key";

impl Config {
    pub fn mirrors(&self, kind: Kind) -> bool {
        self.rules.kinds.contains(&kind)
    }

    /// `--digest-key-secret`, or its default: named after the Lease, so
    /// that each install has its own (the default Lease gives
    /// `configmap-mirror-digest-key`).
    pub fn digest_key_secret(&self) -> (String, String) {
        if let Some(secret) = &self.digest_key_secret {
            return secret.clone();
        }
        let name = format!("{}{DIGEST_KEY_NAME_SUFFIX}", self.leader.lease_name);
        (self.home_namespace(), name)
    }

    /// Where the install keeps what is its own: the Lease's namespace,
    /// else $POD_NAMESPACE, else `--namespace`, else `default`.
    fn home_namespace(&self) -> String {
        self.leader
            .namespace
            .clone()
            .or_else(|| std::env::var("POD_NAMESPACE").ok())
            .or_else(|| self.namespace.clone())
            .unwrap_or_else(|| "default".into())
    }

    /// The field manager of this install's ClusterMirror status writes,
    /// named after its Lease and the Lease's namespace (see
    /// [`field_manager`](crate::contract::install::field_manager)).
    pub fn field_manager(&self) -> String {
        crate::contract::install::field_manager(&self.home_namespace(), &self.leader.lease_name)
    }

    /// Refuses a Lease name too long to name the digest key's Secret after,
    /// when that name is needed.
    pub(crate) fn validate_digest_key_secret(&self) -> Result<(), String> {
        if !self.mirrors(Kind::Secrets) || self.digest_key_secret.is_some() {
            return Ok(());
        }
        let (_, name) = self.digest_key_secret();
        match names::is_dns_subdomain(&name) {
            true => Ok(()),
            false => Err(format!(
                "--leader-election-id is too long to name the digest key's Secret after                  ({name:?}); name that Secret with --digest-key-secret"
            )),
        }
    }
}

impl Config {
    /// The namespaces never mirrored into: `--protected-namespaces`, and
    /// this install's own: the one it runs in, its Lease's, and its digest
    /// key's when it mirrors Secrets. A tenant's mirror there could plant
    /// the controller's own key, or squat names the install relies on.
    pub fn protected_namespaces(&self) -> Vec<String> {
        let mut protected = self.rules.protected_namespaces.clone();
        protected.extend(self.cluster_mirror_source_namespaces());
        protected.extend(self.leader.namespace.clone());
        protected.extend(std::env::var("POD_NAMESPACE").ok());
        if self.mirrors(Kind::Secrets) {
            protected.push(self.digest_key_secret().0);
        }
        protected.retain(|namespace| !namespace.is_empty());
        protected.sort();
        protected.dedup();
        protected
    }

    /// `--cluster-mirror-source-namespaces`, or the namespace this install
    /// runs in; none when neither is known.
    pub fn cluster_mirror_source_namespaces(&self) -> Vec<String> {
        match self.rules.cluster_mirror_source_namespaces.is_empty() {
            false => self.rules.cluster_mirror_source_namespaces.clone(),
            true => std::env::var("POD_NAMESPACE").ok().into_iter().collect(),
        }
    }
}

impl Rules {
    /// Kind `kind`'s consent rules, from its consent selector flag, never
    /// mirroring into `protected`.
    pub(crate) fn consent(&self, kind: Kind, protected: &[String]) -> anyhow::Result<Consent> {
        let (of, flag, value) = match kind {
            Kind::Configmaps => (
                SourceKind::ConfigMap,
                "accept-mirrors-selector",
                &self.accept_mirrors_selector,
            ),
            Kind::Secrets => (
                SourceKind::Secret,
                "accept-secret-mirrors-selector",
                &self.accept_secret_mirrors_selector,
            ),
        };
        Ok(Consent::new(
            of,
            selector_flag(flag, value)?,
            protected.to_vec(),
        ))
    }

    /// The source selector, parsed.
    pub(crate) fn source_selector(&self) -> anyhow::Result<Selector> {
        selector_flag("selector", &self.selector)
    }

    /// The settings every copy is decided with.
    pub(crate) fn install(&self) -> anyhow::Result<Install> {
        Ok(Install::new(
            self.selector.clone(),
            self.source_selector()?,
            self.suffix.clone(),
            &self.never_carry,
            &self.reserved_names,
        ))
    }
}

/// Parses a selector flag, naming the flag in the error.
pub(crate) fn selector_flag(flag: &str, value: &str) -> anyhow::Result<Selector> {
    Selector::parse(value).map_err(|e| anyhow::anyhow!("--{flag}: {e}"))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum InitialList {
    Auto,
    Stream,
    List,
}

mod leader;
mod parsers;
#[cfg(test)]
mod tests;
