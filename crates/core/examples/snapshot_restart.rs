//! A limiter's state kept across a restart: on start, load the snapshot file if there is one;
//! decide some requests; on exit, save a snapshot to the file.
//!
//! ```text
//! cargo run -p slidelimit --example snapshot_restart               # $TMPDIR/slidelimit-snapshot.bin
//! cargo run -p slidelimit --example snapshot_restart               # again: continues the first run's windows
//! cargo run -p slidelimit --example snapshot_restart -- state.bin   # or a file of your own
//! ```
//!
//! The limit is 5 requests per minute per user and each run sends 3 for `alice`: a first run
//! admits 3, a second run within the minute admits 2 and refuses 1, because the restored
//! windows still hold the first run's hits. After a minute the hits have left and a run
//! admits 3 again. Delete the file to start afresh.

use std::error::Error;
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use slidelimit::{Conversion, Limit, LockFreeLimiter, SavedState, Snapshot};

fn main() -> Result<(), Box<dyn Error>> {
    let path = std::env::args_os().nth(1).map_or_else(
        || std::env::temp_dir().join("slidelimit-snapshot.bin"),
        PathBuf::from,
    );
    let limit = Limit::per_minute(5, Duration::from_millis(1))?;
    let limiter: LockFreeLimiter<String> = LockFreeLimiter::new(limit);

    match std::fs::read(&path) {
        Ok(bytes) => {
            let snapshot = Snapshot::from_bytes(&bytes)?;
            let age = unix_millis()?.saturating_sub(snapshot.taken_at);
            // `Exact` refuses a snapshot of another limit (after a config change, use
            // `Conversion::ToLimiter`, which converts conservatively).
            let restored = limiter.restore(&snapshot, unix_millis()?, Conversion::Exact)?;
            println!(
                "loaded {} (saved {age} ms ago): {} key(s) restored",
                path.display(),
                restored.keys
            );
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            println!("no snapshot at {}: starting empty", path.display());
        }
        Err(error) => return Err(error.into()),
    }

    let user = "alice".to_string();
    for request in 1..=3 {
        let admitted = limiter.check_and_hit(&user, unix_millis()?);
        let status = limiter.status(&user, unix_millis()?);
        println!(
            "request {request} for {user}: {}, {} of 5 left in the last minute",
            if admitted { "admitted" } else { "refused" },
            status.remaining
        );
    }

    // postcard bytes (`to_json` gives JSON for people). Written beside the target and
    // renamed over it, so a crash mid-write never leaves a truncated snapshot behind.
    let bytes = limiter.snapshot(unix_millis()?).to_bytes()?;
    let partial = path.with_extension("partial");
    std::fs::write(&partial, &bytes)?;
    std::fs::rename(&partial, &path)?;
    println!("saved {} bytes to {}", bytes.len(), path.display());
    Ok(())
}

/// The tick: milliseconds since the Unix epoch. Ticks must mean the same instant in both
/// processes, so they come from the wall clock, not from a per-process monotonic clock (a
/// wall clock stepped back only makes calls late, which the limiters answer conservatively).
fn unix_millis() -> Result<u64, Box<dyn Error>> {
    let since_epoch = SystemTime::now().duration_since(UNIX_EPOCH)?;
    Ok(u64::try_from(since_epoch.as_millis())?)
}
