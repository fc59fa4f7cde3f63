//! Command-line flags, each with an environment-variable equivalent.

use std::{net::SocketAddr, time::Duration};

use clap::ValueEnum;

use crate::{
    decisions::consent::Consent,
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

    /// The kinds mirrored: `configmaps`, and `secrets` when its RBAC is
    /// granted (see docs/user/secrets.md). The same label, names and rules apply to
    /// each.
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

    /// More ConfigMap names never mirrored into other namespaces, besides
    /// the built-in ones published into every namespace (`kube-root-ca.crt`,
    /// `istio-ca-root-cert`, `openshift-service-ca.crt`): a mirror there
    /// would fight its publisher.
    #[arg(long, env = "MIRROR_RESERVED_NAMES", help_heading = "Mirroring", value_name = "NAMES", value_delimiter = ',', value_parser = parse_object_name)]
    pub reserved_names: Vec<String>,

    /// More Secret types never copied, comma-separated, besides the built-in
    /// ones that other programs trust by type (`kubernetes.io/service-account-token`,
    /// `bootstrap.kubernetes.io/token`, `helm.sh/release.v1`).
    #[arg(long, env = "MIRROR_REFUSED_SECRET_TYPES", help_heading = "Sources", value_name = "TYPES", value_delimiter = ',', value_parser = parse_secret_type)]
    pub refused_secret_types: Vec<String>,
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
        self.kinds.contains(&kind)
    }

    /// `--digest-key-secret`, or its default: named after the Lease, so
    /// that each install has its own (the default Lease gives
    /// `configmap-mirror-digest-key`).
    pub fn digest_key_secret(&self) -> (String, String) {
        if let Some(secret) = &self.digest_key_secret {
            return secret.clone();
        }
        let namespace = self
            .leader
            .namespace
            .clone()
            .or_else(|| std::env::var("POD_NAMESPACE").ok())
            .or_else(|| self.namespace.clone())
            .unwrap_or_else(|| "default".into());
        let name = format!("{}{DIGEST_KEY_NAME_SUFFIX}", self.leader.lease_name);
        (namespace, name)
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
}

/// `NAMESPACE/NAME`, each checked as Kubernetes checks it.
pub(crate) fn parse_namespaced_name(value: &str) -> Result<(String, String), String> {
    let (namespace, name) = value
        .split_once('/')
        .ok_or_else(|| format!("{value:?} is not NAMESPACE/NAME"))?;
    if !names::is_dns_subdomain(name) {
        return Err(format!("{name:?} is not a Secret name"));
    }
    Ok((parse_namespace(namespace)?, name.to_owned()))
}

/// Leader election, for running two or more replicas.
#[derive(Debug, Clone, clap::Args)]
pub struct LeaderConfig {
    /// Compete for a Lease and reconcile only while holding it.
    #[arg(
        id = "leader_elect",
        long = "leader-elect",
        env = "MIRROR_LEADER_ELECT",
        help_heading = "Leader election",
        default_value_t = false
    )]
    pub enabled: bool,

    /// Namespace of the Lease (default: $POD_NAMESPACE, in-cluster).
    #[arg(
        id = "leader_election_namespace",
        long = "leader-election-namespace",
        env = "MIRROR_LEADER_ELECTION_NAMESPACE",
        help_heading = "Leader election",
        value_name = "NAMESPACE",
        value_parser = parse_namespace
    )]
    pub namespace: Option<String>,

    /// Name of the Lease.
    #[arg(
        id = "leader_election_id",
        long = "leader-election-id",
        env = "MIRROR_LEADER_ELECTION_ID",
        help_heading = "Leader election",
        value_name = "NAME",
        default_value = "configmap-mirror",
        value_parser = parse_lease_name
    )]
    pub lease_name: String,

    /// Identity written into the Lease (default: $POD_NAME, else host name and pid).
    #[arg(
        id = "leader_election_identity",
        long = "leader-election-identity",
        env = "MIRROR_LEADER_ELECTION_IDENTITY",
        help_heading = "Leader election",
        value_name = "IDENTITY"
    )]
    pub identity: Option<String>,

    /// How long a standby waits after the last renewal before taking the Lease over.
    #[arg(long, env = "MIRROR_LEASE_DURATION", help_heading = "Leader election", value_name = "DURATION", default_value = "15s", value_parser = duration::parse_positive)]
    pub lease_duration: Duration,

    /// How long the leader keeps trying to renew before it gives up and exits.
    #[arg(long, env = "MIRROR_RENEW_DEADLINE", help_heading = "Leader election", value_name = "DURATION", default_value = "10s", value_parser = duration::parse_positive)]
    pub renew_deadline: Duration,

    /// How often the leader renews, and a standby tries to acquire.
    #[arg(long, env = "MIRROR_RETRY_PERIOD", help_heading = "Leader election", value_name = "DURATION", default_value = "2s", value_parser = duration::parse_positive)]
    pub retry_period: Duration,
}

impl Rules {
    /// Kind `kind`'s consent rules, from its consent selector flag, never
    /// mirroring into `protected`.
    pub(crate) fn consent(&self, kind: Kind, protected: &[String]) -> anyhow::Result<Consent> {
        let (flag, value) = match kind {
            Kind::Configmaps => ("accept-mirrors-selector", &self.accept_mirrors_selector),
            Kind::Secrets => (
                "accept-secret-mirrors-selector",
                &self.accept_secret_mirrors_selector,
            ),
        };
        Ok(Consent::new(
            selector_flag(flag, value)?,
            protected.to_vec(),
        ))
    }

    /// The source selector, parsed.
    pub(crate) fn source_selector(&self) -> anyhow::Result<Selector> {
        selector_flag("selector", &self.selector)
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

impl LeaderConfig {
    /// Rejects timings under which two leaders could act at once.
    ///
    /// - The retry period must be positive and shorter than the renew
    ///   deadline, so a leader gets more than one try at renewing.
    /// - Renew deadline plus retry period must stay below the lease
    ///   duration by a tenth of it, and at least a second: that slack is
    ///   what absorbs a process pause or a slow clock.
    pub fn validate(&self) -> Result<(), String> {
        if self.retry_period.is_zero() {
            return Err("--retry-period must be greater than zero".into());
        }
        if self.retry_period >= self.renew_deadline {
            return Err("--retry-period must be shorter than --renew-deadline".into());
        }
        let slack = (self.lease_duration / 10).max(Duration::from_secs(1));
        let busy = self.renew_deadline + self.retry_period;
        if busy + slack > self.lease_duration {
            return Err(format!(
                "--renew-deadline ({:?}) plus --retry-period ({:?}) must stay at least {slack:?} \
                 below --lease-duration ({:?})",
                self.renew_deadline, self.retry_period, self.lease_duration
            ));
        }
        Ok(())
    }
}

fn parse_suffix(value: &str) -> Result<String, String> {
    if names::is_name_suffix(value) {
        Ok(value.to_owned())
    } else {
        Err(format!(
            "{value:?} would make invalid names: use lowercase letters, digits, '-' and '.', \
             with a letter or digit on both sides of each '.' and at the end"
        ))
    }
}

/// The source selector: it must parse as the API server would, and select
/// something less than every ConfigMap (copies included).
fn parse_source_selector(value: &str) -> Result<String, String> {
    if value.trim().is_empty() {
        return Err("an empty selector would make every ConfigMap a source".into());
    }
    parse_selector(value)
}

pub(crate) fn parse_selector(value: &str) -> Result<String, String> {
    Selector::parse(value).map(|_| value.to_owned())
}

pub(crate) fn parse_namespace(value: &str) -> Result<String, String> {
    match names::is_dns_label(value) {
        true => Ok(value.to_owned()),
        false => Err(format!("{value:?} is not a namespace name (a DNS label)")),
    }
}

/// A namespace name; an empty one (`a,,b`, or an empty variable) stands
/// for none.
pub(crate) fn parse_optional_namespace(value: &str) -> Result<String, String> {
    match value.trim() {
        "" => Ok(String::new()),
        value => parse_namespace(value),
    }
}

fn parse_lease_name(value: &str) -> Result<String, String> {
    match names::is_dns_subdomain(value) {
        true => Ok(value.to_owned()),
        false => Err(format!("{value:?} is not a Lease name (a DNS subdomain)")),
    }
}

/// A name; an empty one (`a,,b`, or an empty variable) stands for none.
fn parse_object_name(value: &str) -> Result<String, String> {
    let value = value.trim();
    match value.is_empty() || names::is_dns_subdomain(value) {
        true => Ok(value.to_owned()),
        false => Err(format!("{value:?} is not a ConfigMap name")),
    }
}

/// A Secret type, as the API server takes it (at most 253 characters, no
/// space or comma); an empty one (`a,,b`, or an empty variable) stands for
/// none.
fn parse_secret_type(value: &str) -> Result<String, String> {
    let value = value.trim();
    match value.len() <= 253 && !value.contains(|c: char| c.is_whitespace() || c == ',') {
        true => Ok(value.to_owned()),
        false => Err(format!("{value:?} is not a Secret type")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse<I, T>(args: I) -> Result<Config, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        use clap::Parser;
        crate::ops::cli::Cli::try_parse_from(args).map(|cli| cli.controller)
    }

    #[test]
    fn a_suffix_must_keep_names_valid() {
        assert!(parse_suffix("-synced").is_ok());
        assert!(parse_suffix("-Synced").is_err());
        assert!(parse_suffix("-synced-").is_err());
        assert!(parse_suffix("").is_err());
        assert!(parse_suffix("..x").is_err());
        assert!(parse_suffix(".-x").is_err());
    }

    #[test]
    fn defaults_are_those_of_a_local_run() {
        let config = parse(["configmap-mirror"]).unwrap();
        assert_eq!(config.log_level, "info");
        assert_eq!(config.rules.selector, "workshop.io/managed=true");
        assert_eq!(config.rules.suffix, "-synced");
        assert_eq!(config.initial_list, InitialList::Auto);
        assert_eq!(config.shutdown_timeout, Duration::from_secs(15));
        assert_eq!(config.worker_threads, 1);
        assert_eq!(
            config.rules.accept_secret_mirrors_selector,
            "workshop.io/accept-secret-mirrors=true"
        );
        assert_eq!(
            config.rules.protected_namespaces,
            ["kube-system", "kube-public", "kube-node-lease"]
        );
        assert!(!config.leader.enabled);
        assert!(config.leader.validate().is_ok());
    }

    #[test]
    fn the_installs_own_namespaces_are_always_protected() {
        let config = parse([
            "configmap-mirror",
            "--protected-namespaces=",
            "--leader-election-namespace=mirror-system",
            "--kinds=configmaps,secrets",
            "--digest-key-secret=keys/key",
        ])
        .unwrap();
        let protected = config.protected_namespaces();
        assert!(
            protected.contains(&"mirror-system".to_owned()),
            "{protected:?}"
        );
        assert!(protected.contains(&"keys".to_owned()), "{protected:?}");
        assert!(
            !protected.contains(&"kube-system".to_owned()),
            "{protected:?}"
        );
        assert!(parse(["configmap-mirror", "--protected-namespaces=Bad_Ns"]).is_err());
    }

    #[test]
    fn each_lease_names_its_own_digest_key() {
        let key_secret = |args: &[&str]| {
            let config = parse(
                ["configmap-mirror", "--leader-election-namespace=ops"]
                    .iter()
                    .chain(args),
            )
            .unwrap();
            config.digest_key_secret()
        };
        let key = |name: &str| ("ops".to_owned(), name.to_owned());
        assert_eq!(key_secret(&[]), key("configmap-mirror-digest-key"));
        assert_eq!(
            key_secret(&["--leader-election-id=team-a"]),
            key("team-a-digest-key")
        );
        assert_eq!(
            key_secret(&["--leader-election-id=team-a", "--digest-key-secret=vault/k"]),
            ("vault".to_owned(), "k".to_owned())
        );
    }

    #[test]
    fn a_lease_name_too_long_for_the_key_s_name_is_refused_when_secrets_are_on() {
        let lease = format!("--leader-election-id={}", "a".repeat(250));
        let config =
            |extra: &[&str]| parse(["configmap-mirror", &lease].iter().chain(extra)).unwrap();
        assert!(config(&[]).validate_digest_key_secret().is_ok());
        let secrets = config(&["--kinds=configmaps,secrets"]);
        let refused = secrets.validate_digest_key_secret().unwrap_err();
        assert!(refused.contains("--digest-key-secret"), "{refused}");
        assert!(
            config(&["--kinds=configmaps,secrets", "--digest-key-secret=ops/key"])
                .validate_digest_key_secret()
                .is_ok()
        );
    }

    #[test]
    fn refused_secret_types_are_a_list_of_types() {
        let config = parse([
            "configmap-mirror",
            "--refused-secret-types",
            "example.com/kubeconfig,,Opaque",
        ])
        .unwrap();
        assert_eq!(
            config.rules.refused_secret_types,
            ["example.com/kubeconfig", "", "Opaque"]
        );
        let bad = ["configmap-mirror", "--refused-secret-types", "a type"];
        assert!(parse(bad).is_err());
    }

    #[test]
    fn leader_timings_that_allow_two_leaders_are_refused() {
        let leader = |lease, renew, retry| {
            let mut config = parse(["configmap-mirror"]).unwrap();
            config.leader.lease_duration = Duration::from_millis(lease);
            config.leader.renew_deadline = Duration::from_millis(renew);
            config.leader.retry_period = Duration::from_millis(retry);
            config.leader.validate()
        };
        assert!(leader(15_000, 10_000, 2_000).is_ok());
        assert!(leader(6_000, 4_000, 500).is_ok());
        assert!(leader(15_000, 15_000, 2_000).is_err());
        assert!(leader(15_000, 12_000, 2_000).is_err(), "no slack");
        assert!(
            leader(4_000, 3_000, 500).is_err(),
            "under a second of slack"
        );
        assert!(leader(15_000, 10_000, 0).is_err(), "zero retry period");
        assert!(
            leader(15_000, 2_000, 2_000).is_err(),
            "one try per deadline"
        );
    }
}
