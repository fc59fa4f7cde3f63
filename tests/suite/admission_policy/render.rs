//! The policy as the chart renders it, without a cluster: the controller's
//! account it names is where the chart puts the ServiceAccount, in every
//! install shape; the flags the policy is rendered from are taken from the
//! chart's values only.

use super::*;

use crate::common::template;

fn one<'a>(objects: &'a [Value], kind: &str) -> Option<&'a Value> {
    let mut found = objects.iter().filter(|o| o["kind"] == kind);
    let first = found.next();
    assert!(found.next().is_none(), "more than one {kind}");
    first
}

/// The policy guarding copies (the chart renders one for ClusterMirrors too).
fn copies_policy(objects: &[Value]) -> &Value {
    objects
        .iter()
        .find(|o| {
            o["kind"] == "ValidatingAdmissionPolicy"
                && o["metadata"]["name"]
                    .as_str()
                    .is_some_and(|n| !n.ends_with("mirror-source"))
        })
        .expect("the policy guarding copies")
}

/// The [namespace, name] of the account the policy admits as the
/// controller.
fn policy_account(policy: &Value) -> (String, String) {
    let variables = policy["spec"]["variables"].as_array().expect("variables");
    let account = variables
        .iter()
        .find(|v| v["name"] == "controllerAccount")
        .and_then(|v| v["expression"].as_str())
        .expect("the controllerAccount variable");
    let parts: Vec<String> = serde_json::from_str(account)
        .unwrap_or_else(|e| panic!("{account:?} is not [namespace, name]: {e}"));
    assert_eq!(parts.len(), 2, "{account}");
    (parts[0].clone(), parts[1].clone())
}

#[test]
fn the_policy_names_the_service_account_where_the_chart_puts_it_in_every_shape() {
    let mut shapes = 0;
    for release in ["r", "configmap-mirror"] {
        for namespace_override in ["", "mirror-system"] {
            for fullname in ["", "custom"] {
                for account in ["", "robot"] {
                    let sets = [
                        format!("namespaceOverride={namespace_override}"),
                        format!("fullnameOverride={fullname}"),
                        format!("serviceAccount.name={account}"),
                    ];
                    let mut args = vec!["--skip-tests", release, CHART, "--namespace", "default"];
                    args.extend(["--set", "admissionPolicy.enabled=true"]);
                    for set in &sets {
                        args.extend(["--set", set]);
                    }
                    let objects = template(&args);
                    let policy = copies_policy(&objects);
                    let service_account = one(&objects, "ServiceAccount").expect("the account");
                    let deployment = one(&objects, "Deployment").expect("the Deployment");
                    let expected = (
                        service_account["metadata"]["namespace"]
                            .as_str()
                            .unwrap_or_default()
                            .to_owned(),
                        service_account["metadata"]["name"]
                            .as_str()
                            .unwrap_or_default()
                            .to_owned(),
                    );
                    assert_eq!(policy_account(policy), expected, "{release} with {sets:?}");
                    assert_eq!(deployment["metadata"]["namespace"], expected.0, "{sets:?}");
                    assert_eq!(
                        deployment["spec"]["template"]["spec"]["serviceAccountName"], expected.1,
                        "{sets:?}"
                    );
                    shapes += 1;
                }
            }
        }
    }
    // And an account the chart does not create: the Deployment's.
    for namespace_override in ["", "mirror-system"] {
        let set = format!("namespaceOverride={namespace_override}");
        let objects = template(&[
            "--skip-tests",
            "r",
            CHART,
            "--namespace",
            "default",
            "--set",
            "admissionPolicy.enabled=true",
            "--set",
            "serviceAccount.create=false",
            "--set",
            "serviceAccount.name=existing",
            "--set",
            &set,
        ]);
        assert!(one(&objects, "ServiceAccount").is_none());
        let deployment = one(&objects, "Deployment").expect("the Deployment");
        let policy = copies_policy(&objects);
        let namespace = deployment["metadata"]["namespace"]
            .as_str()
            .unwrap_or_default();
        assert_eq!(
            policy_account(policy),
            (namespace.to_owned(), "existing".to_owned())
        );
        shapes += 1;
    }
    assert_eq!(shapes, 18);
}

#[test]
fn flags_the_policy_is_rendered_from_are_refused_in_extra_args_and_extra_env() {
    for (flag, value) in [
        (
            "--protected-namespaces=tenant-a",
            "controller.protectedNamespaces",
        ),
        (
            "--cluster-mirror-source-namespaces=tenant-a",
            "clusterMirror.sourceNamespaces",
        ),
        (
            "--refused-secret-types=example.com/token",
            "secrets.refusedTypes",
        ),
        ("--never-carry=example.com/", "controller.neverCarry"),
        ("--selector", "controller.selector"),
        ("--digest-key-secret=a/b", "secrets.digestKeySecret"),
        (
            "--leader-election-namespace=elsewhere",
            "leaderElection.namespace",
        ),
    ] {
        let set = format!("extraArgs={{{flag}}}");
        let ran = run(&mut helm(&["template", "r", CHART, "--set", &set]), None);
        let (ok, out, err) = (ran.ok, ran.stdout, ran.stderr);
        assert!(!ok, "{flag} in extraArgs rendered:\n{out}");
        let name = flag.split('=').next().unwrap_or(flag);
        assert!(
            err.contains(&format!("extraArgs: {name} is set from {value}")),
            "{flag}: {err}"
        );
    }
    for (variable, value) in [
        (
            "MIRROR_PROTECTED_NAMESPACES",
            "controller.protectedNamespaces",
        ),
        (
            "MIRROR_CLUSTER_MIRROR_SOURCE_NAMESPACES",
            "clusterMirror.sourceNamespaces",
        ),
        ("MIRROR_REFUSED_SECRET_TYPES", "secrets.refusedTypes"),
        ("MIRROR_NEVER_CARRY", "controller.neverCarry"),
    ] {
        let set = format!(r#"extraEnv=[{{"name":"{variable}","value":"x"}}]"#);
        let ran = run(
            &mut helm(&["template", "r", CHART, "--set-json", &set]),
            None,
        );
        let (ok, err) = (ran.ok, ran.stderr);
        assert!(!ok, "{variable} in extraEnv rendered");
        assert!(
            err.contains(&format!("extraEnv: {variable} is set from {value}")),
            "{variable}: {err}"
        );
    }
    // Other flags pass, last.
    let objects = template(&[
        "--skip-tests",
        "r",
        CHART,
        "--set",
        "extraArgs={--leader-election-identity=x}",
    ]);
    let deployment = one(&objects, "Deployment").expect("the Deployment");
    let args = &deployment["spec"]["template"]["spec"]["containers"][0]["args"];
    assert_eq!(
        args.as_array().and_then(|a| a.last()),
        Some(&json!("--leader-election-identity=x"))
    );
}
