#!/usr/bin/env bash
# Instructions per check_and_hit call under valgrind's callgrind (results/metrics.md): runs
# the core's `hot_path` example at N and 2N calls and divides the difference by N, so setup
# (building the limiter, creating the keys, installing the recorder) cancels out.
#
# usage: benches/metrics-callgrind.sh LABEL BINARY [recorder]
#   BINARY: target/release/examples/hot_path, built with or without `--features metrics`.
set -euo pipefail

label="$1"
binary="$2"
extra="${3:-}"
n=100000
ir() {
    local out
    out=$(mktemp)
    valgrind --tool=callgrind --callgrind-out-file="$out" "$binary" "$1" "$2" "$3" $extra \
        >/dev/null 2>&1
    callgrind_annotate "$out" 2>/dev/null | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1 }'
    rm -f "$out"
}
for variant in lock-free mutex; do
    for keys in hot many; do
        one=$(ir "$variant" "$keys" "$n")
        two=$(ir "$variant" "$keys" $((2 * n)))
        echo "$label $variant $keys $(awk -v a="$one" -v b="$two" -v n="$n" 'BEGIN { printf "%.1f", (b - a) / n }')"
    done
done
