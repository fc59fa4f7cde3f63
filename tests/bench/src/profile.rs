//! How the bench drives a mirroring controller: how a source asks for
//! copies in other namespaces, what a namespace needs to receive them, how
//! the controller is started, and what it reports about itself. One profile
//! for configmap-mirror and one for a peer, so that the same phases, timed
//! by the same watch, measure both.
//!
//! Both controllers name a copy after its source, in the target namespace,
//! and copy its data, so the phases find a copy by name and tell it is
//! current by its data alone, never by anything the controller writes
//! about itself.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt;
use serde::Serialize;

/// The allocator setting the image runs configmap-mirror with (its
/// Dockerfile's `ENV`), so the bench measures the memory of the controller
/// as it is deployed. An environment that sets `GLIBC_TUNABLES` itself wins.
pub const IMAGE_GLIBC_TUNABLES: &str = "glibc.malloc.mmap_threshold=32768";

/// The peer release the bench looks for in the cache.
pub const REPLICATOR_VERSION: &str = "v2.12.4";

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Profile {
    /// This project.
    ConfigMapMirror,
    /// mittwald/kubernetes-replicator, in its push mode (`replicate-to`).
    /// It writes at client-go's default client rate (5 requests a second,
    /// bursts of 10) and has no flag to change that, nor a metrics endpoint.
    Replicator,
}

impl Profile {
    pub fn name(self) -> &'static str {
        match self {
            Profile::ConfigMapMirror => "configmap-mirror",
            Profile::Replicator => "replicator",
        }
    }

    /// Marks `source` as asking for a copy in every namespace named
    /// `prefix` followed by a number.
    pub fn ask_for_copies(self, source: &mut ConfigMap, prefix: &str) {
        match self {
            Profile::ConfigMapMirror => {
                source
                    .labels_mut()
                    .insert("workshop.io/managed".into(), "true".into());
                source
                    .annotations_mut()
                    .insert("workshop.io/mirror-to".into(), format!("{prefix}*"));
            }
            Profile::Replicator => {
                // Replicator anchors each comma-separated pattern as a
                // regular expression.
                source.annotations_mut().insert(
                    "replicator.v1.mittwald.de/replicate-to".into(),
                    format!("{prefix}[0-9]+"),
                );
            }
        }
    }

    /// The labels a namespace needs before copies may be put into it.
    pub fn consent_labels(self) -> BTreeMap<String, String> {
        match self {
            Profile::ConfigMapMirror => {
                BTreeMap::from([("workshop.io/accept-mirrors".into(), "true".into())])
            }
            // Push mode needs no consent from the target namespace.
            Profile::Replicator => BTreeMap::new(),
        }
    }

    /// Whether a process that `status` ended stopped as asked by SIGTERM:
    /// configmap-mirror must exit cleanly; replicator installs no handler,
    /// so the signal's default action ends it.
    pub fn may_die_of_sigterm(self, status: &std::process::ExitStatus) -> bool {
        use std::os::unix::process::ExitStatusExt as _;
        const SIGTERM: i32 = 15;
        self == Profile::Replicator && status.signal() == Some(SIGTERM)
    }

    /// Whether `/metrics` is there to be read.
    pub fn has_metrics(self) -> bool {
        matches!(self, Profile::ConfigMapMirror)
    }

    /// The command that starts `binary` against `kubeconfig`, serving its
    /// readiness endpoint (`/readyz`) on `127.0.0.1:port`.
    pub fn command(
        self,
        binary: &Path,
        kubeconfig: &Path,
        port: u16,
        concurrency: usize,
    ) -> Command {
        let mut cmd = Command::new(binary);
        match self {
            Profile::ConfigMapMirror => {
                if std::env::var_os("GLIBC_TUNABLES").is_none() {
                    cmd.env("GLIBC_TUNABLES", IMAGE_GLIBC_TUNABLES);
                }
                cmd.env("KUBECONFIG", kubeconfig)
                    .arg("--concurrency")
                    .arg(concurrency.to_string())
                    .arg("--http-addr")
                    .arg(format!("127.0.0.1:{port}"))
                    .arg("--log-format")
                    .arg("json")
                    .arg("--kinds=configmaps,secrets");
            }
            Profile::Replicator => {
                // ConfigMaps only, as configmap-mirror's phases use only
                // ConfigMaps; it has no concurrency flag.
                cmd.arg("--kubeconfig")
                    .arg(kubeconfig)
                    .arg("--status-addr")
                    .arg(format!("127.0.0.1:{port}"))
                    .arg("--log-format")
                    .arg("json")
                    .arg("--replicate-secrets=false")
                    .arg("--replicate-roles=false")
                    .arg("--replicate-role-bindings=false")
                    .arg("--replicate-service-accounts=false");
            }
        }
        cmd
    }
}

/// Where `hack/install-replicator.sh` puts the peer: the project's per-user
/// cache, keyed by release, like every other tool it builds.
pub fn cached_replicator() -> PathBuf {
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache")))
        .unwrap_or_else(|| PathBuf::from(".cache"));
    cache
        .join("configmap-mirror")
        .join(format!("replicator-{REPLICATOR_VERSION}"))
        .join("bin/replicator")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bench_runs_configmap_mirror_with_the_images_allocator_setting() {
        let dockerfile = include_str!("../../../Dockerfile");
        let line = format!("ENV GLIBC_TUNABLES={IMAGE_GLIBC_TUNABLES}");
        assert!(
            dockerfile.lines().any(|l| l.trim() == line),
            "the Dockerfile has no line `{line}`"
        );
        let cmd = Profile::ConfigMapMirror.command(
            Path::new("configmap-mirror"),
            Path::new("kubeconfig"),
            8080,
            16,
        );
        let set = cmd
            .get_envs()
            .find(|(name, _)| *name == "GLIBC_TUNABLES")
            .and_then(|(_, value)| value);
        // A setting of the bench's own environment is inherited instead.
        let expected = match std::env::var_os("GLIBC_TUNABLES") {
            None => Some(std::ffi::OsStr::new(IMAGE_GLIBC_TUNABLES)),
            Some(_) => None,
        };
        assert_eq!(set, expected);
    }

    #[test]
    fn each_profile_asks_in_its_own_words() {
        let mut ours = ConfigMap::default();
        Profile::ConfigMapMirror.ask_for_copies(&mut ours, "bench-fan100-");
        assert_eq!(
            ours.labels().get("workshop.io/managed").map(String::as_str),
            Some("true")
        );
        assert_eq!(
            ours.annotations()
                .get("workshop.io/mirror-to")
                .map(String::as_str),
            Some("bench-fan100-*")
        );
        let mut theirs = ConfigMap::default();
        Profile::Replicator.ask_for_copies(&mut theirs, "bench-fan100-");
        assert!(theirs.labels().is_empty());
        assert_eq!(
            theirs
                .annotations()
                .get("replicator.v1.mittwald.de/replicate-to")
                .map(String::as_str),
            Some("bench-fan100-[0-9]+")
        );
        assert!(Profile::Replicator.consent_labels().is_empty());
        assert!(!Profile::ConfigMapMirror.consent_labels().is_empty());
    }

    #[test]
    fn replicator_runs_for_configmaps_only_on_the_given_port() {
        let cmd = Profile::Replicator.command(Path::new("/bin/r"), Path::new("/k"), 4242, 16);
        let args: Vec<String> = cmd
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert!(
            args.windows(2)
                .any(|w| w == ["--status-addr", "127.0.0.1:4242"])
        );
        assert!(args.windows(2).any(|w| w == ["--kubeconfig", "/k"]));
        assert!(args.contains(&"--replicate-secrets=false".to_owned()));
        assert!(!args.iter().any(|a| a.contains("concurrency")));
    }
}
