//! `Limit`'s constructors from durations and rates: their results, every error, and a property
//! that `from_rate` recovers any `p / q` exactly and never panics.

use std::time::Duration;

use proptest::prelude::*;
use slidelimit::{Limit, LimitError, MAX_REQUESTS};

const NS: Duration = Duration::from_nanos(1);
const MS: Duration = Duration::from_millis(1);
const SEC: Duration = Duration::from_secs(1);

fn parts(limit: Limit) -> (u64, u64) {
    (limit.max_requests(), limit.window_ticks())
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

#[test]
fn per_divides_the_period_into_ticks() {
    assert_eq!(
        parts(Limit::per(10, Duration::from_millis(1500), MS).unwrap()),
        (10, 1500)
    );
    assert_eq!(
        parts(Limit::per(3, Duration::from_secs(10), SEC).unwrap()),
        (3, 10)
    );
    assert_eq!(parts(Limit::per(1, SEC, NS).unwrap()), (1, 1_000_000_000));
    // A period of exactly one tick is the shortest window.
    assert_eq!(parts(Limit::per(4, MS, MS).unwrap()), (4, 1));
    // The largest window: u64::MAX ticks.
    let max = Duration::from_nanos(u64::MAX);
    assert_eq!(parts(Limit::per(1, max, NS).unwrap()), (1, u64::MAX));
}

#[test]
fn per_second_minute_hour_wrap_per() {
    assert_eq!(
        parts(Limit::per_second(1_000_000, NS).unwrap()),
        (1_000_000, 1_000_000_000)
    );
    assert_eq!(parts(Limit::per_second(1200, MS).unwrap()), (1200, 1000));
    assert_eq!(parts(Limit::per_minute(100, SEC).unwrap()), (100, 60));
    assert_eq!(parts(Limit::per_minute(100, MS).unwrap()), (100, 60_000));
    assert_eq!(parts(Limit::per_hour(5000, MS).unwrap()), (5000, 3_600_000));
    assert_eq!(parts(Limit::per_hour(5000, SEC).unwrap()), (5000, 3600));
    assert_eq!(
        Limit::per_minute(7, Duration::from_secs(7)),
        Err(LimitError::NotWholeTicks {
            period: Duration::from_secs(60),
            tick: Duration::from_secs(7),
        })
    );
}

#[test]
fn per_errors() {
    assert_eq!(
        Limit::per(1, SEC, Duration::ZERO),
        Err(LimitError::ZeroTick)
    );
    // The tick is checked first, even with a zero count.
    assert_eq!(
        Limit::per(0, SEC, Duration::ZERO),
        Err(LimitError::ZeroTick)
    );
    assert_eq!(
        Limit::per(1, Duration::from_millis(1500), SEC),
        Err(LimitError::NotWholeTicks {
            period: Duration::from_millis(1500),
            tick: SEC,
        })
    );
    // Shorter than one tick: not a whole (nonzero) number of ticks, never rounded to 1 or 0.
    assert_eq!(
        Limit::per(1, Duration::from_micros(999), MS),
        Err(LimitError::NotWholeTicks {
            period: Duration::from_micros(999),
            tick: MS,
        })
    );
    assert_eq!(
        Limit::per(1, Duration::ZERO, MS),
        Err(LimitError::ZeroWindow)
    );
    assert_eq!(Limit::per(0, SEC, MS), Err(LimitError::ZeroMaxRequests));
    assert_eq!(
        Limit::per(MAX_REQUESTS + 1, SEC, MS),
        Err(LimitError::TooManyRequests {
            max_requests: MAX_REQUESTS + 1
        })
    );
    assert_eq!(
        parts(Limit::per(MAX_REQUESTS, SEC, MS).unwrap()),
        (MAX_REQUESTS, 1000)
    );
    // One tick more than u64::MAX.
    let period = Duration::from_nanos(u64::MAX) + NS;
    assert_eq!(
        Limit::per(1, period, NS),
        Err(LimitError::WindowOverflow { period, tick: NS })
    );
    assert_eq!(
        Limit::per(1, Duration::MAX, NS),
        Err(LimitError::WindowOverflow {
            period: Duration::MAX,
            tick: NS,
        })
    );
}

#[test]
fn from_rate_finds_the_smallest_exact_fraction() {
    let cases: [(f64, Duration, (u64, u64)); 12] = [
        (1200.0, MS, (1200, 1000)),
        (1200.0, SEC, (1200, 1)),
        (0.5, MS, (1, 2000)),
        (0.5, SEC, (1, 2)),
        (2.5, MS, (5, 2000)),
        (1.0 / 3.0, MS, (1, 3000)),
        (0.333_333_333_333_333_3, SEC, (1, 3)),
        (0.1, MS, (1, 10_000)),
        (0.1, SEC, (1, 10)),
        (1e6, NS, (1_000_000, 1_000_000_000)),
        (1.0, NS, (1, 1_000_000_000)),
        (1e-6, SEC, (1, 1_000_000)),
    ];
    for (rate, tick, expected) in cases {
        let limit = Limit::from_rate(rate, tick).unwrap_or_else(|e| panic!("{rate}: {e}"));
        assert_eq!(parts(limit), expected, "rate {rate}, tick {tick:?}");
        // The limit's rate is the f64 asked for, exactly.
        assert_eq!(
            limit.rate_per_second(tick),
            rate,
            "rate {rate}, tick {tick:?}"
        );
    }
    // 0.7 is not exact in binary either: 7 per 10 s, not 1 per 1.43 s or a rounded window.
    assert_eq!(parts(Limit::from_rate(0.7, MS).unwrap()), (7, 10_000));
    assert_eq!(parts(Limit::from_rate(2.0 / 7.0, SEC).unwrap()), (2, 7));
    // A rate with many digits: the smallest q that fits is large, and so is the window (as
    // documented). Checked against a brute-force scan of every q up to 1e6.
    assert_eq!(
        parts(Limit::from_rate(4.259_074_186_938_086, SEC).unwrap()),
        (1_160_027, 272_366)
    );
    assert_eq!(
        parts(Limit::from_rate(MAX_REQUESTS as f64, SEC).unwrap()),
        (MAX_REQUESTS, 1)
    );
}

#[test]
fn from_rate_errors() {
    for rate in [
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        0.0,
        -0.0,
        -1.0,
        -f64::MIN_POSITIVE,
    ] {
        let err = Limit::from_rate(rate, MS).unwrap_err();
        assert_eq!(
            err,
            LimitError::InvalidRate {
                per_second_bits: rate.to_bits()
            },
            "{rate}"
        );
        assert_eq!(err.rate().map(f64::to_bits), Some(rate.to_bits()));
    }
    // Ten digits of 1/3 are 1e-10 away, far outside the tolerance; no other q <= 1e6 fits.
    // Below one request per 1e6 s no fraction fits either, down to the smallest subnormal.
    for rate in [0.333_333_333_3, 9.99e-7, 1e-9, f64::MIN_POSITIVE, 5e-324] {
        assert_eq!(
            Limit::from_rate(rate, MS),
            Err(LimitError::InexactRate {
                per_second_bits: rate.to_bits()
            }),
            "{rate}"
        );
    }
    assert_eq!(
        Limit::from_rate(MAX_REQUESTS as f64 + 1.0, MS),
        Err(LimitError::TooManyRequests {
            max_requests: MAX_REQUESTS + 1
        })
    );
    // 16777216.5 = 33554433 per 2 s: the count, not the rate, is over the maximum.
    assert_eq!(
        Limit::from_rate(MAX_REQUESTS as f64 + 0.5, MS),
        Err(LimitError::TooManyRequests {
            max_requests: 2 * MAX_REQUESTS + 1
        })
    );
    assert_eq!(
        Limit::from_rate(1e300, MS),
        Err(LimitError::TooManyRequests {
            max_requests: u64::MAX
        })
    );
    assert_eq!(
        Limit::from_rate(2.0, Duration::ZERO),
        Err(LimitError::ZeroTick)
    );
    // 1 per 10 s is not a whole number of 3 s ticks.
    assert_eq!(
        Limit::from_rate(0.1, Duration::from_secs(3)),
        Err(LimitError::NotWholeTicks {
            period: Duration::from_secs(10),
            tick: Duration::from_secs(3),
        })
    );
    // A tick longer than the period.
    assert_eq!(
        Limit::from_rate(2.0, Duration::from_secs(2)),
        Err(LimitError::NotWholeTicks {
            period: SEC,
            tick: Duration::from_secs(2),
        })
    );
    // 1e6 seconds in picosecond-like ticks cannot exist (Duration's unit is 1 ns), but 1e6
    // seconds is 1e15 ns: still fits. Overflow needs a period past u64::MAX ticks, which
    // from_rate's q <= 1e6 s never reaches: WindowOverflow comes only from `per`.
    assert!(Limit::from_rate(1e-6, NS).is_ok());
}

#[test]
fn errors_display_their_values() {
    let shown = |e: LimitError| e.to_string();
    assert_eq!(
        shown(LimitError::ZeroTick),
        "the tick length must be above zero"
    );
    assert_eq!(
        shown(Limit::per(1, Duration::from_millis(1500), SEC).unwrap_err()),
        "period 1.5s is not a whole, nonzero number of 1s ticks"
    );
    assert_eq!(
        shown(Limit::per(1, Duration::MAX, NS).unwrap_err()),
        format!(
            "period {:?} holds more than u64::MAX ticks of 1ns",
            Duration::MAX
        )
    );
    assert_eq!(
        shown(Limit::from_rate(-2.0, MS).unwrap_err()),
        "rate -2 per second must be finite and above zero"
    );
    assert_eq!(
        shown(Limit::from_rate(1e-9, MS).unwrap_err()),
        "rate 0.000000001 per second is not p requests per q seconds (within 1e-12) for any \
         whole q up to 1000000"
    );
    assert_eq!(LimitError::ZeroTick.rate(), None);
}

#[test]
fn window_duration_and_rate_accessors() {
    let limit = Limit::per_hour(10, MS).unwrap();
    assert_eq!(limit.window_duration(MS), Some(Duration::from_secs(3600)));
    assert_eq!(limit.rate_per_second(MS), 10.0 / 3600.0);
    let limit = Limit::per(1, Duration::from_nanos(u64::MAX), NS).unwrap();
    assert_eq!(
        limit.window_duration(NS),
        Some(Duration::from_nanos(u64::MAX))
    );
    // u64::MAX ticks of u64::MAX seconds do not fit in a Duration.
    assert_eq!(limit.window_duration(Duration::from_secs(u64::MAX)), None);
    assert_eq!(limit.rate_per_second(Duration::ZERO), f64::INFINITY);
}

proptest! {
    /// Any `p / q` (q seconds, 1 ms ticks) comes back as that fraction in lowest terms, and
    /// the limit's rate is the same f64.
    #[test]
    fn from_rate_recovers_every_fraction(p in 1u64..=10_000, q in 1u64..=1000) {
        let rate = p as f64 / q as f64;
        let limit = Limit::from_rate(rate, MS).unwrap();
        prop_assert_eq!(limit.window_ticks() % 1000, 0);
        let window_secs = limit.window_ticks() / 1000;
        let g = gcd(p, q);
        prop_assert_eq!((limit.max_requests(), window_secs), (p / g, q / g));
        prop_assert_eq!(gcd(limit.max_requests(), window_secs), 1);
        prop_assert_eq!(limit.rate_per_second(MS).to_bits(), rate.to_bits());
    }

    /// No f64 makes `from_rate` panic, and whatever it builds is within the tolerance. Half the
    /// cases are any f64 at all; half are rates from 1e-7 to 1e8, where the search runs.
    #[test]
    fn from_rate_never_panics(
        rate in prop_oneof![proptest::num::f64::ANY, 1e-7..1e8f64],
        tick_nanos in prop_oneof![Just(1u64), Just(1_000_000), Just(1_000_000_000), 0u64..=2_000_000_000],
    ) {
        let tick = Duration::from_nanos(tick_nanos);
        match Limit::from_rate(rate, tick) {
            Ok(limit) => {
                let back = limit.rate_per_second(tick);
                prop_assert!((back - rate).abs() <= rate * 1.000_001e-12, "{} -> {}", rate, back);
            }
            Err(LimitError::InvalidRate { .. }) => {
                prop_assert!(!rate.is_finite() || rate <= 0.0);
            }
            Err(_) => prop_assert!(rate.is_finite() && rate > 0.0),
        }
    }
}

const US: Duration = Duration::from_micros(1);

#[test]
fn duration_built_limits_carry_their_tick() {
    assert_eq!(Limit::per(3, SEC, MS).unwrap().tick(), Some(MS));
    assert_eq!(Limit::per_second(3, NS).unwrap().tick(), Some(NS));
    assert_eq!(Limit::per_minute(3, SEC).unwrap().tick(), Some(SEC));
    assert_eq!(Limit::per_hour(3, US).unwrap().tick(), Some(US));
    assert_eq!(Limit::from_rate(2.5, MS).unwrap().tick(), Some(MS));
    assert_eq!(
        Limit::new(3, 10).unwrap().tick(),
        None,
        "raw ticks: the caller's unit"
    );
    // Every window of a joined limit, and its widest alone, say the same.
    let layered = Limit::per_second(10, MS)
        .unwrap()
        .and(Limit::per_hour(1_000, MS).unwrap())
        .unwrap();
    assert_eq!(layered.tick(), Some(MS));
    assert!(layered.windows().all(|window| window.tick() == Some(MS)));
    assert_eq!(layered.widest().tick(), Some(MS));
}

#[test]
fn and_keeps_one_tick_and_refuses_two() {
    let raw = Limit::new(10, 1_000).unwrap();
    let ms = Limit::per_hour(1_000, MS).unwrap();
    assert_eq!(
        raw.and(ms).unwrap().tick(),
        Some(MS),
        "raw windows join the other's unit"
    );
    assert_eq!(ms.and(raw).unwrap().tick(), Some(MS));
    assert_eq!(
        raw.and(Limit::new(100, 60_000).unwrap()).unwrap().tick(),
        None
    );
    // 10 per second in milliseconds and 1,000 per hour in seconds: which unit is meant?
    assert_eq!(
        Limit::per_second(10, MS)
            .unwrap()
            .and(Limit::per_hour(1_000, SEC).unwrap()),
        Err(LimitError::MixedTicks {
            first: MS,
            second: SEC
        })
    );
    // Converted first, they join.
    let joined = Limit::per_second(10, MS)
        .unwrap()
        .and(
            Limit::per_hour(1_000, SEC)
                .unwrap()
                .in_ticks_of(MS)
                .unwrap(),
        )
        .unwrap();
    let windows: Vec<_> = joined.windows().map(parts).collect();
    assert_eq!(windows, [(10, 1_000), (1_000, 3_600_000)]);
    assert_eq!(
        LimitError::MixedTicks {
            first: MS,
            second: SEC
        }
        .to_string(),
        "limits in ticks of 1ms and of 1s joined; convert one with Limit::in_ticks_of first"
    );
}

#[test]
fn in_ticks_of_rescales_every_window_exactly() {
    // The trap: a minute in nanoseconds is 60,000,000 microseconds, not 60,000.
    let minute = Limit::per_minute(100, NS).unwrap();
    let in_us = minute.in_ticks_of(US).unwrap();
    assert_eq!(parts(in_us), (100, 60_000_000));
    assert_eq!(in_us.tick(), Some(US));
    // Both ways: to a shorter tick, too.
    assert_eq!(parts(in_us.in_ticks_of(NS).unwrap()), (100, 60_000_000_000));
    assert_eq!(parts(minute.in_ticks_of(SEC).unwrap()), (100, 60));
    // The same tick: unchanged.
    assert_eq!(minute.in_ticks_of(NS).unwrap().tick(), Some(NS));
    assert_eq!(parts(minute.in_ticks_of(NS).unwrap()), parts(minute));
    // Every window of a layered limit, counts kept.
    let layered = Limit::per_second(10, NS)
        .unwrap()
        .and(Limit::per_minute(100, NS).unwrap())
        .and_then(|limit| limit.and(Limit::per_hour(1_000, NS).unwrap()))
        .unwrap();
    let windows: Vec<_> = layered
        .in_ticks_of(MS)
        .unwrap()
        .windows()
        .map(parts)
        .collect();
    assert_eq!(windows, [(10, 1_000), (100, 60_000), (1_000, 3_600_000)]);
    assert_eq!(layered.in_ticks_of(MS).unwrap().max_weight(), 10);
    // A limit of raw ticks is taken to be in the new unit already.
    let raw = Limit::new(5, 7).unwrap();
    assert_eq!(raw.in_ticks_of(US).unwrap().tick(), None);
    assert_eq!(parts(raw.in_ticks_of(US).unwrap()), (5, 7));
}

#[test]
fn in_ticks_of_never_rounds() {
    let short = Limit::per(1, Duration::from_nanos(1_500), NS).unwrap();
    assert_eq!(
        short.in_ticks_of(US),
        Err(LimitError::NotWholeTicks {
            period: Duration::from_nanos(1_500),
            tick: US,
        })
    );
    // Shorter than one new tick: not rounded up to one.
    assert_eq!(
        Limit::per(1, Duration::from_nanos(999), NS)
            .unwrap()
            .in_ticks_of(US),
        Err(LimitError::NotWholeTicks {
            period: Duration::from_nanos(999),
            tick: US,
        })
    );
    // One narrower window that does not divide is enough.
    let layered = Limit::per(1, Duration::from_millis(1_500), MS)
        .unwrap()
        .and(Limit::per_minute(30, MS).unwrap())
        .unwrap();
    assert!(matches!(
        layered.in_ticks_of(SEC),
        Err(LimitError::NotWholeTicks { period, tick: SEC }) if period == Duration::from_millis(1_500)
    ));
    assert_eq!(
        Limit::per_second(1, MS)
            .unwrap()
            .in_ticks_of(Duration::ZERO),
        Err(LimitError::ZeroTick)
    );
    // u64::MAX seconds in nanoseconds is past u64::MAX ticks.
    let longest = Limit::per(1, Duration::from_secs(u64::MAX), SEC).unwrap();
    assert_eq!(
        longest.in_ticks_of(NS),
        Err(LimitError::WindowOverflow {
            period: Duration::from_secs(u64::MAX),
            tick: NS,
        })
    );
}

#[test]
fn equality_compares_windows_in_ticks_not_the_tick() {
    use std::collections::HashSet;
    // What a limiter sees: the same windows and counts.
    let seconds = Limit::per_minute(100, SEC).unwrap();
    let raw = Limit::new(100, 60).unwrap();
    assert_eq!(seconds, raw);
    assert_ne!(seconds.tick(), raw.tick(), "the tick tells them apart");
    let set: HashSet<Limit> = [seconds, raw].into_iter().collect();
    assert_eq!(set.len(), 1, "Hash agrees with ==");
    // Different windows stay different, whatever the tick.
    assert_ne!(
        Limit::per_minute(100, SEC).unwrap(),
        Limit::per_minute(100, MS).unwrap()
    );
    assert_ne!(
        Limit::per_second(10, MS).unwrap(),
        Limit::per_second(10, MS)
            .unwrap()
            .and(Limit::per_hour(1_000, MS).unwrap())
            .unwrap()
    );
}

#[test]
fn the_tick_costs_no_memory() {
    // A copy sits in every per-key limit override and every answer: it took 64 bytes on
    // 64-bit targets before it carried a tick ((u64, u64) for the widest window and three
    // more pairs), and it takes no more now (the counts, at most 2^24, are u32s).
    assert!(
        std::mem::size_of::<Limit>() <= 64,
        "{} bytes",
        std::mem::size_of::<Limit>()
    );
}

#[test]
fn snapshots_record_the_limits_tick_and_restores_check_it() {
    use slidelimit::{Conversion, LockFreeLimiter, RateLimiter, SavedState, SnapshotError};
    let in_ms = Limit::per_second(2, MS).unwrap();
    let original: LockFreeLimiter<u64> = LockFreeLimiter::new(in_ms);
    assert!(original.check_and_hit(&1, 100));
    let snapshot = original.snapshot(100);
    assert_eq!(
        snapshot.tick_nanos,
        Some(1_000_000),
        "the limit's tick, unasked"
    );

    // The same limit: restored, and the limiter's limit keeps its tick.
    let same: LockFreeLimiter<u64> = LockFreeLimiter::new(in_ms);
    same.restore(&snapshot, 100, Conversion::Exact).unwrap();
    assert_eq!(same.limit().tick(), Some(MS));
    assert!(same.check_and_hit(&1, 200));
    assert!(
        !same.check_and_hit(&1, 300),
        "the restored hit at 100 counts"
    );

    // Two per second in microseconds: the snapshot's ticks would be read as microseconds.
    let in_us: LockFreeLimiter<u64> = LockFreeLimiter::new(Limit::per_second(2, US).unwrap());
    assert!(matches!(
        in_us.restore(&snapshot, 100, Conversion::ToLimiter),
        Err(SnapshotError::TickMismatch {
            snapshot: 1_000_000,
            limiter: 1_000
        })
    ));
    // A limiter of raw ticks says nothing about its unit: restored as before.
    let raw: LockFreeLimiter<u64> = LockFreeLimiter::new(Limit::new(2, 1_000).unwrap());
    assert!(raw.restore(&snapshot, 100, Conversion::Exact).is_ok());
}

proptest! {
    /// Any window in any of four ticks goes to nanoseconds and back unchanged, and its length
    /// in time stays the same.
    #[test]
    fn in_ticks_of_round_trips(
        count in 1u64..=1_000,
        window in 1u64..=1_000_000,
        tick in prop_oneof![Just(NS), Just(US), Just(MS), Just(SEC)],
    ) {
        let limit = Limit::per(count, tick * u32::try_from(window).unwrap(), tick).unwrap();
        let in_ns = limit.in_ticks_of(NS).unwrap();
        prop_assert_eq!(in_ns.window_duration(NS), limit.window_duration(tick));
        let back = in_ns.in_ticks_of(tick).unwrap();
        prop_assert_eq!(parts(back), parts(limit));
        prop_assert_eq!(back.tick(), Some(tick));
    }
}
