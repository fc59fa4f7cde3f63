//! Which keys a Secret of each type must hold for the API server to store
//! it, and so whether a copy of chosen keys may keep its source's type.
//!
//! The rules are the API server's own, `ValidateSecret` in Kubernetes'
//! `pkg/apis/core/validation/validation.go`: `kubernetes.io/dockercfg`
//! needs `.dockercfg` and `kubernetes.io/dockerconfigjson` needs
//! `.dockerconfigjson` (each also JSON, which a copied value still is);
//! `kubernetes.io/basic-auth` needs `username` or `password` (present, even
//! empty); `kubernetes.io/ssh-auth` needs a non-empty `ssh-privatekey`;
//! `kubernetes.io/tls` needs `tls.crt` and `tls.key` (present). Those
//! checks look at values too (JSON, non-empty), so a copy keeps its type
//! only when each required key holds the source's key of that name,
//! copied unchanged and not renamed: a source the API server stored passes
//! them, and a value renamed onto a required key (`*,cfg=.dockerconfigjson`)
//! need not.
//! (`kubernetes.io/service-account-token` needs an annotation, and is never
//! copied.)
//!
//! Pure.

use super::CopiedKey;
use crate::decisions::targets::{MIRROR_TO_ANNOTATION, MIRROR_TO_SELECTOR_ANNOTATION};

/// The type of a Secret whose required keys are left out, and those keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeysBreakType {
    pub type_: String,
    /// For `kubernetes.io/basic-auth`, either of the two would do.
    pub missing: Vec<String>,
}

impl KeysBreakType {
    /// Which keys are left out, and why the API server would refuse it.
    fn why(&self) -> String {
        let joiner = if self.either() { " or " } else { " and " };
        format!(
            "the keys copied leave out {} (from the source's key of that name), which a \
             Secret of type {} must hold, so the API server would refuse the copy",
            self.missing.join(joiner),
            self.type_,
        )
    }

    fn either(&self) -> bool {
        self.type_ == BASIC_AUTH
    }

    /// As the source's Warning Event and `explain` say it: its copies
    /// written before still hold what they held, and adding a key such as
    /// `tls.key` to them is not the way out.
    pub fn label_path_message(&self) -> String {
        format!(
            "{}: nothing of the source is written, so its copies are left as they are; to \
             withdraw them, remove {MIRROR_TO_ANNOTATION} and {MIRROR_TO_SELECTOR_ANNOTATION} \
             (its mirrors in other namespaces) or its managed label (every copy)",
            self.why()
        )
    }

    /// As a ClusterMirror's condition says it: only a ClusterMirror may
    /// drop the type.
    pub fn cluster_mirror_message(&self) -> String {
        format!(
            "{}: copy {} too, not renamed, or ask for an Opaque copy (spec.target.type: Opaque)",
            self.why(),
            if self.either() { "one of them" } else { "them" },
        )
    }
}

/// The type that drops a Secret's key rules.
#[cfg(test)]
const OPAQUE: &str = "Opaque";
const BASIC_AUTH: &str = "kubernetes.io/basic-auth";

/// What a type requires of a Secret's keys.
enum Required {
    AllOf(&'static [&'static str]),
    AnyOf(&'static [&'static str]),
}

fn required(type_: &str) -> Option<Required> {
    Some(match type_ {
        "kubernetes.io/tls" => Required::AllOf(&["tls.crt", "tls.key"]),
        "kubernetes.io/dockerconfigjson" => Required::AllOf(&[".dockerconfigjson"]),
        "kubernetes.io/dockercfg" => Required::AllOf(&[".dockercfg"]),
        "kubernetes.io/ssh-auth" => Required::AllOf(&["ssh-privatekey"]),
        BASIC_AUTH => Required::AnyOf(&["username", "password"]),
        _ => return None,
    })
}

/// The type a Secret copy holding the keys `copied` gets: `copy_type` when
/// the copy asks for one (only `Opaque`, which requires nothing), else
/// `source_type` if the copy holds each key it requires from the source's
/// key of that name; else why not.
pub fn copy_type<'a, V>(
    source_type: &'a str,
    copy_type: Option<&'a str>,
    copied: &[CopiedKey<V>],
) -> Result<&'a str, KeysBreakType> {
    if let Some(asked) = copy_type {
        return Ok(asked);
    }
    let holds =
        |key: &&str| (copied.iter()).any(|held| held.name == *key && held.renamed_from.is_none());
    let missing: Vec<&str> = match required(source_type) {
        None => Vec::new(),
        Some(Required::AllOf(keys)) => keys.iter().copied().filter(|k| !holds(k)).collect(),
        Some(Required::AnyOf(keys)) if keys.iter().any(holds) => Vec::new(),
        Some(Required::AnyOf(keys)) => keys.to_vec(),
    };
    match missing.is_empty() {
        true => Ok(source_type),
        false => Err(KeysBreakType {
            type_: source_type.to_owned(),
            missing: missing.into_iter().map(str::to_owned).collect(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        decisions::key_shape::{KeyShape, SourceKey},
        kind::Field,
    };

    /// What the annotation `shape` copies of a source holding `keys`.
    fn shaped(shape: &str, keys: &[&'static str]) -> Vec<CopiedKey<()>> {
        let keys = keys.iter().map(|key| SourceKey {
            field: Field::Data,
            key,
            value: (),
        });
        KeyShape::parse_annotation(shape)
            .unwrap()
            .shape(keys)
            .copied
    }

    /// Keys copied under their own names.
    fn as_is(names: &[&str]) -> Vec<CopiedKey<()>> {
        names.iter().map(|name| copied(name, None)).collect()
    }

    fn copied(name: &str, renamed_from: Option<&str>) -> CopiedKey<()> {
        CopiedKey {
            field: Field::Data,
            name: name.to_owned(),
            renamed_from: renamed_from.map(str::to_owned),
            value: (),
        }
    }

    #[test]
    fn a_tls_secret_keeps_its_type_only_with_both_its_keys() {
        let tls = "kubernetes.io/tls";
        assert_eq!(
            copy_type(tls, None, &as_is(&["tls.crt", "tls.key", "ca.crt"])),
            Ok(tls)
        );
        let broken = copy_type(tls, None, &as_is(&["ca.crt", "tls.crt"])).unwrap_err();
        assert_eq!(broken.missing, ["tls.key"]);
        assert!(
            broken.label_path_message().contains("tls.key"),
            "{}",
            broken.label_path_message()
        );
        let none = copy_type(tls, None, &as_is(&["ca.crt"])).unwrap_err();
        assert_eq!(none.missing, ["tls.crt", "tls.key"]);
    }

    #[test]
    fn an_opaque_copy_requires_nothing() {
        assert_eq!(
            copy_type("kubernetes.io/tls", Some(OPAQUE), &as_is(&["ca.crt"])),
            Ok(OPAQUE)
        );
        assert_eq!(copy_type(OPAQUE, None, &as_is(&[])), Ok(OPAQUE));
        assert_eq!(
            copy_type("example.com/custom", None, &as_is(&[])),
            Ok("example.com/custom")
        );
    }

    #[test]
    fn each_type_the_api_server_checks_names_its_keys() {
        for (type_, keys) in [
            ("kubernetes.io/dockerconfigjson", &[".dockerconfigjson"][..]),
            ("kubernetes.io/dockercfg", &[".dockercfg"]),
            ("kubernetes.io/ssh-auth", &["ssh-privatekey"]),
        ] {
            assert_eq!(copy_type(type_, None, &as_is(keys)), Ok(type_));
            let broken = copy_type(type_, None, &as_is(&["other"])).unwrap_err();
            assert_eq!(broken.missing, keys);
        }
    }

    #[test]
    fn basic_auth_needs_a_username_or_a_password() {
        let basic = BASIC_AUTH;
        assert_eq!(copy_type(basic, None, &as_is(&["username"])), Ok(basic));
        assert_eq!(copy_type(basic, None, &as_is(&["password"])), Ok(basic));
        let broken = copy_type(basic, None, &as_is(&["token"])).unwrap_err();
        assert_eq!(broken.missing, ["username", "password"]);
        assert!(broken.label_path_message().contains("username or password"));
    }

    #[test]
    fn a_required_key_renamed_away_or_renamed_onto_breaks_the_type() {
        let tls = "kubernetes.io/tls";
        let source = ["tls.crt", "tls.key", "ca.crt", "cert.pem"];
        let away = copy_type(tls, None, &shaped("tls.crt=cert.pem,tls.key", &source[..3]));
        assert_eq!(away.unwrap_err().missing, ["tls.crt"]);
        let onto = copy_type(tls, None, &shaped("cert.pem=tls.crt,tls.key", &source));
        assert_eq!(onto.unwrap_err().missing, ["tls.crt"]);
        let kept = copy_type(
            tls,
            None,
            &shaped("tls.crt,tls.crt=cert.pem,tls.key", &source),
        );
        assert_eq!(kept, Ok(tls));
        let docker = "kubernetes.io/dockerconfigjson";
        let onto = copy_type(docker, None, &shaped("*,cfg=.dockerconfigjson", &["cfg"]));
        assert_eq!(onto.unwrap_err().missing, [".dockerconfigjson"]);
        let ssh = "kubernetes.io/ssh-auth";
        let onto = copy_type(ssh, None, &shaped("empty=ssh-privatekey", &["empty"]));
        assert_eq!(onto.unwrap_err().missing, ["ssh-privatekey"]);
        let basic = BASIC_AUTH;
        let onto = copy_type(basic, None, &shaped("user=username", &["user", "password"]));
        assert_eq!(onto.unwrap_err().missing, ["username", "password"]);
        assert_eq!(
            copy_type(basic, Some(OPAQUE), &shaped("user=username", &["user"])),
            Ok(OPAQUE)
        );
    }

    #[test]
    fn the_label_path_says_how_to_withdraw_the_copies_and_a_cluster_mirror_how_to_fix_it() {
        let broken = copy_type("kubernetes.io/tls", None, &as_is(&["ca.crt"])).unwrap_err();
        let label_path = broken.label_path_message();
        assert!(!label_path.contains("copy them"), "{label_path}");
        for said in [
            "left as they are",
            "remove workshop.io/mirror-to",
            "managed label",
        ] {
            assert!(label_path.contains(said), "{label_path}");
        }
        let cluster_mirror = broken.cluster_mirror_message();
        for said in ["copy them too", "spec.target.type: Opaque"] {
            assert!(cluster_mirror.contains(said), "{cluster_mirror}");
        }
    }
}
