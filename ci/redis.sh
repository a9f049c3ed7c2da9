#!/usr/bin/env bash
# Makes sure `redis-server` is on PATH for the Redis backend's tests (crates/redis), which
# start their own servers on free loopback ports in temporary directories. Installs the
# distribution's package if it is missing (Debian/Ubuntu; needs root or sudo).
set -euo pipefail

if command -v redis-server >/dev/null 2>&1; then
    redis-server --version
    exit 0
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
    sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update
$sudo apt-get install -y --no-install-recommends redis-server
# The package starts a system service on port 6379; the tests do not use it.
redis-server --version
