#!/usr/bin/env bash
# The loom models of loom-tests/ (see loom-tests/README.md), then their negative controls.
#
# 1. Every model, once, under --cfg slidelimit_loom, --release with debug assertions, in its
#    own target directory (target-loom, or $LOOM_TARGET_DIR), LOOM_MAX_PREEMPTIONS=2 unless set.
# 2. Each mutant of the core (cfg slidelimit_loom_mutant="NAME") in its own build
#    (target-loom/mutant-NAME, kept between runs), running only the negative control that
#    must catch it: #[should_panic] tests that exist only in that build (one per model that
#    catches it; most mutants have one). The run must report them all passed, at least one.
#
# Measured run time on the 2-core development machine, from clean target directories: 4 min
# 47 s in all (22 models, 13 mutants), of which the models themselves take ~32 s at bound 2;
# each mutant is a separate build of loom and its dependencies, ~20 s each, and its control
# fails within a second. Under heavy load from other builds a mutant build took up to 70 s.
# With the target directories kept and the core changed, a rerun takes ~3 min; unchanged, 30 s.
# With the pool's models and mutants (28 models, one ignored; 17 mutants): 2 min 33 s with the
# target directories kept and the core changed, the models ~21 s of loom time at bound 2
# (the pool's ~7 s); each pool mutant's first build took 21-40 s, so ~6.5 min from clean.
# The limit-change models (tests/limits.rs: L1-L9): 41,359 executions (L6, L7 not counted), ~2.3 s of loom time at bound 2 (L8 ~2.1 s of it; ~33 s at bound
# 3), ~7 s for the file with the build kept; the swap_without_retire mutant's first build
# took 28 s, its control < 0.1 s.
set -euo pipefail
cd "$(dirname "$0")/.."

export LOOM_MAX_PREEMPTIONS="${LOOM_MAX_PREEMPTIONS:-2}"
export RUST_BACKTRACE="${RUST_BACKTRACE:-0}"
# The loom builds' own target directory (never the workspace's target/).
target="${LOOM_TARGET_DIR:-target-loom}"
base_flags="--cfg slidelimit_loom -C debug-assertions"

# Each mutant of the core and the test file whose negative control must catch it.
mutants=(
    "ring_store_not_cas ring"
    "ring_cas_loser_refuses ring"
    "resort_unchecked_scan ring_order"
    "resort_without_seal ring_order"
    "seal_with_store keyed"
    "seal_without_restore keyed"
    "get_then_insert keyed"
    "tombstone_after_unlink keyed"
    "look_without_seal keyed"
    "buckets_seal_without_recheck keyed"
    "buckets_record_before_reserve buckets"
    "buckets_split_tag_count buckets"
    "buckets_split_head_total buckets"
    "buckets_sum_then_cas buckets"
    "pool_join_after_cas pool"
    "pool_decide_then_store pool"
    "pool_skip_late_check pool"
    "pool_raise_by_load_store pool"
    "pool_full_join_without_raise pool"
    "pool_requeue_cools_at_now pool"
    "pool_release_far_head pool"
    "pool_far_writes_cooled_word pool"
    "pool_far_flag_not_kept pool"
    "pool_requeue_flags_before_cas pool"
    "layers_widest_only layers"
    "layers_undo_by_store layers"
    "swap_without_retire limits"
    "hit_drop_unpublished limits"
    "inline_seal_with_store inline"
    "inline_drops_second_hit inline"
    "buckets_grow_without_seal inline_buckets"
)

log=$(mktemp)
trap 'rm -f "$log"' EXIT
start=$(date +%s)

echo "== loom models (LOOM_MAX_PREEMPTIONS=$LOOM_MAX_PREEMPTIONS)"
RUSTFLAGS="$base_flags" CARGO_TARGET_DIR="$target" \
    cargo test --locked -p slidelimit-loom --release --tests -- --nocapture 2>&1 | tee "$log"
models=$(grep -o 'loom-model name=[^ ]*' "$log" | wc -l)
if [ "$models" -eq 0 ]; then
    echo "loom: no model ran" >&2
    exit 1
fi
models_s=$(($(date +%s) - start))

controls=0
for entry in "${mutants[@]}"; do
    read -r mutant file <<<"$entry"
    echo "== mutant $mutant: the negative control in tests/$file.rs must catch it"
    mutant_start=$(date +%s)
    RUSTFLAGS="$base_flags --cfg slidelimit_loom_mutant=\"$mutant\"" \
        CARGO_TARGET_DIR="$target/mutant-$mutant" \
        cargo test --locked -p slidelimit-loom --release --test "$file" -- "mutant_${mutant}_" \
        2>&1 | tee "$log"
    if ! grep -Eq '^test result: ok\. [1-9][0-9]* passed; 0 failed' "$log"; then
        echo "loom: the negative control for mutant $mutant did not run and pass" >&2
        exit 1
    fi
    controls=$((controls + 1))
    echo "mutant $mutant caught in $(($(date +%s) - mutant_start)) s"
done

total_s=$(($(date +%s) - start))
echo "loom: $models models passed (preemption bound $LOOM_MAX_PREEMPTIONS) in ${models_s} s;" \
    "$controls negative controls caught their mutants; ${total_s} s in all"
