#!/usr/bin/env bash
# How key churn scales from one thread to two on this machine: a bare shared map
# (this package) beside the limiters' own `churn` cells (the comparison's runner), in
# interleaved rounds, under glibc's default per-thread cache and under a larger one.
# With valgrind installed it also counts instructions per churn call of each bare map
# (callgrind). Writes ../../results/churn-ceiling.md. About 9 minutes on 2 cores.
# Usage: bash benches/churn-ceiling/run.sh [rounds]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
rounds=${1:-5}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

(cd "$here" && cargo build --release --quiet)
(cd "$root" && cargo build --release --locked --quiet -p slidelimit-bench --bin slidelimit-bench)
ceiling="$here/target/release/slidelimit-churn-ceiling"
runner="$root/target/release/slidelimit-bench"
# glibc keeps 7 freed blocks per size in a thread's cache; a batch of frees beyond that goes
# to the arena the block came from, under that arena's lock.
tuned="glibc.malloc.tcache_count=100"

for round in $(seq "$rounds"); do
    for env in default tuned; do
        tunables=""
        [ "$env" = tuned ] && tunables=$tuned
        for live in 40000 400000; do
            # The larger population only under the default cache (it is out of the caches
            # either way).
            [ "$env" = tuned ] && [ "$live" = 400000 ] && continue
            for mode in private papaya papaya-incremental mutex-map; do
                for threads in 1 2; do
                    read -r _ _ _ mops p999 p9999 < <(GLIBC_TUNABLES=$tunables "$ceiling" "$mode" "$threads" "$live")
                    echo "$round $env $mode $threads $live $mops $p999 $p9999" >> "$out/ceiling.txt"
                done
            done
        done
        GLIBC_TUNABLES=$tunables "$runner" --variants lock-free,per-key-lock,mutex,deque-mutex \
            --workloads churn --threads 1,2 --duration 1s --trials 1 --skip-memory \
            --out "$out/runner-$round-$env" > /dev/null 2>&1
        echo "round $round $env done" >&2
    done
done

if command -v valgrind > /dev/null; then
    for mode in private papaya mutex-map; do
        valgrind --tool=callgrind --toggle-collect='slidelimit_churn_ceiling::measured*' \
            --callgrind-out-file="$out/$mode.callgrind" "$ceiling" "$mode" 1 40000 --count 100000 \
            > /dev/null 2>&1
        total=$(callgrind_annotate "$out/$mode.callgrind" 2> /dev/null | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1 }')
        echo "$mode $total" >> "$out/instructions.txt"
    done
fi

commit=$(git -C "$root" rev-parse --short HEAD)
git -C "$root" diff --quiet HEAD -- crates benches || commit="$commit+dirty"
python3 - "$out" "$rounds" "$commit" > "$root/results/churn-ceiling.md" <<'PY'
import json, statistics, sys, os, subprocess, platform, datetime
out, rounds, commit = sys.argv[1], int(sys.argv[2]), sys.argv[3]
rows = {}
tails = {}
for line in open(os.path.join(out, "ceiling.txt")):
    r, env, mode, threads, live, mops, p999, p9999 = line.split()
    rows.setdefault((env, mode, int(live)), {}).setdefault(int(r), {})[int(threads)] = float(mops)
    tails.setdefault((env, f"bare map: {mode}", int(live), int(threads)), []).append((int(p999), int(p9999)))
lim = {}
for r in range(1, rounds + 1):
    for env in ("default", "tuned"):
        cells = json.load(open(os.path.join(out, f"runner-{r}-{env}", "comparison.json")))["cells"]
        for c in cells:
            lim.setdefault((env, c["variant"]), {}).setdefault(r, {})[c["threads"]] = c["mops"]
            latency = c["latency"]
            tails.setdefault((env, f"limiter: {c['variant']}", 40000, c["threads"]), []).append((latency["p999"], latency["p9999"]))
def cpu():
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
def run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True).stdout.strip().splitlines()[0]
def line(name, per_round):
    one = statistics.median(v[1] for v in per_round.values())
    two = statistics.median(v[2] for v in per_round.values())
    ratios = sorted(v[2] / v[1] for v in per_round.values())
    return f"| {name} | {one:.2f} | {two:.2f} | {statistics.median(ratios):.2f} | {ratios[0]:.2f}-{ratios[-1]:.2f} |"
print("# Key churn from one thread to two: the ceiling a shared map sets\n")
print("Every call creates a key and one is removed, with about 40,000 keys held: the comparison's")
print("`churn` workload (1M keys, 4 per 20,000 calls: the limiters hold about 41,500), and the same")
print("churn on a bare map with no limiter around it (`benches/churn-ceiling`: each call inserts a")
print("never-seen key, each thread removes its own oldest once it holds its share). `private` gives")
print("each thread a map of its own (nothing shared); `papaya` is the lock-free limiter's map")
print("(512 shards, one seize collector, batches of 31); `mutex-map` is 512 `Mutex<HashMap>` shards.")
print("Medians of the rounds, run in turn in one run; the ratio is each round's two-thread")
print("throughput over its one-thread throughput (median, and the rounds' range).")
print("`tcache_count=100` runs the same binaries with `GLIBC_TUNABLES=glibc.malloc.tcache_count=100`")
print("(glibc's per-thread cache of freed blocks, 7 per size by default).\n")
print("| | |\n|---|---|")
print("| command | `bash benches/churn-ceiling/run.sh " + str(rounds) + "` |")
print(f"| commit | {commit} |")
print(f"| CPU | {cpu()} ({os.cpu_count()} cores) |")
print(f"| rustc | {run(['rustc', '--version'])} |")
print(f"| glibc | {run(['ldd', '--version'])} |")
print(f"| rounds | {rounds} |")
print(f"| date | {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M')} UTC |\n")
for env, title in (("default", "glibc's default cache"), ("tuned", "`tcache_count=100`")):
    print(f"## Million calls per second, {title}\n")
    print("| contender | 1 thread | 2 threads | 2 ÷ 1 | range |\n|---|---:|---:|---:|---:|")
    for mode in ("private", "papaya", "papaya-incremental", "mutex-map"):
        print(line(f"bare map: {mode}", rows[(env, mode, 40000)]))
    for variant in ("lock-free", "per-key-lock", "mutex", "deque-mutex"):
        print(line(f"limiter: {variant}", lim[(env, variant)]))
    print()
print("## The bare maps with 400,000 keys held (glibc's default cache)\n")
print("| map | 1 thread | 2 threads | 2 ÷ 1 | range |\n|---|---:|---:|---:|---:|")
for mode in ("private", "papaya", "papaya-incremental", "mutex-map"):
    print(line(mode, rows[("default", mode, 400000)]))
print("\n## Tails per call, glibc's default cache\n")
print("One call in 16 timed alone, in every cell above (40,000 keys held); the median over the")
print("rounds of each cell's p99.9 and p99.99, microseconds.\n")
print("| contender | p99.9, 1 thread | p99.99, 1 thread | p99.9, 2 threads | p99.99, 2 threads |")
print("|---|---:|---:|---:|---:|")
names = [f"bare map: {m}" for m in ("private", "papaya", "papaya-incremental", "mutex-map")]
names += [f"limiter: {v}" for v in ("lock-free", "per-key-lock", "mutex", "deque-mutex")]
for name in names:
    cells = []
    for threads in (1, 2):
        samples = tails[("default", name, 40000, threads)]
        cells += [statistics.median(s[0] for s in samples) / 1000, statistics.median(s[1] for s in samples) / 1000]
    print(f"| {name} | " + " | ".join(f"{c:.1f}" for c in cells) + " |")
instructions = os.path.join(out, "instructions.txt")
if os.path.exists(instructions):
    print("\n## Instructions per churn call, one thread (callgrind)\n")
    print("Each bare map after 80,000 calls of warm-up, 100,000 untimed calls counted: a call inserts a key and")
    print("removes one, and frees what its reclamation batch holds when it fills; compare")
    print("`results/lifecycle.md`'s instructions per churn call of the limiters.\n")
    print("| bare map | per churn call |\n|---|---:|")
    for line_ in open(instructions):
        mode, total = line_.split()
        print(f"| {mode} | {int(total) / 100000:.0f} |")
PY
echo "wrote results/churn-ceiling.md" >&2
