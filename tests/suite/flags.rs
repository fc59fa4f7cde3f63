//! Flags that can never work are refused at start, before any API call,
//! with a message naming the flag and exit code 2, never a panic.

use std::process::Command;

/// Runs the controller with `args` and returns its exit code and stderr.
fn run(args: &[&str]) -> (Option<i32>, String) {
    run_with_env(args, &[])
}

/// The same, with these environment variables (and no `RUST_LOG` unless
/// given).
fn run_with_env(args: &[&str], envs: &[(&str, &str)]) -> (Option<i32>, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_configmap-mirror"))
        .args(args)
        // Nothing here may be reached: a flag refused at start never is.
        .env("KUBECONFIG", "/nonexistent/kubeconfig")
        .env_remove("KUBERNETES_SERVICE_HOST")
        .env_remove("RUST_LOG")
        .envs(envs.iter().copied())
        .output()
        .expect("run the controller");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn flags_that_can_never_work_are_refused_with_exit_code_2() {
    let cases: &[(&[&str], &str)] = &[
        (&["--suffix=..x"], "--suffix"),
        (&["--suffix=.-x"], "--suffix"),
        (&["--suffix=-Synced"], "--suffix"),
        (&["--suffix=-x."], "--suffix"),
        (&["--selector=a b"], "--selector"),
        (&["--selector=app=Has Space"], "--selector"),
        (&["--selector="], "--selector"),
        (
            &["--accept-mirrors-selector=x in (a"],
            "--accept-mirrors-selector",
        ),
        (&["--namespace=Team_A"], "--namespace"),
        (&["--reserved-names=ok,Not_A_Name"], "--reserved-names"),
        (&["--never-carry=example.com/team,a b"], "--never-carry"),
        (&["--never-carry=example.com/*/x*"], "--never-carry"),
        (&["--never-carry=a*b"], "--never-carry"),
        (
            &["--watch-failure-threshold=0s"],
            "--watch-failure-threshold",
        ),
        (&["--slow-retry=0"], "--slow-retry"),
        (&["--slow-retry=-5s"], "--slow-retry"),
        (&["--api-timeout=0ms"], "--api-timeout"),
        (&["--shutdown-timeout=-1s"], "--shutdown-timeout"),
        (&["--lease-duration=0s"], "--lease-duration"),
        (&["--renew-deadline=-10s"], "--renew-deadline"),
        (&["--retry-period=0s"], "--retry-period"),
        (&["--concurrency=0"], "--concurrency"),
        (
            &["--leader-election-id=Not_A_Lease"],
            "--leader-election-id",
        ),
        (&["--leader-election-id=a..b"], "--leader-election-id"),
        (
            &["--leader-election-namespace=Kube-System"],
            "--leader-election-namespace",
        ),
        (
            &["--watch-failure-threshold=1h-5m"],
            "--watch-failure-threshold",
        ),
        (&["--api-timeout="], "--api-timeout"),
        (
            &["--shutdown-timeout=99999999999999999999h"],
            "--shutdown-timeout",
        ),
        (&["--slow-retry=5d"], "--slow-retry"),
        (&["--retry-period=1.2.3s"], "--retry-period"),
        (&["--http-addr=localhost"], "--http-addr"),
        (&["--log-format=xml"], "--log-format"),
        (&["--log-level=verbose"], "--log-level"),
        (&["--log-level=info,kube=loud"], "--log-level"),
        (&["--log-level="], "--log-level"),
        (&["--concurrency=2", "probe", "http://[::1]/"], "probe"),
        (&["probe", "https://localhost/readyz"], "http://"),
        (&["probe", "localhost:8080/readyz"], "http://"),
        (&["--kinds=configmaps,pods"], "--kinds"),
        (&["--kinds="], "--kinds"),
        (&["--digest-key-secret=no-slash"], "--digest-key-secret"),
        (&["--digest-key-secret=Ns/key"], "--digest-key-secret"),
        (&["--digest-key-secret=ns/"], "--digest-key-secret"),
        (&["--digest-key-secret=ns/a..b"], "--digest-key-secret"),
        (
            &["--lease-duration=10s", "--renew-deadline=10s"],
            "--renew-deadline",
        ),
    ];
    for (args, flag) in cases {
        let (code, stderr) = run(args);
        assert_eq!(code, Some(2), "{args:?} was not refused: {stderr}");
        assert!(
            stderr.contains(flag),
            "{args:?}: no mention of {flag}: {stderr}"
        );
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
}

#[test]
fn the_defaults_and_valid_values_pass_the_checks() {
    // Past the flags, the controller stops at the missing kubeconfig: exit
    // code 1 and that reason, not a refused flag.
    for args in [
        &[][..],
        &["--suffix=.copy", "--selector=team in (a,b),!legacy"][..],
        &["--namespace=team-a", "--reserved-names=a,b.c,"][..],
        &[
            "--kinds=configmaps,secrets",
            "--digest-key-secret=ops/mirror.key",
        ][..],
        &[
            "--lease-duration=1m30s",
            "--renew-deadline=1m",
            "--retry-period=1.5s",
            "--api-timeout=250ms",
        ][..],
        &["--log-level=debug"][..],
        &["--log-level=warn,configmap_mirror=trace"][..],
    ] {
        let (code, stderr) = run(args);
        assert_eq!(code, Some(1), "{args:?}: {stderr}");
        assert!(
            !stderr.contains("error: invalid value"),
            "{args:?}: {stderr}"
        );
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
}

#[test]
fn the_log_level_is_the_flag_or_its_variable_and_rust_log_wins() {
    // The controller's one line before it exits: an error, about the
    // missing kubeconfig.
    const LINE: &str = "no Kubernetes configuration found";
    for (args, envs, logged) in [
        (&["--log-level=error"][..], &[][..], true),
        (&["--log-level=off"][..], &[][..], false),
        (&[][..], &[("MIRROR_LOG_LEVEL", "off")][..], false),
        (&["--log-level=off"][..], &[("RUST_LOG", "error")][..], true),
    ] {
        let (code, stderr) = run_with_env(args, envs);
        assert_eq!(code, Some(1), "{args:?} {envs:?}: {stderr}");
        assert_eq!(stderr.contains(LINE), logged, "{args:?} {envs:?}: {stderr}");
    }
    let (code, stderr) = run_with_env(&[], &[("MIRROR_LOG_LEVEL", "verbose")]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("--log-level"), "{stderr}");
}
