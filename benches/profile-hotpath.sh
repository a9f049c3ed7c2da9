#!/usr/bin/env bash
# One admitting and one refusing `check_and_hit` on a hot key, counted by callgrind for the
# lock-free and the mutex limiter: instructions, loads and stores per call, and where the
# instructions go, written to results/hotpath.md (raw callgrind files in results/hotpath/).
#
# Needs valgrind (`apt-get install valgrind`). About 20 s.
set -euo pipefail
cd "$(dirname "$0")/.."

calls=100000
out=results/hotpath
mkdir -p "$out"
cargo build --release --locked -p slidelimit-bench --bin hotpath
bin=target/release/hotpath

{
    echo "# The hot path, counted"
    echo
    echo "One \`check_and_hit\` on a hot key, admitting (1000 per 1000 ticks, one tick per call; the"
    echo "rolling buckets, which count up to 1.25 windows, get 2000) and refusing (a full window of"
    echo "10), $calls calls each after a warm-up, counted by callgrind"
    echo "(\`--toggle-collect\` on the measured loop, so set-up is not counted). Counts are exact"
    echo "and do not depend on the machine's load; cache misses are not meaningful on one hot key"
    echo "(everything is in L1), so see \`comparison.md\` for time."
    echo
    echo "| | |"
    echo "|---|---|"
    echo "| command | \`bash benches/profile-hotpath.sh\` |"
    echo "| commit | $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- crates benches || echo +dirty) |"
    echo "| rustc | $(rustc --version) |"
    echo "| valgrind | $(valgrind --version) |"
    echo "| date | $(date -u '+%Y-%m-%d %H:%M UTC') |"
    echo
    echo "| variant | call | instructions | loads | stores |"
    echo "|---|---|---:|---:|---:|"
} > results/hotpath.md

for variant in lock-free lock-free-buckets mutex mutex-buckets; do
    for case in admit refuse; do
        file="$out/callgrind-$variant-$case.out"
        valgrind --tool=callgrind --cache-sim=yes --toggle-collect='hotpath::measured*' \
            --callgrind-out-file="$file" "$bin" "$variant" "$case" "$calls" > /dev/null 2> "$out/valgrind.log"
        # The PROGRAM TOTALS line: instructions, data reads, data writes.
        read -r ir dr dw < <(callgrind_annotate --show=Ir,Dr,Dw --show-percs=no "$file" 2>/dev/null \
            | awk '/PROGRAM TOTALS/ { gsub(",", ""); print $1, $2, $3; exit }')
        awk -v v="$variant" -v c="$case" -v n="$calls" -v ir="$ir" -v dr="$dr" -v dw="$dw" \
            'BEGIN { printf "| %s | %s | %.1f | %.1f | %.1f |\n", v, c, ir / n, dr / n, dw / n }' \
            >> results/hotpath.md
    done
done
rm -f "$out/valgrind.log"

# The top 25 lines by awk, not head: head closes the pipe early, and under pipefail the
# annotator's broken pipe ended the script after the third section.
for variant in lock-free lock-free-buckets mutex mutex-buckets; do
    for case in admit refuse; do
        {
            echo
            echo "## $variant, $case: instructions per call by source file"
            echo
            echo '```text'
            callgrind_annotate --show=Ir --show-percs=no --inclusive=no "$out/callgrind-$variant-$case.out" 2>/dev/null \
                | awk -v n="$calls" '/^ *[0-9,]+ / && !/PROGRAM TOTALS/ {
                    count = $1; gsub(",", "", count); if (count / n < 1) next;
                    where = $NF; if (where ~ /^\[/) where = $(NF-1);
                    sub(/.*\/(src|library)\//, "", where);
                    printf "%7.1f  %s\n", count / n, where }' | awk 'NR <= 25'
            echo '```'
        } >> results/hotpath.md
    done
done
echo "wrote results/hotpath.md"
