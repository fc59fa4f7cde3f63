#!/usr/bin/env python3
"""Writes the CycloneDX 1.5 SBOM (JSON) of the controller's binary on stdout.

It lists the crates the release binary links, and only those: the crates
reached from the package by normal dependencies, for the target it is built
for, with the features that build resolves, as `cargo tree -e
normal,no-proc-macro` reports them. Not listed: dev-dependencies, build
dependencies (build scripts run on the build machine), procedural macros
(they run in the compiler) and crates for other platforms. Each crate has
its version, its package URL, the SHA-256 of its .crate from Cargo.lock, its
licence and its repository; `dependencies` is the graph between them.

    hack/sbom.py [--target TRIPLE]   (default: the host, as `rustc -vV` says)

    SOURCE_DATE_EPOCH   the SBOM's timestamp, in seconds (default: now)
    CARGO               the cargo to run (default: cargo)

Standard library only: it needs python3 and nothing to build.
"""

import argparse
import datetime
import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "configmap-mirror"
CRATES_IO = "registry+https://github.com/rust-lang/crates.io-index"

# One line of `cargo tree --prefix depth --format '{p}|{l}|{r}'`: the depth,
# then "name vVERSION", then " (path)" for a local package, " (*)" for one
# already shown; licence and repository may be empty.
TREE_LINE = re.compile(
    r"^(?P<depth>\d+)(?P<name>\S+) v(?P<version>\S+)(?P<rest>[^|]*)\|(?P<license>[^|]*)\|(?P<repository>.*)$"
)


def die(message):
    print(f"sbom: ERROR: {message}", file=sys.stderr)
    sys.exit(1)


def run(*args):
    try:
        done = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, check=False)
    except OSError as error:
        die(f"cannot run {args[0]}: {error}")
    if done.returncode != 0:
        die(f"{' '.join(args)} failed:\n{done.stderr}")
    return done.stdout


def host_target(rustc):
    for line in run(rustc, "-vV").splitlines():
        if line.startswith("host: "):
            return line.removeprefix("host: ")
    die("rustc -vV names no host")


def lockfile_checksums():
    """(name, version) -> checksum of every crates.io package in Cargo.lock.

    The lockfile is cargo's own output, one key per line: read line by line,
    so that no TOML library is needed."""
    checksums, package = {}, None
    for line in (ROOT / "Cargo.lock").read_text().splitlines():
        if line == "[[package]]":
            package = {}
        elif package is not None and " = " in line and not line.startswith(" "):
            key, value = line.split(" = ", 1)
            package[key] = value.strip('"')
            if {"name", "version", "source", "checksum"} <= package.keys() and package["source"] == CRATES_IO:
                checksums[(package["name"], package["version"])] = package["checksum"]
    return checksums


def crate_graph(cargo, target):
    """The crates the package links, and the edges between them, from cargo."""
    tree = run(
        cargo, "tree", "--locked", "--package", PACKAGE, "--target", target,
        "--edges", "normal,no-proc-macro", "--prefix", "depth",
        "--format", "{p}|{l}|{r}",
    )
    crates, edges, path = {}, set(), []
    for line in tree.splitlines():
        if not line.strip():
            continue
        match = TREE_LINE.match(line)
        if not match:
            die(f"unexpected line from cargo tree: {line!r}")
        depth = int(match["depth"])
        key = (match["name"], match["version"])
        del path[depth:]
        if path:
            edges.add((path[-1], key))
        path.append(key)
        crates.setdefault(key, {
            "local": "(/" in match["rest"],
            "license": match["license"].strip(),
            "repository": match["repository"].strip(),
        })
    return crates, edges


def spdx_expression(license_field):
    # Cargo's deprecated "MIT/Apache-2.0" means "MIT OR Apache-2.0".
    return re.sub(r"\s*/\s*", " OR ", license_field)


def purl(name, version):
    return f"pkg:cargo/{name}@{version}"


def component(name, version, info, checksums):
    entry = {
        "type": "library",
        "bom-ref": purl(name, version),
        "name": name,
        "version": version,
        "purl": purl(name, version),
    }
    checksum = checksums.get((name, version))
    if checksum is None:
        die(f"{name} {version} is linked but has no crates.io checksum in Cargo.lock")
    entry["hashes"] = [{"alg": "SHA-256", "content": checksum}]
    if info["license"]:
        entry["licenses"] = [{"expression": spdx_expression(info["license"])}]
    if info["repository"]:
        entry["externalReferences"] = [{"type": "vcs", "url": info["repository"]}]
    return entry


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", help="target triple (default: the host)")
    target = parser.parse_args().target
    cargo = os.environ.get("CARGO") or "cargo"
    target = target or host_target("rustc")

    crates, edges = crate_graph(cargo, target)
    roots = [key for key, info in crates.items() if key[0] == PACKAGE and info["local"]]
    if len(roots) != 1:
        die(f"cargo tree shows {len(roots)} packages named {PACKAGE}")
    root = roots[0]
    checksums = lockfile_checksums()

    def ref(key):
        return f"{PACKAGE}@{root[1]}" if key == root else purl(*key)

    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    when = datetime.datetime.fromtimestamp(int(epoch), datetime.timezone.utc) if epoch \
        else datetime.datetime.now(datetime.timezone.utc)
    root_info = crates[root]
    metadata_component = {
        "type": "application",
        "bom-ref": ref(root),
        "name": PACKAGE,
        "version": root[1],
    }
    if root_info["license"]:
        metadata_component["licenses"] = [{"expression": spdx_expression(root_info["license"])}]
    dependencies = {}
    for parent, child in edges:
        dependencies.setdefault(parent, set()).add(child)
    bom = {
        "$schema": "http://cyclonedx.org/schema/bom-1.5.schema.json",
        "bomFormat": "CycloneDX",
        "specVersion": "1.5",
        "version": 1,
        "metadata": {
            "timestamp": when.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "tools": {"components": [{
                "type": "application",
                "name": "hack/sbom.py",
                "description": "the crates configmap-mirror links, from cargo tree -e normal,no-proc-macro",
            }, {
                "type": "application",
                "name": "cargo",
                "version": run(cargo, "--version").split()[1],
            }]},
            "component": metadata_component,
            "properties": [{"name": "cargo:target", "value": target}],
        },
        "components": [
            component(name, version, info, checksums)
            for (name, version), info in sorted(crates.items())
            if (name, version) != root
        ],
        "dependencies": [
            {"ref": ref(key), "dependsOn": sorted(ref(child) for child in dependencies.get(key, ()))}
            for key in sorted(crates)
        ],
    }
    json.dump(bom, sys.stdout, indent=2)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
