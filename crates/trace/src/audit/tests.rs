//! The window check against a brute-force reference: every window ending at a hit, summed
//! hit by hit with the project's rule written out directly.

use proptest::prelude::*;

use super::{Audit, AuditError, Window};

/// What the reference finds: (peak, worst window's end, over-limit windows, first violation's
/// end and weight).
type Reference = (u64, Option<u64>, u64, Option<(u64, u64)>);

/// Every distinct tick holding a hit ends a window; a hit at `s` is in the window ending at
/// `t` iff `s <= t` and `s + W > t` (saturating). Ticks clamped as the audit does.
fn reference(hits: &[(u64, u64)], limit: u64, window: u64, max_tick: u64, from: u64) -> Reference {
    let hits: Vec<(u64, u64)> = hits.iter().map(|&(t, w)| (t.min(max_tick), w)).collect();
    let mut ends: Vec<u64> = hits
        .iter()
        .map(|&(t, _)| t)
        .filter(|&t| t >= from)
        .collect();
    ends.sort_unstable();
    ends.dedup();
    let (mut peak, mut worst, mut over, mut first) = (0, None, 0, None);
    for &end in &ends {
        let weight: u64 = hits
            .iter()
            .filter(|&&(s, _)| s <= end && s.saturating_add(window) > end)
            .map(|&(_, w)| w)
            .sum();
        if worst.is_none() || weight > peak {
            peak = weight;
            worst = Some(end);
        }
        if weight > limit {
            over += 1;
            first = first.or(Some((end, weight)));
        }
    }
    (peak, worst, over, first)
}

fn audited(hits: &[(u64, u64)], audit: Audit) -> Reference {
    let report = audit.key(hits.iter().copied());
    (
        report.peak(),
        report.worst.map(|w| w.last_tick),
        report.over_limit_windows,
        report.first_violation.map(|w| (w.last_tick, w.weight)),
    )
}

/// Ticks that cluster (so windows overlap), some near `u64::MAX`.
fn tick() -> impl Strategy<Value = u64> {
    prop_oneof![4 => 0u64..60, 1 => (0u64..8).prop_map(|d| u64::MAX - d)]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn agrees_with_the_brute_force_reference(
        hits in prop::collection::vec((tick(), 1u64..4), 0..40),
        limit in 0u64..8,
        window in prop_oneof![1u64..25, Just(u64::MAX)],
        max_tick in prop_oneof![Just(u64::MAX), Just(u64::MAX - 2), 30u64..60],
        from in prop_oneof![Just(0u64), 0u64..60],
    ) {
        let audit = Audit::new(limit, window)
            .unwrap()
            .clamp_ticks_to(max_tick)
            .windows_ending_from(from);
        let max_tick = max_tick.min(u64::MAX - 1);
        let expected = reference(&hits, limit, window, max_tick, from);
        prop_assert_eq!(audited(&hits, audit), expected);
        // Given in time order, the running peak is the same.
        let mut sorted = hits.clone();
        sorted.sort_unstable_by_key(|&(t, _)| t);
        let mut running = audit.running();
        for &(t, w) in &sorted {
            running.push(t, w);
        }
        prop_assert_eq!(running.peak(), expected.0);
    }

    #[test]
    fn keys_are_audited_apart(
        hits in prop::collection::vec((0u8..3, tick(), 1u64..3), 0..40),
        limit in 0u64..5,
        window in 1u64..25,
    ) {
        let audit = Audit::new(limit, window).unwrap();
        let report = audit.keys(hits.iter().copied());
        let mut peak = 0;
        let mut over = 0;
        for key in 0..3u8 {
            let of_key: Vec<(u64, u64)> =
                hits.iter().filter(|h| h.0 == key).map(|&(_, t, w)| (t, w)).collect();
            let expected = reference(&of_key, limit, window, u64::MAX - 1, 0);
            peak = peak.max(expected.0);
            over += expected.2;
            match report.per_key().get(&key) {
                Some(r) => {
                    prop_assert_eq!(r.peak(), expected.0);
                    prop_assert_eq!(r.over_limit_windows, expected.2);
                }
                None => prop_assert!(of_key.is_empty()),
            }
        }
        prop_assert_eq!(report.peak(), peak);
        prop_assert_eq!(report.over_limit_windows(), over);
        prop_assert_eq!(report.check().is_ok(), over == 0);
    }
}

#[test]
fn a_window_is_half_open() {
    let audit = Audit::new(1, 10).unwrap();
    // Hits at 0 and 10 never share a window; 1 and 10 do.
    assert_eq!(audit.key([(0, 1), (10, 1)]).peak(), 1);
    assert!(audit.key([(0, 1), (10, 1)]).within_limit());
    let report = audit.key([(10, 1), (1, 1)]);
    assert_eq!(report.peak(), 2);
    assert_eq!(
        report.worst,
        Some(Window {
            first_tick: 1,
            last_tick: 10,
            weight: 2,
            hits: 2
        })
    );
    assert_eq!(audit.key([]).peak(), 0);
    assert_eq!(audit.key([]).worst, None);
}

#[test]
fn reports_the_first_violation_and_counts_every_one() {
    // 3 per 10: 1, 2, 3 are fine; (0, 10] holds four, (2, 12] holds 3, 10 and 2 at 12.
    let audit = Audit::new(3, 10).unwrap();
    let report = audit.key([(3, 1), (1, 1), (10, 1), (2, 1), (12, 2)]);
    assert_eq!(report.over_limit_windows, 2, "{report:?}");
    let first = report.first_violation.unwrap();
    assert_eq!(
        (first.first_tick, first.last_tick, first.weight),
        (1, 10, 4)
    );
    assert_eq!(report.peak(), 4);
    assert_eq!(report.worst, Some(first), "the earliest of the heaviest");
    assert_eq!(
        report.check().unwrap_err().to_string(),
        "4 admitted (4 hits) in the window of ticks 1..=10, above the limit of 3"
    );
    // Weights add up: two hits of 2 at one tick are over a limit of 3.
    assert_eq!(audit.key([(5, 2), (5, 2)]).over_limit_windows, 1);
}

#[test]
fn the_keyed_check_names_the_key_of_the_earliest_violation() {
    let audit = Audit::new(1, 5).unwrap();
    let report = audit.keys([
        ("a", 20, 1),
        ("a", 21, 1),
        ("b", 3, 1),
        ("b", 4, 1),
        ("c", 0, 1),
    ]);
    assert_eq!(report.over_limit_windows(), 2);
    assert_eq!(report.peak(), 2);
    let error = report.check().unwrap_err();
    assert_eq!(error.key, "b");
    assert_eq!(error.over.window.last_tick, 4);
    assert_eq!(
        error.to_string(),
        "key \"b\": 2 admitted (2 hits) in the window of ticks 0..=4, above the limit of 1"
    );
}

#[test]
fn nothing_wraps_near_the_top() {
    let audit = Audit::new(1, 5).unwrap();
    // u64::MAX is read as u64::MAX - 1, so it shares a window with the hit before it.
    assert_eq!(audit.key([(u64::MAX - 1, 1), (u64::MAX, 1)]).peak(), 2);
    assert_eq!(audit.key([(u64::MAX, 1)]).peak(), 1);
    // Near the top `s + W` saturates and the rule stays exact.
    assert_eq!(audit.key([(u64::MAX - 4, 1), (u64::MAX - 1, 1)]).peak(), 2);
    assert_eq!(audit.key([(u64::MAX - 6, 1), (u64::MAX - 1, 1)]).peak(), 1);
    // Clamped as a limiter with two reserved tick values records them.
    let clamped = audit.clamp_ticks_to(u64::MAX - 2);
    assert_eq!(clamped.key([(u64::MAX - 2, 1), (u64::MAX, 1)]).peak(), 2);
    // A window as long as time holds everything.
    let forever = Audit::new(1, u64::MAX).unwrap();
    assert_eq!(forever.key([(0, 1), (u64::MAX, 1)]).peak(), 2);
}

#[test]
fn only_windows_ending_from_a_tick_are_judged() {
    let audit = Audit::new(2, 10).unwrap().windows_ending_from(5);
    // (−6, 4] holds three but ends before 5; (−5, 5] holds four.
    assert_eq!(audit.key([(1, 1), (2, 1), (4, 1)]).peak(), 0);
    assert_eq!(audit.key([(1, 1), (2, 1), (4, 1), (5, 1)]).peak(), 4);
}

#[test]
fn a_zero_window_is_an_error() {
    assert_eq!(Audit::new(1, 0), Err(AuditError::ZeroWindow));
}

#[test]
fn the_running_peak_reads_a_late_hit_at_the_latest_tick() {
    let mut running = Audit::new(1, 10).unwrap().running();
    running.push(100, 1);
    running.push(0, 1);
    assert_eq!(
        running.peak(),
        2,
        "the late hit counts as at 100, beside it"
    );
}
