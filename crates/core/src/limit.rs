//! `Limit`: how many requests a key may make per window, validated once at construction.

use std::fmt;

/// At most this many requests per window (2^24): it keeps an exact log at 128 MiB per key
/// at worst, and leaves the packed counters of the approximate windows room for weights.
pub const MAX_REQUESTS: u64 = 1 << 24;

/// A rate limit: at most `max_requests` hits in any window of `window_ticks` ticks.
///
/// Ticks are the caller's unit (seconds, milliseconds, nanoseconds); the window is in the
/// same unit as the timestamps passed to the limiter.
///
/// ```
/// use slidelimit::{Limit, LimitError};
/// let limit = Limit::new(100, 60)?;
/// assert_eq!(limit.max_requests(), 100);
/// assert_eq!(limit.window_ticks(), 60);
/// assert_eq!(Limit::new(0, 60), Err(LimitError::ZeroMaxRequests));
/// # Ok::<(), LimitError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Limit {
    max_requests: u64,
    window_ticks: u64,
}

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
        /// The value asked for.
        max_requests: u64,
    },
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
        }
    }
}

impl std::error::Error for LimitError {}

impl Limit {
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
        Ok(Self {
            max_requests,
            window_ticks,
        })
    }

    /// The most hits any window may hold.
    #[must_use]
    pub const fn max_requests(&self) -> u64 {
        self.max_requests
    }

    /// The window length, in ticks.
    #[must_use]
    pub const fn window_ticks(&self) -> u64 {
        self.window_ticks
    }
}
