#!/usr/bin/env bash
# Formatting, lints and docs, all with warnings denied.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo fmt --all --check
cargo clippy --workspace --all-targets --locked -- -D warnings
cargo clippy -p slidelimit-redis --features tokio --all-targets --locked -- -D warnings
cargo clippy -p slidelimit-redis --features cluster --all-targets --locked -- -D warnings
cargo clippy -p slidelimit --features tokio --all-targets --locked -- -D warnings
# Feature `metrics` of every crate that has it (the lock crates forward it to the core; the
# Redis crate's with `tokio`, for the async limiter's counts).
cargo clippy -p slidelimit -p slidelimit-mutex -p slidelimit-per-key-lock -p slidelimit-rwlock \
    -p slidelimit-tower --features metrics --all-targets --locked -- -D warnings
cargo clippy -p slidelimit-redis --features tokio,metrics --all-targets --locked -- -D warnings
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --locked
RUSTDOCFLAGS="-D warnings" cargo doc -p slidelimit --features tokio --no-deps --locked
RUSTDOCFLAGS="-D warnings" cargo doc -p slidelimit -p slidelimit-tower -p slidelimit-redis \
    --features metrics --no-deps --locked
