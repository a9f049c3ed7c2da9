//! The one duration grammar of every command and tool: `[COUNT]UNIT`, parsed into a
//! [`Duration`] or a typed error, and printed back in the largest unit that divides it.
//!
//! `COUNT` is a whole number (1 if left out); `UNIT` is one of `ns`, `us` (or `µs`), `ms`,
//! `s`, `m` (minutes), `h`, `d`. Spaces are not allowed. `1500ms`, `s`, `90s`, `2h`. Whole
//! numbers only, so that every duration is an exact count of nanoseconds: `1500ms`, not
//! `1.5s`.

use std::time::Duration;

/// The units, largest first, with their length in nanoseconds.
const UNITS: [(&str, u128); 7] = [
    ("d", 86_400_000_000_000),
    ("h", 3_600_000_000_000),
    ("m", 60_000_000_000),
    ("s", 1_000_000_000),
    ("ms", 1_000_000),
    ("us", 1_000),
    ("ns", 1),
];

/// Why a duration could not be read.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    /// The value was empty.
    #[error("empty value")]
    Empty,
    /// The number was not a whole number.
    #[error("`{0}` is not a whole number (write 1500ms, not 1.5s)")]
    NotWhole(String),
    /// The unit was missing or unknown.
    #[error("unknown unit `{0}` (expected ns, us, ms, s, m, h or d)")]
    Unit(String),
    /// A duration of zero length.
    #[error("a duration must be longer than zero")]
    Zero,
    /// A duration beyond what [`Duration`] holds.
    #[error("duration `{0}` is too long")]
    Overflow(String),
}

/// Parses `[COUNT]UNIT` (see the module's docs).
///
/// ```
/// use std::time::Duration;
/// use slidelimit_trace::duration::{format, parse};
///
/// assert_eq!(parse("1500ms"), Ok(Duration::from_millis(1500)));
/// assert_eq!(parse("s"), Ok(Duration::from_secs(1)));
/// assert_eq!(format(Duration::from_secs(7200)), "2h");
/// assert!(parse("1.5s").is_err());
/// ```
///
/// # Errors
/// [`DurationError`] for an empty value, a fractional number, a missing or unknown unit,
/// zero, or a duration that does not fit.
pub fn parse(text: &str) -> Result<Duration, DurationError> {
    if text.is_empty() {
        return Err(DurationError::Empty);
    }
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .ok_or_else(|| DurationError::Unit(String::new()))?;
    let (digits, unit) = text.split_at(split);
    if unit.starts_with('.') {
        return Err(DurationError::NotWhole(text.to_owned()));
    }
    let count: u64 = if digits.is_empty() {
        1
    } else {
        digits
            .parse()
            .map_err(|_| DurationError::Overflow(text.to_owned()))?
    };
    // `µs` is accepted as it is often written; printing uses the ASCII `us`.
    let unit = if unit == "µs" { "us" } else { unit };
    let unit_nanos = UNITS
        .iter()
        .find(|&&(name, _)| name == unit)
        .map(|&(_, nanos)| nanos)
        .ok_or_else(|| DurationError::Unit(unit.to_owned()))?;
    if count == 0 {
        return Err(DurationError::Zero);
    }
    let nanos = u128::from(count) * unit_nanos;
    let secs = u64::try_from(nanos / 1_000_000_000)
        .map_err(|_| DurationError::Overflow(text.to_owned()))?;
    // The remainder of a division by 10^9 fits in a u32.
    let sub = (nanos % 1_000_000_000) as u32;
    Ok(Duration::new(secs, sub))
}

/// `duration` in the largest unit that divides it (`1500ms`, `2h`, `90s`), which [`parse`]
/// reads back exactly; `0s` for zero.
#[must_use]
pub fn format(duration: Duration) -> String {
    let nanos = duration.as_nanos();
    UNITS
        .iter()
        .find(|&&(_, size)| nanos >= size && nanos % size == 0)
        .map_or_else(
            || "0s".to_owned(),
            |&(name, size)| format!("{}{name}", nanos / size),
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_in_every_unit() {
        assert_eq!(parse("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse("1s"), Ok(Duration::from_secs(1)));
        assert_eq!(parse("s"), Ok(Duration::from_secs(1)));
        assert_eq!(parse("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse("1d"), Ok(Duration::from_secs(86_400)));
        assert_eq!(parse("7ns"), Ok(Duration::from_nanos(7)));
        assert_eq!(parse("15us"), Ok(Duration::from_micros(15)));
        assert_eq!(parse("15µs"), Ok(Duration::from_micros(15)));
    }

    #[test]
    fn bad_durations_are_typed() {
        assert_eq!(parse(""), Err(DurationError::Empty));
        assert_eq!(parse("1.5s"), Err(DurationError::NotWhole("1.5s".into())));
        assert_eq!(parse("10"), Err(DurationError::Unit(String::new())));
        assert_eq!(parse("10x"), Err(DurationError::Unit("x".into())));
        assert_eq!(parse("10 s"), Err(DurationError::Unit(" s".into())));
        assert_eq!(parse("0ms"), Err(DurationError::Zero));
        assert_eq!(
            parse("99999999999999999999s"),
            Err(DurationError::Overflow("99999999999999999999s".into()))
        );
        assert!(matches!(
            parse("18446744073709551615d"),
            Err(DurationError::Overflow(_))
        ));
    }

    #[test]
    fn durations_print_in_their_largest_unit_and_read_back() {
        assert_eq!(format(Duration::from_millis(1500)), "1500ms");
        assert_eq!(format(Duration::from_secs(7200)), "2h");
        assert_eq!(format(Duration::from_secs(90)), "90s");
        assert_eq!(format(Duration::from_nanos(1)), "1ns");
        assert_eq!(format(Duration::ZERO), "0s");
        for nanos in [1, 999, 1_000, 61_000_000_000, u64::MAX] {
            let duration = Duration::from_nanos(nanos);
            assert_eq!(parse(&format(duration)), Ok(duration));
        }
    }
}
