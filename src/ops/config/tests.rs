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
    let config = |extra: &[&str]| parse(["configmap-mirror", &lease].iter().chain(extra)).unwrap();
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

#[test]
fn never_carry_takes_keys_and_prefixes() {
    let config = parse([
        "configmap-mirror",
        "--never-carry",
        "example.com/team,,corp.example/*",
    ])
    .unwrap();
    assert_eq!(
        config.rules.never_carry,
        ["example.com/team", "", "corp.example/*"]
    );
    for bad in ["a b", "a*b", "example.com/x/y", "*a*"] {
        let args = ["configmap-mirror", "--never-carry", bad];
        assert!(parse(args).is_err(), "{bad}");
    }
}

#[test]
fn the_class_is_empty_by_default_and_a_dns_subdomain_when_given() {
    let config = parse(["configmap-mirror"]).unwrap();
    assert_eq!(config.rules.cluster_mirror_class, "");
    let config = parse([
        "configmap-mirror",
        "--cluster-mirror-class=platform.example",
    ])
    .unwrap();
    assert_eq!(config.rules.cluster_mirror_class, "platform.example");
    assert!(parse(["configmap-mirror", "--cluster-mirror-class=Platform"]).is_err());
    let long = format!("--cluster-mirror-class={}", "a".repeat(64));
    assert!(parse(["configmap-mirror", &long]).is_err());
}

#[test]
fn status_writes_name_the_install_by_its_lease() {
    let config = parse([
        "configmap-mirror",
        "--leader-election-namespace=ops",
        "--leader-election-id=team-a",
    ])
    .unwrap();
    assert_eq!(config.field_manager(), "configmap-mirror/ops/team-a");
}
