#!/usr/bin/env bash
# Every test of the workspace: unit, integration, property, stress and doc tests of every
# crate, then the loom models (ci/loom.sh) with their negative controls. The Redis
# backend's tests need redis-server (ci/redis.sh installs it if missing), the tower crate's
# real-proxy test nginx (ci/nginx.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

bash ci/redis.sh
bash ci/nginx.sh

start=$(date +%s)
cargo test --workspace --locked
# `slidelimit bench`, the comparison runner behind the CLI's feature `bench`.
cargo test -p slidelimit-cli --features bench --locked --test it -- bench
# The core's waiting (feature `tokio`): its unit, integration (paused clock) and doc tests.
cargo test -p slidelimit --features tokio --locked -- wait
# ... and its doc tests, the guide's waiting page among them (docs/waiting.md).
cargo test -p slidelimit --features tokio --locked --doc
# The Redis crate's async limiter, behind its `tokio` feature.
cargo test -p slidelimit-redis --features tokio --locked --test it -- asynchronous
# ... and its doc tests, the guide's fleet page among them (docs/fleet.md), with `tls` too so
# that the TLS examples (the README's, the fleet page's, `Tls`'s) compile for real.
cargo test -p slidelimit-redis --features tokio,tls --locked --doc
# TLS (`rediss://`) for the blocking limiters, feature `tls`, against a real TLS redis-server
# with certificates made by openssl: given CA, mutual TLS, a stalled handshake, a wrong CA.
cargo test -p slidelimit-redis --features tls --locked --test it -- production_tls
# ... and for the async limiter (features `tokio` and `tls`, redis's own rustls client): given
# CA, mutual TLS, a stalled handshake within the deadline, a wrong CA.
cargo test -p slidelimit-redis --features tokio,tls --locked --test it -- asynchronous_tls
# The async limiter over a real Redis Cluster (six nodes the tests start), feature `cluster`.
cargo test -p slidelimit-redis --features cluster --locked --test it -- cluster
# ... and its routing's unit tests (slot hashing, CLUSTER SLOTS answers, the map and refresh
# bookkeeping that a race with real servers cannot show deterministically).
cargo test -p slidelimit-redis --features cluster --locked --lib -- asynchronous::cluster
# Feature `metrics`: exact counts under a recorder, for every variant of the core, the tower
# layer and the Redis backend (against a real server); then the core's doc tests with it.
cargo test -p slidelimit --features metrics --locked --test it -- metrics
cargo test -p slidelimit --features metrics --locked --doc
cargo test -p slidelimit-tower --features metrics --locked --test it -- metrics
cargo test -p slidelimit-redis --features tokio,metrics --locked --test it -- metrics
# Feature `fast-barrier` (seize's process-wide barrier, a reclamation batch of 128): the
# stress tests, whose key churn retires and frees entries from several threads, and the
# removal and seal tests.
cargo test -p slidelimit --features fast-barrier --locked --test it -- stress removal seal
echo "cargo test: $(( $(date +%s) - start )) s"

bash ci/loom.sh
