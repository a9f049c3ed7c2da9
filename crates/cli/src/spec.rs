//! The small languages of the command line: durations (`500ms`), limits (`100/1s`), rates
//! (`1200/s`), counts (`10k`) and windows (`exact`, `buckets:10`), each parsed into a typed
//! value or a typed error.
//!
//! Grammar (spaces are not allowed inside a value):
//! - duration: `[COUNT]UNIT`, `COUNT` a whole number (1 if left out), `UNIT` one of `ns`, `us`,
//!   `ms`, `s`, `m` (minutes), `h`, `d`. `1500ms`, `s`, `90s`, `2h`. The grammar of every
//!   command and tool, written once in `slidelimit_trace::duration`.
//! - limit: `N/DURATION`, `N` a whole number of requests per window; or `R/s` with a decimal
//!   `R` (a rate per second, read as the exact fraction `p` per `q` seconds by
//!   `Limit::from_rate`: `2.5/s` is 5 per 2 s); or up to four of these joined by `+`, all
//!   enforced at once (`10/1s+600/1h`: a burst and a sustained window, see `Limit::and`).
//! - rate (offered load): `R/DURATION`, `R` a decimal: `1200/s`, `0.5/s`, `30/m`.
//! - count: a whole number with an optional `k` (thousand) or `M` (million) suffix.
//! - window: `exact`, or `buckets:B` with `B` a whole number of buckets.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use slidelimit::{Limit, LimitError};
use slidelimit_trace::duration::{self, DurationError};

/// Why a value of the command line could not be read.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    /// A duration outside the grammar (`slidelimit_trace::duration`).
    #[error(transparent)]
    Duration(#[from] DurationError),
    /// A limit or rate without its `/`.
    #[error("`{0}` has no `/` (expected N/DURATION, such as 100/1s)")]
    NoSlash(String),
    /// A limit of several windows with nothing on one side of a `+` (`3/10ms++7/100ms`).
    #[error("`{text}` has an empty window {place} (join windows with one `+` between them, such as 10/1s+600/1h)")]
    EmptyWindow {
        /// The limit as typed.
        text: String,
        /// Where: "before its first `+`", "between two `+`s" or "after its last `+`".
        place: &'static str,
    },
    /// A limit or rate written period first (`1s/100`).
    #[error(
        "`{text}` has the period before the count: write N/DURATION, such as {count}/{period}"
    )]
    Swapped {
        /// The value as typed.
        text: String,
        /// What it has after its `/`: the count.
        count: String,
        /// What it has before its `/`: the period.
        period: String,
    },
    /// The period after the `/` is not a duration.
    #[error("the period `{period}` of `{text}` {}", period_fault(.error))]
    BadPeriod {
        /// The value as typed.
        text: String,
        /// What it has after its `/`.
        period: String,
        /// Why that is not a duration.
        error: DurationError,
    },
    /// The count of a limit was not a number.
    #[error("`{0}` is not a number of requests")]
    BadCount(String),
    /// A decimal count with a period other than one second.
    #[error("a decimal count is only read per second (`{0}`): write 1/2s for half a request per second, or 0.5/s")]
    DecimalNotPerSecond(String),
    /// The limiter refused the limit.
    #[error("{0}")]
    Limit(#[from] LimitError),
    /// A limit that no tick makes valid (a zero count, a window that never binds), found
    /// while parsing it.
    #[error("`{text}`: {}", limit_fault(.error))]
    Invalid {
        /// The limit as typed.
        text: String,
        /// What the limiter refuses, with windows in nanosecond ticks.
        error: LimitError,
    },
    /// A rate that is not a positive, finite number.
    #[error("rate `{0}` must be a positive, finite number")]
    BadRate(String),
    /// A count with a bad number or suffix.
    #[error("`{0}` is not a count (a whole number, optionally with k or M: 10k, 2M)")]
    BadKeyCount(String),
    /// A window that is neither `exact` nor `buckets:B`.
    #[error("unknown window `{0}` (expected exact or buckets:B, such as buckets:10)")]
    BadWindow(String),
    /// More windows joined by `+` than a limit holds.
    #[error("`{0}` joins more than {max} windows with `+`", max = slidelimit::MAX_WINDOWS)]
    TooManyWindows(String),
}

/// What is wrong with a period, after "the period `P` of `T`".
fn period_fault(error: &DurationError) -> String {
    match error {
        DurationError::Unit(unit) if unit.is_empty() => {
            "has no unit (expected ns, us, ms, s, m, h or d: 100/1s, not 100/1)".to_owned()
        }
        other => format!("is not a duration: {other}"),
    }
}

/// What is wrong with a limit checked in nanosecond ticks, its windows named as durations
/// (the tick of the check is no unit the user chose).
fn limit_fault(error: &LimitError) -> String {
    let window = |ticks: u64| duration::format(Duration::from_nanos(ticks));
    match *error {
        LimitError::DuplicateWindow { window_ticks } => format!(
            "two windows of {} in one limit; give each length once",
            window(window_ticks)
        ),
        LimitError::WindowNeverBinds {
            max_requests,
            window_ticks,
        } => format!(
            "the window of {max_requests}/{} can never bind: another window of the limit is \
             as strict or stricter",
            window(window_ticks)
        ),
        ref other => other.to_string(),
    }
}

/// A limit as typed: one window, or several joined by `+`, turned into a [`Limit`] once the
/// tick is known. Parsing already refuses what no tick can make valid (a zero count, windows
/// that never bind), so that the command line reports it as a bad value of `--limit`.
#[derive(Clone, Debug, PartialEq)]
pub struct LimitSpec {
    windows: Vec<WindowLimitSpec>,
}

impl LimitSpec {
    /// The limit in ticks of length `tick`: every window, joined by [`Limit::and`].
    ///
    /// # Errors
    /// [`LimitError`] when a window is not a whole number of ticks, a count or window is out
    /// of range, or the windows do not make one limit (a duplicate window, one that never
    /// binds).
    pub fn to_limit(&self, tick: Duration) -> Result<Limit, LimitError> {
        let mut windows = self.windows.iter();
        let first = windows
            .next()
            .expect("a parsed limit has a window")
            .to_limit(tick)?;
        windows.try_fold(first, |limit, window| limit.and(window.to_limit(tick)?))
    }
}

impl FromStr for LimitSpec {
    type Err = SpecError;

    fn from_str(text: &str) -> Result<Self, SpecError> {
        let parts: Vec<&str> = text.split('+').collect();
        if let Some(empty) = parts.iter().position(|part| part.is_empty()) {
            let place = match empty {
                _ if parts.len() == 1 => return Err(SpecError::NoSlash(String::new())),
                0 => "before its first `+`",
                last if last == parts.len() - 1 => "after its last `+`",
                _ => "between two `+`s",
            };
            return Err(SpecError::EmptyWindow {
                text: text.to_owned(),
                place,
            });
        }
        let windows = parts
            .into_iter()
            .map(str::parse)
            .collect::<Result<Vec<WindowLimitSpec>, _>>()?;
        if windows.len() > slidelimit::MAX_WINDOWS {
            return Err(SpecError::TooManyWindows(text.to_owned()));
        }
        let spec = Self { windows };
        // Every period is a whole number of nanoseconds, and a coarser tick only scales
        // every window alike: what fails here fails in every tick. Only a window past
        // u64::MAX nanoseconds (584 years) may still fit coarser ticks.
        match spec.to_limit(Duration::from_nanos(1)) {
            Ok(_) | Err(LimitError::WindowOverflow { .. }) => Ok(spec),
            Err(error) => Err(SpecError::Invalid {
                text: text.to_owned(),
                error,
            }),
        }
    }
}

impl fmt::Display for LimitSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (index, window) in self.windows.iter().enumerate() {
            if index > 0 {
                f.write_str("+")?;
            }
            write!(f, "{window}")?;
        }
        Ok(())
    }
}

/// One window of a limit as typed: a count per period.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum WindowLimitSpec {
    /// `N` requests per `period`.
    Count {
        /// Requests per window.
        max_requests: u64,
        /// The window.
        period: Duration,
    },
    /// A decimal rate per second, read by [`Limit::from_rate`].
    Rate {
        /// Requests per second.
        per_second: f64,
    },
}

impl WindowLimitSpec {
    /// The limit in ticks of length `tick`.
    ///
    /// # Errors
    /// [`LimitError`] when the window is not a whole number of ticks, or the count or window is
    /// out of range.
    pub fn to_limit(self, tick: Duration) -> Result<Limit, LimitError> {
        match self {
            Self::Count {
                max_requests,
                period,
            } => Limit::per(max_requests, period, tick),
            Self::Rate { per_second } => Limit::from_rate(per_second, tick),
        }
    }
}

impl FromStr for WindowLimitSpec {
    type Err = SpecError;

    fn from_str(text: &str) -> Result<Self, SpecError> {
        let (count, period) = split_per(text)?;
        if let Ok(max_requests) = count.parse::<u64>() {
            return Ok(Self::Count {
                max_requests,
                period,
            });
        }
        let per_second: f64 = count
            .parse()
            .map_err(|_| SpecError::BadCount(count.to_owned()))?;
        if !count.chars().all(|c| c.is_ascii_digit() || c == '.') {
            return Err(SpecError::BadCount(count.to_owned()));
        }
        if period != Duration::from_secs(1) {
            return Err(SpecError::DecimalNotPerSecond(text.to_owned()));
        }
        Ok(Self::Rate { per_second })
    }
}

impl fmt::Display for WindowLimitSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Count {
                max_requests,
                period,
            } => write!(f, "{max_requests}/{}", duration::format(*period)),
            Self::Rate { per_second } => write!(f, "{per_second}/s"),
        }
    }
}

/// `COUNT/PERIOD` split at its `/`, the period parsed: the count as typed and the period.
///
/// # Errors
/// [`SpecError::NoSlash`]; [`SpecError::Swapped`] for a period before a number
/// (`1s/100`); [`SpecError::BadPeriod`] for any other period that is not a duration.
fn split_per(text: &str) -> Result<(&str, Duration), SpecError> {
    let (count, period) = text
        .split_once('/')
        .ok_or_else(|| SpecError::NoSlash(text.to_owned()))?;
    match duration::parse(period) {
        Ok(parsed) => Ok((count, parsed)),
        Err(_) if duration::parse(count).is_ok() && period.parse::<f64>().is_ok() => {
            Err(SpecError::Swapped {
                text: text.to_owned(),
                count: period.to_owned(),
                period: count.to_owned(),
            })
        }
        Err(error) => Err(SpecError::BadPeriod {
            text: text.to_owned(),
            period: period.to_owned(),
            error,
        }),
    }
}

/// An offered load in requests per second, from `R/DURATION`.
///
/// # Errors
/// [`SpecError`] for a missing `/`, a rate that is not a positive finite number, or a bad
/// duration (a period before the number included).
pub fn parse_rate(text: &str) -> Result<f64, SpecError> {
    let (count, period) = split_per(text)?;
    let count: f64 = count
        .parse()
        .map_err(|_| SpecError::BadRate(count.to_owned()))?;
    let per_second = count / period.as_secs_f64();
    if !per_second.is_finite() || per_second <= 0.0 {
        return Err(SpecError::BadRate(text.to_owned()));
    }
    Ok(per_second)
}

/// A whole count with an optional `k` (×1,000) or `M` (×1,000,000) suffix; zero is refused.
///
/// # Errors
/// [`SpecError::BadKeyCount`] for anything else, zero, or a count that overflows.
pub fn parse_count(text: &str) -> Result<u64, SpecError> {
    let bad = || SpecError::BadKeyCount(text.to_owned());
    let (digits, scale) = match text.as_bytes().last() {
        Some(b'k') => (&text[..text.len() - 1], 1_000),
        Some(b'M') => (&text[..text.len() - 1], 1_000_000),
        _ => (text, 1),
    };
    let value: u64 = digits.parse().map_err(|_| bad())?;
    match value.checked_mul(scale) {
        Some(0) | None => Err(bad()),
        Some(count) => Ok(count),
    }
}

/// Which window algorithm a limiter runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WindowSpec {
    /// The exact sliding log.
    Exact,
    /// Rolling buckets, `B` of them over the window.
    Buckets(u64),
}

impl FromStr for WindowSpec {
    type Err = SpecError;

    fn from_str(text: &str) -> Result<Self, SpecError> {
        if text == "exact" {
            return Ok(Self::Exact);
        }
        text.strip_prefix("buckets:")
            .and_then(|b| b.parse().ok())
            .map(Self::Buckets)
            .ok_or_else(|| SpecError::BadWindow(text.to_owned()))
    }
}

impl fmt::Display for WindowSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Exact => f.write_str("exact"),
            Self::Buckets(b) => write!(f, "buckets:{b}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_by_count_and_period() {
        let ms = Duration::from_millis(1);
        let spec: LimitSpec = "100/1s".parse().unwrap();
        assert_eq!(spec.to_limit(ms), Limit::new(100, 1000));
        let spec: LimitSpec = "100/500ms".parse().unwrap();
        assert_eq!(spec.to_limit(ms), Limit::new(100, 500));
        let spec: LimitSpec = "5000/1h".parse().unwrap();
        assert_eq!(
            spec.to_limit(Duration::from_secs(1)),
            Limit::new(5000, 3600)
        );
        let spec: LimitSpec = "3/s".parse().unwrap();
        assert_eq!(spec.to_string(), "3/1s");
    }

    #[test]
    fn several_windows_join_with_plus() {
        let ms = Duration::from_millis(1);
        let spec: LimitSpec = "10/1s+600/1h".parse().unwrap();
        assert_eq!(spec.to_string(), "10/1s+600/1h");
        let expected = Limit::new(10, 1_000)
            .unwrap()
            .and(Limit::new(600, 3_600_000).unwrap());
        assert_eq!(spec.to_limit(ms), expected);
        let never = "10/1s+20/1s".parse::<LimitSpec>().unwrap_err();
        assert_eq!(
            never.to_string(),
            "`10/1s+20/1s`: two windows of 1s in one limit; give each length once"
        );
        let never = "10/1m+600/1h".parse::<LimitSpec>().unwrap_err();
        assert_eq!(
            never.to_string(),
            "`10/1m+600/1h`: the window of 600/1h can never bind: another window of the limit \
             is as strict or stricter"
        );
        assert_eq!(
            "1/1s+2/1m+3/1h+4/1d+5/7d".parse::<LimitSpec>(),
            Err(SpecError::TooManyWindows("1/1s+2/1m+3/1h+4/1d+5/7d".into()))
        );
        // An empty window, named with where it is.
        for (text, place) in [
            ("3/10ms++7/100ms", "between two `+`s"),
            ("10/1s+", "after its last `+`"),
            ("+10/1s", "before its first `+`"),
        ] {
            let err = text.parse::<LimitSpec>().unwrap_err();
            assert_eq!(
                err,
                SpecError::EmptyWindow {
                    text: text.into(),
                    place
                }
            );
            assert!(err.to_string().contains(place), "{err}");
        }
        assert_eq!(
            "3/10ms++7/100ms"
                .parse::<LimitSpec>()
                .unwrap_err()
                .to_string(),
            "`3/10ms++7/100ms` has an empty window between two `+`s (join windows with one `+` \
             between them, such as 10/1s+600/1h)"
        );
        assert_eq!(
            "".parse::<LimitSpec>(),
            Err(SpecError::NoSlash(String::new()))
        );
    }

    #[test]
    fn decimal_rates_are_per_second_fractions() {
        let ms = Duration::from_millis(1);
        let spec: LimitSpec = "0.5/s".parse().unwrap();
        assert_eq!(spec.to_limit(ms), Limit::new(1, 2000));
        let spec: LimitSpec = "2.5/1s".parse().unwrap();
        assert_eq!(spec.to_limit(ms), Limit::new(5, 2000));
        assert_eq!(
            "0.5/2s".parse::<LimitSpec>(),
            Err(SpecError::DecimalNotPerSecond("0.5/2s".into()))
        );
    }

    #[test]
    fn bad_limits_are_typed() {
        assert_eq!(
            "100".parse::<LimitSpec>(),
            Err(SpecError::NoSlash("100".into()))
        );
        assert_eq!(
            "abc/1s".parse::<LimitSpec>(),
            Err(SpecError::BadCount("abc".into()))
        );
        assert_eq!(
            "-1/1s".parse::<LimitSpec>(),
            Err(SpecError::BadCount("-1".into()))
        );
        assert_eq!(
            "inf/1s".parse::<LimitSpec>(),
            Err(SpecError::BadCount("inf".into()))
        );
        // Refused while parsing, whatever the tick.
        assert_eq!(
            "0/1s".parse::<LimitSpec>(),
            Err(SpecError::Invalid {
                text: "0/1s".into(),
                error: LimitError::ZeroMaxRequests
            })
        );
        assert_eq!(
            "0/1s".parse::<LimitSpec>().unwrap_err().to_string(),
            "`0/1s`: max_requests must be at least 1"
        );
        // The period first: the message says so, with the fix.
        let swapped = "1s/100".parse::<LimitSpec>().unwrap_err();
        assert_eq!(
            swapped.to_string(),
            "`1s/100` has the period before the count: write N/DURATION, such as 100/1s"
        );
        assert!(matches!(parse_rate("m/30"), Err(SpecError::Swapped { .. })));
        // A period without a unit, or with a bad one, is named.
        assert_eq!(
            "100/100".parse::<LimitSpec>().unwrap_err().to_string(),
            "the period `100` of `100/100` has no unit (expected ns, us, ms, s, m, h or d: \
             100/1s, not 100/1)"
        );
        assert_eq!(
            "100/1x".parse::<LimitSpec>().unwrap_err().to_string(),
            "the period `1x` of `100/1x` is not a duration: unknown unit `x` (expected ns, us, \
             ms, s, m, h or d)"
        );
        // A window past u64::MAX nanoseconds may still fit coarser ticks: left to the tick.
        let long: LimitSpec = "1/1000000d".parse().unwrap();
        assert!(long.to_limit(Duration::from_secs(1)).is_ok());
        let sub_tick: LimitSpec = "10/1500us".parse().unwrap();
        assert!(matches!(
            sub_tick.to_limit(Duration::from_millis(1)),
            Err(LimitError::NotWholeTicks { .. })
        ));
    }

    #[test]
    fn rates_counts_and_windows() {
        assert_eq!(parse_rate("1200/s"), Ok(1200.0));
        assert_eq!(parse_rate("30/m"), Ok(0.5));
        assert_eq!(parse_rate("0.5/s"), Ok(0.5));
        assert_eq!(parse_rate("0/s"), Err(SpecError::BadRate("0/s".into())));
        assert_eq!(parse_rate("x/s"), Err(SpecError::BadRate("x".into())));
        assert_eq!(parse_count("10k"), Ok(10_000));
        assert_eq!(parse_count("2M"), Ok(2_000_000));
        assert_eq!(parse_count("17"), Ok(17));
        assert_eq!(parse_count("0"), Err(SpecError::BadKeyCount("0".into())));
        assert_eq!(
            parse_count("1.5k"),
            Err(SpecError::BadKeyCount("1.5k".into()))
        );
        assert_eq!("exact".parse(), Ok(WindowSpec::Exact));
        assert_eq!("buckets:12".parse(), Ok(WindowSpec::Buckets(12)));
        assert_eq!(
            "buckets:".parse::<WindowSpec>(),
            Err(SpecError::BadWindow("buckets:".into()))
        );
        assert_eq!(WindowSpec::Buckets(12).to_string(), "buckets:12");
    }
}
