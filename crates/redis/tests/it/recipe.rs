//! The negative control: the classic sorted-set recipe as often written (trim and count in
//! one MULTI, then add if the count was below the limit) races between its count and its
//! add, and the same window checker that finds 0 over-admissions in this crate's cells
//! catches it.

use std::time::{Duration, Instant};

use slidelimit::Clock;
use slidelimit_redis::UnixMicros;

use crate::over_admissions;
use crate::shared;

const MAX: u64 = 20;
const WINDOW: u64 = 20_000;

fn check_then_add(key: &str, run: Duration) -> Vec<(u64, u64)> {
    let clock = UnixMicros::new();
    let mut con = shared().connection();
    let mut admitted = Vec::new();
    let start = Instant::now();
    let mut seq = 0;
    while start.elapsed() < run && seq < 50_000 {
        seq += 1;
        let now = clock.now_ticks();
        let (count,): (u64,) = redis::pipe()
            .atomic()
            .cmd("ZREMRANGEBYSCORE")
            .arg(key)
            .arg("-inf")
            .arg(now - WINDOW)
            .ignore()
            .cmd("ZCARD")
            .arg(key)
            .query(&mut con)
            .unwrap();
        if count < MAX {
            let member = format!("{now}-{seq}-{:?}", std::thread::current().id());
            let _: () = redis::cmd("ZADD")
                .arg(key)
                .arg(now)
                .arg(member)
                .query(&mut con)
                .unwrap();
            admitted.push((now, 1));
        }
    }
    admitted
}

#[test]
fn the_checker_catches_the_check_then_add_recipe() {
    // Bounded: up to 5 attempts of 8 threads for 300 ms each; one over-admission suffices.
    let mut found = 0;
    for attempt in 0..5 {
        let key = format!("recipe:{{k}}:{attempt}");
        let handles: Vec<_> = (0..8)
            .map(|_| {
                let key = key.clone();
                std::thread::spawn(move || check_then_add(&key, Duration::from_millis(300)))
            })
            .collect();
        let admitted: Vec<(u64, u64)> = handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect();
        found = over_admissions(admitted, MAX, WINDOW);
        if found > 0 {
            break;
        }
    }
    assert!(
        found > 0,
        "the racy recipe over-admitted in none of 5 attempts"
    );
}
