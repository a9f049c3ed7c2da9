//! Several windows per key: a burst limit and a sustained limit on one key, decided in one
//! call, all or nothing.
//!
//! ```text
//! cargo run -p slidelimit --example several_windows
//! ```
//!
//! A client allowed 5 requests per second and 20 per 10 seconds sends a burst of 8, then 4 a
//! second: the burst window refuses 3 of the burst, then the sustained window runs out at
//! t=4 s and refuses until the burst's hits leave it at t=10 s. Ticks are milliseconds,
//! simulated, so every run prints the same.

use std::error::Error;
use std::time::Duration;

use slidelimit::{Limit, LimitError, LockFreeLimiter};

fn main() -> Result<(), Box<dyn Error>> {
    let ms = Duration::from_millis(1);
    // `and` joins windows; the result goes wherever one limit goes (any limiter, per-key
    // limits, snapshots, the tower layer, Redis).
    let limit = Limit::per_second(5, ms)?.and(Limit::per(20, Duration::from_secs(10), ms)?)?;
    let limiter: LockFreeLimiter<&'static str> = LockFreeLimiter::new(limit);
    let key = "client-1";

    let burst = (0..8).filter(|_| limiter.check_and_hit(&key, 0)).count();
    println!("t=0 s: burst of 8, {burst} admitted");
    print_windows(&limiter, key, 0);

    // Then 4 requests a second (under the burst limit) for 10 seconds.
    for second in 1..=10u64 {
        let start = second * 1_000;
        let admitted = (0..4)
            .filter(|i| limiter.check_and_hit(&key, start + i * 250))
            .count();
        println!("t={second} s: 4 sent, {admitted} admitted");
        print_windows(&limiter, key, start + 999);
    }

    // A window another one makes redundant is a typed error, not a silent no-op: 5 per
    // second can never exceed 300 per minute.
    match Limit::per_second(5, ms)?.and(Limit::per_minute(300, ms)?) {
        Err(error @ LimitError::WindowNeverBinds { .. }) => println!("5/s + 300/min: {error}"),
        other => return Err(format!("expected WindowNeverBinds, got {other:?}").into()),
    }
    Ok(())
}

/// Each window's count, narrowest first, and the wait the binding one imposes.
fn print_windows(limiter: &LockFreeLimiter<&'static str>, key: &'static str, now: u64) {
    let windows = limiter.window_statuses(&key, now);
    let names = ["1 s", "10 s"];
    for (name, status) in names.iter().zip(windows.iter()) {
        print!(
            "    {name} window: {} used, {} left;",
            status.count, status.remaining
        );
    }
    // `status` answers for the window that binds, with the wait until every window has room.
    let status = limiter.status(&key, now);
    println!(" retry after {} ms", status.retry_after_ticks);
}
