//! helm, as `make helm` builds it (hack/install-helm.sh: the release in
//! hack/helm-version, or HELM_VERSION), for the chart's tests.

use std::{
    path::{Path, PathBuf},
    process::Command,
    sync::OnceLock,
};

use serde_json::Value;
use testenv::ControlPlane;

const INSTALL_HINT: &str = "run `make helm` (or `bash hack/install-helm.sh`) to build it";

fn helm_version() -> String {
    std::env::var("HELM_VERSION")
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| {
            std::fs::read_to_string(crate::repo().join("hack/helm-version"))
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
        .current_dir(crate::repo())
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
        .current_dir(crate::repo())
        .env("HELM_CONFIG_HOME", home.join("config"))
        .env("HELM_CACHE_HOME", home.join("cache"))
        .env("HELM_DATA_HOME", home.join("data"));
    cmd
}

/// Every object `helm template <args>` renders, as JSON.
pub fn template(args: &[&str]) -> Vec<Value> {
    let manifest = crate::run_ok(&mut helm(&[&["template"], args].concat()), None);
    serde_saphyr::from_multiple::<Value>(&manifest)
        .unwrap_or_else(|e| panic!("the chart rendered no YAML: {e}\n{manifest}"))
        .into_iter()
        .filter(Value::is_object)
        .collect()
}

/// [`template`] of the chart as release `r` in namespace `home`, with
/// `args`.
pub fn rendered(args: &[&str]) -> Vec<Value> {
    template(
        &[
            &["r", "charts/configmap-mirror", "--namespace", "home"],
            args,
        ]
        .concat(),
    )
}

/// helm against the control plane, as its admin.
pub fn helm_on(control_plane: &ControlPlane, args: &[&str]) -> Command {
    let mut cmd = helm(args);
    cmd.arg("--kubeconfig").arg(control_plane.kubeconfig_path());
    cmd
}
