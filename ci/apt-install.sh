#!/usr/bin/env bash
# Installs a Debian package for a server the tests start themselves, unless its command is
# already there, and prints the command's path: `bash ci/apt-install.sh COMMAND PACKAGE`.
# (/usr/sbin is searched too: root's PATH may lack it.)
set -euo pipefail

command=$1
package=$2
found() {
    command -v "$command" 2>/dev/null && return 0
    [ -x "/usr/sbin/$command" ] && echo "/usr/sbin/$command"
}
if ! path=$(found); then
    sudo=""
    if [ "$(id -u)" -ne 0 ]; then
        sudo="sudo"
    fi
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update >&2
    $sudo apt-get install -y --no-install-recommends "$package" >&2
    path=$(found)
fi
echo "$path"
