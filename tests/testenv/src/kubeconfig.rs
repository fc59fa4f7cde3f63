//! Client configuration, as kubeconfig files (for kubectl, the controller
//! binary and kube-controller-manager) and as in-memory `kube::Config`.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use anyhow::Context;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;

/// A kubeconfig with one cluster, one bearer-token user and one context.
pub(crate) fn render(server_url: &str, ca_pem: &str, user: &str, token: &str) -> String {
    let ca_data = STANDARD.encode(ca_pem);
    // Every interpolated value is a URL, base64 or a token (base64url and
    // dots), none of which needs YAML escaping beyond the quotes.
    format!(
        r#"apiVersion: v1
kind: Config
clusters:
- name: testenv
  cluster:
    server: "{server_url}"
    certificate-authority-data: "{ca_data}"
users:
- name: "{user}"
  user:
    token: "{token}"
contexts:
- name: testenv
  context:
    cluster: testenv
    user: "{user}"
    namespace: default
current-context: testenv
"#
    )
}

pub(crate) fn config(server_url: &str, ca_der: &[u8], token: &str) -> anyhow::Result<kube::Config> {
    let mut config = kube::Config::new(
        server_url
            .parse()
            .with_context(|| format!("parsing {server_url}"))?,
    );
    config.root_cert = Some(vec![ca_der.to_vec()]);
    config.auth_info.token = Some(token.to_owned().into());
    Ok(config)
}

/// Writes a file only its owner can read (it holds credentials), replacing
/// it atomically so a reader never sees it half-written.
pub(crate) fn write_private(path: &Path, contents: &str) -> anyhow::Result<()> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating {}", parent.display()))?;
    }
    let file_name = path
        .file_name()
        .with_context(|| format!("{} names no file", path.display()))?;
    let mut tmp_name = file_name.to_owned();
    tmp_name.push(format!(".tmp-{}", std::process::id()));
    let tmp = path.with_file_name(tmp_name);
    let write = || -> std::io::Result<()> {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)?;
        file.write_all(contents.as_bytes())?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    };
    write().with_context(|| format!("writing {}", path.display()))
}
