#!/usr/bin/env bash
# Builds every example of the workspace with the features it needs, then runs those that need
# no server (the Redis and HTTP ones are built only: fleet_server and axum_server serve until
# stopped, layer-compare starts Redis servers and runs for minutes). Any example that fails to
# build or exits non-zero fails the script.
set -euo pipefail
cd "$(dirname "$0")/.."

# Core: hot_path, key_pool, several_windows and snapshot_restart need no feature (built as
# their doc comments run them, default features: snapshots need `serde`, a default);
# waiting needs `tokio`, prometheus_metrics `metrics`.
cargo build --locked -p slidelimit --examples
cargo build --locked -p slidelimit --examples --features tokio,metrics
# Tower: axum_server (the crate's dev-dependency on itself turns on `axum`).
cargo build --locked -p slidelimit-tower --examples
# Redis: fleet_server needs `tokio`, layer-compare `cluster` (which includes `tokio`), and
# redis-compare nothing.
cargo build --locked -p slidelimit-redis --examples --features cluster

run() {
    echo "+ cargo run -p slidelimit $*" >&2
    cargo run --locked --quiet -p slidelimit "$@"
}

# The callgrind workload of results/metrics.md; 100,000 calls take about 0.1 s unoptimised.
run --example hot_path -- lock-free hot 100000
run --example key_pool
run --example several_windows

# Twice on one file: the second run restores the first's windows, so its third request for
# the same user within the minute is refused (5 per minute, 3 per run).
state_dir=$(mktemp -d)
trap 'rm -rf "$state_dir"' EXIT
run --example snapshot_restart -- "$state_dir/snapshot.bin"
second=$(run --example snapshot_restart -- "$state_dir/snapshot.bin")
echo "$second"
if ! grep -q "request 3 for alice: refused" <<<"$second"; then
    echo "examples: the second snapshot_restart run did not continue the first's windows" >&2
    exit 1
fi

# The same feature set as the build above, so neither run rebuilds the library.
run --features tokio,metrics --example waiting
run --features tokio,metrics --example prometheus_metrics
