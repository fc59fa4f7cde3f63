# Every recipe here is what CI and the README run; nothing is installed by hand.
SHELL := /bin/bash
.DEFAULT_GOAL := help

LOCAL := .local
KUBECONFIG_LOCAL := $(CURDIR)/$(LOCAL)/kubeconfig
BIN_DIR = $(shell bash hack/install-k8s.sh)

.PHONY: help
help: ## List the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-13s %s\n", $$1, $$2}'

.PHONY: prereqs
prereqs: ## Check (as root with apt-get: install) what the machine must provide for make test
	@bash hack/prereqs.sh test

.PHONY: k8s
k8s: ## Build (or find cached) etcd, kube-apiserver, kube-controller-manager and kubectl
	@bash hack/install-k8s.sh >/dev/null

# The other releases the compatibility tests run against.
COMPAT_VERSIONS = $(shell awk '!/^\#/ && NF == 2 {print $$2}' hack/compat-versions)

.PHONY: k8s-compat
k8s-compat: ## Build (or find cached) the other Kubernetes releases the compatibility tests use
	@for version in $(COMPAT_VERSIONS); do \
	  KUBE_VERSION=$$version bash hack/install-k8s.sh >/dev/null || exit 1; \
	done

.PHONY: node
node: k8s ## Build (or find cached) what a local kubelet node runs: kubelet, kube-proxy, kube-scheduler, containerd
	@bash hack/install-node.sh

.PHONY: helm
helm: ## Build (or find cached) helm, the release pinned in hack/helm-version
	@bash hack/install-helm.sh >/dev/null

.PHONY: manifests
manifests: helm ## Render deploy/'s manifests and configmap-mirror.yaml from the Helm chart
	@bash hack/manifests.sh

.PHONY: kstatus
kstatus: ## Build (or find cached) kstatus, how the kstatus library reads an object's status (hack/kstatus), for the suite
	@bash hack/install-kstatus.sh >/dev/null

.PHONY: helm-docs
helm-docs: ## Build (or find cached) helm-docs, the release pinned in hack/helm-docs-version
	@bash hack/install-helm-docs.sh >/dev/null

.PHONY: chart-docs
chart-docs: helm-docs ## Write the chart's README.md from its values.yaml (helm-docs)
	@bash hack/chart-docs.sh

.PHONY: mdbook
mdbook: ## Build (or find cached) mdBook, the release pinned in hack/install-mdbook.sh
	@bash hack/install-mdbook.sh >/dev/null

.PHONY: docs
docs: mdbook ## Build the documentation site from docs/ into target/book (mdBook: table of contents, search)
	"$$(bash hack/install-mdbook.sh)/mdbook" build docs

.PHONY: flags-docs
flags-docs: ## Write docs/operator/flags-reference.md from the binary's own flag definitions
	@bash hack/flags-docs.sh

.PHONY: image
image: ## Build the container image with podman, offline (see hack/image.sh)
	@bash hack/image.sh

.PHONY: dist
dist: helm ## Write the release bundle into dist/VERSION/: chart package, manifest, image (OCI archive), SBOM, SHA256SUMS
	@bash hack/dist.sh

.PHONY: build
build: ## Build the controller
	cargo build --locked

.PHONY: release
release: ## The release build the Dockerfile performs
	cargo build --release --locked

# cargo-deny reads the metadata of every platform's dependencies, which a
# build here never downloads: `cargo fetch` gets them first, or --offline
# fails on a fresh machine.
.PHONY: lint
lint: helm helm-docs ## rustfmt, clippy (warnings are errors), cargo-deny, hadolint, shellcheck, helm lint, the freshness of the rendered manifests and the chart's README, the docs' links, anchors, table of contents and generated flag reference
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets --locked -- -D warnings
	cargo fetch --locked
	"$$(bash hack/install-cargo-deny.sh)/cargo-deny" --offline check licenses bans sources
	bash hack/lint-dockerfile.sh
	bash hack/lint-shell.sh
	bash hack/lint-chart.sh
	python3 hack/lint-docs.py
	bash hack/flags-docs.sh --check

.PHONY: test
test: prereqs k8s k8s-compat node helm kstatus lint docs release ## The whole test suite, against real local control planes (and a kubelet node)
	cargo test --workspace --locked

.PHONY: run
run: build ## Run the controller against the current cluster, or the local one
	@bash hack/run.sh

.PHONY: demo-prereqs
demo-prereqs:
	@bash hack/prereqs.sh demo

.PHONY: demo
demo: demo-prereqs k8s build ## Walk through the controller's behaviour on a local control plane
	@bash hack/demo.sh

.PHONY: demo-in-cluster
demo-in-cluster: k8s node helm ## The same, with the image built here running as pods on a kubelet node (root)
	@bash hack/demo-in-cluster.sh

.PHONY: bench
bench: k8s release ## Measure convergence, healing, memory and CPU (see docs/contributing/benchmarks.md)
	cargo run --release --locked -p mirror-bench -- $(BENCH_ARGS)

.PHONY: bench-sweep
bench-sweep: k8s release ## How cost grows from 1,000 to 100,000 sources and with fan-out to 10,000 namespaces; heals by namespaces present; new namespaces for glob sources; draws the curves (see docs/contributing/benchmarks.md)
	cargo run --release --locked -p mirror-bench -- --sweep $(BENCH_ARGS)

.PHONY: cluster
cluster: k8s $(if $(filter 1,$(NODE)),node) ## Start a local control plane in the background (NODE=1: with a kubelet node)
	@bash hack/cluster.sh up

.PHONY: cluster-down
cluster-down: ## Stop the local control plane and remove its state
	@bash hack/cluster.sh down

.PHONY: clean
clean: cluster-down ## Remove build output and local state
	cargo clean
	rm -rf $(LOCAL) dist
