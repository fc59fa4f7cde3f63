//! Which of an install's writers makes a ClusterMirror's copies, from the
//! kinds it mirrors (`--kinds`): the one decision the ClusterMirror loop
//! routes by, whether it reconciles, reports, wakes or waits.
//!
//! Pure.

use crate::api::SourceKind;

/// The kinds an install mirrors: each has a writer of its copies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MirroredKinds {
    pub configmaps: bool,
    pub secrets: bool,
}

impl MirroredKinds {
    /// The kind whose writer reports on the ClusterMirrors whose copies are
    /// of `copies` (None: a kind not known, or a spec that does not read):
    /// a Secret's while Secrets are mirrored; every other one while
    /// ConfigMaps are, as `--kinds` documents; None: no status, no Event,
    /// nothing written.
    pub fn reporter(self, copies: Option<SourceKind>) -> Option<SourceKind> {
        match copies {
            Some(SourceKind::Secret) if self.secrets => Some(SourceKind::Secret),
            _ if self.configmaps => Some(SourceKind::ConfigMap),
            _ => None,
        }
    }

    /// How a request of a `source` read as `copies` is served.
    pub fn route(self, source: SourceKind, copies: SourceKind) -> Route {
        match (source, copies) {
            (SourceKind::ConfigMap, SourceKind::ConfigMap) if self.configmaps => {
                Route::ConfigMapsAsConfigMaps
            }
            (SourceKind::Secret, SourceKind::Secret) if self.secrets => Route::SecretsAsSecrets,
            (SourceKind::Secret, SourceKind::ConfigMap) if self.secrets && self.configmaps => {
                Route::SecretKeysAsConfigMaps
            }
            (SourceKind::Secret, _) if !self.secrets => Route::SecretsDisabled,
            (_, copies) => Route::NotMirrored(copies),
        }
    }
}

/// How a request is served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// A ConfigMap's content, written as ConfigMaps.
    ConfigMapsAsConfigMaps,
    /// A Secret's content, written as Secrets.
    SecretsAsSecrets,
    /// A Secret's chosen keys, published as ConfigMaps.
    SecretKeysAsConfigMaps,
    /// A Secret's, while Secrets are not mirrored: told, nothing written.
    SecretsDisabled,
    /// Copies of a kind this install does not write: reached by no request
    /// the install reports on ([`MirroredKinds::reporter`]).
    NotMirrored(SourceKind),
}

#[cfg(test)]
mod tests {
    use super::*;
    use SourceKind::{ConfigMap, Secret};

    const BOTH: MirroredKinds = MirroredKinds {
        configmaps: true,
        secrets: true,
    };
    const CONFIGMAPS: MirroredKinds = MirroredKinds {
        configmaps: true,
        secrets: false,
    };
    const SECRETS: MirroredKinds = MirroredKinds {
        configmaps: false,
        secrets: true,
    };

    #[test]
    fn each_kind_of_copy_is_reported_by_its_writer_and_the_rest_by_the_configmaps() {
        assert_eq!(BOTH.reporter(Some(Secret)), Some(Secret));
        assert_eq!(BOTH.reporter(Some(ConfigMap)), Some(ConfigMap));
        assert_eq!(
            BOTH.reporter(None),
            Some(ConfigMap),
            "a spec that does not read"
        );
        assert_eq!(
            CONFIGMAPS.reporter(Some(Secret)),
            Some(ConfigMap),
            "told disabled"
        );
        assert_eq!(CONFIGMAPS.reporter(None), Some(ConfigMap));
    }

    #[test]
    fn an_install_of_secrets_alone_reports_on_the_clustermirrors_of_secrets_only() {
        assert_eq!(SECRETS.reporter(Some(Secret)), Some(Secret));
        assert_eq!(SECRETS.reporter(Some(ConfigMap)), None);
        assert_eq!(SECRETS.reporter(None), None);
    }

    #[test]
    fn a_request_is_written_by_the_writer_of_its_copies_kind_from_its_sources_kind() {
        assert_eq!(
            BOTH.route(ConfigMap, ConfigMap),
            Route::ConfigMapsAsConfigMaps
        );
        assert_eq!(BOTH.route(Secret, Secret), Route::SecretsAsSecrets);
        assert_eq!(BOTH.route(Secret, ConfigMap), Route::SecretKeysAsConfigMaps);
        assert_eq!(SECRETS.route(Secret, Secret), Route::SecretsAsSecrets);
    }

    #[test]
    fn a_secret_while_secrets_are_not_mirrored_is_told_disabled() {
        assert_eq!(CONFIGMAPS.route(Secret, Secret), Route::SecretsDisabled);
        assert_eq!(CONFIGMAPS.route(Secret, ConfigMap), Route::SecretsDisabled);
    }

    #[test]
    fn configmap_copies_without_their_writer_are_not_mirrored() {
        assert_eq!(
            SECRETS.route(ConfigMap, ConfigMap),
            Route::NotMirrored(ConfigMap)
        );
        // Publishing needs the ConfigMap writer too.
        assert_eq!(
            SECRETS.route(Secret, ConfigMap),
            Route::NotMirrored(ConfigMap)
        );
    }
}
