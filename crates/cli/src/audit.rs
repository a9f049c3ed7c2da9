//! The window audit of the reports (`slidelimit_trace::audit`), set up for a limit the way the
//! limiters count ticks.

use slidelimit::raw::MAX_TICK;
use slidelimit::Limit;
use slidelimit_trace::audit::Audit;

/// The audit of every window of `limit`, narrowest first (see [`audit`]).
pub fn audits(limit: Limit) -> Vec<(Limit, Audit)> {
    limit
        .windows()
        .map(|window| (window, audit(window)))
        .collect()
}

/// The audit of at most `limit`'s `N` per window (the widest window's, for a limit of
/// several: see [`audits`]), reading ticks above [`MAX_TICK`] as `MAX_TICK`, as the limiters
/// record them.
pub fn audit(limit: Limit) -> Audit {
    Audit::new(limit.max_requests(), limit.window_ticks())
        .expect("a Limit's window is at least one tick")
        .clamp_ticks_to(MAX_TICK)
}
