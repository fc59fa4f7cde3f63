//! The release bundle `make dist` writes (hack/dist.sh): the chart package
//! installs into a real API server and uninstalls, the manifest is the
//! rendered release manifest naming the image at the crate's version, the
//! image archive loads and its OCI labels name the version, the commit and
//! the repository, the SBOM lists exactly the crates the release binary
//! links, and `sha256sum -c SHA256SUMS` checks every other file.
//!
//! The bundle is built once per run of this binary, by the first test that
//! needs it, into target/tmp/dist-bundle (replaced at each run). The SBOM's
//! test compares it with the units of the release build (`make release`,
//! which `make test` runs first; without it the test builds it).
//!
//! Needs root, podman and mmdebstrap (the image, hack/image.sh), python3
//! and helm (`make helm`); without them the tests fail, naming the install
//! command.

use test_support as common;

use std::{
    collections::{BTreeMap, BTreeSet},
    path::{Path, PathBuf},
    process::{Command, Output},
    sync::{
        OnceLock,
        atomic::{AtomicUsize, Ordering},
    },
};

use common::{PATIENCE, find_helm, helm_on};
use k8s_openapi::api::{apps::v1::Deployment, rbac::v1::ClusterRole};
use kube::Api;
use serde_json::Value;
use testenv::{ControlPlane, fresh_namespace, wait_for};

const NAME: &str = "configmap-mirror";
const VERSION: &str = env!("CARGO_PKG_VERSION");

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn run(cmd: &mut Command) -> Output {
    cmd.output()
        .unwrap_or_else(|e| panic!("run {:?}: {e}", cmd.get_program()))
}

/// Stdout of a command that must succeed.
fn run_ok(cmd: &mut Command) -> String {
    let what = format!("{cmd:?}");
    let out = run(cmd);
    assert!(
        out.status.success(),
        "{what} failed:\n{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    text(&out.stdout)
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|out| out.stdout == b"0\n")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&read(path)).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

struct Bundle {
    dir: PathBuf,
    helm: PathBuf,
}

impl Bundle {
    fn file(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    fn chart(&self) -> PathBuf {
        self.file(&format!("{NAME}-{VERSION}.tgz"))
    }

    fn manifest(&self) -> PathBuf {
        self.file(&format!("{NAME}.yaml"))
    }

    fn sbom(&self) -> PathBuf {
        self.file(&format!("{NAME}-{VERSION}.cdx.json"))
    }

    /// The one `configmap-mirror-VERSION-OS-ARCH.oci.tar`.
    fn image_archive(&self) -> PathBuf {
        let prefix = format!("{NAME}-{VERSION}-");
        let archives: Vec<String> = self
            .names()
            .into_iter()
            .filter(|name| name.starts_with(&prefix) && name.ends_with(".oci.tar"))
            .collect();
        assert_eq!(archives.len(), 1, "image archives: {archives:?}");
        self.file(&archives[0])
    }

    fn names(&self) -> BTreeSet<String> {
        std::fs::read_dir(&self.dir)
            .expect("list the bundle")
            .map(|entry| {
                entry
                    .expect("entry")
                    .file_name()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect()
    }

    /// The image the release manifest runs.
    fn image(&self) -> String {
        read(&self.manifest())
            .lines()
            .find_map(|line| line.trim_start().strip_prefix("image: "))
            .map(|image| image.trim().trim_matches('"').to_owned())
            .expect("an image in the manifest")
    }
}

/// `make dist`, once for every test of this binary. A failure is kept and
/// reported by each test, never retried.
fn bundle() -> &'static Bundle {
    static BUNDLE: OnceLock<Result<Bundle, String>> = OnceLock::new();
    match BUNDLE.get_or_init(build_bundle) {
        Ok(bundle) => bundle,
        Err(e) => panic!("{e}"),
    }
}

fn build_bundle() -> Result<Bundle, String> {
    if !is_root() {
        return Err(
            "`make dist` builds the image with podman as root: run this test as root (CI does)"
                .into(),
        );
    }
    let helm = find_helm(&[])?;
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("dist-bundle");
    let out = Command::new("bash")
        .arg("hack/dist.sh")
        .arg(&dir)
        .env("HELM", &helm)
        // The manifest's CRD, printed by this build's binary.
        .env("CONFIGMAP_MIRROR", env!("CARGO_BIN_EXE_configmap-mirror"))
        .current_dir(common::repo())
        .output()
        .map_err(|e| format!("cannot run hack/dist.sh: {e}"))?;
    // Its progress, for the log of a run with --nocapture.
    eprintln!("{}", text(&out.stderr));
    if !out.status.success() {
        return Err(format!(
            "`make dist` (hack/dist.sh) failed:\n{}{}",
            text(&out.stdout),
            text(&out.stderr)
        ));
    }
    Ok(Bundle { dir, helm })
}

#[test]
fn the_bundle_holds_the_release_files_at_the_crates_version_and_their_sums_check() {
    let bundle = bundle();
    let archive = bundle.image_archive();
    let archive_name = archive.file_name().expect("a name").to_string_lossy();
    let expected: BTreeSet<String> = [
        format!("{NAME}-{VERSION}.tgz"),
        format!("{NAME}.yaml"),
        archive_name.into_owned(),
        format!("{NAME}-{VERSION}.cdx.json"),
        "SHA256SUMS".to_owned(),
    ]
    .into();
    assert_eq!(bundle.names(), expected);

    // `sha256sum` format: one "HASH  NAME" line for every other file.
    let sums = read(&bundle.file("SHA256SUMS"));
    let summed: BTreeSet<String> = sums
        .lines()
        .map(|line| {
            let (hash, name) = line
                .split_once("  ")
                .unwrap_or_else(|| panic!("not a sha256sum line: {line:?}"));
            assert!(
                hash.len() == 64 && hash.bytes().all(|b| b.is_ascii_hexdigit()),
                "not a SHA-256: {line:?}"
            );
            name.to_owned()
        })
        .collect();
    let mut others = expected.clone();
    others.remove("SHA256SUMS");
    assert_eq!(summed, others, "the files SHA256SUMS covers");
    assert_eq!(sums.lines().count(), others.len(), "one line each: {sums}");
    let checked = run_ok(
        Command::new("sha256sum")
            .args(["--check", "--strict", "SHA256SUMS"])
            .current_dir(&bundle.dir),
    );
    assert_eq!(
        checked.lines().filter(|l| l.ends_with(": OK")).count(),
        4,
        "{checked}"
    );
}

#[test]
fn the_manifest_is_the_release_manifest_naming_the_image_at_the_crates_version() {
    let bundle = bundle();
    assert_eq!(
        read(&bundle.manifest()),
        read(&common::repo().join("configmap-mirror.yaml")),
        "the bundle's manifest is not the committed configmap-mirror.yaml; run `make manifests`"
    );
    let image = bundle.image();
    assert!(
        image.ends_with(&format!(":{VERSION}")),
        "the manifest's image {image} is not tagged {VERSION}"
    );
}

#[tokio::test]
async fn the_chart_package_installs_the_image_at_its_version_and_uninstalls() {
    let bundle = bundle();
    let chart = bundle.chart();
    let chart = chart.to_str().expect("a UTF-8 path");
    let shown = run_ok(Command::new(&bundle.helm).args(["show", "chart", chart]));
    for key in ["version", "appVersion"] {
        let value = shown.lines().find_map(|line| {
            let value = line.strip_prefix(key)?.strip_prefix(':')?;
            Some(value.trim().trim_matches('"'))
        });
        assert_eq!(
            value,
            Some(VERSION),
            "{key} of the packaged chart:\n{shown}"
        );
    }

    let control_plane = ControlPlane::shared();
    let client = control_plane.client().await;
    let namespace = fresh_namespace(&client, "dist-chart")
        .await
        .expect("namespace");
    run_ok(&mut helm_on(
        control_plane,
        &["install", NAME, chart, "--namespace", &namespace],
    ));
    let deployment = Api::<Deployment>::namespaced(client.clone(), &namespace)
        .get(NAME)
        .await
        .expect("the chart's Deployment");
    let labels = deployment.metadata.labels.clone().unwrap_or_default();
    assert_eq!(
        labels.get("helm.sh/chart").map(String::as_str),
        Some(format!("{NAME}-{VERSION}").as_str()),
        "{labels:?}"
    );
    let images: Vec<String> = deployment
        .spec
        .and_then(|spec| spec.template.spec)
        .map(|pod| pod.containers)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|container| container.image)
        .collect();
    assert_eq!(
        images,
        [bundle.image()],
        "the installed Deployment's images"
    );

    run_ok(&mut helm_on(
        control_plane,
        &["uninstall", NAME, "--namespace", &namespace],
    ));
    let deployments = Api::<Deployment>::namespaced(client.clone(), &namespace);
    let cluster_roles = Api::<ClusterRole>::all(client.clone());
    wait_for("the release's objects to be gone", PATIENCE, || async {
        let deployment = deployments.get_opt(NAME).await.ok()?;
        let cluster_role = cluster_roles.get_opt(NAME).await.ok()?;
        (deployment.is_none() && cluster_role.is_none()).then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{e:#}"));
}

/// The commit `hack/image.sh` labels the image with: HEAD, "-dirty" when
/// the work tree has changes git does not ignore.
fn expected_revision() -> String {
    let head = run_ok(
        Command::new("git")
            .args(["rev-parse", "--verify", "HEAD"])
            .current_dir(common::repo()),
    );
    let status = run_ok(
        Command::new("git")
            .args(["status", "--porcelain"])
            .current_dir(common::repo()),
    );
    let dirty = if status.trim().is_empty() {
        ""
    } else {
        "-dirty"
    };
    format!("{}{dirty}", head.trim())
}

/// The chart's `home`, the project's repository.
fn chart_source() -> String {
    let chart = read(&common::repo().join("charts/configmap-mirror/Chart.yaml"));
    chart
        .lines()
        .find_map(|line| line.strip_prefix("home: "))
        .map(|home| home.trim().to_owned())
        .expect("a `home:` in Chart.yaml")
}

/// podman with a storage of its own, removed with it: loading the archive
/// changes no other image store.
struct ThrowawayPodman {
    dir: PathBuf,
}

impl ThrowawayPodman {
    fn new() -> ThrowawayPodman {
        static COUNT: AtomicUsize = AtomicUsize::new(0);
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
            "dist-podman-{}-{}",
            std::process::id(),
            COUNT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create the podman directory");
        let at = |sub: &str| dir.join(sub).display().to_string();
        std::fs::write(
            dir.join("storage.conf"),
            format!(
                "[storage]\ndriver = \"vfs\"\ngraphroot = \"{}\"\nrunroot = \"{}\"\n",
                at("graph"),
                at("run")
            ),
        )
        .expect("write storage.conf");
        std::fs::write(
            dir.join("containers.conf"),
            format!(
                "[engine]\ntmp_dir = \"{}\"\ncgroup_manager = \"cgroupfs\"\nevents_logger = \"file\"\n",
                at("tmp")
            ),
        )
        .expect("write containers.conf");
        ThrowawayPodman { dir }
    }

    fn podman(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new("podman");
        cmd.args(args)
            .env("CONTAINERS_CONF", self.dir.join("containers.conf"))
            .env("CONTAINERS_STORAGE_CONF", self.dir.join("storage.conf"));
        cmd
    }
}

impl Drop for ThrowawayPodman {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[test]
fn the_image_archive_loads_labeled_with_the_version_the_commit_and_the_repository() {
    let bundle = bundle();
    let archive = bundle.image_archive();
    let podman = ThrowawayPodman::new();
    let loaded =
        run_ok(&mut podman.podman(&["load", "--input", archive.to_str().expect("a UTF-8 path")]));
    let image = bundle.image();
    assert!(
        loaded.contains(&image),
        "`podman load` did not load {image}:\n{loaded}"
    );
    let inspected: Value = serde_json::from_str(&run_ok(
        &mut podman.podman(&["image", "inspect", "--format", "json", &image]),
    ))
    .expect("podman image inspect's JSON");
    let labels = &inspected[0]["Labels"];
    let expected = [
        ("org.opencontainers.image.version", VERSION.to_owned()),
        ("org.opencontainers.image.revision", expected_revision()),
        ("org.opencontainers.image.source", chart_source()),
        (
            "org.opencontainers.image.title",
            env!("CARGO_PKG_NAME").to_owned(),
        ),
        (
            "org.opencontainers.image.licenses",
            env!("CARGO_PKG_LICENSE").to_owned(),
        ),
        (
            "org.opencontainers.image.description",
            env!("CARGO_PKG_DESCRIPTION").to_owned(),
        ),
    ];
    for (label, value) in expected {
        assert_eq!(
            labels[label].as_str(),
            Some(value.as_str()),
            "{label}: {labels}"
        );
    }
    let platform = format!(
        "{}-{}",
        inspected[0]["Os"].as_str().unwrap_or("?"),
        inspected[0]["Architecture"].as_str().unwrap_or("?")
    );
    assert!(
        archive
            .to_string_lossy()
            .ends_with(&format!("-{platform}.oci.tar")),
        "{} is not named for its platform, {platform}",
        archive.display()
    );
}

/// The labels of the one image in `archive`, loaded into a storage of its own.
fn labels_of_archive(archive: &Path, image: &str) -> Value {
    let podman = ThrowawayPodman::new();
    let loaded =
        run_ok(&mut podman.podman(&["load", "--input", archive.to_str().expect("a UTF-8 path")]));
    assert!(
        loaded.contains(image),
        "`podman load` did not load {image}:\n{loaded}"
    );
    let inspected: Value = serde_json::from_str(&run_ok(
        &mut podman.podman(&["image", "inspect", "--format", "json", image]),
    ))
    .expect("podman image inspect's JSON");
    inspected[0]["Labels"].clone()
}

/// The image's build is cached but for the labels of the commit: a build
/// at another commit must not reuse the last one's labels.
#[test]
fn a_build_at_another_commit_relabels_the_cached_image() {
    // After the bundle, so that every step but the labels' is cached.
    bundle();
    let image = "localhost/configmap-mirror:revision-test";
    let revision = format!("another-commit-{}", std::process::id());
    let archive = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{revision}.tar"));
    run_ok(
        Command::new("bash")
            .arg("hack/image.sh")
            .env("IMAGE", image)
            .env("REVISION", &revision)
            .env("ARCHIVE", &archive)
            .current_dir(common::repo()),
    );
    let labels = labels_of_archive(&archive, image);
    let _ = std::fs::remove_file(&archive);
    let _ = std::fs::remove_file(archive.with_extension("tar.meta"));
    assert_eq!(
        labels["org.opencontainers.image.revision"].as_str(),
        Some(revision.as_str()),
        "{labels}"
    );
    assert_eq!(
        labels["org.opencontainers.image.version"].as_str(),
        Some(VERSION),
        "{labels}"
    );
}

/// name and version -> checksum of every crates.io package in Cargo.lock.
fn lockfile() -> BTreeMap<(String, String), String> {
    let mut crates = BTreeMap::new();
    for package in read(&common::repo().join("Cargo.lock"))
        .split("[[package]]")
        .skip(1)
    {
        let field = |key: &str| {
            package.lines().find_map(|line| {
                let value = line.strip_prefix(key)?.strip_prefix(" = ")?;
                Some(value.trim_matches('"').to_owned())
            })
        };
        if let (Some(name), Some(version), Some(checksum)) =
            (field("name"), field("version"), field("checksum"))
        {
            crates.insert((name, version), checksum);
        }
    }
    crates
}

/// cargo, in the environment `make release` runs it in: without the
/// variables cargo sets for this test, which some build scripts watch (ring's
/// reruns when CARGO_MANIFEST_DIR changes), so that the release build stays
/// fresh for the next `make release`, and the next `make release` for this.
fn cargo() -> Command {
    let mut cmd = Command::new(env!("CARGO"));
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy();
        let set_for_tests = ["CARGO_PKG_", "CARGO_BIN_EXE_"]
            .iter()
            .any(|prefix| name.starts_with(prefix))
            || matches!(
                name.as_ref(),
                "CARGO_MANIFEST_DIR"
                    | "CARGO_MANIFEST_PATH"
                    | "CARGO_CRATE_NAME"
                    | "CARGO_BIN_NAME"
                    | "CARGO_PRIMARY_PACKAGE"
                    | "CARGO_TARGET_TMPDIR"
                    | "CARGO_RUSTC_CURRENT_DIR"
                    | "OUT_DIR"
            );
        if set_for_tests {
            cmd.env_remove(name.as_ref());
        }
    }
    cmd
}

/// The crates linked into the release binary, from the release build
/// itself (`cargo build --release --locked`, as `make release` and the
/// Dockerfile run it): its library units compiled for the target. Build
/// scripts, procedural macros and their dependencies are compiled for the
/// machine building, with the release profile's build-override (opt-level
/// 0 unless Cargo.toml says otherwise), so they are the units at another
/// opt-level than the binary's.
fn crates_the_release_binary_links() -> BTreeSet<(String, String)> {
    let metadata: Value = serde_json::from_str(&run_ok(
        cargo()
            .args(["metadata", "--format-version", "1", "--locked"])
            .current_dir(common::repo()),
    ))
    .expect("cargo metadata's JSON");
    let packages: BTreeMap<&str, (String, String)> = metadata["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .map(|package| {
            let field = |key: &str| package[key].as_str().expect("a string").to_owned();
            (
                package["id"].as_str().expect("an id"),
                (field("name"), field("version")),
            )
        })
        .collect();
    let build = run_ok(
        cargo()
            .args([
                "build",
                "--release",
                "--locked",
                "--message-format=json-render-diagnostics",
            ])
            .current_dir(common::repo()),
    );
    let artifacts: Vec<Value> = build
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|message| message["reason"] == "compiler-artifact")
        .collect();
    let kinds = |artifact: &Value| -> Vec<String> {
        artifact["target"]["kind"]
            .as_array()
            .map(|kinds| {
                kinds
                    .iter()
                    .filter_map(|k| k.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    let binary_opt_level = artifacts
        .iter()
        .find(|a| kinds(a) == ["bin"] && a["target"]["name"] == NAME)
        .map(|a| a["profile"]["opt_level"].clone())
        .expect("the build's configmap-mirror binary");
    artifacts
        .iter()
        .filter(|a| a["profile"]["opt_level"] == binary_opt_level)
        .filter(|a| {
            let kinds = kinds(a);
            !kinds.is_empty()
                && kinds
                    .iter()
                    .all(|kind| !matches!(kind.as_str(), "bin" | "proc-macro" | "custom-build"))
        })
        .map(|a| {
            let id = a["package_id"].as_str().expect("a package id");
            packages
                .get(id)
                .unwrap_or_else(|| panic!("{id} is not in cargo metadata"))
                .clone()
        })
        .filter(|(name, _)| name != NAME)
        .collect()
}

#[test]
fn the_sbom_lists_exactly_the_crates_of_cargo_lock_the_release_binary_links() {
    let bundle = bundle();
    let sbom = read_json(&bundle.sbom());
    assert_eq!(sbom["bomFormat"], "CycloneDX");
    assert_eq!(sbom["specVersion"], "1.5");
    let described = &sbom["metadata"]["component"];
    assert_eq!(described["name"], NAME);
    assert_eq!(described["version"], VERSION);

    let lock = lockfile();
    let linked = crates_the_release_binary_links();
    // Sanity of the reference itself: the crates the controller is made of.
    for name in [
        "kube-client",
        "tokio",
        "rustls",
        "ring",
        "prometheus-client",
    ] {
        assert!(
            linked.iter().any(|(n, _)| n == name),
            "no {name} in {linked:?}"
        );
    }
    for (name, version) in &linked {
        assert!(
            lock.contains_key(&(name.clone(), version.clone())),
            "{name} {version} is linked but not in Cargo.lock"
        );
    }

    let components = sbom["components"].as_array().expect("components");
    let mut listed = BTreeSet::new();
    for component in components {
        let field = |key: &str| component[key].as_str().unwrap_or_default().to_owned();
        let (name, version) = (field("name"), field("version"));
        assert_eq!(field("purl"), format!("pkg:cargo/{name}@{version}"));
        let checksum = lock
            .get(&(name.clone(), version.clone()))
            .unwrap_or_else(|| {
                panic!("the SBOM lists {name} {version}, which is not in Cargo.lock")
            });
        assert_eq!(
            component["hashes"][0],
            serde_json::json!({"alg": "SHA-256", "content": checksum}),
            "{name} {version}"
        );
        assert!(listed.insert((name, version)), "listed twice: {component}");
    }
    let missing: Vec<_> = linked.difference(&listed).collect();
    let extra: Vec<_> = listed.difference(&linked).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "the SBOM lacks {missing:?} and lists {extra:?}, which the release binary does not link"
    );

    // Its dependency graph names only what it lists.
    let mut refs: BTreeSet<&str> = components
        .iter()
        .filter_map(|c| c["bom-ref"].as_str())
        .collect();
    refs.insert(described["bom-ref"].as_str().expect("the root's bom-ref"));
    for dependency in sbom["dependencies"].as_array().expect("dependencies") {
        for named in dependency["dependsOn"]
            .as_array()
            .into_iter()
            .flatten()
            .chain([&dependency["ref"]])
        {
            let named = named.as_str().expect("a bom-ref");
            assert!(refs.contains(named), "the graph names {named}, not listed");
        }
    }
}

/// A directory holding every program of PATH but `missing`, as links.
fn path_without(missing: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "dist-path-without-{missing}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create the PATH directory");
    let path = std::env::var_os("PATH").expect("PATH");
    for bin_dir in std::env::split_paths(&path) {
        for entry in std::fs::read_dir(&bin_dir).into_iter().flatten().flatten() {
            let name = entry.file_name();
            let link = dir.join(&name);
            if name != missing && !link.exists() {
                let _ = std::os::unix::fs::symlink(entry.path(), link);
            }
        }
    }
    dir
}

#[test]
fn a_missing_podman_fails_naming_the_install_command() {
    let path = path_without("podman");
    let out_dir =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("dist-never-{}", std::process::id()));
    let out = run(Command::new("/bin/bash")
        .arg("hack/dist.sh")
        .arg(&out_dir)
        .env("PATH", &path)
        // Never a build of helm, whatever the script does.
        .env("HELM", "/nonexistent/helm")
        .current_dir(common::repo()));
    let _ = std::fs::remove_dir_all(&path);
    let stderr = text(&out.stderr);
    assert!(
        !out.status.success(),
        "hack/dist.sh without podman: {stderr}"
    );
    assert!(
        stderr.contains("missing podman") && stderr.contains("apt-get install -y podman"),
        "{stderr}"
    );
    assert!(!out_dir.exists(), "{} written", out_dir.display());
}
