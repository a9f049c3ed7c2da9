//! Several OS processes (this test binary, re-executed) hammer shared keys with skewed load
//! and, in caller-clock modes, skewed clocks; each records every admission; the parent
//! merges them and slides the window: 0 over-admissions, in every mode.

use std::collections::HashMap;
use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use slidelimit_redis::{LeasedLimiter, Options, RedisLimiter, TimeSource, UnixMicros};

use crate::over_admissions;
use crate::{limit, Server};
use slidelimit_trace::rng::SplitMix64;

const CHILD_ENV: &str = "SLIDELIMIT_REDIS_CHILD";
const PROCESSES: u64 = 4;
const THREADS: u64 = 2;
const MAX: u64 = 50;
const WINDOW: u64 = 100_000; // 50 per 100 ms
const RUN: Duration = Duration::from_millis(1500);
const MAX_CALLS: u64 = 40_000;
const KEYS: [&str; 3] = ["k0", "k1", "k2"];

/// Which limiter a child runs, and whose clock decides.
const MODES: [&str; 5] = [
    "exact-server",
    "exact-caller-skewed",
    "buckets-server",
    "lease-server",
    "lease-caller-skewed",
];

enum Child {
    Remote(Box<RedisLimiter>),
    Leased(Box<LeasedLimiter>),
}

/// The child role: does nothing unless started by the parent test below.
#[test]
fn child() {
    let Ok(mode) = std::env::var(CHILD_ENV) else {
        return;
    };
    let url = std::env::var("SLIDELIMIT_REDIS_URL").expect("url");
    let out = std::env::var("SLIDELIMIT_REDIS_OUT").expect("out");
    let process: u64 = std::env::var("SLIDELIMIT_REDIS_PROCESS")
        .expect("process")
        .parse()
        .unwrap();
    // Clock skew in caller modes: -6, -2, +2, +6 ms.
    let skew = (i64::try_from(process).unwrap() * 4 - 6) * 1_000;
    let time = if mode.contains("caller") {
        TimeSource::Caller(Arc::new(UnixMicros::with_offset(skew)))
    } else {
        TimeSource::Server
    };
    let options = Options::new()
        .prefix(&mode)
        .timeout(Duration::from_secs(5))
        .expiry_slack(Duration::from_secs(10))
        .time(time);
    let lim = limit(MAX, WINDOW);
    let limiter = Arc::new(match mode.as_str() {
        m if m.starts_with("exact") => {
            Child::Remote(Box::new(RedisLimiter::new(&url, lim, options).unwrap()))
        }
        m if m.starts_with("buckets") => Child::Remote(Box::new(
            RedisLimiter::new(&url, lim, options.buckets(10)).unwrap(),
        )),
        _ => Child::Leased(Box::new(
            LeasedLimiter::new(&url, lim, options, 5, WINDOW / 10).unwrap(),
        )),
    });
    let threads: Vec<_> = (0..THREADS)
        .map(|thread| {
            let limiter = Arc::clone(&limiter);
            std::thread::spawn(move || {
                let mut rng = SplitMix64::new(process * 1_000 + thread + 1);
                let mut admitted = Vec::new();
                let start = Instant::now();
                let mut calls = 0;
                while calls < MAX_CALLS && start.elapsed() < RUN {
                    calls += 1;
                    // Skewed keys: k0 70 %, k1 20 %, k2 10 %.
                    let roll = rng.below(10);
                    let key = KEYS[usize::from(roll >= 7) + usize::from(roll >= 9)];
                    let (ok, now) = match &*limiter {
                        Child::Remote(l) => {
                            let d = l.check_and_hit(key).unwrap();
                            (d.admitted, d.now)
                        }
                        Child::Leased(l) => {
                            let d = l.check_and_hit(key).unwrap();
                            (d.admitted, d.now)
                        }
                    };
                    if ok {
                        admitted.push((key, now));
                    }
                    // Skewed load: process p pauses (1 + 2p) × 50 µs between calls.
                    std::thread::sleep(Duration::from_micros((1 + 2 * process) * 50));
                }
                (calls, admitted)
            })
        })
        .collect();
    let mut file = std::io::BufWriter::new(std::fs::File::create(&out).unwrap());
    let mut calls = 0;
    for handle in threads {
        let (c, admitted) = handle.join().unwrap();
        calls += c;
        for (key, now) in admitted {
            writeln!(file, "{key} {now}").unwrap();
        }
    }
    let trips = match &*limiter {
        Child::Remote(l) => l.round_trips(),
        Child::Leased(l) => l.round_trips(),
    };
    writeln!(file, "# {calls} {trips}").unwrap();
}

struct ModeResult {
    admitted: HashMap<String, Vec<(u64, u64)>>,
    calls: u64,
    trips: u64,
}

fn run_mode(server: &Server, mode: &str, dir: &std::path::Path) -> ModeResult {
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..PROCESSES)
        .map(|p| {
            let out = dir.join(format!("{mode}-{p}.txt"));
            let child = Command::new(&exe)
                .args([
                    "--exact",
                    "multiprocess::child",
                    "--nocapture",
                    "--test-threads",
                    "1",
                ])
                .env(CHILD_ENV, mode)
                .env("SLIDELIMIT_REDIS_URL", server.url())
                .env("SLIDELIMIT_REDIS_OUT", &out)
                .env("SLIDELIMIT_REDIS_PROCESS", p.to_string())
                .stdout(Stdio::null())
                .spawn()
                .unwrap();
            (child, out)
        })
        .collect();
    let mut result = ModeResult {
        admitted: HashMap::new(),
        calls: 0,
        trips: 0,
    };
    for (mut child, out) in children {
        let deadline = Instant::now() + Duration::from_secs(120);
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("{mode}: a child ran past 120 s");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        assert!(status.success(), "{mode}: a child failed");
        let text = std::fs::read_to_string(&out).unwrap();
        for line in text.lines() {
            let mut parts = line.split(' ');
            let first = parts.next().unwrap();
            if first == "#" {
                result.calls += parts.next().unwrap().parse::<u64>().unwrap();
                result.trips += parts.next().unwrap().parse::<u64>().unwrap();
            } else {
                let now: u64 = parts.next().unwrap().parse().unwrap();
                result
                    .admitted
                    .entry(first.to_owned())
                    .or_default()
                    .push((now, 1));
            }
        }
    }
    result
}

#[test]
fn processes_with_skewed_clocks_and_load_never_over_admit() {
    if std::env::var(CHILD_ENV).is_ok() {
        return;
    }
    let server = Server::start();
    let dir = std::env::temp_dir().join(format!("slidelimit-mp-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut per_mode = Vec::new();
    for mode in MODES {
        let result = run_mode(&server, mode, &dir);
        let mut admissions = 0;
        for key in KEYS {
            let ticks = result.admitted.get(key).cloned().unwrap_or_default();
            admissions += ticks.len();
            // The limit must have bitten on the hot key, or the test proves nothing.
            if key == "k0" {
                assert!(
                    ticks.len() as u64 > 2 * MAX,
                    "{mode}: {} admitted on k0",
                    ticks.len()
                );
            }
            assert_eq!(over_admissions(ticks, MAX, WINDOW), 0, "{mode}: key {key}");
        }
        assert!(
            (admissions as u64) < result.calls,
            "{mode}: some calls were refused"
        );
        println!(
            "multiprocess {mode}: {PROCESSES} processes x {THREADS} threads, {} keys, {} calls, \
             {admissions} admissions, 0 over-admissions, {:.3} round trips per decision, \
             {:.3} per admission",
            KEYS.len(),
            result.calls,
            result.trips as f64 / result.calls as f64,
            result.trips as f64 / admissions as f64
        );
        per_mode.push((mode, admissions, result.trips, result.calls));
    }
    let _ = std::fs::remove_dir_all(&dir);
    // Leases cut round trips per decision by at least 3x against the exact script.
    let exact = per_mode.iter().find(|m| m.0 == "exact-server").unwrap();
    let lease = per_mode.iter().find(|m| m.0 == "lease-server").unwrap();
    let exact_rt = exact.2 as f64 / exact.3 as f64;
    let lease_rt = lease.2 as f64 / lease.3 as f64;
    println!(
        "lease vs exact (server clock): admitted {} vs {} ({:.1} %), round trips per decision {lease_rt:.3} vs {exact_rt:.3} ({:.1}x fewer)",
        lease.1,
        exact.1,
        100.0 * lease.1 as f64 / exact.1 as f64,
        exact_rt / lease_rt
    );
    assert!(
        lease_rt * 3.0 < exact_rt,
        "leases: {lease_rt} vs exact {exact_rt}"
    );
}
