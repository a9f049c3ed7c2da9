//! Refusal reasons under contention: four threads hammer one pool (lock-free, then mutex) on
//! 2-tick cooldowns, with `now`s a tick apart either way, and every refusal's reason is
//! checked against the ledger its decision read (`UseLedger::take_witnessed`) and against
//! what was granted:
//! - `Exhausted`: every use was held, by buckets the oldest of which had not cooled down by
//!   the call's `now`;
//! - `Late`: the call's `now` was below the release watermark, and some call granted a use at
//!   a `now` at or above that watermark (the release that raised it);
//! - `NoBucket`: never (a call that finds every slot held with uses free joins the newest
//!   bucket).
//!
//! Grants are checked as everywhere: no name above `X` uses in any window of `T`.

use slidelimit::pool::{KeyPool, PoolMode, Refusal, RefusalWitness, UseLedger};

use super::{both_pools, contended, SkewedClock};
use crate::trace::check_safety;

const THREADS: u64 = 4;
const CALLS_PER_THREAD: u64 = 40_000;
const CALLS_PER_TICK: u64 = 8;
const SKEW: u64 = 1;
const KEYS: u32 = 4;
const USES_PER_KEY: u64 = 3;
const TOTAL_USES: u64 = KEYS as u64 * USES_PER_KEY;
const COOLDOWN: u64 = 2;
const MODES: [PoolMode; 4] = [
    PoolMode::Exact,
    PoolMode::TimeBound { threshold_ticks: 1 },
    PoolMode::CountBound { key_threshold: 3 },
    PoolMode::Both {
        threshold_ticks: 1,
        key_threshold: 3,
    },
];

/// What one run saw: every grant as (name, now), every refusal with its witness.
#[derive(Default)]
struct Run {
    granted: Vec<(u64, u64)>,
    refused: Vec<RefusalWitness>,
}

fn hammer<G: UseLedger>(pool: &KeyPool<u32, G>) -> Run {
    let clock = SkewedClock {
        start_tick: 100,
        calls_per_tick: CALLS_PER_TICK,
        skew: SKEW,
    };
    let runs = contended(
        THREADS,
        CALLS_PER_THREAD,
        clock,
        0xA11,
        |_, now, _, run: &mut Run| match pool.ledger().take_witnessed(now) {
            Ok(seq) => run.granted.push((seq % u64::from(KEYS), now)),
            Err(witness) => run.refused.push(witness),
        },
    );
    let mut all = Run::default();
    for run in runs {
        all.granted.extend(run.granted);
        all.refused.extend(run.refused);
    }
    all
}

/// Checks one run; returns how many refusals were exhausted and late.
fn check<G: UseLedger>(pool: &KeyPool<u32, G>) -> (usize, usize) {
    let label = format!("{} {:?}", pool.variant(), pool.geometry().mode());
    let run = hammer(pool);
    check_safety(&run.granted, USES_PER_KEY, COOLDOWN).unwrap_or_else(|e| panic!("{label}: {e}"));
    let latest_grant = run.granted.iter().map(|&(_, now)| now).max().unwrap_or(0);
    let (mut exhausted, mut late) = (0, 0);
    for witness in &run.refused {
        match witness.refusal {
            Refusal::Exhausted => {
                exhausted += 1;
                assert!(
                    witness.held_uses >= TOTAL_USES && witness.head_cooled_at > witness.now,
                    "{label}: exhausted with a use free or the oldest bucket cooled: {witness:?}"
                );
            }
            Refusal::Late => {
                late += 1;
                assert!(
                    witness.now < witness.released_through
                        && latest_grant >= witness.released_through,
                    "{label}: late without a release above it (latest grant {latest_grant}): \
                     {witness:?}"
                );
            }
            other => panic!("{label}: refused as {other:?}: {witness:?}"),
        }
    }
    assert!(
        run.granted.len() as u64 > CALLS_PER_THREAD,
        "{label}: only {} grants",
        run.granted.len()
    );
    (exhausted, late)
}

#[test]
fn every_refusal_reason_matches_the_ledger_its_decision_read() {
    let (mut exhausted, mut late, mut lost_races) = (0, 0, 0);
    for mode in MODES {
        let names: Vec<u32> = (0..KEYS).collect();
        let (lock_free, mutex) = both_pools(&names, USES_PER_KEY, COOLDOWN, mode).unwrap();
        for (e, l) in [check(&lock_free), check(&mutex)] {
            exhausted += e;
            late += l;
        }
        lost_races += lock_free.ledger().lost_races().unwrap_or(0);
    }
    // The checks above ran on both reasons, and the lock-free pool's CAS retry path ran.
    assert!(
        exhausted > 0 && late > 0,
        "exhausted {exhausted}, late {late}"
    );
    if cfg!(debug_assertions) {
        assert!(lost_races > 0, "no control-word CAS was ever lost");
    }
}
