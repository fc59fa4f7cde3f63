//! kstatus, as `make kstatus` builds it (hack/install-kstatus.sh): how the
//! kstatus library of sigs.k8s.io/cli-utils, which Argo CD's and Flux's
//! health checks follow, reads an object's status.

use std::{
    io::Write,
    path::{Path, PathBuf},
    process::{Command, Stdio},
    sync::OnceLock,
};

use serde_json::Value;

const INSTALL_HINT: &str = "run `make kstatus` (or `bash hack/install-kstatus.sh`) to build it";

fn kstatus_binary() -> &'static Path {
    static KSTATUS: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let found = KSTATUS.get_or_init(|| {
        let out = Command::new("bash")
            .args(["hack/install-kstatus.sh", "--cached-only"])
            .current_dir(crate::repo())
            .output()
            .map_err(|e| format!("cannot run hack/install-kstatus.sh: {e}"))?;
        let dir = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        match out.status.success() && !dir.is_empty() {
            true => Ok(PathBuf::from(dir).join("kstatus")),
            false => Err(format!(
                "kstatus is missing from the per-user cache: {INSTALL_HINT}"
            )),
        }
    });
    match found {
        Ok(kstatus) => kstatus,
        Err(e) => panic!("{e}"),
    }
}

/// How kstatus reads `object` (as the API server returned it): its status
/// (`Current`, `InProgress`, `Failed`...) and message.
pub fn kstatus(object: &Value) -> (String, String) {
    let mut child = Command::new(kstatus_binary())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run kstatus");
    child
        .stdin
        .take()
        .expect("kstatus's stdin")
        .write_all(object.to_string().as_bytes())
        .expect("write the object to kstatus");
    let out = child.wait_with_output().expect("kstatus's answer");
    assert!(
        out.status.success(),
        "kstatus failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let answer: Value = serde_json::from_slice(&out.stdout).expect("kstatus prints JSON");
    let field = |name: &str| answer[name].as_str().unwrap_or_default().to_owned();
    (field("status"), field("message"))
}
