#!/usr/bin/env bash
# Packaging: every published crate packages, and builds from its package alone
# (`cargo package --workspace` verifies each against the others' packages, not the
# workspace's files); each package carries both licence files and the files it reads at
# build time; no locked dependency declares a rust-version above the workspace's.
set -euo pipefail
cd "$(dirname "$0")/.."

# The licence files at the root are the ones every package ships.
for dir in crates/* benches loom-tests; do
    for licence in LICENSE-MIT LICENSE-APACHE; do
        cmp -s "$licence" "$dir/$licence" || {
            echo "package: $dir/$licence differs from the root's (copy it: cp $licence $dir/)" >&2
            exit 1
        }
    done
done

# The published crates; `cargo package --workspace` would take the unpublished ones too
# (`publish = false`), whose packages cannot resolve each other.
published=(-p slidelimit -p slidelimit-mutex -p slidelimit-per-key-lock -p slidelimit-rwlock
    -p slidelimit-tower -p slidelimit-redis)
# `cargo package` verifies each crate against the others' packages through a temporary
# registry, whose crates cargo unpacks into its shared cache under a name and version that do
# not change from commit to commit; a directory already unpacked there is reused as it is. On a
# machine that packaged an earlier commit, the verification would then build against that
# commit's sources: drop those copies first.
cargo_home=${CARGO_HOME:-$HOME/.cargo}
rm -rf "$cargo_home"/registry/src/-*/slidelimit-*
cargo package "${published[@]}" --locked

# Files a package must carry: its README and licences, and the Redis crate's Lua scripts
# (compiled in with include_str!, so a missing one already fails the build above; listed
# here so the failure names it).
for crate in slidelimit slidelimit-mutex slidelimit-per-key-lock slidelimit-rwlock \
    slidelimit-tower slidelimit-redis; do
    listing=$(cargo package --list --locked -p "$crate")
    for file in README.md LICENSE-MIT LICENSE-APACHE Cargo.toml; do
        grep -qx "$file" <<<"$listing" || { echo "package: $crate lacks $file" >&2; exit 1; }
    done
done
listing=$(cargo package --list --locked -p slidelimit-redis)
for script in src/scripts/exact.lua src/scripts/buckets.lua; do
    grep -qx "$script" <<<"$listing" || { echo "package: slidelimit-redis lacks $script" >&2; exit 1; }
done

python3 ci/msrv.py
