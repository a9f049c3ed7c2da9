#!/usr/bin/env bash
# The key lifecycle's cost: key churn (1M keys drawn uniformly, 4 per 20,000 calls, one tick
# per call: nearly every call creates a key, the automatic sweep keeps removing them) through
# every contender, counted by callgrind (instructions per churn call, per created key and per
# removed key, and where the lock-free and mutex limiters spend them) and timed in
# interleaved rounds on one thread (CPU time per decision, side by side), and the comparison's
# Zipf workload on one thread, counted the same way, and fresh keys hit a few times each. Writes
# results/lifecycle.md, keeping its hand-written "## Reading" section if there is one, and a
# per-contender summary of every count in results/lifecycle/.
#
# Needs valgrind (`apt-get install valgrind`). About 15 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."

calls=100000
cycles=5
cycle_calls=20000
rounds="${ROUNDS:-5}"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
summaries=results/lifecycle
mkdir -p "$summaries"
cargo build --release --locked -p slidelimit-bench --bin lifecycle
bin=target/release/lifecycle
contenders=(lock-free mutex per-key-lock rwlock lock-free-buckets mutex-buckets per-key-lock-buckets rwlock-buckets deque-mutex)

# Shorter names: the registry's, the toolchain's and this checkout's path prefixes and
# slidelimit's module paths dropped.
shorten() {
    sed -E -e 's/slidelimit::([a-z_0-9]+::)*//g' \
        -e 's#/root/\.cargo/registry/src/index\.crates\.io-[0-9a-f]*/##g' \
        -e 's#/rustc/[0-9a-f]*/library/#std:#g' -e 's#/rust/deps/##g' \
        -e "s#$PWD/##g" -e 's#\./malloc/\./malloc/#glibc:#g' -e 's#\./string/\.\./sysdeps/x86_64/multiarch/#glibc:#g'
}

total() { # callgrind file -> instructions counted
    callgrind_annotate --show=Ir "$1" 2>/dev/null \
        | awk '/PROGRAM TOTALS/ && !done { gsub(",", ""); print $1; done = 1 }'
}

# Self (exclusive) instructions per unit, summed by source file (field 1), by function
# (field 2) or by both (0) of callgrind_annotate's "file:function": each is a partition of
# the total. The
# source file is where the instructions' code was written (inlined code counts in its own
# file), so papaya's map code inlined into the limiter shows as papaya's.
self_by() { # field divisor callgrind-file top
    callgrind_annotate --auto=no --inclusive=no --threshold=100 --show=Ir --show-percs=no "$3" 2>/dev/null \
        | awk -v field="$1" -v n="$2" '
            /^ *[0-9,]+ / && !/PROGRAM TOTALS/ {
                count = $1; gsub(",", "", count)
                line = $0; sub(/^ *[0-9,]+ +/, "", line); sub(/ \[[^]]*\]$/, "", line)
                colon = index(line, ":")
                name = field == 0 ? line : field == 1 ? substr(line, 1, colon - 1) : substr(line, colon + 1)
                sum[name] += count
            }
            END { for (name in sum) if (sum[name] / n >= 0.5) printf "%8.1f  %s\n", sum[name] / n, name }' \
        | sort -rn | awk -v top="$4" 'NR <= top' | shorten | cut -c1-160
}

# Inclusive instructions per unit of the functions the measured one calls (`measured`
# matches its name): the lines below its own that count less than it (its callers count as
# much), the heaviest first.
inclusive_below() { # measured divisor callgrind-file top
    callgrind_annotate --auto=no --inclusive=yes --show=Ir --show-percs=no "$3" 2>/dev/null \
        | awk -v m="$1" -v n="$2" '/^ *[0-9,]+ / {
            count = $1; gsub(",", "", count); line = $0; sub(/^ *[0-9,]+ +/, "", line)
            sub(/ \[[^]]*\]$/, "", line)
            if (index(line, m)) { top = count + 0; next }
            if (top && count + 0 < top) printf "%8.1f  %s\n", count / n, line }' \
        | awk -v top="$4" 'NR <= top' | shorten | cut -c1-160
}

declare -A churn zipf create remove created removed
for contender in "${contenders[@]}"; do
    valgrind --tool=callgrind --toggle-collect='lifecycle::measured*' \
        --callgrind-out-file="$out/$contender-churn.out" "$bin" count "$contender" "$calls" \
        > /dev/null 2> /dev/null
    valgrind --tool=callgrind --toggle-collect='lifecycle::measured*' \
        --callgrind-out-file="$out/$contender-zipf.out" "$bin" count-zipf "$contender" "$calls" \
        > /dev/null 2> /dev/null
    for phase in create remove; do
        valgrind --tool=callgrind --toggle-collect="lifecycle::phases::measured_$phase*" \
            --callgrind-out-file="$out/$contender-$phase.out" \
            "$bin" phases "$contender" "$cycles" "$cycle_calls" > "$out/$contender-phases.txt" 2> /dev/null
    done
    churn[$contender]=$(total "$out/$contender-churn.out")
    zipf[$contender]=$(total "$out/$contender-zipf.out")
    create[$contender]=$(total "$out/$contender-create.out")
    remove[$contender]=$(total "$out/$contender-remove.out")
    # "<name>: created C admitted A removed R tracked T"
    read -r "created[$contender]" "removed[$contender]" < <(awk '{ print $3, $7 }' "$out/$contender-phases.txt")
    echo "counted $contender" >&2
done

# Keys hit a few times: fresh keys, each hit h times in a row, t ticks apart (count-repeat);
# instructions per key. "h t" pairs: a burst of two within one bucket, two a bucket apart
# (the buckets' width is 2,500 ticks here), twenty a bucket apart.
repeats=("2 1" "2 2500" "20 2500")
declare -A repeat
for contender in "${contenders[@]}"; do
    for pair in "${repeats[@]}"; do
        read -r hits ticks <<< "$pair"
        file="$out/$contender-repeat-$hits-$ticks.out"
        valgrind --tool=callgrind --toggle-collect='lifecycle::measured*' \
            --callgrind-out-file="$file" "$bin" count-repeat "$contender" "$hits" "$ticks" "$calls" \
            > /dev/null 2> /dev/null
        # count-repeat counts whole keys: calls rounded down to a multiple of the hits.
        repeat[$contender,$pair]=$(awk -v t="$(total "$file")" -v n="$calls" -v h="$hits" \
            'BEGIN { printf "%.0f", t / (int(n / h)) }')
    done
    echo "counted $contender's repeated keys" >&2
done

# One summary per contender: per churn call, per created key, per removed key.
for contender in "${contenders[@]}"; do
    {
        echo "# $contender: the key lifecycle, counted by callgrind"
        echo
        echo "Self instructions, summed by source file and by function (each a partition of the"
        echo "total); see lifecycle.md for the set-up. Commit $(git rev-parse --short HEAD)."
        for phase in churn zipf create remove; do
            case $phase in
                churn) n=$calls; unit="per churn call" ;;
                zipf) n=$calls; unit="per Zipf call" ;;
                create) n=${created[$contender]}; unit="per created key" ;;
                remove) n=${removed[$contender]}; unit="per removed key" ;;
            esac
            echo
            echo "## $unit: $(awk -v t="$(total "$out/$contender-$phase.out")" -v n="$n" 'BEGIN { printf "%.1f", t / n }') instructions"
            echo
            echo '```text'
            echo "by source file:"
            self_by 1 "$n" "$out/$contender-$phase.out" 20
            echo "by function:"
            self_by 2 "$n" "$out/$contender-$phase.out" 20
            echo '```'
        done
    } > "$summaries/$contender.md"
done

reading=$(awk '/^## Reading/ { on = 1 } on' results/lifecycle.md 2>/dev/null || true)
{
    echo "# The key lifecycle, counted and timed"
    echo
    echo "Key churn through each contender: 1M keys drawn uniformly, 4 hits per 20,000 ticks, one"
    echo "tick per call, so a key comes back only long after its window and the lateness tolerance:"
    echo "nearly every call creates a key, and the automatic sweep keeps removing them (one removal"
    echo "per call in steady state). 400,000 calls of warm-up (several sweep cycles), then $calls"
    echo "calls counted by callgrind (\`--toggle-collect\` on the measured loop): instructions per"
    echo "churn call cover the creation, the decision and the share of the sweep and of the frees."
    echo
    echo "Created and removed keys are counted apart on a limiter whose automatic removal is off"
    echo "(\`Options::sweep_floor_keys(usize::MAX)\`; the deque without its pass every 65,536"
    echo "calls): cycles of $cycle_calls \`check_and_hit\` calls on never-seen keys, one tick per"
    echo "call, then one \`remove_idle\`; 20 cycles of warm-up, then $cycles cycles whose creating"
    echo "loop and \`remove_idle\` calls are counted in two callgrind runs. A created key is its"
    echo "first \`check_and_hit\` (lookup, allocation, insert, tombstone lookup, the decision);"
    echo "a removed key is the \`remove_idle\` instructions divided by the keys removed, so it"
    echo "includes visiting the keys kept (with the default lateness of one window, a pass visits"
    echo "about 60,000 keys and removes 20,000; the deque, which has no lateness tolerance, about"
    echo "40,000 and 20,000). Frees the lock-free map defers (seize) run wherever its batch fills,"
    echo "so some of a removed key's frees are counted in the creating loop. \"created + removed\""
    echo "is what a churn call would cost if the automatic sweep cost what \`remove_idle\` does"
    echo "(nearly one creation and one removal per churn call). The key hasher is seeded per"
    echo "process, so shards fill differently from run to run: counts vary by 1-2%."
    echo
    echo "The Zipf calls are the comparison's \`zipf\` workload on one thread, counted the same"
    echo "way: 1M keys ranked by a Zipf law (s = 1), 32 hits per 4,000 ticks, one tick every 64"
    echo "calls (the comparison's fake clock), 1M calls of warm-up, then $calls counted. A hot"
    echo "head is decided on keys the map holds (many refused); the tail keeps creating keys."
    echo
    echo "The times are CPU time per decision of the churn loop (1M calls), every contender in"
    echo "turn, $rounds interleaved rounds, summed. \`deque-mutex\` is the plain limiter: one Mutex"
    echo "over a foldhash \`HashMap\` of \`VecDeque\`s, idle keys forgotten every 65,536 calls."
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
    echo "## Instructions per created key, per removed key, per churn call and per Zipf call"
    echo
    echo "| contender | per created key | per removed key | created + removed | per churn call | churn ÷ deque-mutex | per Zipf call | Zipf ÷ deque-mutex |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|"
    for contender in "${contenders[@]}"; do
        awk -v c="$contender" -v ci="${create[$contender]}" -v cn="${created[$contender]}" \
            -v ri="${remove[$contender]}" -v rn="${removed[$contender]}" \
            -v ir="${churn[$contender]}" -v base="${churn[deque-mutex]}" -v n="$calls" \
            -v zr="${zipf[$contender]}" -v zbase="${zipf[deque-mutex]}" \
            'BEGIN { printf "| %s | %.0f | %.0f | %.0f | %.0f | %.2f | %.0f | %.2f |\n",
                c, ci / cn, ri / rn, ci / cn + ri / rn, ir / n, ir / base, zr / n, zr / zbase }'
    done
    echo
    echo "## Keys hit a few times"
    echo
    echo "Fresh keys, each hit \`h\` times in a row with the clock moving \`t\` ticks per call"
    echo "(\`lifecycle count-repeat <contender> h t\`, the churn's limit; $calls calls counted after"
    echo "the warm-up), instructions per key: its creation, its calls, and its share of the sweep"
    echo "and the frees. The rolling buckets here are 2,500 ticks wide, so \`t\` = 1 keeps a key's"
    echo "hits in one bucket and \`t\` = 2,500 puts each in a bucket of its own. A lock-free window"
    echo "kept inline grows once in a key's life: the exact log at its second hit, the rolling"
    echo "buckets at their first call in a second bucket."
    echo
    echo "| contender | h = 2, t = 1 | h = 2, t = 2,500 | h = 20, t = 2,500 |"
    echo "|---|---:|---:|---:|"
    for contender in "${contenders[@]}"; do
        echo "| $contender | ${repeat[$contender,2 1]} | ${repeat[$contender,2 2500]} | ${repeat[$contender,20 2500]} |"
    done
    echo
    echo "## CPU time per decision, one thread"
    echo
    "$bin" time "$rounds" 2>/dev/null
    for contender in lock-free mutex; do
        for phase in create remove; do
            case $phase in
                create) n=${created[$contender]}; unit="created key" ;;
                remove) n=${removed[$contender]}; unit="removed key" ;;
            esac
            echo
            echo "## $contender: instructions per $unit"
            echo
            echo "Self instructions by source file, then by source file and function (each a"
            echo "partition of the total: inlined code counts in the file it was written in), then"
            echo "inclusive by function (nested calls count in each caller)."
            echo
            echo '```text'
            self_by 1 "$n" "$out/$contender-$phase.out" 10
            echo
            self_by 0 "$n" "$out/$contender-$phase.out" 20
            echo
            inclusive_below "lifecycle::phases::measured_$phase" "$n" "$out/$contender-$phase.out" 20
            echo '```'
        done
    done
    echo
    echo "Every contender's counts by source file and by function: [lifecycle/](lifecycle/)."
    if [[ -n "$reading" ]]; then
        echo
        echo "$reading"
    fi
} > "$out/lifecycle.md"

cp "$out/lifecycle.md" results/lifecycle.md
echo "wrote results/lifecycle.md and $summaries/"
