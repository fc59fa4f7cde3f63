# Every recipe here is what CI and the README run; nothing is installed by hand.
SHELL := /bin/bash
.DEFAULT_GOAL := help

LOCAL := .local
KUBECONFIG_LOCAL := $(CURDIR)/$(LOCAL)/kubeconfig
BIN_DIR = $(shell bash hack/install-k8s.sh)

.PHONY: help
help: ## List the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-13s %s\n", $$1, $$2}'

.PHONY: k8s
k8s: ## Build (or find cached) etcd, kube-apiserver, kube-controller-manager and kubectl
	@bash hack/install-k8s.sh >/dev/null

.PHONY: node
node: k8s ## Build (or find cached) what a local kubelet node runs: kubelet, kube-proxy, kube-scheduler, containerd
	@bash hack/install-node.sh

.PHONY: image
image: ## Build the container image with podman, offline (see hack/image.sh)
	@bash hack/image.sh

.PHONY: build
build: ## Build the controller
	cargo build --locked

.PHONY: release
release: ## The release build the Dockerfile performs
	cargo build --release --locked

.PHONY: lint
lint: ## rustfmt, clippy (warnings are errors) and hadolint
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets --locked -- -D warnings
	bash hack/lint-dockerfile.sh

.PHONY: test
test: k8s node lint release ## The whole test suite, against a real local control plane (and a kubelet node)
	cargo test --workspace --locked

.PHONY: run
run: build ## Run the controller against the current cluster, or the local one
	@bash hack/run.sh

.PHONY: demo
demo: k8s build ## Walk through the controller's behaviour on a local control plane
	@bash hack/demo.sh

.PHONY: demo-in-cluster
demo-in-cluster: k8s node ## The same, with the image built here running as pods on a kubelet node (root)
	@bash hack/demo-in-cluster.sh

.PHONY: bench
bench: k8s release ## Measure convergence, healing, memory and CPU (see BENCHMARKS.md)
	cargo run --release --locked -p mirror-bench -- $(BENCH_ARGS)

.PHONY: cluster
cluster: k8s $(if $(filter 1,$(NODE)),node) ## Start a local control plane in the background (NODE=1: with a kubelet node)
	@bash hack/cluster.sh up

.PHONY: cluster-down
cluster-down: ## Stop the local control plane and remove its state
	@bash hack/cluster.sh down

.PHONY: clean
clean: cluster-down ## Remove build output and local state
	cargo clean
	rm -rf $(LOCAL)
