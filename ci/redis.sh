#!/usr/bin/env bash
# Makes sure `redis-server` is on PATH for the Redis backend's tests (crates/redis), which
# start their own servers on free loopback ports in temporary directories. Installs the
# distribution's package if it is missing (Debian/Ubuntu; needs root or sudo).
set -euo pipefail
cd "$(dirname "$0")/.."

"$(bash ci/apt-install.sh redis-server redis-server)" --version
