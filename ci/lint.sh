#!/usr/bin/env bash
# Formatting, lints and docs, all with warnings denied.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo fmt --all --check
# Every relative link and anchor of the README, the guide and the crates' READMEs resolves.
python3 ci/check-links.py
bash ci/layers.sh

# The command line must not build the benchmark harness: its feature `bench` adds the runner
# (and with it plotting, histograms, rayon and a counting allocator); the other commands do
# without.
forbidden='slidelimit-bench|plotters|hdrhistogram|criterion|rayon|stats_alloc'
if cargo tree -p slidelimit-cli -e normal --locked --prefix none | grep -E "^($forbidden) "; then
    echo "lint: slidelimit-cli depends on the crates above; only its feature 'bench' may" >&2
    exit 1
fi

cargo clippy --workspace --all-targets --locked -- -D warnings
cargo clippy -p slidelimit-redis --features tokio --all-targets --locked -- -D warnings
cargo clippy -p slidelimit-redis --features cluster --all-targets --locked -- -D warnings
cargo clippy -p slidelimit-cli --features bench --all-targets --locked -- -D warnings
cargo clippy -p slidelimit-trace --all-features --all-targets --locked -- -D warnings
cargo clippy -p slidelimit --features tokio --all-targets --locked -- -D warnings
# Feature `fast-barrier`: seize's process-wide barrier and its batch of 128 (keyed/map.rs).
cargo clippy -p slidelimit --features fast-barrier --all-targets --locked -- -D warnings
# Feature `metrics` of every crate that has it (the lock crates forward it to the core; the
# Redis crate's with `tokio`, for the async limiter's counts).
cargo clippy -p slidelimit -p slidelimit-mutex -p slidelimit-per-key-lock -p slidelimit-rwlock \
    -p slidelimit-tower --features metrics --all-targets --locked -- -D warnings
cargo clippy -p slidelimit-redis --features tokio,metrics --all-targets --locked -- -D warnings
cargo clippy -p slidelimit-redis --features tls --all-targets --locked -- -D warnings
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --locked
RUSTDOCFLAGS="-D warnings" cargo doc -p slidelimit --features tokio --no-deps --locked
RUSTDOCFLAGS="-D warnings" cargo doc -p slidelimit-trace --all-features --no-deps --locked
RUSTDOCFLAGS="-D warnings" cargo doc -p slidelimit-redis --features tls --no-deps --locked
RUSTDOCFLAGS="-D warnings" cargo doc -p slidelimit -p slidelimit-tower -p slidelimit-redis \
    --features metrics --no-deps --locked
