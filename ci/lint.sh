#!/usr/bin/env bash
# Formatting, lints and docs, all with warnings denied.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo fmt --all --check
bash ci/layers.sh
cargo clippy --workspace --all-targets --locked -- -D warnings
cargo clippy -p slidelimit-redis --features tokio --all-targets --locked -- -D warnings
cargo clippy -p slidelimit-redis --features cluster --all-targets --locked -- -D warnings
cargo clippy -p slidelimit --features tokio --all-targets --locked -- -D warnings
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --locked
RUSTDOCFLAGS="-D warnings" cargo doc -p slidelimit --features tokio --no-deps --locked
