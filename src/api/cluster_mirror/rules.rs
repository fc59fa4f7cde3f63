//! The CEL rules the API server checks a ClusterMirror against before it
//! is stored (`x-kubernetes-validations`), added to the derived schema: a
//! mistake is refused at `kubectl apply`, with a message saying what to
//! change, instead of becoming a failure in a status later.
//!
//! The refused copy keys are written from [`NEVER_CARRIED`], so the CRD
//! and the controller can never disagree on them.

use schemars::Schema;
use serde_json::{Value, json};

use crate::contract::NEVER_CARRIED;

/// The longest ClusterMirror name: it becomes a label value on its copies
/// (`workshop.io/cluster-mirror`).
pub const MAX_NAME_LEN: usize = 63;
/// The most entries of `target.namespaces`, as for `workshop.io/mirror-to`.
pub const MAX_NAMESPACE_PATTERNS: u32 = 100;
/// The most labels, and the most annotations, a ClusterMirror sets on its
/// copies: it bounds what the API server's CEL cost estimate assumes.
pub const MAX_COPY_METADATA: u32 = 64;

/// A namespace name (a DNS label).
pub const NAMESPACE_PATTERN: &str = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$";
/// An object name (a DNS subdomain): labels joined by dots.
pub const OBJECT_NAME_PATTERN: &str =
    "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$";
/// A glob of the `workshop.io/mirror-to` syntax: lowercase letters,
/// digits, `-` and `*`, with at least one `*`.
pub const GLOB_PATTERN: &str = "^[-a-z0-9*]*[*][-a-z0-9*]*$";

/// The root's rule: `metadata.name` is short enough to be a label value.
pub fn name_rule() -> kube::core::Rule {
    kube::core::Rule::new(format!("self.metadata.name.size() <= {MAX_NAME_LEN}")).message(
        format!(
            "metadata.name must be at most {MAX_NAME_LEN} characters: it is a label value on every copy"
        )
        .as_str(),
    )
}

/// `target.labels` and `target.annotations`: none of the controller's own
/// keys, nor of those other tools claim, prune or trust objects by.
pub fn copy_metadata_keys(schema: &mut Schema) {
    schema.insert("maxProperties".into(), json!(MAX_COPY_METADATA));
    let refused = refused_key_expression("k");
    add_rule(
        schema,
        json!({
            "rule": format!("self.all(k, !({refused}))"),
            "message": "may not set the controller's own keys (workshop.io/*, \
                        app.kubernetes.io/managed-by) nor those other tools claim or trust \
                        objects by (Helm's, Argo CD's, Flux's...: see the never-carried keys \
                        in the docs)",
            "reason": "FieldValueForbidden",
        }),
    );
}

/// `target.namespaces`: each entry a namespace name or a glob.
pub fn namespace_patterns(schema: &mut Schema) {
    schema.insert("maxItems".into(), json!(MAX_NAMESPACE_PATTERNS));
    if let Some(items) = schema.get_mut("items").and_then(Value::as_object_mut) {
        items.insert("minLength".into(), json!(1));
        items.insert("maxLength".into(), json!(63));
    }
    add_rule(
        schema,
        json!({
            "rule": format!(
                "self.all(n, n.matches('{NAMESPACE_PATTERN}') || n.matches('{GLOB_PATTERN}'))"
            ),
            "message": "each entry must be a namespace name or a glob \
                        (lowercase letters, digits, '-' and '*')",
        }),
    );
}

/// `target.namespaceSelector`: each `matchExpressions` entry has values
/// exactly when its operator needs them, as the API server checks a
/// Deployment's selector but not a custom resource's.
pub fn selector_requirements(schema: &mut Schema) {
    let Some(requirement) = schema
        .get_mut("properties")
        .and_then(|properties| properties.get_mut("matchExpressions"))
        .and_then(|expressions| expressions.get_mut("items"))
    else {
        return;
    };
    let Ok(requirement) = <&mut Schema>::try_from(requirement) else {
        return;
    };
    add_rule(
        requirement,
        json!({
            "rule": "self.operator in ['In', 'NotIn', 'Exists', 'DoesNotExist']",
            "message": "operator must be In, NotIn, Exists or DoesNotExist",
            "fieldPath": ".operator",
        }),
    );
    add_rule(
        requirement,
        json!({
            "rule": "!(self.operator in ['In', 'NotIn']) || (has(self.values) && size(self.values) > 0)",
            "message": "values must be given for the operators In and NotIn",
            "fieldPath": ".values",
        }),
    );
    add_rule(
        requirement,
        json!({
            "rule": "!(self.operator in ['Exists', 'DoesNotExist']) || !has(self.values) || size(self.values) == 0",
            "message": "values must be empty for the operators Exists and DoesNotExist",
            "fieldPath": ".values",
        }),
    );
}

/// A namespace name, as a string's schema.
pub fn namespace_name(schema: &mut Schema) {
    schema.insert("maxLength".into(), json!(63));
    schema.insert("pattern".into(), json!(NAMESPACE_PATTERN));
}

/// The longest install class (`spec.className`, `--cluster-mirror-class`).
pub const MAX_CLASS_LEN: usize = 63;

/// `className`: empty, or a DNS subdomain of at most [`MAX_CLASS_LEN`]
/// characters, as `--cluster-mirror-class` takes it. Not nullable: the API
/// server then prunes an explicit `null`, so that it is absent for CEL as it
/// is for the controller (both read it as the empty class); a stored null
/// made `object.spec.?className.orValue('')` null, and the admission policy
/// of the installs without a class did not match that ClusterMirror.
pub fn class_name(schema: &mut Schema) {
    // An `Option`'s schema allows null by its type (`["string", "null"]`),
    // made `nullable` when the CRD is written.
    schema.remove("nullable");
    schema.insert("type".into(), json!("string"));
    schema.insert("maxLength".into(), json!(MAX_CLASS_LEN));
    schema.insert("pattern".into(), json!(format!("^$|{OBJECT_NAME_PATTERN}")));
}

/// An object name, as a string's schema.
pub fn object_name(schema: &mut Schema) {
    schema.insert("maxLength".into(), json!(253));
    schema.insert("pattern".into(), json!(OBJECT_NAME_PATTERN));
}

/// `status.conditions`: a list keyed by type, as Kubernetes' own
/// conditions are, so that a server-side apply merges them by type.
pub fn conditions_by_type(schema: &mut Schema) {
    schema.insert("x-kubernetes-list-type".into(), json!("map"));
    schema.insert("x-kubernetes-list-map-keys".into(), json!(["type"]));
}

/// A CEL expression true when the string `var` is a key of
/// [`NEVER_CARRIED`] (an entry ending in `*` is a prefix).
pub fn refused_key_expression(var: &str) -> String {
    NEVER_CARRIED
        .iter()
        .map(|entry| match entry.strip_suffix('*') {
            Some(prefix) => format!("{var}.startsWith({})", cel_string(prefix)),
            None => format!("{var} == {}", cel_string(entry)),
        })
        .collect::<Vec<_>>()
        .join(" || ")
}

/// `text` as a CEL string literal.
fn cel_string(text: &str) -> String {
    format!("'{}'", text.replace('\\', "\\\\").replace('\'', "\\'"))
}

/// Adds `rule` to the schema's `x-kubernetes-validations`.
pub fn add_rule(schema: &mut Schema, rule: Value) {
    let rules = schema
        .ensure_object()
        .entry("x-kubernetes-validations")
        .or_insert_with(|| json!([]));
    if let Value::Array(rules) = rules {
        rules.push(rule);
    }
}

/// A key a ConfigMap or Secret may hold, as the API server checks it
/// (`IsConfigMapKey`), but for `.` and `..`, which a rule refuses.
pub const KEY_PATTERN: &str = "^[-._a-zA-Z0-9]+$";
/// A key, or a `*` glob of keys.
pub const KEY_OR_GLOB_PATTERN: &str = "^[-._a-zA-Z0-9*]+$";
/// The longest key.
pub const MAX_KEY_LEN: u32 = 253;
/// The most entries of `target.keys`, and of `target.excludeKeys`, as of
/// `workshop.io/mirror-keys`: it bounds what the CEL cost estimate assumes.
pub const MAX_KEY_ENTRIES: u32 = 100;

/// A CEL expression true when the entries `a` and `b` of `target.keys`
/// copy into one name (`as`, else `key`). `as` is a word CEL reserves, so
/// a rule names the field `__as__`, as the API server escapes it.
fn same_copied_name(a: &str, b: &str) -> String {
    format!(
        "(has({a}.__as__) ? (has({b}.__as__) ? {a}.__as__ == {b}.__as__ : {a}.__as__ == {b}.key) \
         : (has({b}.__as__) ? {a}.key == {b}.__as__ : {a}.key == {b}.key))"
    )
}

/// `target.keys`: no two exact entries copy into one name.
pub fn copied_keys(schema: &mut Schema) {
    schema.insert("maxItems".into(), json!(MAX_KEY_ENTRIES));
    let same = same_copied_name("e", "f");
    add_rule(
        schema,
        json!({
            "rule": format!(
                "self.all(e, e.key.contains('*') || self.exists_one(f, !f.key.contains('*') \
                 && {same}))"
            ),
            "message": "two entries copy into one key name (two renamed to one name, a rename \
                        onto a key another entry keeps, or one key listed twice): each name in \
                        the copies comes from one entry",
        }),
    );
}

/// An entry of `target.keys`: `key` a key or a glob, `as` a key, and only
/// with an exact key.
pub fn copied_key(schema: &mut Schema) {
    if let Some(properties) = schema.get_mut("properties").and_then(Value::as_object_mut) {
        for (field, pattern) in [("key", KEY_OR_GLOB_PATTERN), ("as", KEY_PATTERN)] {
            if let Some(Value::Object(property)) = properties.get_mut(field) {
                property.insert("maxLength".into(), json!(MAX_KEY_LEN));
                property.insert("pattern".into(), json!(pattern));
            }
        }
    }
    add_rule(
        schema,
        json!({
            "rule": "!has(self.__as__) || !self.key.contains('*')",
            "message": "as renames an exact key only, not a glob",
            "fieldPath": ".as",
        }),
    );
    for (field, rule) in [
        ("key", "!(self.key in ['.', '..'])"),
        ("as", "!has(self.__as__) || !(self.__as__ in ['.', '..'])"),
    ] {
        add_rule(
            schema,
            json!({
                "rule": rule,
                "message": "'.' and '..' are not keys",
                "fieldPath": format!(".{field}"),
            }),
        );
    }
}

/// `target.excludeKeys`: keys or globs.
pub fn excluded_keys(schema: &mut Schema) {
    schema.insert("maxItems".into(), json!(MAX_KEY_ENTRIES));
    if let Some(items) = schema.get_mut("items").and_then(Value::as_object_mut) {
        items.insert("maxLength".into(), json!(MAX_KEY_LEN));
        items.insert("pattern".into(), json!(KEY_OR_GLOB_PATTERN));
    }
}

/// `target`: a Secret's keys published as a ConfigMap are named by exact
/// keys only, so that a private key is never published by a pattern.
pub fn configmap_of_exact_keys(schema: &mut Schema) {
    add_rule(
        schema,
        json!({
            "rule": "!has(self.kind) || self.kind != 'ConfigMap' || (has(self.keys) \
                     && size(self.keys) > 0 && self.keys.all(e, !e.key.contains('*')))",
            "message": "kind: ConfigMap publishes only the exact keys keys names (no glob), \
                        so that a private key is never published by a pattern",
            "fieldPath": ".keys",
        }),
    );
}

/// `spec`: `target.kind` only for a Secret source (a ConfigMap is copied
/// as a ConfigMap), `target.type` only for a Secret copy.
pub fn copy_kind_and_type(schema: &mut Schema) {
    add_rule(
        schema,
        json!({
            "rule": "!has(self.target.kind) || self.source.kind == 'Secret'",
            "message": "target.kind is for a Secret source only: a ConfigMap is copied as a \
                        ConfigMap",
            "fieldPath": ".target.kind",
        }),
    );
    add_rule(
        schema,
        json!({
            "rule": "!has(self.target.type) || (self.source.kind == 'Secret' \
                     && (!has(self.target.kind) || self.target.kind == 'Secret'))",
            "message": "target.type is for a Secret copy only",
            "fieldPath": ".target.type",
        }),
    );
}

/// An optional field whose explicit `null` the API server prunes, so that
/// CEL's `has()` and the controller read it alike (see [`class_name`]).
pub fn not_nullable(schema: &mut Schema) {
    schema.remove("nullable");
    if let Some(Value::Array(types)) = schema.get_mut("type") {
        types.retain(|type_| type_ != "null");
        if let [only] = &types[..] {
            let only = only.clone();
            schema.insert("type".into(), only);
        }
    }
    if let Some(Value::Array(values)) = schema.get_mut("enum") {
        values.retain(|value| !value.is_null());
    }
}
