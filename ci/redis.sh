#!/usr/bin/env bash
# Makes sure `redis-server` is on PATH for the Redis backend's tests (crates/redis), which
# start their own servers on free loopback ports in temporary directories, and `openssl` for
# the TLS tests' certificates. Installs the distribution's packages if they are missing
# (Debian/Ubuntu; needs root or sudo).
set -euo pipefail
cd "$(dirname "$0")/.."

"$(bash ci/apt-install.sh redis-server redis-server)" --version
# The TLS tests (feature `tls`) make their certificates with the openssl command line.
"$(bash ci/apt-install.sh openssl openssl)" version
