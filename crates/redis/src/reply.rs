//! The scripts' common reply and the checks on what the caller sends them.

use slidelimit::{Limit, Status, WeightError, WindowStatuses, MAX_WINDOWS};

use crate::Error;

/// Ticks must stay below 2^53: sorted-set scores and Lua numbers are doubles.
pub(crate) const MAX_TICK: u64 = 1 << 53;

/// What a script answered: `{granted, count, retry, now, seq_hi, too_late, born}`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Reply {
    /// Hits recorded by this call (0 for a refusal or a read).
    pub(crate) granted: u64,
    /// The live count (exact log) or retained weight (buckets) after the call.
    pub(crate) count: u64,
    /// Ticks until one more hit (of the call's weight, for a refused check) fits.
    pub(crate) retry_after_ticks: u64,
    /// The tick the call was decided at (the server's `TIME`, or the caller's tick).
    pub(crate) now: u64,
    /// The highest member sequence number this call wrote (exact log only).
    pub(crate) seq_hi: u64,
    /// The call was below the key's removal watermark (or lateness bound) and was refused.
    pub(crate) too_late: bool,
    /// The exact log's `born` stamp (the tick of the key's first record), returned with a
    /// granted lease; 0 otherwise.
    pub(crate) born: u64,
    /// For a limit of several windows, each window's (count, retry-after ticks), narrowest
    /// first, in the first `windows_len` entries; none for a single window.
    windows: [(u64, u64); MAX_WINDOWS],
    windows_len: usize,
}

impl Reply {
    pub(crate) fn parse(values: &[i64]) -> Result<Self, Error> {
        let field = |i: usize| -> Result<u64, Error> {
            let v = values
                .get(i)
                .ok_or_else(|| Error::Reply(format!("expected 7 integers, got {values:?}")))?;
            // Retry-after is never negative by construction; clamp rather than fail if a
            // stepped server clock made it so.
            Ok(u64::try_from(*v).unwrap_or(0))
        };
        let mut windows = [(0, 0); MAX_WINDOWS];
        let pairs = values.len().saturating_sub(7) / 2;
        if values.len() > 7 && (values.len() % 2 == 0 || pairs > MAX_WINDOWS) {
            return Err(Error::Reply(format!(
                "expected 7 integers and at most {MAX_WINDOWS} pairs, got {values:?}"
            )));
        }
        for (index, window) in windows.iter_mut().enumerate().take(pairs) {
            *window = (field(7 + 2 * index)?, field(8 + 2 * index)?);
        }
        Ok(Self {
            granted: field(0)?,
            count: field(1)?,
            retry_after_ticks: field(2)?,
            now: field(3)?,
            seq_hi: field(4)?,
            too_late: field(5)? != 0,
            born: field(6)?,
            windows,
            windows_len: pairs,
        })
    }

    /// Each window's count, narrowest first, for `limit` (the reply's one count for a single
    /// window, or a reply without the windows' pairs).
    pub(crate) fn window_counts(&self, limit: Limit) -> impl Iterator<Item = u64> + '_ {
        let layered = limit.is_layered() && self.windows_len == limit.window_count();
        let count = self.count;
        (0..if layered { self.windows_len } else { 1 }).map(move |index| {
            if layered {
                self.windows[index].0
            } else {
                count
            }
        })
    }

    /// Every window's status, narrowest first: from the windows' pairs for a limit of
    /// several windows, else the one status of [`Reply::status`] (a single window).
    pub(crate) fn window_statuses(&self, limit: Limit) -> WindowStatuses {
        if !limit.is_layered() || self.windows_len != limit.window_count() {
            return WindowStatuses::single(self.status(limit));
        }
        WindowStatuses::from_windows(limit.windows().zip(&self.windows).map(
            |(window, &(count, retry_after_ticks))| {
                window_status(window, count, retry_after_ticks, self.too_late)
            },
        ))
    }

    /// The status a caller sees, for `limit`.
    pub(crate) fn status(&self, limit: Limit) -> Status {
        window_status(limit, self.count, self.retry_after_ticks, self.too_late)
    }
}

/// One window's status from its count and retry-after: nothing remains for a late caller,
/// and the wait is for a caller with nothing left.
fn window_status(window: Limit, count: u64, retry_after_ticks: u64, too_late: bool) -> Status {
    let remaining = if too_late {
        0
    } else {
        window.max_requests().saturating_sub(count)
    };
    Status {
        count,
        remaining,
        retry_after_ticks: if remaining > 0 { 0 } else { retry_after_ticks },
    }
}

/// Whether `n` can be asked of a window of `limit` at all.
pub(crate) const fn check_weight(limit: Limit, n: u64) -> Result<(), WeightError> {
    if n == 0 {
        Err(WeightError::Zero)
    } else if n > limit.max_weight() {
        Err(WeightError::ExceedsLimit {
            n,
            max_requests: limit.max_weight(),
        })
    } else {
        Ok(())
    }
}

/// A caller tick as the scripts take it; `None` asks for the server's `TIME`.
pub(crate) fn tick_arg(now: Option<u64>) -> Result<String, Error> {
    match now {
        None => Ok(String::new()),
        Some(now) if now >= MAX_TICK => Err(Error::TickOutOfRange { now }),
        Some(now) => Ok(now.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_derives_status() {
        let limit = Limit::new(3, 10).unwrap();
        let reply = Reply::parse(&[0, 3, 4, 17, 0, 0, 0]).unwrap();
        assert_eq!(
            reply.status(limit),
            Status {
                count: 3,
                remaining: 0,
                retry_after_ticks: 4
            }
        );
        let late = Reply::parse(&[0, 1, 0, 17, 0, 1, 0]).unwrap();
        assert_eq!(late.status(limit).remaining, 0, "a late caller has no room");
        assert!(matches!(Reply::parse(&[1, 2]), Err(Error::Reply(_))));
    }

    #[test]
    fn weights_and_ticks_are_checked() {
        let limit = Limit::new(3, 10).unwrap();
        assert_eq!(check_weight(limit, 0), Err(WeightError::Zero));
        assert!(check_weight(limit, 3).is_ok());
        assert!(matches!(
            check_weight(limit, 4),
            Err(WeightError::ExceedsLimit { .. })
        ));
        assert_eq!(tick_arg(None).unwrap(), "");
        assert_eq!(tick_arg(Some(12)).unwrap(), "12");
        assert!(matches!(
            tick_arg(Some(MAX_TICK)),
            Err(Error::TickOutOfRange { .. })
        ));
    }
}
