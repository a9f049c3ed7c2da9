//! Single-threaded traces: run one against a limiter and the reference model side by side,
//! checking every answer as it comes, and keep what came out for cross-variant comparison.

use std::fmt::Debug;
use std::hash::Hash;

use slidelimit::{RateLimiter, Status};

use slidelimit_trace::audit::Audit;

use crate::reference::{clamp, Reference, MAX_TICK};

/// One call of a trace. Keys are small integers here and in the model; the limiters get
/// them spread over `u64` by [`limiter_key`], so their hashes land in random watermark slots
/// (small integers hash into distinct slots, which would hide slot collisions).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Hit(u8, u64),
    Allowed(u8, u64),
    CheckAndHit(u8, u64),
    Status(u8, u64),
    RemoveIdle(u64),
}

/// The limiter's key for a trace key.
pub fn limiter_key(key: u8) -> u64 {
    u64::from(key)
        .wrapping_add(1)
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// What a call answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    Recorded,
    Allowed(bool),
    Admitted(bool),
    Status(Status),
    Removed(usize),
}

/// How closely a trace's answers must follow the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expect {
    /// Every answer equals the model's (valid for traces whose timestamps never decrease per
    /// key, and for traces of `hit`/`allowed`/`status` in any order). Where a call is refused
    /// although the model admits, the refusal must be a watermark-slot collision: the
    /// limiter's status names a watermark that some removal raised, above the key's own.
    Exact,
    /// `check_and_hit` in any order: only safety, soundness of refusals, and the key policy
    /// (tracked keys, removal counts) are checked.
    Safe,
}

/// Everything a limiter answered to a trace, after each call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    pub answers: Vec<Answer>,
    pub tracked_keys: Vec<usize>,
    /// `(key, clamped tick)` of every admitted `check_and_hit`.
    pub admitted: Vec<(u8, u64)>,
}

/// Runs `ops` against `limiter` and `model` (which must start in the same state), checking
/// each answer per `expect` and, at the end, the safety invariant.
///
/// # Errors
/// A message naming the variant, the call and what differed.
pub fn run(
    limiter: &dyn RateLimiter<u64>,
    model: &mut Reference<u64>,
    ops: &[Op],
    expect: Expect,
) -> Result<Outcome, String> {
    let mut outcome = Outcome {
        answers: Vec::with_capacity(ops.len()),
        tracked_keys: Vec::with_capacity(ops.len()),
        admitted: Vec::new(),
    };
    for (index, &op) in ops.iter().enumerate() {
        let fail = |what: String| format!("{}: call #{index} {op:?}: {what}", limiter.name());
        let answer = match op {
            Op::RemoveIdle(now) => {
                let removed = limiter.remove_idle(now);
                let expected = model.sweep(now);
                if removed != expected {
                    return Err(fail(format!("removed {removed} keys, model {expected}")));
                }
                Answer::Removed(removed)
            }
            Op::Hit(key, now)
            | Op::Allowed(key, now)
            | Op::CheckAndHit(key, now)
            | Op::Status(key, now) => {
                // Probe first: status consumes nothing and creates no key.
                let status = limiter.status(&limiter_key(key), now);
                check_status(model, key, now, status, expect).map_err(&fail)?;
                let room = status.remaining > 0;
                match op {
                    Op::Hit(..) => {
                        limiter.hit(&limiter_key(key), now);
                        model.hit(&limiter_key(key), now);
                        Answer::Recorded
                    }
                    Op::Allowed(..) => {
                        let allowed = limiter.allowed(&limiter_key(key), now);
                        if allowed != room {
                            return Err(fail(format!("allowed {allowed}, but status {status:?}")));
                        }
                        Answer::Allowed(allowed)
                    }
                    Op::CheckAndHit(..) => {
                        let admitted = limiter.check_and_hit(&limiter_key(key), now);
                        if admitted != room {
                            return Err(fail(format!(
                                "admitted {admitted}, but status {status:?}"
                            )));
                        }
                        model.record(&limiter_key(key), now, admitted);
                        if admitted {
                            outcome.admitted.push((key, clamp(now)));
                        }
                        Answer::Admitted(admitted)
                    }
                    _ => Answer::Status(status),
                }
            }
        };
        let tracked = limiter.tracked_keys();
        if tracked != model.tracked_keys() {
            return Err(fail(format!(
                "tracks {tracked} keys, model {}",
                model.tracked_keys()
            )));
        }
        outcome.answers.push(answer);
        outcome.tracked_keys.push(tracked);
    }
    check_safety(
        &outcome.admitted,
        model.config().max_requests,
        model.config().window_ticks,
    )
    .map_err(|e| format!("{}: {e}", limiter.name()))?;
    Ok(outcome)
}

/// Checks a limiter's status for `key` at `now` against the model, before the call at `now`.
fn check_status(
    model: &Reference<u64>,
    key: u8,
    now: u64,
    status: Status,
    expect: Expect,
) -> Result<(), String> {
    let expected = model.status(&limiter_key(key), now);
    let window = model.window_status(&limiter_key(key), now);
    let max = model.config().max_requests;
    // A watermark clamps `remaining` to 0 and leaves `count` as the window holds it.
    if status.count > max || status.remaining != 0 && status.count + status.remaining != max {
        return Err(format!("status {status:?} does not add up to {max}"));
    }
    if now < model.watermark(&limiter_key(key)) && status.remaining != 0 {
        return Err(format!(
            "status {status:?} has room below the key's watermark {}",
            model.watermark(&limiter_key(key))
        ));
    }
    match expect {
        Expect::Exact if status == expected => Ok(()),
        Expect::Exact => Err(format!("status {status:?}, model {expected:?}")),
        // The ring holds only recorded hits, so a window it finds full is full in the log;
        // room missing for any other reason must be the key's watermark.
        Expect::Safe if status.remaining == 0 && window.remaining > 0 => {
            if now < model.watermark(&limiter_key(key)) {
                Ok(())
            } else {
                Err(format!(
                    "status {status:?} refuses at {now}, above the key's watermark {}",
                    model.watermark(&limiter_key(key))
                ))
            }
        }
        Expect::Safe => Ok(()),
    }
}

/// The safety invariant: no window `(x - W, x]` holds more than `max_requests` admitted
/// timestamps of one key, by the workspace's one window audit. `admitted` holds
/// `(key, clamped tick)` pairs in any order.
///
/// # Errors
/// The earliest crowded window found, with its key.
pub fn check_safety<K: Hash + Eq + Debug>(
    admitted: &[(K, u64)],
    max_requests: u64,
    window_ticks: u64,
) -> Result<(), String> {
    Audit::new(max_requests, window_ticks)
        .map_err(|error| error.to_string())?
        .clamp_ticks_to(MAX_TICK)
        .keys(admitted.iter().map(|(key, tick)| (key, *tick, 1)))
        .check()
        .map_err(|error| error.to_string())
}

#[test]
fn safety_check_finds_a_crowded_window() {
    // Limit 2 per 10: 0, 9 and 9 share (−1, 9]; 0, 10, 19 never do.
    assert!(check_safety(&[(1u8, 0), (1, 9), (1, 9)], 2, 10).is_err());
    assert!(check_safety(&[(1u8, 0), (1, 10), (1, 19), (2, 19), (2, 19)], 2, 10).is_ok());
    assert!(check_safety(&[(1u8, 19), (1, 10), (1, 1)], 2, 10).is_ok());
    assert!(check_safety(&[(1u8, 19), (1, 10), (1, 11)], 2, 10).is_err());
}
