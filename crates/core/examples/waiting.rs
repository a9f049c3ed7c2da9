//! Waiting instead of refusing: `AsyncLimiter::until_ready` sleeps until a key has room, then
//! takes it; `until_ready_by` gives up at a deadline.
//!
//! ```text
//! cargo run -p slidelimit --features tokio --example waiting
//! ```
//!
//! Three tasks make two requests each on one key limited to 2 per 500 ms: two go at once, the
//! others are served in arrival order as the window frees room, at about 500 and 1000 ms
//! (tokio's timers are precise to the millisecond, never early). Then a request with a
//! 100 ms deadline on the full key fails at once, without sleeping.

use std::error::Error;
use std::sync::Arc;
use std::time::Duration;

use slidelimit::wait::{AsyncLimiter, WaitError};
use slidelimit::{Limit, LockFreeLimiter};
use tokio::time::Instant;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn Error>> {
    let ms = Duration::from_millis(1);
    // The limit's ticks are the AsyncLimiter's ticks: milliseconds here.
    let limiter = LockFreeLimiter::<&'static str>::new(Limit::per(2, 500 * ms, ms)?);
    // Shared by the tasks: waiters on one key queue inside this one AsyncLimiter.
    let limiter = Arc::new(AsyncLimiter::new(limiter, ms));
    let start = Instant::now();

    let tasks: Vec<_> = ["a", "b", "c"]
        .into_iter()
        .map(|task| {
            let limiter = Arc::clone(&limiter);
            tokio::spawn(async move {
                for request in 1..=2 {
                    limiter.until_ready(&"upload").await?;
                    let waited = start.elapsed().as_millis();
                    println!("task {task} request {request}: admitted at {waited:>4} ms");
                }
                Ok::<(), WaitError>(())
            })
        })
        .collect();
    for task in tasks {
        task.await??;
    }

    // The key is full until about 1500 ms: no room within 100 ms, and the limiter knows it
    // before sleeping, so the caller can answer 429 (or shed the work) right away.
    let asked = Instant::now();
    let deadline = asked + Duration::from_millis(100);
    match limiter.until_ready_by(&"upload", deadline).await {
        Err(error @ WaitError::DeadlineExceeded) => println!(
            "a request with a 100 ms deadline: {error} (known after {} ms, without sleeping)",
            asked.elapsed().as_millis()
        ),
        other => return Err(format!("expected DeadlineExceeded, got {other:?}").into()),
    }
    Ok(())
}
