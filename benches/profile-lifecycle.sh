#!/usr/bin/env bash
# The key lifecycle's cost: key churn (1M keys drawn uniformly, 4 per 20,000 calls, one tick
# per call: nearly every call creates a key, the automatic sweep keeps removing them) through
# every contender, counted by callgrind (instructions per call, and where the lock-free and
# mutex limiters spend them) and timed in interleaved rounds on one thread (CPU time per
# decision, side by side). Writes results/lifecycle.md.
#
# Needs valgrind (`apt-get install valgrind`). About 4 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."

calls=100000
rounds="${ROUNDS:-5}"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cargo build --release --locked -p slidelimit-bench --bin lifecycle
bin=target/release/lifecycle
contenders=(lock-free mutex per-key-lock rwlock lock-free-buckets mutex-buckets per-key-lock-buckets rwlock-buckets deque-mutex)

{
    echo "# The key lifecycle, counted and timed"
    echo
    echo "Key churn through each contender: 1M keys drawn uniformly, 4 hits per 20,000 ticks, one"
    echo "tick per call, so a key comes back only long after its window and the lateness tolerance:"
    echo "nearly every call creates a key, and the automatic sweep keeps removing them (one removal"
    echo "per call in steady state). 400,000 calls of warm-up (several sweep cycles), then $calls"
    echo "calls counted by callgrind (\`--toggle-collect\` on the measured loop): instructions per"
    echo "call cover the creation, the decision and the share of the sweep and of the frees. The"
    echo "times are CPU time per decision of the same loop (1M calls), every contender in turn,"
    echo "$rounds interleaved rounds, summed. \`deque-mutex\` is the plain limiter: one Mutex over a"
    echo "foldhash \`HashMap\` of \`VecDeque\`s, idle keys forgotten every 65,536 calls."
    echo
    echo "| | |"
    echo "|---|---|"
    echo "| command | \`bash benches/profile-lifecycle.sh\` |"
    echo "| commit | $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- crates benches || echo +dirty) |"
    echo "| CPU | $(awk -F': ' '/model name/ && !done { print $2; done = 1 }' /proc/cpuinfo) ($(nproc) cores) |"
    echo "| rustc | $(rustc --version) |"
    echo "| valgrind | $(valgrind --version) |"
    echo "| date | $(date -u '+%Y-%m-%d %H:%M UTC') |"
    echo
    echo "## Instructions per call"
    echo
    echo "| contender | instructions per call | ÷ deque-mutex |"
    echo "|---|---:|---:|"
} > "$out/head.md"

declare -A instructions
for contender in "${contenders[@]}"; do
    file="$out/$contender.out"
    valgrind --tool=callgrind --toggle-collect='lifecycle::measured*' \
        --callgrind-out-file="$file" "$bin" count "$contender" "$calls" > /dev/null 2> /dev/null
    instructions[$contender]=$(callgrind_annotate --show=Ir "$file" 2>/dev/null \
        | awk '/PROGRAM TOTALS/ && !done { gsub(",", ""); print $1; done = 1 }')
done
for contender in "${contenders[@]}"; do
    awk -v c="$contender" -v ir="${instructions[$contender]}" -v base="${instructions[deque-mutex]}" -v n="$calls" \
        'BEGIN { printf "| %s | %.0f | %.2f |\n", c, ir / n, ir / base }' >> "$out/head.md"
done

{
    echo
    echo "## CPU time per decision, one thread"
    echo
    "$bin" time "$rounds" 2>/dev/null
    for contender in lock-free mutex; do
        echo
        echo "## $contender: instructions per call by function (inclusive, top 30)"
        echo
        echo '```text'
        callgrind_annotate --inclusive=yes --show=Ir --show-percs=no "$out/$contender.out" 2>/dev/null \
            | awk -v n="$calls" '/lifecycle::measured/ { on = 1 } on && /^ *[0-9,]+ / {
                count = $1; gsub(",", "", count); $1 = ""; printf "%8.1f %s\n", count / n, $0 }' \
            | awk 'NR >= 2 && NR <= 31' | cut -c1-160
        echo '```'
    done
} >> "$out/head.md"

cp "$out/head.md" results/lifecycle.md
echo "wrote results/lifecycle.md"
