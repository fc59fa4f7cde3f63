//! The command line's parsing: subcommands, flags and what they refuse.

use super::*;
use crate::ops::config::Kind;

fn parse(args: &[&str]) -> Result<Invocation, clap::Error> {
    Invocation::parse(args.iter().map(OsString::from).collect())
}

#[test]
fn without_a_subcommand_the_binary_is_the_controller() {
    let Ok(Invocation::Controller(config)) = parse(&["configmap-mirror", "--suffix=-copy"]) else {
        panic!("not the controller");
    };
    assert_eq!(config.rules.suffix, "-copy");
}

#[test]
fn explain_takes_the_controller_s_rules_with_their_defaults() {
    let Ok(Invocation::Explain(args)) = parse(&[
        "configmap-mirror",
        "explain",
        "team-a/colors",
        "--suffix=-copy",
        "--protected-namespaces=kube-system,guarded",
    ]) else {
        panic!("not explain");
    };
    assert_eq!(
        args.object,
        Some(ObjectArg::Named("team-a".into(), "colors".into()))
    );
    assert_eq!(args.rules.suffix, "-copy");
    assert_eq!(args.rules.selector, "workshop.io/managed=true");
    assert_eq!(args.rules.protected_namespaces, ["kube-system", "guarded"]);
    assert_eq!(
        args.rules.accept_secret_mirrors_selector,
        "workshop.io/accept-secret-mirrors=true"
    );
}

#[test]
fn explain_finds_the_digest_key_where_the_controller_keeps_it() {
    let places = |extra: &[&str]| {
        let args = [
            &["configmap-mirror", "explain", "team-a/colors"],
            &["--install-namespaces=mirror", "--leader-election-id=mirror"][..],
            extra,
        ]
        .concat();
        let Ok(Invocation::Explain(args)) = parse(&args) else {
            panic!("not explain");
        };
        args.digest_key_places()
    };
    let place = |namespace: &str, name: &str| (namespace.to_owned(), name.to_owned());
    assert_eq!(places(&[]), [place("mirror", "mirror-digest-key")]);
    assert_eq!(
        places(&["--leader-election-namespace=leases"]),
        [place("leases", "mirror-digest-key")],
        "the Lease's namespace first, as the controller's"
    );
    assert_eq!(
        places(&[
            "--leader-election-namespace=leases",
            "--digest-key-secret=keys/k"
        ]),
        [place("keys", "k")]
    );
}

#[test]
fn clustermirror_names_a_cluster_mirror_unless_a_kind_is_given() {
    // The words a user types, as kubectl names the resource.
    for word in ["clustermirror", "clustermirrors", "cmir"] {
        let object = format!("{word}/corp-ca");
        let Ok(Invocation::Explain(args)) = parse(&["configmap-mirror", "explain", &object]) else {
            panic!("not explain");
        };
        assert_eq!(args.cluster_mirror(), Some("corp-ca"));
    }
    let Ok(Invocation::Explain(args)) = parse(&[
        "configmap-mirror",
        "explain",
        "clustermirror/corp-ca",
        "--kind=configmap",
    ]) else {
        panic!("not explain");
    };
    assert_eq!(
        args.cluster_mirror(),
        None,
        "a namespace named clustermirror"
    );
    let Ok(Invocation::Explain(args)) = parse(&["configmap-mirror", "explain", "team-a/x"]) else {
        panic!("not explain");
    };
    assert_eq!(args.cluster_mirror(), None);
    assert_eq!(
        args.rules.kinds,
        [Kind::Configmaps],
        "the controller's default"
    );
}

#[test]
fn the_controller_s_flags_do_not_mix_with_a_subcommand() {
    assert!(parse(&["configmap-mirror", "--concurrency=4", "explain", "a/b"]).is_err());
}

#[test]
fn bad_input_is_refused_with_exit_code_2() {
    for args in [
        &["configmap-mirror", "explain"][..],
        &["configmap-mirror", "explain", "no-slash"],
        &["configmap-mirror", "explain", "Ns/x"],
        &["configmap-mirror", "explain", "a/b", "--namespace", "c"],
        &["configmap-mirror", "explain", "a/b", "--kind", "pod"],
        &[
            "configmap-mirror",
            "explain",
            "a/b",
            "--mirror-to",
            "Team_A",
        ],
        &[
            "configmap-mirror",
            "explain",
            "a/b",
            "--mirror-to-selector",
            "a in b",
        ],
        &[
            "configmap-mirror",
            "explain",
            "--namespace",
            "a",
            "--mirror-to",
            "b",
        ],
        &["configmap-mirror", "explain", "a/b", "-o", "yaml"],
    ] {
        let error = parse(args)
            .err()
            .unwrap_or_else(|| panic!("{args:?} parsed"));
        assert_eq!(error.exit_code(), 2, "{args:?}");
    }
}

#[test]
fn as_kubectl_mirror_the_arguments_are_a_subcommand_s() {
    let Ok(Invocation::Explain(args)) = parse(&[
        "/usr/local/bin/kubectl-mirror",
        "explain",
        "--namespace",
        "team-b",
    ]) else {
        panic!("not explain");
    };
    assert_eq!(args.namespace.as_deref(), Some("team-b"));
    assert!(parse(&["kubectl-mirror"]).is_err(), "no controller");
    assert!(parse(&["kubectl-mirror", "--suffix=-x"]).is_err());
}

#[test]
fn a_probe_is_a_subcommand_and_controller_flags_do_not_mix_with_one() {
    assert!(matches!(
        parse(&["configmap-mirror", "probe", "http://[::1]:8080/readyz"]),
        Ok(Invocation::Probe(_))
    ));
    assert!(
        parse(&[
            "configmap-mirror",
            "--concurrency=3",
            "probe",
            "http://localhost/"
        ])
        .is_err()
    );
}

#[test]
fn crd_is_a_subcommand_of_the_binary_and_of_the_plugin() {
    assert!(matches!(
        parse(&["configmap-mirror", "crd"]),
        Ok(Invocation::Crd)
    ));
    assert!(matches!(
        parse(&["kubectl-mirror", "crd"]),
        Ok(Invocation::Crd)
    ));
    assert!(parse(&["configmap-mirror", "crd", "extra"]).is_err());
}

#[test]
fn the_command_line_is_well_formed() {
    Cli::command().debug_assert();
}

#[test]
fn mirror_namespace_name_names_a_mirror_and_nothing_else_takes_three_parts() {
    for word in ["mirror", "mirrors", "mir"] {
        let object = format!("{word}/team-a/team-ca");
        let Ok(Invocation::Explain(args)) = parse(&["configmap-mirror", "explain", &object]) else {
            panic!("not explain");
        };
        assert_eq!(
            args.object,
            Some(ObjectArg::Mirror("team-a".into(), "team-ca".into()))
        );
        assert_eq!(args.cluster_mirror(), None);
    }
    // Two parts stay an object in a namespace called mirror.
    let Ok(Invocation::Explain(args)) = parse(&["configmap-mirror", "explain", "mirror/x"]) else {
        panic!("not explain");
    };
    assert_eq!(
        args.object,
        Some(ObjectArg::Named("mirror".into(), "x".into()))
    );
    for bad in [
        "team-a/b/c",
        "mirror/Team_A/x",
        "mirror/team-a/",
        "mir/a/b/c",
    ] {
        assert!(
            parse(&["configmap-mirror", "explain", bad]).is_err(),
            "{bad} is refused"
        );
    }
}
