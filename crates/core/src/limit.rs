//! `Limit`: how many requests a key may make per window (up to four windows at once, such as
//! "10 per second and 600 per hour"), validated once at construction.
//!
//! Besides [`Limit::new`] (a count and a window in ticks), the constructors here take the window
//! as a [`Duration`] and the length of one tick ([`Limit::per`] and its wrappers), or a rate in
//! requests per second ([`Limit::from_rate`], for a limit given in queries per second). None of them
//! rounds: a period that is not a whole number of ticks, or a rate that is no exact `p / q`, is
//! a typed error.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::time::Duration;

/// At most this many requests per window (2^24): it keeps an exact log at 128 MiB per key
/// at worst, and leaves the packed counters of the approximate windows room for weights.
pub const MAX_REQUESTS: u64 = 1 << 24;

/// At most this many windows in one [`Limit`] (per second, minute, hour and day, say).
pub const MAX_WINDOWS: usize = 4;

/// A rate limit: at most `max_requests` hits in any window of `window_ticks` ticks.
///
/// Ticks are the caller's unit (seconds, milliseconds, nanoseconds); the window is in the
/// same unit as the timestamps passed to the limiter. [`Limit::per`], [`Limit::per_second`],
/// [`Limit::per_minute`], [`Limit::per_hour`] and [`Limit::from_rate`] build one from a
/// [`Duration`] or a rate, given the tick length.
///
/// # Ticks
/// A limit built from a duration or a rate remembers the tick it was given
/// ([`Limit::tick`]), so that it means the same time whichever limiter it is given to: the
/// Redis limiters, which count in microseconds, convert it ([`Limit::in_ticks_of`]) or refuse
/// it with a typed error when it is not a whole number of microseconds, and the tower layer
/// refuses, at start-up, an in-process limiter whose limit's tick is not its clock's. A limit
/// from [`Limit::new`] has no tick: its windows are taken to be in whatever unit the limiter
/// counts in.
///
/// `==` (and `Hash`) compare the windows and counts in ticks, as a limiter sees them, and not
/// the tick: a limiter counts in whatever unit it is fed and keeps no tick in a key's state,
/// so two limits with the same windows behave the same in it, and a limiter compares a key's
/// windows with its configured limit to notice a limit change. Compare [`Limit::tick`] as
/// well where the unit matters (`Limit::per_minute(1, Duration::from_secs(1))` equals
/// `Limit::new(1, 60)`, though only one of them says its ticks are seconds).
///
/// ```
/// use slidelimit::Limit;
/// use std::time::Duration;
/// let ns = Limit::per_minute(100, Duration::from_nanos(1))?;
/// assert_eq!(ns.tick(), Some(Duration::from_nanos(1)));
/// // The same 60 s in microseconds, as the Redis limiters count.
/// let us = ns.in_ticks_of(Duration::from_micros(1))?;
/// assert_eq!((us.window_ticks(), us.tick()), (60_000_000, Some(Duration::from_micros(1))));
/// assert_eq!(Limit::new(100, 60)?.tick(), None);
/// // The same windows in ticks: equal, whatever the ticks say (see above).
/// assert_eq!(Limit::per_minute(100, Duration::from_secs(1))?, Limit::new(100, 60)?);
/// # Ok::<(), slidelimit::LimitError>(())
/// ```
///
/// ```
/// use slidelimit::{Limit, LimitError};
/// let limit = Limit::new(100, 60)?;
/// assert_eq!(limit.max_requests(), 100);
/// assert_eq!(limit.window_ticks(), 60);
/// assert_eq!(Limit::new(0, 60), Err(LimitError::ZeroMaxRequests));
/// # Ok::<(), LimitError>(())
/// ```
///
/// # Several windows
/// [`Limit::and`] joins limits into one of up to [`MAX_WINDOWS`] windows, all enforced at
/// once: a hit is admitted only if every window has room, and then counts in all of them.
/// [`Limit::max_requests`] and [`Limit::window_ticks`] are then the *widest* window's (whose
/// count is the largest); [`Limit::windows`] lists every window, narrowest first, and
/// [`Limit::max_weight`] is the heaviest request any window can ever take (the narrowest
/// window's count).
///
/// ```
/// use slidelimit::{Limit, LimitError};
/// let burst_and_sustained = Limit::new(10, 1)?.and(Limit::new(600, 3_600)?)?;
/// assert_eq!(burst_and_sustained.window_count(), 2);
/// assert_eq!((burst_and_sustained.max_requests(), burst_and_sustained.window_ticks()), (600, 3_600));
/// assert_eq!(burst_and_sustained.max_weight(), 10);
/// let windows: Vec<_> = burst_and_sustained.windows().map(|w| (w.max_requests(), w.window_ticks())).collect();
/// assert_eq!(windows, [(10, 1), (600, 3_600)]);
///
/// // 700 per hour can never bind under 10 per minute... only 600 fit in an hour anyway.
/// let never = Limit::new(10, 60)?.and(Limit::new(700, 3_600)?);
/// assert!(matches!(never, Err(LimitError::WindowNeverBinds { max_requests: 700, window_ticks: 3_600 })));
/// # Ok::<(), LimitError>(())
/// ```
#[derive(Clone, Copy, Debug, Eq)]
pub struct Limit {
    /// The widest window's length.
    window_ticks: u64,
    /// The narrower windows' lengths, narrowest first; unused entries are 0.
    narrower_ticks: [u64; MAX_WINDOWS - 1],
    /// The widest window's count. Counts are at most [`MAX_REQUESTS`] (2^24), so a `u32`
    /// holds them, and the tick fits beside them in the 64 bytes the limit took before it
    /// carried one (a copy sits in every limit override a limiter keeps per key, and in every
    /// `Answer`).
    max_requests: u32,
    /// The narrower windows' counts, in the order of `narrower_ticks`; unused entries are 0.
    narrower_requests: [u32; MAX_WINDOWS - 1],
    /// The length of one tick, for a limit built from durations; `None` for [`Limit::new`]'s
    /// raw ticks (the caller's unit).
    tick: Option<Duration>,
}

/// The windows and counts, not the tick (see "Ticks" in [`Limit`]'s docs): a key's window
/// keeps no tick, and a limiter compares it with its configured limit to notice a change.
impl PartialEq for Limit {
    fn eq(&self, other: &Self) -> bool {
        self.windows_in_ticks() == other.windows_in_ticks()
    }
}

/// Consistent with `==`: the tick is left out.
impl Hash for Limit {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.windows_in_ticks().hash(state);
    }
}

// The counts' narrowing above is lossless.
const _: () = assert!(MAX_REQUESTS <= u32::MAX as u64);

/// Why a [`Limit`] could not be built.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LimitError {
    /// `max_requests` was zero: such a limiter would refuse everything.
    ZeroMaxRequests,
    /// `window_ticks` was zero: an empty window holds no hit, so nothing would be limited.
    ZeroWindow,
    /// `max_requests` was above [`MAX_REQUESTS`].
    TooManyRequests {
        /// The value asked for (`u64::MAX` when it does not fit in a `u64`).
        max_requests: u64,
    },
    /// The tick length was zero: no period is a whole number of empty ticks.
    ZeroTick,
    /// The period was not a whole number of ticks (a period shorter than one tick included):
    /// the window would have to be rounded, which would change the limit.
    NotWholeTicks {
        /// The period asked for.
        period: Duration,
        /// The tick length.
        tick: Duration,
    },
    /// The period holds more than `u64::MAX` ticks.
    WindowOverflow {
        /// The period asked for.
        period: Duration,
        /// The tick length.
        tick: Duration,
    },
    /// The rate was NaN, infinite, zero or negative.
    InvalidRate {
        /// The rate's bits ([`f64::to_bits`]), so that the error stays `Eq`; see
        /// [`LimitError::rate`].
        per_second_bits: u64,
    },
    /// The rate is not `p` requests per `q` seconds, within a relative 1e-12, for any whole
    /// `q` up to [`Limit::MAX_RATE_PERIOD_SECS`].
    InexactRate {
        /// The rate's bits ([`f64::to_bits`]), so that the error stays `Eq`; see
        /// [`LimitError::rate`].
        per_second_bits: u64,
    },
    /// [`Limit::and`] joined limits built with different ticks: which unit the joined limit
    /// is in is unclear (convert one with [`Limit::in_ticks_of`] first).
    MixedTicks {
        /// The first limit's tick.
        first: Duration,
        /// The second limit's tick.
        second: Duration,
    },
    /// A limit built in ticks of `limit_tick` was given to a clock counting ticks of
    /// `clock_tick` ([`Limit::check_counted_in`]): every window would last the wrong time.
    TickMismatch {
        /// The limit's tick ([`Limit::tick`]).
        limit_tick: Duration,
        /// The tick the clock counts.
        clock_tick: Duration,
    },
    /// [`Limit::and`] would give more than [`MAX_WINDOWS`] windows.
    TooManyWindows {
        /// How many windows were asked for.
        windows: usize,
    },
    /// Two windows of one limit have the same length: one of them never binds, and which
    /// one was meant is unclear.
    DuplicateWindow {
        /// The length both windows have.
        window_ticks: u64,
    },
    /// This window can never be the one that refuses: another window of the limit is as
    /// strict or stricter everywhere. Either a wider window allows no more hits (then the
    /// narrower one never binds), or a narrower window of `n` per `w` already keeps every
    /// span of `W` ticks to at most `n * ceil(W / w)` hits, which this window's count
    /// reaches.
    WindowNeverBinds {
        /// The window's count.
        max_requests: u64,
        /// The window's length.
        window_ticks: u64,
    },
}

impl LimitError {
    /// The rate, in requests per second, that [`LimitError::InvalidRate`] or
    /// [`LimitError::InexactRate`] refused; `None` for the other variants.
    ///
    /// ```
    /// use slidelimit::Limit;
    /// use std::time::Duration;
    /// let err = Limit::from_rate(-2.0, Duration::from_millis(1)).unwrap_err();
    /// assert_eq!(err.rate(), Some(-2.0));
    /// ```
    #[must_use]
    pub const fn rate(&self) -> Option<f64> {
        match *self {
            Self::InvalidRate { per_second_bits } | Self::InexactRate { per_second_bits } => {
                Some(f64::from_bits(per_second_bits))
            }
            _ => None,
        }
    }
}

impl fmt::Display for LimitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ZeroMaxRequests => f.write_str("max_requests must be at least 1"),
            Self::ZeroWindow => f.write_str("window_ticks must be at least 1"),
            Self::TooManyRequests { max_requests } => write!(
                f,
                "max_requests {max_requests} is above the supported maximum {MAX_REQUESTS}"
            ),
            Self::ZeroTick => f.write_str("the tick length must be above zero"),
            Self::NotWholeTicks { period, tick } => write!(
                f,
                "period {period:?} is not a whole, nonzero number of {tick:?} ticks"
            ),
            Self::WindowOverflow { period, tick } => write!(
                f,
                "period {period:?} holds more than u64::MAX ticks of {tick:?}"
            ),
            Self::InvalidRate { per_second_bits } => write!(
                f,
                "rate {} per second must be finite and above zero",
                f64::from_bits(*per_second_bits)
            ),
            Self::InexactRate { per_second_bits } => write!(
                f,
                "rate {} per second is not p requests per q seconds (within 1e-12) for any \
                 whole q up to {}",
                f64::from_bits(*per_second_bits),
                Limit::MAX_RATE_PERIOD_SECS
            ),
            Self::MixedTicks { first, second } => write!(
                f,
                "limits in ticks of {first:?} and of {second:?} joined; convert one with \
                 Limit::in_ticks_of first"
            ),
            Self::TickMismatch {
                limit_tick,
                clock_tick,
            } => write!(
                f,
                "the limit was built in ticks of {limit_tick:?}, but the clock counts ticks of \
                 {clock_tick:?}: a window meant to last W x {limit_tick:?} would last W x \
                 {clock_tick:?}; build the limit in ticks of {clock_tick:?} \
                 (`limit.in_ticks_of({clock_tick:?})`), or count ticks of {limit_tick:?}"
            ),
            Self::TooManyWindows { windows } => write!(
                f,
                "{windows} windows asked for; a limit has at most {MAX_WINDOWS}"
            ),
            Self::DuplicateWindow { window_ticks } => write!(
                f,
                "two windows of {window_ticks} ticks in one limit; give each length once"
            ),
            Self::WindowNeverBinds {
                max_requests,
                window_ticks,
            } => write!(
                f,
                "the window of {max_requests} per {window_ticks} ticks can never bind: another \
                 window of the limit is as strict or stricter"
            ),
        }
    }
}

impl std::error::Error for LimitError {}

impl Limit {
    /// The longest period, in seconds, that [`Limit::from_rate`] considers: a rate is read as
    /// `p` requests per `q` seconds with `q` at most this (so the slowest rate it accepts is one
    /// request per 1,000,000 seconds, about 11.6 days).
    pub const MAX_RATE_PERIOD_SECS: u64 = 1_000_000;

    /// A limit of `max_requests` hits per `window_ticks` ticks.
    ///
    /// # Errors
    /// [`LimitError::ZeroMaxRequests`], [`LimitError::ZeroWindow`], or
    /// [`LimitError::TooManyRequests`] above [`MAX_REQUESTS`].
    pub const fn new(max_requests: u64, window_ticks: u64) -> Result<Self, LimitError> {
        if max_requests == 0 {
            return Err(LimitError::ZeroMaxRequests);
        }
        if window_ticks == 0 {
            return Err(LimitError::ZeroWindow);
        }
        if max_requests > MAX_REQUESTS {
            return Err(LimitError::TooManyRequests { max_requests });
        }
        // At most MAX_REQUESTS, which fits in a u32 (asserted above).
        Ok(Self::single(max_requests as u32, window_ticks, None))
    }

    /// The length of one tick, for a limit built from a duration or a rate ([`Limit::per`]
    /// and its wrappers, [`Limit::from_rate`], or [`Limit::in_ticks_of`]); `None` for a limit
    /// of raw ticks ([`Limit::new`]), whose windows are in the caller's unit.
    #[must_use]
    pub const fn tick(&self) -> Option<Duration> {
        self.tick
    }

    /// The most hits the window may hold; for a limit of several windows, the widest
    /// window's (see [`Limit::windows`]).
    #[must_use]
    pub const fn max_requests(&self) -> u64 {
        self.max_requests as u64
    }

    /// [`Self::max_requests`] in the 32 bits the limit keeps it in, for window states that
    /// store it so (see the assertion on [`MAX_REQUESTS`] above).
    pub(crate) const fn max_requests_u32(&self) -> u32 {
        self.max_requests
    }

    /// The window length, in ticks; for a limit of several windows, the widest window's.
    #[must_use]
    pub const fn window_ticks(&self) -> u64 {
        self.window_ticks
    }

    /// How many windows the limit enforces at once (1 to [`MAX_WINDOWS`]).
    #[must_use]
    pub const fn window_count(&self) -> usize {
        let mut count = 1;
        while count < MAX_WINDOWS && self.narrower_ticks[count - 1] != 0 {
            count += 1;
        }
        count
    }

    /// Whether the limit has more than one window.
    #[must_use]
    pub const fn is_layered(&self) -> bool {
        self.narrower_ticks[0] != 0
    }

    /// The heaviest request any window can ever admit: the narrowest window's count (for a
    /// single window, [`Limit::max_requests`]).
    #[must_use]
    pub const fn max_weight(&self) -> u64 {
        if self.is_layered() {
            self.narrower_requests[0] as u64
        } else {
            self.max_requests as u64
        }
    }

    /// Every window as a limit of its own (with this limit's tick), narrowest (and smallest
    /// count) first, the widest last.
    pub fn windows(&self) -> impl ExactSizeIterator<Item = Limit> + Clone {
        let count = self.window_count();
        let mut all = [self.widest(); MAX_WINDOWS];
        for (i, slot) in all.iter_mut().enumerate().take(count - 1) {
            *slot = Self::single(self.narrower_requests[i], self.narrower_ticks[i], self.tick);
        }
        all.into_iter().take(count)
    }

    /// The widest window alone (with this limit's tick).
    #[must_use]
    pub const fn widest(&self) -> Limit {
        Self::single(self.max_requests, self.window_ticks, self.tick)
    }

    /// What `==` compares: every window and count, not the tick.
    #[allow(clippy::type_complexity)]
    fn windows_in_ticks(&self) -> (u64, [u64; MAX_WINDOWS - 1], u32, [u32; MAX_WINDOWS - 1]) {
        (
            self.window_ticks,
            self.narrower_ticks,
            self.max_requests,
            self.narrower_requests,
        )
    }

    /// A single window whose count and length come from a valid limit.
    const fn single(max_requests: u32, window_ticks: u64, tick: Option<Duration>) -> Self {
        Self {
            window_ticks,
            narrower_ticks: [0; MAX_WINDOWS - 1],
            max_requests,
            narrower_requests: [0; MAX_WINDOWS - 1],
            tick,
        }
    }

    /// This limit's windows and `other`'s, enforced together: a hit is admitted only where
    /// every window has room.
    ///
    /// ```
    /// use slidelimit::{Limit, LimitError};
    /// use std::time::Duration;
    /// let ms = Duration::from_millis(1);
    /// let limit = Limit::per_second(10, ms)?.and(Limit::per_minute(100, ms)?)?.and(Limit::per_hour(1_000, ms)?)?;
    /// assert_eq!(limit.window_count(), 3);
    /// assert_eq!(Limit::new(5, 10)?.and(Limit::new(9, 10)?), Err(LimitError::DuplicateWindow { window_ticks: 10 }));
    /// # Ok::<(), LimitError>(())
    /// ```
    ///
    /// The joined limit keeps the parts' tick ([`Limit::tick`]); a part without one (from
    /// [`Limit::new`]) is taken to be in the other's.
    ///
    /// # Errors
    /// [`LimitError::MixedTicks`] when the parts carry different ticks;
    /// [`LimitError::TooManyWindows`] beyond [`MAX_WINDOWS`]; [`LimitError::DuplicateWindow`]
    /// when two windows have one length; [`LimitError::WindowNeverBinds`] for a window that
    /// another window makes redundant (a wider window with no more hits, or a wider window
    /// whose count `N` is at least `n * ceil(W / w)` for a narrower `n` per `w`).
    pub fn and(self, other: Limit) -> Result<Limit, LimitError> {
        let tick = match (self.tick, other.tick) {
            (Some(first), Some(second)) if first != second => {
                return Err(LimitError::MixedTicks { first, second })
            }
            (first, second) => first.or(second),
        };
        let windows = self.window_count() + other.window_count();
        if windows > MAX_WINDOWS {
            return Err(LimitError::TooManyWindows { windows });
        }
        let mut all: Vec<(u32, u64)> = self
            .windows()
            .chain(other.windows())
            .map(|w| (w.max_requests, w.window_ticks))
            .collect();
        all.sort_unstable_by_key(|&(_, window_ticks)| window_ticks);
        for pair in all.windows(2) {
            if pair[0].1 == pair[1].1 {
                return Err(LimitError::DuplicateWindow {
                    window_ticks: pair[0].1,
                });
            }
        }
        for (i, &(narrow_n, narrow_w)) in all.iter().enumerate() {
            for &(wide_n, wide_w) in &all[i + 1..] {
                if wide_n <= narrow_n {
                    return Err(LimitError::WindowNeverBinds {
                        max_requests: narrow_n.into(),
                        window_ticks: narrow_w,
                    });
                }
                // Every span of wide_w ticks lies in ceil(wide_w / narrow_w) spans of
                // narrow_w, and that many bursts of narrow_n, narrow_w apart, fit in it.
                let spans = wide_w.div_ceil(narrow_w);
                if u64::from(wide_n) >= u64::from(narrow_n).saturating_mul(spans) {
                    return Err(LimitError::WindowNeverBinds {
                        max_requests: wide_n.into(),
                        window_ticks: wide_w,
                    });
                }
            }
        }
        let (max_requests, window_ticks) = all[all.len() - 1];
        let mut joined = Self::single(max_requests, window_ticks, tick);
        for (i, &(narrow_n, narrow_w)) in all[..all.len() - 1].iter().enumerate() {
            joined.narrower_requests[i] = narrow_n;
            joined.narrower_ticks[i] = narrow_w;
        }
        Ok(joined)
    }

    /// Whether this limit may be counted by a clock of ticks of `clock_tick`: a limit of raw
    /// ticks ([`Limit::new`]) may (its unit is whatever the clock counts), one that carries
    /// its tick only if it is `clock_tick`. The one check every place that pairs a limit with
    /// a clock makes (the tower layer, the core's waiting).
    ///
    /// # Errors
    /// [`LimitError::TickMismatch`], whose message names the fix.
    pub fn check_counted_in(&self, clock_tick: Duration) -> Result<(), LimitError> {
        match self.tick {
            Some(limit_tick) if limit_tick != clock_tick => Err(LimitError::TickMismatch {
                limit_tick,
                clock_tick,
            }),
            _ => Ok(()),
        }
    }

    /// The same limit counted in ticks of `tick`: every window is rescaled, exactly, from
    /// this limit's tick to `tick` (the counts stay). A limit without a tick
    /// ([`Limit::new`]) is returned unchanged: its windows are taken to be in ticks of `tick`
    /// already.
    ///
    /// ```
    /// use slidelimit::{Limit, LimitError};
    /// use std::time::Duration;
    /// let (ns, us, ms) = (Duration::from_nanos(1), Duration::from_micros(1), Duration::from_millis(1));
    /// let limit = Limit::per_second(10, ns)?.and(Limit::per_minute(100, ns)?)?;
    /// let in_ms = limit.in_ticks_of(ms)?;
    /// let windows: Vec<_> = in_ms.windows().map(|w| (w.max_requests(), w.window_ticks())).collect();
    /// assert_eq!(windows, [(10, 1_000), (100, 60_000)]);
    /// assert_eq!(in_ms.tick(), Some(ms));
    ///
    /// // 1.5 µs is no whole number of microseconds: an error, not a rounded window.
    /// let short = Limit::per(1, Duration::from_nanos(1_500), ns)?;
    /// assert!(matches!(short.in_ticks_of(us), Err(LimitError::NotWholeTicks { .. })));
    ///
    /// // Raw ticks are the caller's: nothing to convert.
    /// assert_eq!(Limit::new(5, 60)?.in_ticks_of(us)?, Limit::new(5, 60)?);
    /// # Ok::<(), LimitError>(())
    /// ```
    ///
    /// # Errors
    /// [`LimitError::ZeroTick`] for a zero `tick`; [`LimitError::NotWholeTicks`] when a
    /// window is not a whole, nonzero number of `tick`s (its length as `period`);
    /// [`LimitError::WindowOverflow`] when a window holds more than `u64::MAX` of them.
    pub fn in_ticks_of(&self, tick: Duration) -> Result<Limit, LimitError> {
        if tick.is_zero() {
            return Err(LimitError::ZeroTick);
        }
        let Some(from) = self.tick else {
            return Ok(*self);
        };
        if from == tick {
            return Ok(*self);
        }
        let mut converted = *self;
        converted.tick = Some(tick);
        converted.window_ticks = rescale(self.window_ticks, from, tick)?;
        for window_ticks in &mut converted.narrower_ticks[..self.window_count() - 1] {
            *window_ticks = rescale(*window_ticks, from, tick)?;
        }
        // Every window was scaled by the same factor, so their order and every ratio
        // `Limit::and` checks stay as they were: the converted limit is valid.
        Ok(converted)
    }

    /// `max_requests` hits per `period`, for timestamps counted in ticks of length `tick`.
    ///
    /// The window is `period / tick` ticks, which must be a whole number: nothing is rounded.
    /// Use `Duration::from_nanos(1)` for [`MonotonicClock`](crate::MonotonicClock) timestamps,
    /// `Duration::from_millis(1)` for milliseconds.
    ///
    /// ```
    /// use slidelimit::{Limit, LimitError};
    /// use std::time::Duration;
    /// let ms = Duration::from_millis(1);
    /// let limit = Limit::per(10, Duration::from_millis(1500), ms)?;
    /// assert_eq!((limit.max_requests(), limit.window_ticks()), (10, 1500));
    ///
    /// // 1.5 s is not a whole number of seconds: an error, not a rounded window.
    /// let err = Limit::per(10, Duration::from_millis(1500), Duration::from_secs(1));
    /// assert!(matches!(err, Err(LimitError::NotWholeTicks { .. })));
    /// # Ok::<(), LimitError>(())
    /// ```
    ///
    /// # Errors
    /// Checked in this order: [`LimitError::ZeroTick`] for a zero `tick`;
    /// [`LimitError::NotWholeTicks`] when `period` is not a multiple of `tick` (a nonzero
    /// period shorter than one tick included); [`LimitError::WindowOverflow`] when the window
    /// is more than `u64::MAX` ticks; then those of [`Limit::new`]
    /// ([`LimitError::ZeroMaxRequests`], [`LimitError::ZeroWindow`] for a zero `period`,
    /// [`LimitError::TooManyRequests`]).
    pub const fn per(
        max_requests: u64,
        period: Duration,
        tick: Duration,
    ) -> Result<Self, LimitError> {
        let tick_nanos = tick.as_nanos();
        if tick_nanos == 0 {
            return Err(LimitError::ZeroTick);
        }
        let period_nanos = period.as_nanos();
        if period_nanos % tick_nanos != 0 {
            return Err(LimitError::NotWholeTicks { period, tick });
        }
        let window_ticks = period_nanos / tick_nanos;
        if window_ticks > u64::MAX as u128 {
            return Err(LimitError::WindowOverflow { period, tick });
        }
        // The check above makes the cast lossless.
        match Self::new(max_requests, window_ticks as u64) {
            Ok(mut limit) => {
                limit.tick = Some(tick);
                Ok(limit)
            }
            Err(error) => Err(error),
        }
    }

    /// `max_requests` hits per second, in ticks of length `tick`: [`Limit::per`] with a period
    /// of one second.
    ///
    /// ```
    /// use slidelimit::Limit;
    /// use std::time::Duration;
    /// let limit = Limit::per_second(1_000_000, Duration::from_nanos(1))?;
    /// assert_eq!(limit.window_ticks(), 1_000_000_000);
    /// # Ok::<(), slidelimit::LimitError>(())
    /// ```
    ///
    /// # Errors
    /// Those of [`Limit::per`].
    pub const fn per_second(max_requests: u64, tick: Duration) -> Result<Self, LimitError> {
        Self::per(max_requests, Duration::from_secs(1), tick)
    }

    /// `max_requests` hits per minute, in ticks of length `tick`: [`Limit::per`] with a period
    /// of 60 seconds.
    ///
    /// ```
    /// use slidelimit::Limit;
    /// use std::time::Duration;
    /// let limit = Limit::per_minute(100, Duration::from_secs(1))?;
    /// assert_eq!((limit.max_requests(), limit.window_ticks()), (100, 60));
    /// # Ok::<(), slidelimit::LimitError>(())
    /// ```
    ///
    /// # Errors
    /// Those of [`Limit::per`].
    pub const fn per_minute(max_requests: u64, tick: Duration) -> Result<Self, LimitError> {
        Self::per(max_requests, Duration::from_secs(60), tick)
    }

    /// `max_requests` hits per hour, in ticks of length `tick`: [`Limit::per`] with a period of
    /// 3,600 seconds.
    ///
    /// ```
    /// use slidelimit::Limit;
    /// use std::time::Duration;
    /// let limit = Limit::per_hour(5_000, Duration::from_millis(1))?;
    /// assert_eq!((limit.max_requests(), limit.window_ticks()), (5_000, 3_600_000));
    /// # Ok::<(), slidelimit::LimitError>(())
    /// ```
    ///
    /// # Errors
    /// Those of [`Limit::per`].
    pub const fn per_hour(max_requests: u64, tick: Duration) -> Result<Self, LimitError> {
        Self::per(max_requests, Duration::from_secs(3_600), tick)
    }

    /// A limit of `per_second` requests per second (a rate such as 0.5 or 1,200 queries per second), as the
    /// exact fraction `p` requests per `q` seconds with the smallest `q`, in ticks of length
    /// `tick`.
    ///
    /// The fraction is the one with the smallest whole `q` (at most
    /// [`Limit::MAX_RATE_PERIOD_SECS`]) such that `|p / q - per_second| <= per_second * 1e-12`,
    /// found among the continued-fraction approximations of the `f64` and checked in exact
    /// integer arithmetic. So `0.1` (not exact in binary) is 1 request per 10 s, `0.5` is 1 per
    /// 2 s, `2.5` is 5 per 2 s and `1.0 / 3.0` is 1 per 3 s. Nothing is rounded beyond that
    /// tolerance: a rate typed with too few digits to be within 1e-12 of a fraction with
    /// `q <= 1_000_000` (say `0.3333333333`) is an error, and so is a rate below one request
    /// per 1,000,000 seconds.
    ///
    /// The window is `q` seconds, and a sliding window admits all `p` hits of a window in one
    /// burst. A rate with many significant digits often is within 1e-12 of some fraction only
    /// with a large `q` (4.259074186938086 is 1160027 per 272366 s, a window of three days):
    /// check [`Limit::window_ticks`], or build the limit with [`Limit::per`] when the window
    /// matters more than the exact rate.
    ///
    /// ```
    /// use slidelimit::{Limit, LimitError};
    /// use std::time::Duration;
    /// let ms = Duration::from_millis(1);
    /// let limit = Limit::from_rate(2.5, ms)?;
    /// assert_eq!((limit.max_requests(), limit.window_ticks()), (5, 2_000));
    /// assert_eq!(limit.rate_per_second(ms), 2.5);
    ///
    /// let limit = Limit::from_rate(0.1, ms)?;
    /// assert_eq!((limit.max_requests(), limit.window_ticks()), (1, 10_000));
    ///
    /// assert!(matches!(Limit::from_rate(f64::NAN, ms), Err(LimitError::InvalidRate { .. })));
    /// # Ok::<(), LimitError>(())
    /// ```
    ///
    /// # Errors
    /// [`LimitError::InvalidRate`] for a NaN, infinite, zero or negative rate;
    /// [`LimitError::InexactRate`] when no fraction with `q <= MAX_RATE_PERIOD_SECS` is within
    /// the tolerance; [`LimitError::TooManyRequests`] when `p` is above [`MAX_REQUESTS`]; then
    /// [`LimitError::ZeroTick`], [`LimitError::NotWholeTicks`] (a tick that does not divide
    /// `q` seconds) or [`LimitError::WindowOverflow`], as from [`Limit::per`].
    pub fn from_rate(per_second: f64, tick: Duration) -> Result<Self, LimitError> {
        let per_second_bits = per_second.to_bits();
        if !per_second.is_finite() || per_second <= 0.0 {
            return Err(LimitError::InvalidRate { per_second_bits });
        }
        let (p, q) = match rational::smallest_fraction(per_second) {
            rational::Fraction::Found { p, q } => (p, q),
            rational::Fraction::TooLarge { p } => {
                return Err(LimitError::TooManyRequests { max_requests: p })
            }
            rational::Fraction::None => return Err(LimitError::InexactRate { per_second_bits }),
        };
        if p > MAX_REQUESTS {
            return Err(LimitError::TooManyRequests { max_requests: p });
        }
        Self::per(p, Duration::from_secs(q), tick)
    }

    /// The limit's rate in requests per second, when a tick lasts `tick`:
    /// `max_requests / (window_ticks * tick)`, computed as one division of two `f64`s (so
    /// exact whenever `max_requests * 1e9` and `window_ticks * tick` in nanoseconds are below
    /// 2^53, as for every limit [`Limit::from_rate`] builds from `p / q` with small `p`, `q`).
    ///
    /// A zero `tick` gives `f64::INFINITY`.
    ///
    /// ```
    /// use slidelimit::Limit;
    /// use std::time::Duration;
    /// let ms = Duration::from_millis(1);
    /// assert_eq!(Limit::per_minute(30, ms)?.rate_per_second(ms), 0.5);
    /// # Ok::<(), slidelimit::LimitError>(())
    /// ```
    #[must_use]
    pub fn rate_per_second(&self, tick: Duration) -> f64 {
        // u64 -> f64 and u128 -> f64 round to nearest; exact below 2^53, which is what matters.
        let (requests_nanos, window_nanos) = (
            self.max_requests as f64 * 1e9,
            self.window_ticks as f64 * tick.as_nanos() as f64,
        );
        requests_nanos / window_nanos
    }

    /// The window as a [`Duration`], when a tick lasts `tick`; `None` if it does not fit in a
    /// `Duration`.
    ///
    /// ```
    /// use slidelimit::Limit;
    /// use std::time::Duration;
    /// let limit = Limit::per_hour(10, Duration::from_millis(1))?;
    /// assert_eq!(limit.window_duration(Duration::from_millis(1)), Some(Duration::from_secs(3_600)));
    /// # Ok::<(), slidelimit::LimitError>(())
    /// ```
    #[must_use]
    pub fn window_duration(&self, tick: Duration) -> Option<Duration> {
        let ticks = u32::try_from(self.window_ticks).ok();
        match ticks {
            Some(ticks) => tick.checked_mul(ticks),
            // Beyond u32 ticks: multiply in nanoseconds, which is exact.
            None => {
                duration_from_nanos(tick.as_nanos().checked_mul(u128::from(self.window_ticks))?)
            }
        }
    }
}

/// `window_ticks` ticks of `from` as a whole number of ticks of `to` (nonzero).
fn rescale(window_ticks: u64, from: Duration, to: Duration) -> Result<u64, LimitError> {
    // A tick is at most u64::MAX seconds, under 2^94 ns, so the product needs a checked
    // multiply; a window that long cannot be a Duration either.
    let period_nanos = u128::from(window_ticks).checked_mul(from.as_nanos());
    let period = period_nanos
        .and_then(duration_from_nanos)
        .unwrap_or(Duration::MAX);
    let Some(period_nanos) = period_nanos else {
        return Err(LimitError::WindowOverflow { period, tick: to });
    };
    let to_nanos = to.as_nanos();
    if period_nanos % to_nanos != 0 {
        return Err(LimitError::NotWholeTicks { period, tick: to });
    }
    u64::try_from(period_nanos / to_nanos)
        .map_err(|_| LimitError::WindowOverflow { period, tick: to })
}

/// `nanos` as a [`Duration`], if it fits.
fn duration_from_nanos(nanos: u128) -> Option<Duration> {
    let secs = u64::try_from(nanos / 1_000_000_000).ok()?;
    // The remainder is below 1e9, so it fits in a u32.
    Some(Duration::new(secs, (nanos % 1_000_000_000) as u32))
}

/// The smallest-denominator fraction within a relative tolerance of an `f64`, in exact integer
/// arithmetic.
mod rational {
    use super::Limit;

    /// The tolerance, as its inverse: `|p / q - r| <= r / TOLERANCE_INV`.
    const TOLERANCE_INV: u128 = 1_000_000_000_000;

    /// Below this rate even `1 / MAX_RATE_PERIOD_SECS` is too far: no fraction fits. Keeping
    /// such rates out also bounds the binary exponent, so the rate's denominator fits in a
    /// `u128` (at most 2^76).
    const MIN_RATE: f64 = 1e-7;

    /// From 2^53 up every `f64` is an integer: `p = r`, `q = 1`, and far above
    /// [`MAX_REQUESTS`](super::MAX_REQUESTS).
    const INTEGER_RATE: f64 = 9_007_199_254_740_992.0;

    #[derive(Debug, PartialEq, Eq)]
    pub(super) enum Fraction {
        /// `p / q` in lowest terms (convergents and semiconvergents always are).
        Found { p: u64, q: u64 },
        /// The fraction's `p` does not fit in a `u64` (`p` is `u64::MAX` then), or the rate is
        /// an integer of at least 2^53, `p` itself.
        TooLarge { p: u64 },
        /// No `q <= MAX_RATE_PERIOD_SECS` gives a fraction within the tolerance.
        None,
    }

    /// `r` as `n / d`, exactly, in lowest terms; `r` is finite, in `[MIN_RATE, INTEGER_RATE)`.
    fn exact(r: f64) -> (u128, u128) {
        let bits = r.to_bits();
        let biased_exponent = (bits >> 52) & 0x7ff;
        // r >= MIN_RATE is normal: the implicit leading bit is there.
        let mantissa = u128::from((bits & ((1 << 52) - 1)) | (1 << 52));
        // r = mantissa * 2^(biased_exponent - 1075); r < 2^53 makes the shift at least 0 and
        // r >= 1e-7 (> 2^-24) makes it at most 76.
        let shift = 1075 - biased_exponent;
        let common = mantissa.trailing_zeros().min(shift as u32);
        (mantissa >> common, 1u128 << (shift as u32 - common))
    }

    /// Whether `p / q` is within the tolerance of `n / d`: `|p d - q n| * TOL_INV <= q n`.
    fn close(p: u128, q: u128, n: u128, d: u128) -> bool {
        // p <= (r + 1) q, so p d <= (n + d) q < 2^97 (n < 2^53, d <= 2^76, q < 2^20) and
        // q n < 2^73: neither product overflows. A difference whose product with
        // TOLERANCE_INV overflows is far above q n.
        let diff = (p * d).abs_diff(q * n);
        diff.checked_mul(TOLERANCE_INV)
            .is_some_and(|lhs| lhs <= q * n)
    }

    /// The fraction with the smallest `q <= MAX_RATE_PERIOD_SECS` within the tolerance of `r`,
    /// a finite rate above zero.
    ///
    /// That fraction is closer to `r` than every fraction with a smaller denominator, so it is
    /// a best approximation: a convergent or a semiconvergent of `r`'s continued fraction.
    /// These are walked in order of increasing denominator; within one run of semiconvergents
    /// the distance to `r` falls as the denominator grows, so a binary search finds the first
    /// one within the tolerance.
    pub(super) fn smallest_fraction(r: f64) -> Fraction {
        if r < MIN_RATE {
            return Fraction::None;
        }
        if r >= INTEGER_RATE {
            // `as` saturates: a rate of 2^64 or more reports u64::MAX.
            return Fraction::TooLarge { p: r as u64 };
        }
        let max_q = u128::from(Limit::MAX_RATE_PERIOD_SECS);
        let (n, d) = exact(r);
        // Euclid on n / d: the remainder pair (num, den) and the last two convergents
        // (h1 / k1 the older, h2 / k2 the newer), starting from 0 / 1 and 1 / 0.
        let (mut num, mut den) = (n, d);
        let (mut h1, mut k1, mut h2, mut k2) = (0u128, 1u128, 1u128, 0u128);
        while den != 0 {
            let a = num / den;
            (num, den) = (den, num % den);
            // The semiconvergents (h1 + j h2) / (k1 + j k2), j = 1..=a; j = a is the next
            // convergent. Those beyond max_q are out of bounds; in the first run (k2 == 0) every
            // denominator is k1 = 1.
            let j_max = (max_q - k1).checked_div(k2).map_or(a, |bound| a.min(bound));
            let found = |j: u128| close(h1 + j * h2, k1 + j * k2, n, d);
            if j_max >= 1 && found(j_max) {
                // Binary search for the first j in 1..=j_max within the tolerance.
                let (mut lo, mut hi) = (1u128, j_max);
                while lo < hi {
                    let mid = lo + (hi - lo) / 2;
                    if found(mid) {
                        hi = mid;
                    } else {
                        lo = mid + 1;
                    }
                }
                let (p, q) = (h1 + lo * h2, k1 + lo * k2);
                // q <= max_q fits in a u64; p may not.
                return match u64::try_from(p) {
                    Ok(p) => Fraction::Found { p, q: q as u64 },
                    Err(_) => Fraction::TooLarge { p: u64::MAX },
                };
            }
            if j_max < a {
                // The next convergent's denominator is above max_q.
                return Fraction::None;
            }
            (h1, k1, h2, k2) = (h2, k2, h1 + a * h2, k1 + a * k2);
        }
        // Unreachable in practice: the last convergent is n / d itself, which is within the
        // tolerance, so the loop returns or runs out of denominators first.
        Fraction::None
    }

    #[cfg(test)]
    mod tests {
        use super::{exact, smallest_fraction, Fraction};

        #[test]
        fn exact_is_the_f64_value() {
            assert_eq!(exact(1.0), (1, 1));
            assert_eq!(exact(2.5), (5, 2));
            assert_eq!(exact(1200.0), (1200, 1));
            assert_eq!(exact(0.375), (3, 8));
            let (n, d) = exact(0.1);
            assert_eq!((n, d), (3_602_879_701_896_397, 1 << 55));
        }

        #[test]
        fn smallest_denominator_wins() {
            assert_eq!(smallest_fraction(0.1), Fraction::Found { p: 1, q: 10 });
            assert_eq!(smallest_fraction(1.0 / 3.0), Fraction::Found { p: 1, q: 3 });
            assert_eq!(smallest_fraction(2.0 / 3.0), Fraction::Found { p: 2, q: 3 });
            assert_eq!(
                smallest_fraction(1e-6),
                Fraction::Found { p: 1, q: 1_000_000 }
            );
            assert_eq!(smallest_fraction(7.0), Fraction::Found { p: 7, q: 1 });
            // Just below and above an integer: the integer, from either side of the fraction.
            assert_eq!(
                smallest_fraction(5.0 - 1e-13),
                Fraction::Found { p: 5, q: 1 }
            );
            assert_eq!(
                smallest_fraction(5.0 + 1e-13),
                Fraction::Found { p: 5, q: 1 }
            );
            // The first semiconvergent within the tolerance is in the middle of its run, not at
            // the run's end (a brute-force scan over q agrees).
            assert_eq!(
                smallest_fraction(93.968_704_425_981_2),
                Fraction::Found {
                    p: 8_698_589,
                    q: 92_569
                }
            );
            assert_eq!(smallest_fraction(0.3333333333), Fraction::None);
            assert_eq!(smallest_fraction(9.9e-7), Fraction::None);
        }
    }
}
