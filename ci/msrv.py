#!/usr/bin/env python3
"""The workspace's rust-version against its dependencies.

Walks the locked dependency graph of every published crate (normal and build edges, every
feature on, for this machine's target) and fails when a dependency declares a rust-version
above the workspace's, naming it and the crate that pulls it in. Dev-dependencies are left
out: they build the tests and examples, which CI builds with the current toolchain.
"""
import json
import subprocess
import sys


def version_tuple(text):
    return tuple(int(part) for part in text.split("."))


def main():
    host = subprocess.run(["rustc", "-vV"], capture_output=True, text=True, check=True).stdout
    target = next(line.split(": ")[1] for line in host.splitlines() if line.startswith("host: "))
    metadata = json.loads(
        subprocess.run(
            ["cargo", "metadata", "--locked", "--format-version", "1", "--all-features",
             "--filter-platform", target],
            capture_output=True, text=True, check=True,
        ).stdout
    )
    packages = {package["id"]: package for package in metadata["packages"]}
    members = [packages[member] for member in metadata["workspace_members"]]
    floor = max(version_tuple(member["rust_version"]) for member in members)
    published = [m["id"] for m in members if m.get("publish") is None or m["publish"] != []]
    nodes = {node["id"]: node for node in metadata["resolve"]["nodes"]}

    pulled_by = {}
    stack = list(published)
    while stack:
        current = stack.pop()
        for dep in nodes[current]["deps"]:
            kinds = {kind["kind"] for kind in dep["dep_kinds"]}
            if not kinds & {None, "build"} or dep["pkg"] in pulled_by:
                continue
            pulled_by[dep["pkg"]] = current
            stack.append(dep["pkg"])

    too_new = []
    for package_id, parent in sorted(pulled_by.items()):
        declared = packages[package_id].get("rust_version")
        if declared and version_tuple(declared) > floor:
            too_new.append(f"{packages[package_id]['name']} {packages[package_id]['version']} "
                           f"declares {declared} (through {packages[parent]['name']})")
    floor_text = ".".join(str(part) for part in floor)
    if too_new:
        print(f"msrv: dependencies above the workspace's rust-version {floor_text}:", file=sys.stderr)
        for line in too_new:
            print(f"  {line}", file=sys.stderr)
        return 1
    print(f"msrv: {len(pulled_by)} dependencies of {len(published)} published crates "
          f"declare at most rust-version {floor_text} (or none)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
