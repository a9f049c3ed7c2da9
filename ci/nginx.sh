#!/usr/bin/env bash
# Installs Debian's nginx for the tower crate's real-proxy test (tests/it/proxy.rs), which
# starts its own nginx on a loopback port with a config, prefix and temporary paths of its
# own; the package's service is not used.
set -euo pipefail
cd "$(dirname "$0")/.."

"$(bash ci/apt-install.sh nginx nginx)" -v
