//! The window invariant, checked on recorded admissions.

/// How many admitted windows hold more than `max_requests`: the admissions `(tick, weight)`
/// are sorted, and for each admission at `t` the weight in `(t - W, t]` is summed (a window
/// holding the most weight can be slid to end at an admission).
pub(crate) fn over_admissions(
    mut admitted: Vec<(u64, u64)>,
    max_requests: u64,
    window: u64,
) -> usize {
    admitted.sort_unstable();
    let mut over = 0;
    let mut start = 0;
    let mut weight = 0;
    let mut j = 0;
    while j < admitted.len() {
        // All admissions at the same tick belong to the window that ends at it.
        let t = admitted[j].0;
        while j < admitted.len() && admitted[j].0 == t {
            weight += admitted[j].1;
            j += 1;
        }
        while admitted[start].0.saturating_add(window) <= t {
            weight -= admitted[start].1;
            start += 1;
        }
        if weight > max_requests {
            over += 1;
        }
    }
    over
}

#[test]
fn the_checker_catches_an_over_admission() {
    assert_eq!(over_admissions(vec![(1, 1), (2, 1), (3, 1)], 3, 10), 0);
    assert_eq!(
        over_admissions(vec![(1, 1), (2, 1), (3, 1), (10, 1)], 3, 10),
        1
    );
    assert_eq!(
        over_admissions(vec![(1, 1), (2, 1), (3, 1), (11, 1)], 3, 10),
        0
    );
    assert_eq!(over_admissions(vec![(5, 2), (5, 2)], 3, 10), 1);
}
