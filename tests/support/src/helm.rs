//! helm, as `make helm` builds it (hack/install-helm.sh: the release in
//! hack/helm-version, or HELM_VERSION), for the chart's tests.

use std::{
    path::{Path, PathBuf},
    process::Command,
    sync::OnceLock,
};

use testenv::ControlPlane;

const INSTALL_HINT: &str = "run `make helm` (or `bash hack/install-helm.sh`) to build it";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn helm_version() -> String {
    std::env::var("HELM_VERSION")
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| {
            std::fs::read_to_string(repo().join("hack/helm-version"))
                .expect("read hack/helm-version")
                .trim()
                .to_owned()
        })
}

/// helm as hack/install-helm.sh caches it, asked with these extra
/// environment variables; the error names the command that builds it.
pub fn find_helm(envs: &[(&str, &Path)]) -> Result<PathBuf, String> {
    let out = Command::new("bash")
        .args(["hack/install-helm.sh", "--cached-only"])
        .current_dir(repo())
        .envs(envs.iter().map(|(k, v)| (k, v.as_os_str())))
        .output()
        .map_err(|e| format!("cannot run hack/install-helm.sh: {e}"))?;
    let dir = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    if !out.status.success() || dir.is_empty() {
        return Err(format!(
            "helm {} is missing from the per-user cache: {INSTALL_HINT}",
            helm_version()
        ));
    }
    Ok(PathBuf::from(dir).join("helm"))
}

pub fn helm_binary() -> &'static Path {
    static HELM: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    match HELM.get_or_init(|| find_helm(&[])) {
        Ok(helm) => helm,
        Err(e) => panic!("{e}"),
    }
}

/// helm in the repository, with its own configuration and cache directories
/// (never the user's).
pub fn helm(args: &[&str]) -> Command {
    let home = crate::target_tmp().join("helm-home");
    let mut cmd = Command::new(helm_binary());
    cmd.args(args)
        .current_dir(repo())
        .env("HELM_CONFIG_HOME", home.join("config"))
        .env("HELM_CACHE_HOME", home.join("cache"))
        .env("HELM_DATA_HOME", home.join("data"));
    cmd
}

/// helm against the control plane, as its admin.
pub fn helm_on(control_plane: &ControlPlane, args: &[&str]) -> Command {
    let mut cmd = helm(args);
    cmd.arg("--kubeconfig").arg(control_plane.kubeconfig_path());
    cmd
}
