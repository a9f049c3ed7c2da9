#!/usr/bin/env bash
# Installs Debian's nginx for the tower crate's real-proxy test (tests/it/proxy.rs), which
# starts its own nginx on a loopback port with a config it writes; nothing else uses it.
set -euo pipefail

if command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ]; then
    "$(command -v nginx || echo /usr/sbin/nginx)" -v
    exit 0
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
    sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update
# The test starts its own nginx (config, port and prefix in a temporary directory); the
# package's service is not used.
$sudo apt-get install -y --no-install-recommends nginx
"$(command -v nginx || echo /usr/sbin/nginx)" -v
