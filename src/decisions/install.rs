//! The install's settings: what every copy is decided with, read once from
//! its flags. The reconcilers of every kind and `explain` hold the same
//! one, so that a setting added for copies is added in one place.

use crate::{contract::NeverCarried, decisions::selector::Selector, decisions::targets};

/// What an install decides copies with, whatever their kind.
#[derive(Debug, Clone)]
pub struct Install {
    /// The source selector as configured (`--selector`): every copy is
    /// marked with it.
    pub selector: String,
    /// The same, parsed: a source must match it, a copy never.
    pub source_selector: Selector,
    /// The label keys of the source selector: a copy never carries them.
    pub source_label_keys: Vec<String>,
    /// The keys no copy carries: the built-in list and `--never-carry`'s.
    pub never_carried: NeverCarried,
    /// What a companion's name adds to its source's (`--suffix`).
    pub suffix: String,
    /// Names never mirrored into other namespaces: those Kubernetes
    /// publishes into every namespace and `--reserved-names`.
    pub reserved_names: Vec<String>,
}

impl Install {
    /// The settings of an install whose source selector is `selector`
    /// (parsed as `source_selector`), from its other flags as given.
    pub fn new(
        selector: String,
        source_selector: Selector,
        suffix: String,
        never_carry: &[String],
        reserved_names: &[String],
    ) -> Install {
        Install {
            selector,
            source_label_keys: source_selector.keys(),
            source_selector,
            never_carried: NeverCarried::new(never_carry),
            suffix,
            reserved_names: targets::reserved_names(reserved_names),
        }
    }
}
