//! A seeded random walk over a ClusterMirror's status: namespaces labelled
//! into and out of its selection, its source created, edited and deleted,
//! its selector, copies' name and suspend changed, tenants taking the
//! copies' names. After each burst of steps, once the controller has
//! settled, the status it wrote is the one `explain` computes from the
//! cluster: the same counts, the same namespaces failed, the same Ready
//! reason.
//!
//! The controller has settled when its status is of the current
//! generation, did not change while explain read the cluster, and explain
//! finds nothing left for it to do (no copy missing, out of date or
//! unwanted, unless suspended). The status and explain agreeing is waited
//! for, with PATIENCE as the bound; a walk that never gets there fails
//! with both printed. The seed is printed; `CMIR_WALK_SEED=<seed>` walks
//! the same steps again (their timing, which the controller sees, differs).

use std::time::{SystemTime, UNIX_EPOCH};

use super::*;
use crate::explain::{described, explain};
use k8s_openapi::api::core::v1::ConfigMap;

const STEPS: usize = 50;
const NAMESPACES: usize = 4;
/// The names the copies take in turn.
const TARGET_NAMES: [&str; 2] = ["app", "app-two"];
/// At most this many objects of tenants, so that most namespaces can
/// still receive a copy.
const TENANT_OBJECTS: usize = 3;
const SOURCE: &str = "src";
const NAME: &str = "walk";

/// splitmix64: reproducible from its seed, and needs no crate.
struct Dice(u64);

impl Dice {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n`.
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
}

fn seed() -> u64 {
    match std::env::var("CMIR_WALK_SEED") {
        Ok(seed) => seed.parse().expect("CMIR_WALK_SEED is a number"),
        Err(_) => SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|since| since.as_nanos() as u64)
            .unwrap_or_default(),
    }
}

/// Which namespaces the spec's selector asks for.
#[derive(Debug, Clone, Copy)]
enum Selector {
    EnvProd,
    TierA,
    Every,
}

impl Selector {
    /// A merge patch of `spec.target.namespaceSelector` to this one.
    fn patch(self) -> Value {
        match self {
            Selector::EnvProd => json!({"matchLabels": {"env": "prod", "tier": null}}),
            Selector::TierA => json!({"matchLabels": {"env": null, "tier": "a"}}),
            Selector::Every => json!({"matchLabels": null}),
        }
    }
}

#[derive(Debug)]
enum Step {
    Label {
        namespace: usize,
        key: &'static str,
        value: Option<&'static str>,
    },
    EditSource(usize),
    DeleteSource,
    CreateSource(usize),
    Select(Selector),
    TargetName(usize),
    Suspend(bool),
    TakeName {
        namespace: usize,
        name: usize,
    },
}

/// What the walk has made so far, to pick steps that change something.
struct Walk {
    dice: Dice,
    /// Per namespace: whether it has `env=prod`, and `tier=a`.
    labels: Vec<[bool; 2]>,
    source_present: bool,
    suspended: bool,
    tenant_objects: usize,
    version: usize,
}

impl Walk {
    fn step(&mut self) -> Step {
        let dice = &mut self.dice;
        match dice.below(100) {
            0..35 => {
                let namespace = dice.below(NAMESPACES);
                let (which, key, value) = match dice.below(2) {
                    0 => (0, "env", "prod"),
                    _ => (1, "tier", "a"),
                };
                let labelled = &mut self.labels[namespace][which];
                *labelled = !*labelled;
                Step::Label {
                    namespace,
                    key,
                    value: labelled.then_some(value),
                }
            }
            35..55 => {
                self.version += 1;
                match (self.source_present, dice.chance(30)) {
                    (false, _) => Step::CreateSource(self.version),
                    (true, true) => Step::DeleteSource,
                    (true, false) => Step::EditSource(self.version),
                }
            }
            55..67 => Step::Select(match dice.below(3) {
                0 => Selector::EnvProd,
                1 => Selector::TierA,
                _ => Selector::Every,
            }),
            67..77 => Step::TargetName(dice.below(TARGET_NAMES.len())),
            77..87 => Step::Suspend(!self.suspended),
            _ if self.tenant_objects < TENANT_OBJECTS => Step::TakeName {
                namespace: dice.below(NAMESPACES),
                name: dice.below(TARGET_NAMES.len()),
            },
            _ => Step::Suspend(!self.suspended),
        }
    }

    /// Takes `step` in the cluster; says what it did.
    async fn take(
        &mut self,
        step: &Step,
        world: &World<ConfigMap>,
        namespaces: &[String],
    ) -> String {
        match *step {
            Step::Label {
                namespace,
                key,
                value,
            } => {
                world
                    .label_namespace(&namespaces[namespace], key, value)
                    .await
            }
            Step::EditSource(version) => {
                let version = version.to_string();
                world
                    .objects()
                    .set_data(SOURCE, &[("v", Some(&version))])
                    .await;
            }
            Step::DeleteSource => {
                world.objects().delete(SOURCE).await;
                self.source_present = false;
            }
            Step::CreateSource(version) => {
                let source = ConfigMap::with_data(SOURCE, &[("v", &version.to_string())], false);
                world.objects().create(&source).await;
                self.source_present = true;
            }
            Step::Select(selector) => {
                let patch = json!({"target": {"namespaceSelector": selector.patch()}});
                patch_spec(world, NAME, patch).await;
            }
            Step::TargetName(name) => {
                patch_spec(world, NAME, json!({"target": {"name": TARGET_NAMES[name]}})).await;
            }
            Step::Suspend(suspend) => {
                patch_spec(world, NAME, json!({"suspend": suspend})).await;
                self.suspended = suspend;
            }
            Step::TakeName { namespace, name } => {
                let namespace = &namespaces[namespace];
                let mut theirs =
                    ConfigMap::with_data(TARGET_NAMES[name], &[("k", "theirs")], false);
                theirs.metadata.namespace = Some(namespace.clone());
                match world
                    .api(namespace)
                    .create(&PostParams::default(), &theirs)
                    .await
                {
                    Ok(_) => self.tenant_objects += 1,
                    Err(kube::Error::Api(status)) if status.is_already_exists() => {
                        return format!("{step:?}: the name is held already, nothing done");
                    }
                    Err(error) => panic!("a tenant's object: {error}"),
                }
            }
        }
        format!("{step:?}")
    }
}

#[tokio::test]
async fn the_status_is_what_explain_computes_after_a_random_walk() {
    let seed = seed();
    println!("the walk's seed: CMIR_WALK_SEED={seed}");
    let world = super::world::<ConfigMap>("cmir-walk").await;
    let mut walk = Walk {
        dice: Dice(seed),
        labels: Vec::new(),
        source_present: true,
        suspended: false,
        tenant_objects: 0,
        version: 0,
    };
    let mut namespaces = Vec::new();
    for n in 0..NAMESPACES {
        let labelled = [walk.dice.chance(50), walk.dice.chance(50)];
        let env = labelled[0].then_some(("env", "prod"));
        let tier = labelled[1].then_some(("tier", "a"));
        let labels: Vec<(&str, &str)> = env.into_iter().chain(tier).collect();
        namespaces.push(world.namespace(&format!("n{n}"), false, &labels).await);
        walk.labels.push(labelled);
    }
    let source = ConfigMap::with_data(SOURCE, &[("v", "0")], false);
    world.objects().create(&source).await;
    let spec = json!({
        "source": {"kind": "ConfigMap", "namespace": world.prefix, "name": SOURCE},
        "target": {
            "name": TARGET_NAMES[0],
            "namespaceSelector": {"matchLabels": {"env": "prod"}},
            "namespaces": [format!("{}-*", world.prefix)],
        },
    });
    create_with(&world, NAME, spec).await;
    let mut steps = vec![format!("seed {seed}; namespaces {namespaces:?}")];
    settled(&world, &steps).await;
    for _ in 0..STEPS {
        let step = walk.step();
        let taken = walk.take(&step, &world, &namespaces).await;
        println!("step: {taken}");
        steps.push(taken);
        if walk.dice.chance(40) {
            settled(&world, &steps).await;
        }
    }
    settled(&world, &steps).await;
    clean_up(world, &[NAME]).await;
}

/// What explain and the status must agree on.
#[derive(Debug, PartialEq)]
struct Counted {
    selected: Value,
    synced: Value,
    failed: Value,
    failures: Vec<(Value, Value)>,
    ready: Value,
}

fn counted_in(status: &Value) -> Counted {
    let failures = status["failures"].as_array().cloned().unwrap_or_default();
    let ready = status["conditions"]
        .as_array()
        .and_then(|all| all.iter().find(|c| c["type"] == "Ready"))
        .map(|ready| ready["reason"].clone());
    Counted {
        selected: status["selected"].clone(),
        synced: status["synced"].clone(),
        failed: status["failed"].clone(),
        failures: failures
            .iter()
            .map(|f| (f["namespace"].clone(), f["reason"].clone()))
            .collect(),
        ready: ready.unwrap_or(Value::Null),
    }
}

/// The copies' rows on which the controller has work left: all but those
/// in place, held by someone else, blocked or protected, unless suspended.
fn work_left(explained: &Value, suspended: bool) -> Vec<Value> {
    const DONE: [&str; 4] = ["in-sync", "name-taken", "not-copied", "protected-namespace"];
    let rows = explained["rows"].as_array().cloned().unwrap_or_default();
    rows.into_iter()
        .filter(|row| row["what"] == "clustermirror-copy")
        .filter(|row| !suspended && !DONE.iter().any(|done| row["verdict"] == *done))
        .collect()
}

/// Waits until the controller has settled and its status is what explain
/// computes; fails with both, the steps and the controller's log if that
/// does not come within PATIENCE.
async fn settled(world: &World<ConfigMap>, steps: &[String]) {
    let api = cluster_mirrors(&world.scene.client);
    let sources = format!("--cluster-mirror-source-namespaces={}", world.prefix);
    let subject = format!("clustermirror/{NAME}");
    let kubeconfig = world.scene.control_plane.kubeconfig_path();
    let last = std::sync::Mutex::new(String::from("nothing read yet"));
    let agreed = testenv::wait_for("the status to be what explain computes", PATIENCE, || async {
        let object = api.get_opt(NAME).await.ok()??;
        let run = explain(kubeconfig, &[&subject, "-o", "json", &sources]);
        let again = api.get_opt(NAME).await.ok()??;
        let Ok(explained) = serde_json::from_str::<Value>(&run.stdout) else {
            *last.lock().unwrap() = format!("explain printed no JSON: {}", run.stderr);
            return None;
        };
        let status = &object.data["status"];
        let suspended = object.data["spec"]["suspend"] == true;
        let (written, computed) = (counted_in(status), counted_in(&explained["clusterMirror"]["status"]));
        let left = work_left(&explained, suspended);
        let current = status["observedGeneration"].as_i64() == object.metadata.generation;
        let still = again.resource_version() == object.resource_version();
        *last.lock().unwrap() = format!(
            "status of generation {:?} (now {:?}; changed while explain read: {}):\n  {written:?}\nexplain:\n  {computed:?}\nwork left: {left:?}\nrows:\n{}",
            status["observedGeneration"],
            object.metadata.generation,
            !still,
            described(&explained),
        );
        (current && still && left.is_empty() && written == computed).then_some(written)
    })
    .await;
    if let Ok(agreed) = &agreed {
        println!("settled: {agreed:?}");
    }
    if let Err(error) = agreed {
        let log = world.controller().log_text();
        let tail: Vec<&str> = log.lines().rev().take(80).collect();
        panic!(
            "{error:#}\nsteps:\n  {}\nlast seen: {}\ncontroller log (last lines):\n{}",
            steps.join("\n  "),
            last.lock().unwrap(),
            tail.into_iter().rev().collect::<Vec<_>>().join("\n"),
        );
    }
}
