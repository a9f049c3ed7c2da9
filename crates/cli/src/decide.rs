//! Running requests through a decider and tallying what it did: per key and in total,
//! admitted and refused, and the peak window count.
//!
//! A [`Decider`] is a slidelimit limiter behind the `RateLimiter` trait (any variant, any
//! window: [`Ours`]) or the governor peer ([`Governor`]); the tally is written once for all.

use std::collections::HashMap;
use std::time::Duration;

use governor::clock::FakeRelativeClock;
use serde::Serialize;
use slidelimit::{Limit, WeightError};
use slidelimit_trace::governor::{quota, GovernorKeyed, QuotaError};

use crate::audit::{audit, audits};
use crate::progress::Progress;
use crate::trace::{LineError, LineFault, Request};
use crate::variant::DynLimiter;

/// Decides requests one at a time, in the order given.
pub trait Decider {
    /// Its name in reports.
    fn label(&self) -> String;

    /// Whether it promises never to admit more than `N` in a window (governor's GCRA does
    /// not: it is no sliding window).
    fn sliding_window(&self) -> bool;

    /// Admits (true) or refuses (false) `request`, recording an admission.
    ///
    /// # Errors
    /// [`WeightError`] when it cannot take the request's weight.
    fn decide(&mut self, request: &Request) -> Result<bool, WeightError>;
}

/// A slidelimit limiter, any variant and window.
pub struct Ours {
    /// The limiter.
    pub limiter: DynLimiter,
    /// How reports name it.
    pub label: String,
}

impl Decider for Ours {
    fn label(&self) -> String {
        self.label.clone()
    }

    fn sliding_window(&self) -> bool {
        true
    }

    fn decide(&mut self, request: &Request) -> Result<bool, WeightError> {
        self.limiter
            .check_and_hit_n(&request.key, request.timestamp, request.weight)
    }
}

/// governor's keyed GCRA limiter (the benchmarks' adapter), with the quota closest to the
/// limit (a burst of `N`, one cell back every `W / N`), on a fake clock moved to each
/// request's tick. The clock never goes back: an out-of-order request is decided at the
/// latest tick seen so far.
pub struct Governor {
    limiter: GovernorKeyed,
    clock: FakeRelativeClock,
    now_ns: u64,
    tick_ns: u64,
    ids: HashMap<String, u64>,
}

impl Governor {
    /// governor for `limit`, whose ticks last `tick`.
    ///
    /// # Errors
    /// [`QuotaError::Unexpressible`] when GCRA cannot be given this limit.
    pub fn new(limit: Limit, tick: Duration) -> Result<Self, QuotaError> {
        let tick_ns = u64::try_from(tick.as_nanos()).unwrap_or(u64::MAX);
        let window_ns = limit.window_ticks().saturating_mul(tick_ns);
        let quota = quota(limit.max_requests(), window_ns)?;
        let clock = FakeRelativeClock::default();
        Ok(Self {
            limiter: GovernorKeyed::on_fake_clock(quota, &clock),
            clock,
            now_ns: 0,
            tick_ns,
            ids: HashMap::new(),
        })
    }
}

impl Decider for Governor {
    fn label(&self) -> String {
        "governor (GCRA)".to_owned()
    }

    fn sliding_window(&self) -> bool {
        false
    }

    fn decide(&mut self, request: &Request) -> Result<bool, WeightError> {
        if request.weight != 1 {
            return Err(WeightError::Unsupported { n: request.weight });
        }
        let at_ns = request.timestamp.saturating_mul(self.tick_ns);
        if at_ns > self.now_ns {
            self.clock
                .advance(Duration::from_nanos(at_ns - self.now_ns));
            self.now_ns = at_ns;
        }
        let next = self.ids.len() as u64;
        let id = *self.ids.entry(request.key.clone()).or_insert(next);
        Ok(self.limiter.check_key(id))
    }
}

/// What a decider did for one key, or for all.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    /// Requests decided.
    pub requests: u64,
    /// Requests admitted.
    pub admitted: u64,
    /// Requests refused.
    pub refused: u64,
    /// The weight admitted (the number admitted when every weight is 1).
    pub admitted_weight: u64,
    /// The weight refused.
    pub refused_weight: u64,
    /// The most weight admitted in one window (for the total: the largest over keys).
    pub peak: u64,
}

/// Everything one decider did to a list of requests.
#[derive(Debug)]
pub struct Outcome {
    /// The decider's name.
    pub label: String,
    /// Whether it promises the sliding-window bound.
    pub sliding_window: bool,
    /// Per request, in order: admitted, refused, or `None` when it could not be decided.
    pub decisions: Vec<Option<bool>>,
    /// Per key.
    pub per_key: HashMap<String, Counts>,
    /// All keys together.
    pub total: Counts,
    /// Requests it could not take (their weight), by line.
    pub faults: Vec<LineFault>,
    /// Per window of the limit, narrowest first: the window and the most weight one key had
    /// admitted in one such window (the last is `total.peak`).
    pub window_peaks: Vec<(Limit, u64)>,
}

/// Runs `requests` through `decider` in order. A request it cannot take is a fault: with
/// `keep_going` it is recorded and skipped, otherwise the run stops there.
///
/// # Errors
/// The first request's fault, unless `keep_going`.
pub fn run(
    decider: &mut dyn Decider,
    requests: &[Request],
    limit: Limit,
    keep_going: bool,
    allow_progress: bool,
) -> Result<Outcome, LineFault> {
    let label = decider.label();
    let mut progress = Progress::new(
        &format!("deciding ({label})"),
        Some(requests.len() as u64),
        "requests",
        allow_progress,
    );
    let mut decisions = Vec::with_capacity(requests.len());
    let mut faults = Vec::new();
    for request in requests {
        match decider.decide(request) {
            Ok(admitted) => decisions.push(Some(admitted)),
            Err(error) => {
                let fault = LineFault {
                    line: request.line,
                    error: LineError::Weight(error),
                };
                if !keep_going {
                    return Err(fault);
                }
                faults.push(fault);
                decisions.push(None);
            }
        }
        progress.inc(1);
    }
    progress.finish();
    let (per_key, total, window_peaks) = tally(requests, &decisions, limit);
    Ok(Outcome {
        label,
        sliding_window: decider.sliding_window(),
        decisions,
        per_key,
        total,
        faults,
        window_peaks,
    })
}

/// Counts per key and in total, with each key's peak window computed from its admissions.
fn tally(
    requests: &[Request],
    decisions: &[Option<bool>],
    limit: Limit,
) -> (HashMap<String, Counts>, Counts, Vec<(Limit, u64)>) {
    let mut per_key: HashMap<String, Counts> = HashMap::new();
    let mut admitted_hits = Vec::new();
    let mut total = Counts::default();
    for (request, decision) in requests.iter().zip(decisions) {
        let Some(admitted) = *decision else { continue };
        let counts = per_key.entry(request.key.clone()).or_default();
        for counts in [counts, &mut total] {
            counts.requests += 1;
            if admitted {
                counts.admitted += 1;
                counts.admitted_weight += request.weight;
            } else {
                counts.refused += 1;
                counts.refused_weight += request.weight;
            }
        }
        if admitted {
            admitted_hits.push((request.key.as_str(), request.timestamp, request.weight));
        }
    }
    let narrower: Vec<(Limit, u64)> = audits(limit)
        .into_iter()
        .take(limit.window_count() - 1)
        .map(|(window, audit)| (window, audit.keys(admitted_hits.iter().copied()).peak()))
        .collect();
    let report = audit(limit).keys(admitted_hits);
    for (key, audited) in report.per_key() {
        if let Some(counts) = per_key.get_mut(*key) {
            counts.peak = audited.peak();
        }
    }
    total.peak = report.peak();
    let mut window_peaks = narrower;
    window_peaks.push((limit.widest(), total.peak));
    (per_key, total, window_peaks)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::WindowSpec;
    use crate::variant::{build, Variant};

    fn requests(items: &[(u64, &str, u64)]) -> Vec<Request> {
        items
            .iter()
            .enumerate()
            .map(|(i, &(timestamp, key, weight))| Request {
                line: i + 1,
                timestamp,
                key: key.to_owned(),
                weight,
            })
            .collect()
    }

    fn ours(window: WindowSpec, limit: Limit) -> Ours {
        Ours {
            limiter: build(Variant::LockFree, window, limit).unwrap(),
            label: "test".to_owned(),
        }
    }

    #[test]
    fn counts_and_peak_of_a_known_trace() {
        // 2 per 10 ticks: a admitted at 0, 1; refused at 5; admitted at 10 (0 left) and 11.
        let reqs = requests(&[
            (0, "a", 1),
            (1, "a", 1),
            (5, "a", 1),
            (10, "a", 1),
            (11, "a", 1),
            (3, "b", 1),
        ]);
        let limit = Limit::new(2, 10).unwrap();
        let outcome = run(
            &mut ours(WindowSpec::Exact, limit),
            &reqs,
            limit,
            false,
            false,
        )
        .unwrap();
        let got: Vec<_> = outcome.decisions.iter().map(|d| d.unwrap()).collect();
        assert_eq!(got, [true, true, false, true, true, true]);
        assert_eq!(outcome.per_key["a"].admitted, 4);
        assert_eq!(outcome.per_key["a"].refused, 1);
        assert_eq!(outcome.per_key["a"].peak, 2);
        assert_eq!(outcome.per_key["b"].peak, 1);
        assert_eq!(
            (
                outcome.total.requests,
                outcome.total.admitted,
                outcome.total.peak
            ),
            (6, 5, 2)
        );
    }

    #[test]
    fn a_weight_the_exact_log_cannot_take_is_a_fault_on_its_line() {
        let reqs = requests(&[(0, "a", 1), (1, "a", 3), (2, "a", 1)]);
        let limit = Limit::new(5, 10).unwrap();
        let fault = run(
            &mut ours(WindowSpec::Exact, limit),
            &reqs,
            limit,
            false,
            false,
        )
        .unwrap_err();
        assert_eq!(fault.line, 2);
        assert_eq!(
            fault.error,
            LineError::Weight(WeightError::Unsupported { n: 3 })
        );
        let outcome = run(
            &mut ours(WindowSpec::Exact, limit),
            &reqs,
            limit,
            true,
            false,
        )
        .unwrap();
        assert_eq!(outcome.decisions, [Some(true), None, Some(true)]);
        assert_eq!(outcome.faults.len(), 1);
        assert_eq!(outcome.total.requests, 2);
        let outcome = run(
            &mut ours(WindowSpec::Buckets(5), limit),
            &reqs,
            limit,
            false,
            false,
        )
        .unwrap();
        assert_eq!((outcome.total.admitted_weight, outcome.total.peak), (5, 5));
    }

    #[test]
    fn governor_refills_one_cell_per_period() {
        // 2 per 10 ms: burst of 2, one cell back every 5 ms.
        let limit = Limit::new(2, 10).unwrap();
        let mut governor = Governor::new(limit, Duration::from_millis(1)).unwrap();
        let reqs = requests(&[
            (0, "a", 1),
            (0, "a", 1),
            (0, "a", 1),
            (5, "a", 1),
            (6, "a", 1),
            (6, "b", 1),
        ]);
        let outcome = run(&mut governor, &reqs, limit, false, false).unwrap();
        let got: Vec<_> = outcome.decisions.iter().map(|d| d.unwrap()).collect();
        assert_eq!(got, [true, true, false, true, false, true]);
        assert!(!outcome.sliding_window);
        assert_eq!(
            Governor::new(Limit::new(20, 10).unwrap(), Duration::from_nanos(1)).err(),
            Some(QuotaError::Unexpressible {
                max_requests: 20,
                window_ns: 10
            })
        );
    }
}
