//! The harness's own guarantees: children never outlive their owner, owned
//! control planes clean up after themselves, failures explain themselves.

use std::os::unix::process::ExitStatusExt;
use std::process::Command;
use std::time::Duration;

use testenv::{ControlPlane, Options, Signal, process_alive, spawn_child, wait_for};

fn sleeper(log: &std::path::Path) -> testenv::ChildProcess {
    let mut cmd = Command::new("sleep");
    cmd.arg("300");
    spawn_child(cmd, log).expect("spawn sleep")
}

#[test]
fn a_child_outlives_the_thread_that_spawned_it() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("sleep.log");
    // The parent-death signal is tied to the forking thread, so this would
    // kill the child if it were forked by the short-lived thread itself.
    let mut child = std::thread::spawn(move || sleeper(&log)).join().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        child.try_wait().unwrap(),
        None,
        "the child died with its spawning thread"
    );

    let pid = child.pid();
    drop(child);
    assert!(!process_alive(pid), "dropping a child kills it");
}

#[test]
fn a_child_stops_on_a_signal_sent_to_its_pid() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = sleeper(&dir.path().join("sleep.log"));
    child.signal(Signal::Term).unwrap();
    let status = child.wait_with_timeout(Duration::from_secs(5)).unwrap();
    assert_eq!(status.and_then(|s| s.signal()), Some(15));
    assert!(
        child.signal(Signal::Term).is_err(),
        "a reaped child is not signalled"
    );
}

#[test]
fn a_child_writes_stdout_and_stderr_to_its_log_file() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("logs/sh.log");
    let mut cmd = Command::new("sh");
    cmd.args(["-c", r#"echo "out $GREETING"; echo err >&2"#])
        .env("GREETING", "hello");
    let mut child = spawn_child(cmd, &log).unwrap();
    let status = child.wait_with_timeout(Duration::from_secs(5)).unwrap();
    assert!(status.is_some_and(|s| s.success()));
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "out hello\nerr\n");
}

#[tokio::test]
async fn wait_for_names_what_it_waited_for_when_it_times_out() {
    let error = wait_for("the impossible", Duration::from_millis(300), || async {
        None::<()>
    })
    .await
    .unwrap_err();
    assert!(error.to_string().contains("the impossible"), "{error}");

    let mut calls = 0;
    let value = wait_for("the third call", Duration::from_secs(5), || {
        calls += 1;
        let value = calls;
        async move { (value == 3).then_some(value) }
    })
    .await
    .unwrap();
    assert_eq!(value, 3);
}

#[test]
fn missing_binaries_are_reported_with_the_install_command() {
    let empty = tempfile::tempdir().unwrap();
    let options = Options {
        bin_dir: Some(empty.path().to_owned()),
        ..Options::default()
    };
    let error = ControlPlane::start(options).err().expect("start must fail");
    assert!(format!("{error:#}").contains("make k8s"), "{error:#}");
}

#[test]
fn a_state_dir_with_foreign_files_is_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("precious.txt"), "keep me").unwrap();
    let options = Options {
        state_dir: Some(dir.path().to_owned()),
        ..Options::default()
    };
    let error = ControlPlane::start(options).err().expect("start must fail");
    assert!(format!("{error:#}").contains("refusing"), "{error:#}");
    assert!(dir.path().join("precious.txt").exists());
}

#[tokio::test]
async fn an_owned_control_plane_serves_kubectl_and_cleans_up_when_dropped() {
    let parent = tempfile::tempdir().unwrap();
    let state_dir = parent.path().join("state");
    let control_plane = ControlPlane::start(Options {
        state_dir: Some(state_dir.clone()),
        etcd_unsafe_no_fsync: true,
        ..Options::default()
    })
    .unwrap();

    let output = control_plane
        .kubectl()
        .args(["get", "namespace", "default", "-o", "name"])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        "namespace/default"
    );

    let client = control_plane.client().await;
    let namespace = testenv::fresh_namespace(&client, "Owned_Plane")
        .await
        .unwrap();
    assert!(namespace.starts_with("owned-plane-"), "{namespace}");

    let pids: Vec<u32> = control_plane
        .pids()
        .into_iter()
        .map(|(_, pid)| pid)
        .collect();
    assert_eq!(pids.len(), 3);
    assert!(pids.iter().all(|&pid| process_alive(pid)));
    assert!(state_dir.join("logs/kube-apiserver.log").exists());

    drop(control_plane);
    for pid in pids {
        assert!(!process_alive(pid), "pid {pid} survived the drop");
    }
    assert!(!state_dir.exists(), "the state directory was not removed");
}

#[test]
fn a_server_that_cannot_start_is_reported_with_its_log() {
    let parent = tempfile::tempdir().unwrap();
    let state_dir = parent.path().join("state");
    let options = Options {
        state_dir: Some(state_dir.clone()),
        etcd_unsafe_no_fsync: true,
        extra_apiserver_args: vec!["--no-such-flag".to_owned()],
        ..Options::default()
    };
    let error = format!(
        "{:#}",
        ControlPlane::start(options).err().expect("start must fail")
    );
    assert!(error.contains("kube-apiserver exited"), "{error}");
    assert!(
        error.contains("no-such-flag"),
        "the log tail is missing: {error}"
    );
    assert!(
        state_dir.join("logs/kube-apiserver.log").exists(),
        "the logs were not kept"
    );

    // The kept directory is taken over only once its owner, this process,
    // has exited.
    let control_plane = ControlPlane::start(Options {
        state_dir: Some(state_dir.clone()),
        etcd_unsafe_no_fsync: true,
        ..Options::default()
    });
    let error = control_plane.err().expect("start must fail");
    assert!(format!("{error:#}").contains("in use"), "{error:#}");
}
