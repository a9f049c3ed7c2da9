//! The workload matrix: which keys, which limit, which mix of calls, which clock.
//!
//! Key streams are generated once per workload, before any timed region, and shared by every
//! variant and thread (each thread starts at its own offset and wraps around).

use slidelimit::Limit;

use crate::clock::{BenchClock, OPS_PER_TICK, TICK_NS};
use slidelimit_trace::rng::{mix64, SplitMix64};
use slidelimit_trace::zipf::Zipf;

/// Which keys the calls use.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Keys {
    /// Every call on one key.
    Hot,
    /// `keys` distinct keys, uniformly.
    Uniform {
        /// How many distinct keys.
        keys: u64,
    },
    /// `keys` distinct keys, Zipf-distributed with exponent `exponent` (a heavy tail).
    Zipf {
        /// How many distinct keys.
        keys: u64,
        /// The Zipf exponent `s`.
        exponent: f64,
    },
}

impl Keys {
    /// How many distinct keys the stream can hold.
    #[must_use]
    pub const fn universe_size(&self) -> u64 {
        match *self {
            Self::Hot => 1,
            Self::Uniform { keys } | Self::Zipf { keys, .. } => keys,
        }
    }

    /// Every key the stream can hold (for structures that are filled in advance).
    pub fn universe(&self) -> impl Iterator<Item = u64> {
        (0..self.universe_size()).map(mix64)
    }

    /// A short description for reports.
    #[must_use]
    pub fn describe(&self) -> String {
        match *self {
            Self::Hot => "1 hot key".to_owned(),
            Self::Uniform { keys } => format!("{keys} keys, uniform"),
            Self::Zipf { keys, exponent } => format!("{keys} keys, Zipf s={exponent}"),
        }
    }
}

/// Which calls are made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mix {
    /// Every call is `check_and_hit`.
    CheckAndHit,
    /// One call in ten is `check_and_hit`, the rest `allowed` (non-consuming).
    ReadHeavy,
}

impl Mix {
    /// Whether call number `i` of a stream is a non-consuming `allowed`.
    #[inline]
    #[must_use]
    pub const fn is_read(self, i: usize) -> bool {
        matches!(self, Self::ReadHeavy) && i % 10 != 0
    }

    /// A short description for reports.
    #[must_use]
    pub const fn describe(self) -> &'static str {
        match self {
            Self::CheckAndHit => "100% check_and_hit",
            Self::ReadHeavy => "90% allowed, 10% check_and_hit",
        }
    }
}

/// Which clock the calls read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClockKind {
    /// The shared fake clock, one tick per [`OPS_PER_TICK`] decisions.
    Fake,
    /// `std::time::Instant` through `slidelimit::MonotonicClock` (governor: its default clock).
    Real,
}

/// One workload of the matrix.
#[derive(Clone, Debug, PartialEq)]
pub struct Workload {
    /// The name used on the command line and in reports.
    pub name: &'static str,
    /// What it shows.
    pub about: &'static str,
    /// Which keys.
    pub keys: Keys,
    /// The limit's `max_requests`.
    pub max_requests: u64,
    /// The window in nanoseconds (with the fake clock, a whole number of ticks).
    pub window_ns: u64,
    /// Which calls.
    pub mix: Mix,
    /// Which clock.
    pub clock: ClockKind,
    /// Whether the machine floor runs here: once per key distribution (the floor ignores the
    /// limit, so a second limit on the same keys would only repeat it).
    pub floor: bool,
    /// Whether every call is covered by the worst-call bound: besides the 1-in-16 latency
    /// samples, each round of 16 consecutive calls is timed as a whole, so a stall in an
    /// unsampled call still shows (one more timer read per 16 calls; on for `zipf`, whose key
    /// map keeps growing, off where a fraction of a nanosecond per call would show).
    pub worst_call: bool,
}

impl Workload {
    /// The limit every variant enforces (in nanosecond ticks).
    ///
    /// # Panics
    /// Never for the built-in workloads (their limits are valid).
    #[must_use]
    pub fn limit(&self) -> Limit {
        Limit::new(self.max_requests, self.window_ns).expect("built-in limits are valid")
    }

    /// A fresh clock of this workload's kind, at 0.
    #[must_use]
    pub fn new_clock(&self) -> BenchClock {
        match self.clock {
            ClockKind::Fake => BenchClock::fake(),
            ClockKind::Real => BenchClock::real(),
        }
    }

    /// Decisions run single-threaded before the timed region, so that it starts in steady
    /// state: one window's worth with the fake clock (capped), a fixed count with the real one.
    #[must_use]
    pub fn warmup_ops(&self) -> u64 {
        match self.clock {
            ClockKind::Fake => (self.window_ns / TICK_NS * OPS_PER_TICK).min(300_000),
            ClockKind::Real => 50_000,
        }
    }

    /// Whether every call is on one key.
    #[must_use]
    pub fn is_hot(&self) -> bool {
        self.keys == Keys::Hot
    }

    /// The workload's key stream (deterministic: the same on every run).
    #[must_use]
    pub fn stream(&self) -> KeyStream {
        KeyStream::generate(self.keys, stream_len(self.keys), 0x5EED_0002)
    }

    /// The limit as text: "32 per 4000 ticks (4 ms)".
    #[must_use]
    pub fn describe_limit(&self) -> String {
        match self.clock {
            ClockKind::Fake => format!(
                "{} per {} ticks ({})",
                self.max_requests,
                self.window_ns / TICK_NS,
                human_ns(self.window_ns)
            ),
            ClockKind::Real => format!("{} per {}", self.max_requests, human_ns(self.window_ns)),
        }
    }
}

fn human_ns(ns: u64) -> String {
    if ns >= 1_000_000 && ns % 1_000_000 == 0 {
        format!("{} ms", ns / 1_000_000)
    } else if ns >= 1_000 && ns % 1_000 == 0 {
        format!("{} µs", ns / 1_000)
    } else {
        format!("{ns} ns")
    }
}

/// Stream lengths: enough distinct draws that a thread rarely replays the same stretch within
/// a cell, small enough to generate in well under a second.
const fn stream_len(keys: Keys) -> usize {
    match keys {
        Keys::Hot => 1,
        Keys::Uniform { .. } => 1 << 20,
        Keys::Zipf { .. } => 1 << 22,
    }
}

/// The default matrix. Windows are chosen against the fake clock's pace (one tick per
/// [`OPS_PER_TICK`] decisions): a key with rate `r` decisions per tick sees `r × W` requests
/// per window, which fixes the allowed fraction independently of a variant's speed.
#[must_use]
pub fn all() -> Vec<Workload> {
    const UNIFORM: Keys = Keys::Uniform { keys: 10_000 };
    vec![
        Workload {
            name: "hot-allowed",
            about: "one key, ~640 requests per window against a limit of 1000: mostly admitted",
            keys: Keys::Hot,
            max_requests: 1000,
            window_ns: 10 * TICK_NS,
            mix: Mix::CheckAndHit,
            clock: ClockKind::Fake,
            floor: true,
            worst_call: false,
        },
        Workload {
            name: "hot-refused",
            about: "one key, ~640 requests per window against a limit of 10: mostly refused",
            keys: Keys::Hot,
            max_requests: 10,
            window_ns: 10 * TICK_NS,
            mix: Mix::CheckAndHit,
            clock: ClockKind::Fake,
            floor: false,
            worst_call: false,
        },
        Workload {
            name: "uniform-allowed",
            about: "10k keys, ~26 requests per key per window against 32: mostly admitted",
            keys: UNIFORM,
            max_requests: 32,
            window_ns: 4_000 * TICK_NS,
            mix: Mix::CheckAndHit,
            clock: ClockKind::Fake,
            floor: true,
            worst_call: false,
        },
        Workload {
            name: "uniform-refused",
            about: "10k keys, ~26 requests per key per window against 2: mostly refused",
            keys: UNIFORM,
            max_requests: 2,
            window_ns: 4_000 * TICK_NS,
            mix: Mix::CheckAndHit,
            clock: ClockKind::Fake,
            floor: false,
            worst_call: false,
        },
        Workload {
            name: "zipf",
            about: "1M keys, Zipf s=1: a refused head, an admitted tail, and a key map that \
                    keeps growing (idle-key removal and map growth matter)",
            keys: Keys::Zipf {
                keys: 1_000_000,
                exponent: 1.0,
            },
            max_requests: 32,
            window_ns: 4_000 * TICK_NS,
            mix: Mix::CheckAndHit,
            clock: ClockKind::Fake,
            floor: true,
            worst_call: true,
        },
        Workload {
            name: "churn",
            about: "1M keys drawn uniformly, 4 per 20,000 calls: a key comes back only long \
                    after its window and the lateness tolerance, so nearly every call creates \
                    a key and the sweep keeps removing them (the key lifecycle's cost)",
            keys: Keys::Uniform { keys: 1_000_000 },
            max_requests: 4,
            // 20,000 calls at OPS_PER_TICK decisions per tick.
            window_ns: 20_000 / OPS_PER_TICK * TICK_NS,
            mix: Mix::CheckAndHit,
            clock: ClockKind::Fake,
            floor: false,
            worst_call: true,
        },
        Workload {
            name: "read-heavy",
            about: "10k keys, 90% allowed / 10% check_and_hit: the RwLock's one advantage",
            keys: UNIFORM,
            max_requests: 4,
            window_ns: 4_000 * TICK_NS,
            mix: Mix::ReadHeavy,
            clock: ClockKind::Fake,
            floor: false,
            worst_call: false,
        },
        Workload {
            name: "real-clock",
            about: "10k keys like uniform-allowed, but every call reads the real monotonic \
                    clock: what the clock costs",
            keys: UNIFORM,
            max_requests: 32,
            window_ns: 1_000_000,
            mix: Mix::CheckAndHit,
            clock: ClockKind::Real,
            floor: false,
            worst_call: false,
        },
    ]
}

/// The default workload called `name`.
#[must_use]
pub fn find(name: &str) -> Option<Workload> {
    all().into_iter().find(|w| w.name == name)
}

/// A pre-generated, wrap-around sequence of keys.
#[derive(Clone, Debug)]
pub struct KeyStream {
    keys: Box<[u64]>,
    mask: usize,
}

impl KeyStream {
    /// `len` (a power of two) keys drawn from `keys`, reproducibly from `seed`.
    ///
    /// # Panics
    /// If `len` is not a power of two, or a Zipf law has no keys or an exponent that is not
    /// positive and finite (the matrix defines its own, valid ones).
    #[must_use]
    pub fn generate(keys: Keys, len: usize, seed: u64) -> Self {
        assert!(
            len.is_power_of_two(),
            "stream length must be a power of two"
        );
        let mut rng = SplitMix64::new(seed);
        let ranks: Box<[u64]> = match keys {
            Keys::Hot => vec![0; len].into_boxed_slice(),
            Keys::Uniform { keys } => (0..len).map(|_| rng.below(keys)).collect(),
            Keys::Zipf { keys, exponent } => {
                let zipf = Zipf::new(keys, exponent).expect("a valid Zipf law in the matrix");
                (0..len).map(|_| zipf.sample(&mut rng) - 1).collect()
            }
        };
        Self {
            keys: ranks.iter().map(|&rank| mix64(rank)).collect(),
            mask: len - 1,
        }
    }

    /// Key number `i` (wrapping around).
    #[inline]
    #[must_use]
    pub fn get(&self, i: usize) -> u64 {
        self.keys[i & self.mask]
    }

    /// The stream's length.
    #[must_use]
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether the stream is empty (never: lengths are powers of two).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Where thread `thread` of `threads` starts reading.
    #[must_use]
    pub fn offset(&self, thread: usize, threads: usize) -> usize {
        self.keys.len() / threads.max(1) * thread
    }
}

#[cfg(test)]
mod tests {
    use super::{all, KeyStream, Keys};

    #[test]
    fn workload_names_are_unique_and_limits_valid() {
        let workloads = all();
        for (i, w) in workloads.iter().enumerate() {
            let _ = w.limit();
            assert!(
                workloads[..i].iter().all(|o| o.name != w.name),
                "{}",
                w.name
            );
        }
    }

    #[test]
    fn streams_stay_inside_their_universe() {
        let keys = Keys::Uniform { keys: 100 };
        let universe: std::collections::HashSet<u64> = keys.universe().collect();
        let stream = KeyStream::generate(keys, 1 << 12, 1);
        assert!((0..stream.len()).all(|i| universe.contains(&stream.get(i))));
        assert_eq!(stream.get(3), stream.get(3 + stream.len()), "wraps around");
    }
}
