use kube::core::response::{StatusCause, StatusDetails};

use super::*;

const CANARY: &str = "hunter2-canary";

fn vap_denial() -> String {
    format!(
        "secrets \"db-synced\" is forbidden: ValidatingAdmissionPolicy 'no-copies' with binding \
         'no-copies-here' denied request: copy refused, it holds {CANARY}"
    )
}

#[test]
fn of_a_secret_only_who_refused_is_told() {
    assert_eq!(
        relayed(&vap_denial(), 403, true),
        "ValidatingAdmissionPolicy 'no-copies' with binding 'no-copies-here' refused it (403); \
         its message is withheld, as it may hold the Secret's data"
    );
    let webhook = format!("admission webhook \"deny.example.com\" denied the request: {CANARY}");
    assert_eq!(
        relayed(&webhook, 400, true),
        "admission webhook \"deny.example.com\" refused it (400); its message is withheld, as it \
         may hold the Secret's data"
    );
    let unreachable = "Internal error occurred: failed calling webhook \"deny.example.com\": \
                       failed to call webhook: Post \"https://deny.svc:443/?timeout=10s\": EOF";
    assert!(relayed(unreachable, 500, true).starts_with("admission webhook \"deny.example.com\""));
    let plain = format!("Secret \"x\" is invalid: data[{CANARY}]: Invalid value");
    assert_eq!(
        relayed(&plain, 422, true),
        "the API server refused it (422); its message is withheld, as it may hold the Secret's \
         data"
    );
}

#[test]
fn a_policy_without_a_binding_and_a_forged_name_are_told_safely() {
    let unbound = format!("ValidatingAdmissionPolicy 'no-copies' denied request: {CANARY}");
    assert!(
        relayed(&unbound, 403, true).starts_with("ValidatingAdmissionPolicy 'no-copies' refused")
    );
    // Nothing that is no name is relayed as one.
    let odd = format!("ValidatingAdmissionPolicy '{CANARY} and more' denied request");
    assert!(!relayed(&odd, 403, true).contains(CANARY));
    let long = format!(
        "admission webhook \"{}\" denied the request",
        "a".repeat(300)
    );
    assert!(relayed(&long, 403, true).starts_with("the API server refused it"));
}

#[test]
fn of_a_configmap_a_long_message_is_cut() {
    let message = format!("denied: {}END", "x".repeat(2000));
    let told = relayed(&message, 403, false);
    assert!(told.len() <= MAX_RELAYED);
    assert!(told.starts_with("denied: xxx") && told.ends_with("... (cut)"));
    assert_eq!(relayed(&vap_denial(), 403, false), vap_denial());
    let accents = "é".repeat(600);
    assert!(relayed(&accents, 403, false).len() <= MAX_RELAYED);
}

#[test]
fn a_status_keeps_nothing_of_the_denial_when_confidential() {
    let status = Status {
        code: 422,
        reason: format!("Denied{CANARY}"),
        message: vap_denial(),
        details: Some(StatusDetails {
            name: "db-synced".into(),
            kind: "secrets".into(),
            causes: vec![StatusCause {
                reason: "FieldValueInvalid".into(),
                message: vap_denial(),
                field: format!("data[{CANARY}]"),
            }],
            group: String::new(),
            uid: String::new(),
            retry_after_seconds: 0,
        }),
        ..Status::default()
    };
    let told = relayable(status.clone(), true);
    let debug = format!("{told:?} {}", kube::Error::Api(Box::new(told.clone())));
    assert!(!debug.contains(CANARY), "the canary was told");
    assert!(told.message.contains("no-copies"));
    assert_eq!(told.details.map(|d| d.name), Some("db-synced".into()));

    let long = Status {
        message: "y".repeat(5000),
        ..status
    };
    let told = relayable(long, false);
    assert!(told.message.len() <= MAX_RELAYED);
    let cause = &told.details.unwrap().causes[0];
    assert!(
        cause.message.contains(CANARY),
        "a ConfigMap's causes are only cut"
    );
}

#[test]
fn an_rbac_refusal_is_told_whole_for_a_secret_too() {
    for rbac in [
        "secrets \"db-synced\" is forbidden: User \"system:serviceaccount:ns:mirror\" cannot \
         update resource \"secrets\" in API group \"\" in the namespace \"ns\"",
        "secrets is forbidden: User \"u\" cannot create resource \"secrets\" in API group \"\" \
         in the namespace \"ns\"",
    ] {
        assert_eq!(relayed(rbac, 403, true), rbac);
    }
    // What an admission plugin says after the same prefix is not RBAC's.
    let policy = format!(
        "secrets \"db\" is forbidden: ValidatingAdmissionPolicy 'p' denied request: User \"{CANARY}"
    );
    assert!(!relayed(&policy, 403, true).contains(CANARY));
    let webhook = format!(
        "admission webhook \"w.example.com\" denied the request: secrets is forbidden: User \"{CANARY}\""
    );
    assert!(!relayed(&webhook, 403, true).contains(CANARY));
}
