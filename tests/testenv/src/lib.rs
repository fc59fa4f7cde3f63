//! A real Kubernetes control plane (etcd, kube-apiserver,
//! kube-controller-manager) on loopback, for integration tests, the demo
//! cluster and the benchmark; and, as a [`Cluster`], with a kubelet node
//! beside it, where the project's Deployment runs as real pods.
//!
//! ```no_run
//! # async fn example() -> anyhow::Result<()> {
//! let control_plane = testenv::ControlPlane::shared();
//! let client = control_plane.client().await;
//! let namespace = testenv::fresh_namespace(&client, "my-test").await?;
//! # Ok(()) }
//! ```
#![forbid(unsafe_code)]

mod binaries;
mod certs;
mod cluster;
mod control_plane;
mod fault_proxy;
mod kubeconfig;
mod logs;
mod node;
mod node_cleanup;
mod node_network;
mod objects;
mod ports;
mod process;
mod state;
mod wait;

pub use binaries::{bin_dir, bin_dir_for, compat_version, kube_version};
pub use cluster::{Cluster, ClusterOptions};
pub use control_plane::{ControlPlane, LazyControlPlane, Options};
pub use fault_proxy::FaultProxy;
pub use node::{NODE_NAME, NODE_TOOLS_IMAGE};
pub use objects::{fresh_namespace, mint_token};
pub use ports::free_port;
pub use process::{ChildProcess, Signal, process_alive, spawn_child};
pub use wait::wait_for;
