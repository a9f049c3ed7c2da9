//! Rolling buckets in Redis: a hash of bucket counters plus a running total per key,
//! decided by `scripts/buckets.lua`, with the core's geometry ([`RollingBuckets`]).
//!
//! # Why it never over-admits
//! The hash keeps the epochs `[head - B - L, head]` and their total; a call at epoch `e`
//! advances the head to `e` when later, is refused when `e + L < head`, and is admitted
//! when `total + n <= N`. Every recorded epoch is at most the head at its recording, and
//! the head only grows, so the retained range holds every recorded epoch at or above
//! `head - B - L`. For a window `(x - W, x]` and the last admission in it (tick `t`, epoch
//! `e >= head - L`), the window's other admissions have ticks above `t - W >= (e - B)·w`
//! (because `B·w >= W`), so epochs at least `e - B >= head - B - L`: all retained, all in the
//! total it compared. A refusal writes nothing. Memory per key: `B + 1 + L` fields and two
//! more, whatever `N`. For a limit of several windows each window keeps such fields of its
//! own, with the core's geometry of that window ([`RollingBuckets::windows`]), so the same
//! argument holds per window.

use slidelimit::raw::Algorithm;
use slidelimit::RollingBuckets;

/// One call of the buckets script.
#[derive(Clone, Copy, Debug)]
pub(crate) enum BucketOp {
    Check,
    Hit,
    Status,
}

/// The script's arguments for one call.
pub(crate) fn args(
    window: &RollingBuckets,
    ttl_ms: u64,
    op: BucketOp,
    now: &str,
    n: u64,
) -> Vec<String> {
    let name = match op {
        BucketOp::Check => "check",
        BucketOp::Hit => "hit",
        BucketOp::Status => "status",
    };
    let mut args = vec![
        name.to_owned(),
        now.to_owned(),
        window.bucket_ticks().to_string(),
        window.buckets().to_string(),
        window.tolerated_lateness().to_string(),
        window.limit().max_requests().to_string(),
        n.to_string(),
        ttl_ms.to_string(),
    ];
    // Each narrower window with its own geometry, as the core's buckets build it
    // (`RollingBuckets::windows`): the configured B clamped to that window's W, not the count
    // the widest window kept.
    crate::exact::narrower_args(window.limit(), &mut args, |narrow| {
        let narrow = window.with_limit(narrow);
        [
            narrow.bucket_ticks(),
            narrow.buckets(),
            narrow.limit().max_requests(),
        ]
    });
    args
}
