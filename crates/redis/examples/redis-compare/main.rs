//! The Redis comparison: the crate's three cells (exact script, buckets script, leased)
//! against the classic sorted-set recipe (ZREMRANGEBYSCORE + ZCARD + ZADD in MULTI) and a
//! fixed-window INCR + PEXPIRE, at 1, 2, 4 and 8 client threads on one hot key, on a
//! `redis-server` of its own. Per cell: decisions per second, latency p50/p99/p99.9, round
//! trips per decision, admissions against the limit's capacity, over-admissions found by the
//! window audit (`slidelimit_trace::audit`), and Redis memory for the key. Writes
//! `results/redis/compare.md` and `compare.json`.
//!
//! ```text
//! cargo run --release -p slidelimit-redis --example redis-compare [-- --rounds 5 --duration 600ms]
//! ```
//!
//! `--duration` is the time per cell and round, in the grammar of every command and tool
//! (`[COUNT]UNIT`: `600ms`, `2s`; `slidelimit_trace::duration`).

mod server;

use std::fmt::Write as _;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use slidelimit::{Clock, Limit};
use slidelimit_redis::{LeasedLimiter, Options, RedisLimiter, UnixMicros};
use slidelimit_trace::audit::Audit;
use slidelimit_trace::duration;

use server::Server;

/// 100 requests per 100 ms on the hot key: far below what 1 to 8 threads offer, so every
/// cell runs saturated, where over-admission shows.
const MAX: u64 = 100;
const WINDOW_MICROS: u64 = 100_000;
const THREADS: [usize; 4] = [1, 2, 4, 8];
const CELLS: [&str; 6] = [
    "exact-script",
    "buckets-script",
    "leased",
    "zset-multi",
    "zset-check-then-add",
    "fixed-window",
];
const BUCKETS: u64 = 10;
const LEASE_BATCH: u64 = 10;
const LEASE_MICROS: u64 = WINDOW_MICROS / 10;

struct Run {
    decisions: u64,
    admitted: Vec<u64>,
    latencies_ns: Vec<u64>,
    round_trips: u64,
}

/// One client thread's loop for `cell`, until `deadline`.
fn client(
    cell: &str,
    url: &str,
    prefix: &str,
    shared: &Option<Arc<RedisLimiter>>,
    deadline: Instant,
) -> Run {
    let mut run = Run {
        decisions: 0,
        admitted: Vec::new(),
        latencies_ns: Vec::new(),
        round_trips: 0,
    };
    let limit = Limit::new(MAX, WINDOW_MICROS).expect("limit");
    let clock = UnixMicros::new();
    let key = "hot";
    let leased = (cell == "leased").then(|| {
        // One leasing limiter per thread: each thread plays a separate process.
        LeasedLimiter::new(
            url,
            limit,
            Options::new()
                .prefix(prefix)
                .timeout(Duration::from_secs(5))
                .expiry_slack(Duration::from_secs(10)),
            LEASE_BATCH,
            LEASE_MICROS,
        )
        .expect("leased limiter")
    });
    let mut con = redis::Client::open(url)
        .and_then(|c| c.get_connection())
        .expect("connect");
    let zset_key = format!("{prefix}:{{{key}}}:zset");
    let mut seq = 0u64;
    while Instant::now() < deadline {
        let start = Instant::now();
        let (ok, tick) = match cell {
            "exact-script" | "buckets-script" => {
                let d = shared
                    .as_ref()
                    .expect("shared limiter")
                    .check_and_hit(key)
                    .expect("decision");
                (d.admitted, d.now)
            }
            "leased" => {
                let d = leased
                    .as_ref()
                    .expect("leased")
                    .check_and_hit(key)
                    .expect("decision");
                (d.admitted, d.now)
            }
            "zset-multi" => {
                // The classic recipe: trim, count, add, expire in one MULTI; admitted when
                // the count before the add was below the limit. Member: the timestamp, made
                // unique per thread as careful users do.
                let now = clock.now_ticks();
                seq += 1;
                let member = format!("{now}-{prefix}-{seq}-{:?}", std::thread::current().id());
                let (count,): (u64,) = redis::pipe()
                    .atomic()
                    .cmd("ZREMRANGEBYSCORE")
                    .arg(&zset_key)
                    .arg("-inf")
                    .arg(now.saturating_sub(WINDOW_MICROS))
                    .ignore()
                    .cmd("ZCARD")
                    .arg(&zset_key)
                    .cmd("ZADD")
                    .arg(&zset_key)
                    .arg(now)
                    .arg(member)
                    .ignore()
                    .cmd("PEXPIRE")
                    .arg(&zset_key)
                    .arg(WINDOW_MICROS / 1000 + 1)
                    .ignore()
                    .query(&mut con)
                    .expect("zset recipe");
                run.round_trips += 1;
                (count < MAX, now)
            }
            "zset-check-then-add" => {
                // The recipe as often written to avoid recording refusals: trim and count in
                // one MULTI, then add only if the count was below the limit. Two round trips
                // for an admission, and a race between the count and the add.
                let now = clock.now_ticks();
                let (count,): (u64,) = redis::pipe()
                    .atomic()
                    .cmd("ZREMRANGEBYSCORE")
                    .arg(&zset_key)
                    .arg("-inf")
                    .arg(now.saturating_sub(WINDOW_MICROS))
                    .ignore()
                    .cmd("ZCARD")
                    .arg(&zset_key)
                    .query(&mut con)
                    .expect("zset count");
                run.round_trips += 1;
                if count < MAX {
                    seq += 1;
                    let member = format!("{now}-{seq}-{:?}", std::thread::current().id());
                    let () = redis::pipe()
                        .atomic()
                        .cmd("ZADD")
                        .arg(&zset_key)
                        .arg(now)
                        .arg(member)
                        .ignore()
                        .cmd("PEXPIRE")
                        .arg(&zset_key)
                        .arg(WINDOW_MICROS / 1000 + 1)
                        .ignore()
                        .query(&mut con)
                        .expect("zset add");
                    run.round_trips += 1;
                    (true, now)
                } else {
                    (false, now)
                }
            }
            _ => {
                // Fixed window: one counter per window index, INCR + PEXPIRE in one MULTI.
                let now = clock.now_ticks();
                let bucket = format!("{prefix}:{{{key}}}:fixed:{}", now / WINDOW_MICROS);
                let (count,): (u64,) = redis::pipe()
                    .atomic()
                    .cmd("INCR")
                    .arg(&bucket)
                    .cmd("PEXPIRE")
                    .arg(&bucket)
                    .arg(2 * WINDOW_MICROS / 1000)
                    .ignore()
                    .query(&mut con)
                    .expect("fixed window");
                run.round_trips += 1;
                (count <= MAX, now)
            }
        };
        run.latencies_ns
            .push(u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX));
        run.decisions += 1;
        if ok {
            run.admitted.push(tick);
        }
    }
    if let Some(leased) = leased {
        run.round_trips += leased.round_trips();
    }
    run
}

fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Redis memory for the hot key's state in this cell (MEMORY USAGE, all samples).
fn memory(server: &Server, cell: &str, prefix: &str) -> u64 {
    let mut con = server.connection().expect("connect");
    let pattern = match cell {
        "fixed-window" => format!("{prefix}:{{hot}}:fixed:*"),
        "zset-multi" | "zset-check-then-add" => format!("{prefix}:{{hot}}:zset"),
        "leased" => format!("{prefix}:lease:{{#hot}}:*"),
        _ => format!("{prefix}:{{#hot}}:*"),
    };
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(&pattern)
        .query(&mut con)
        .unwrap_or_default();
    keys.iter()
        .map(|k| {
            redis::cmd("MEMORY")
                .arg("USAGE")
                .arg(k)
                .arg("SAMPLES")
                .arg(0)
                .query::<Option<u64>>(&mut con)
                .ok()
                .flatten()
                .unwrap_or(0)
        })
        .sum()
}

#[derive(Clone, Debug)]
struct Cell {
    cell: &'static str,
    threads: usize,
    decisions_per_s: f64,
    p50_us: f64,
    p99_us: f64,
    p999_us: f64,
    round_trips_per_decision: f64,
    admitted_of_capacity: f64,
    worst_window: u64,
    over_admissions: u64,
    memory_bytes: u64,
}

fn measure(
    server: &Server,
    cell: &'static str,
    threads: usize,
    round: usize,
    seconds: f64,
) -> Cell {
    let prefix = format!("{cell}-{threads}-{round}");
    let shared = match cell {
        "exact-script" => Some(Options::new()),
        "buckets-script" => Some(Options::new().buckets(BUCKETS)),
        _ => None,
    }
    .map(|options| {
        let limit = Limit::new(MAX, WINDOW_MICROS).expect("limit");
        Arc::new(
            RedisLimiter::new(
                &server.url,
                limit,
                options.prefix(&prefix).timeout(Duration::from_secs(5)),
            )
            .expect("limiter"),
        )
    });
    let barrier = Barrier::new(threads + 1);
    let duration = Duration::from_secs_f64(seconds);
    let runs: Vec<Run> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                let (barrier, shared, prefix, url) = (&barrier, &shared, &prefix, &server.url);
                scope.spawn(move || {
                    barrier.wait();
                    client(cell, url, prefix, shared, Instant::now() + duration)
                })
            })
            .collect();
        barrier.wait();
        handles
            .into_iter()
            .map(|h| h.join().expect("client thread"))
            .collect()
    });
    let decisions: u64 = runs.iter().map(|r| r.decisions).sum();
    let mut round_trips: u64 = runs.iter().map(|r| r.round_trips).sum();
    if let Some(shared) = &shared {
        round_trips += shared.round_trips();
    }
    let admitted: Vec<u64> = runs
        .iter()
        .flat_map(|r| r.admitted.iter().copied())
        .collect();
    let mut latencies: Vec<u64> = runs
        .iter()
        .flat_map(|r| r.latencies_ns.iter().copied())
        .collect();
    latencies.sort_unstable();
    let capacity = MAX as f64 * seconds * 1e6 / WINDOW_MICROS as f64;
    let audit = Audit::new(MAX, WINDOW_MICROS)
        .expect("a window of 100 ms")
        .key(admitted.iter().map(|&tick| (tick, 1)));
    Cell {
        cell,
        threads,
        decisions_per_s: decisions as f64 / seconds,
        p50_us: percentile(&latencies, 50.0) as f64 / 1e3,
        p99_us: percentile(&latencies, 99.0) as f64 / 1e3,
        p999_us: percentile(&latencies, 99.9) as f64 / 1e3,
        round_trips_per_decision: round_trips as f64 / decisions.max(1) as f64,
        admitted_of_capacity: admitted.len() as f64 / capacity,
        worst_window: audit.peak(),
        over_admissions: audit.over_limit_windows,
        memory_bytes: memory(server, cell, &prefix),
    }
}

/// One thread, one call of each kind in turn, so that each kind meets the same machine
/// state: the script's own cost beside a bare command and a trivial script, free of the
/// noise that moves whole cells (on a shared 2-core machine a loopback round trip flips
/// between ~8 and ~60 µs over time). p50 and p99 in µs.
fn interleaved(server: &Server, calls: usize) -> Vec<(&'static str, f64, f64)> {
    let limit = Limit::new(MAX, WINDOW_MICROS).expect("limit");
    let options = Options::new()
        .prefix("interleaved")
        .timeout(Duration::from_secs(5));
    let limiter = RedisLimiter::new(&server.url, limit, options).expect("limiter");
    let mut con = server.connection().expect("connect");
    let mut samples: [Vec<u64>; 4] = Default::default();
    let mut time = |slot: usize, f: &mut dyn FnMut()| {
        let start = Instant::now();
        f();
        samples[slot].push(u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX));
    };
    for i in 0..calls {
        time(0, &mut || {
            let _ = limiter.check_and_hit("hot").expect("decision");
        });
        time(1, &mut || {
            let _ = limiter.status(&format!("idle-{}", i % 8)).expect("status");
        });
        time(2, &mut || {
            let _: u64 = redis::cmd("INCR")
                .arg("interleaved-counter")
                .query(&mut con)
                .expect("INCR");
        });
        time(3, &mut || {
            let _: i64 = redis::cmd("EVAL")
                .arg("return 1")
                .arg(0)
                .query(&mut con)
                .expect("EVAL");
        });
    }
    let names = [
        "exact script, check_and_hit on the saturated key",
        "exact script, status of an empty key",
        "INCR (bare command)",
        "EVAL \"return 1\" (trivial script)",
    ];
    names
        .into_iter()
        .zip(samples)
        .map(|(name, mut v)| {
            v.sort_unstable();
            (
                name,
                percentile(&v, 50.0) as f64 / 1e3,
                percentile(&v, 99.0) as f64 / 1e3,
            )
        })
        .collect()
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn command_output(program: &str, args: &[&str]) -> String {
    std::process::Command::new(program)
        .args(args)
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let flag = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .map(|i| args.get(i + 1).map_or("", String::as_str))
    };
    let usage = |message: String| -> ! {
        eprintln!("redis-compare: {message} (usage: --rounds N --duration DURATION)");
        std::process::exit(2);
    };
    let rounds = flag("--rounds").map_or(5, |v| match v.parse::<usize>() {
        Ok(n) if n > 0 => n,
        _ => usage(format!("--rounds `{v}` is not a whole number above 0")),
    });
    let seconds = flag("--duration")
        .map_or(Ok(Duration::from_millis(600)), duration::parse)
        .unwrap_or_else(|err| usage(format!("--duration: {err}")))
        .as_secs_f64();
    let server = match Server::start() {
        Ok(server) => server,
        Err(err) => {
            eprintln!("redis-compare: {err}");
            std::process::exit(1);
        }
    };
    // Rounds outermost: each round visits every cell, so a noisy spell on the shared
    // machine spreads over all cells instead of landing on one.
    let grid: Vec<(&'static str, usize)> = CELLS
        .iter()
        .flat_map(|&cell| THREADS.iter().map(move |&threads| (cell, threads)))
        .collect();
    let probe = interleaved(&server, 5_000);
    let mut all: Vec<Vec<Cell>> = vec![Vec::new(); grid.len()];
    for round in 0..rounds {
        for (slot, &(cell, threads)) in grid.iter().enumerate() {
            let run = measure(&server, cell, threads, round, seconds);
            eprintln!(
                "round {round} {cell:>19} x{threads}: {:>9.0} decisions/s, p50 {:.1} us, rt/decision {:.3}, over-admissions {}",
                run.decisions_per_s, run.p50_us, run.round_trips_per_decision, run.over_admissions
            );
            all[slot].push(run);
        }
    }
    write_results(&all, &probe, rounds, seconds, &args);
}

fn write_results(
    all: &[Vec<Cell>],
    probe: &[(&str, f64, f64)],
    rounds: usize,
    seconds: f64,
    args: &[String],
) {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_owned())
        })
        .unwrap_or_else(|| "unknown".to_owned());
    let cores = std::thread::available_parallelism().map_or(0, usize::from);
    let rustc = command_output("rustc", &["--version"]);
    let commit = command_output("git", &["rev-parse", "HEAD"]);
    let redis_version = command_output("redis-server", &["--version"]);
    let command = format!(
        "cargo run --release -p slidelimit-redis --example redis-compare -- {}",
        args[1..].join(" ")
    );
    let command = command.trim_end().trim_end_matches(" --").to_owned();
    let mut md = String::new();
    let _ = writeln!(md, "# Redis backend comparison\n");
    let _ = writeln!(md, "One hot key, limit {MAX} per {} ms, every client thread calling as fast as it can (saturated); a loopback `redis-server` of the benchmark's own (no persistence). Medians of {rounds} rounds of {seconds} s per cell; over-admissions summed over the rounds.\n", WINDOW_MICROS / 1000);
    let _ = writeln!(md, "- CPU: {cpu}, {cores} cores (the server, the clients and nothing else pinned)\n- {rustc}\n- {redis_version}\n- commit {commit}\n- command: `{command}`\n");
    let _ = writeln!(md, "Cells: `exact-script` and `buckets-script` (B = {BUCKETS}): this crate's scripts, server `TIME`, one shared `RedisLimiter` (pooled connections); `leased`: one `LeasedLimiter` per thread (each thread plays a process), batch {LEASE_BATCH}, lease {} ms; `zset-multi`: MULTI ZREMRANGEBYSCORE + ZCARD + ZADD + PEXPIRE, admitted when the count before the add is below the limit (every request is added, refused ones too), client clock, unique members; `zset-check-then-add`: MULTI ZREMRANGEBYSCORE + ZCARD, then, if the count was below the limit, MULTI ZADD + PEXPIRE (refusals not recorded; a race between count and add); `fixed-window`: MULTI INCR + PEXPIRE per window index. Over-admissions: windows `(t - W, t]` (W in the deciding clock: the server's for the scripts, the lease estimate for `leased`, the client's for the recipes) holding more than {MAX} admissions; worst window: the most admissions any window held. Admitted: admissions over the limit's capacity in the run ({MAX} per window; a run can fit one window more at its edges, so up to ~117 % is no over-admission: the window check decides).\n", LEASE_MICROS / 1000);
    let _ = writeln!(md, "| cell | threads | decisions/s | p50 µs | p99 µs | p99.9 µs | round trips / decision | admitted / capacity | worst window | over-admissions | memory / key (bytes) |");
    let _ = writeln!(md, "|---|---|---|---|---|---|---|---|---|---|---|");
    let mut json = String::from("{\n");
    let _ = writeln!(json, "  \"cpu\": {:?},\n  \"cores\": {cores},\n  \"rustc\": {rustc:?},\n  \"redis\": {redis_version:?},\n  \"commit\": {commit:?},\n  \"command\": {command:?},\n  \"rounds\": {rounds},\n  \"seconds_per_cell\": {seconds},\n  \"max_requests\": {MAX},\n  \"window_micros\": {WINDOW_MICROS},\n  \"cells\": [", cpu);
    for (i, runs) in all.iter().enumerate() {
        let first = &runs[0];
        let med = |f: fn(&Cell) -> f64| median(runs.iter().map(f).collect());
        let over: u64 = runs.iter().map(|r| r.over_admissions).sum();
        let worst = runs.iter().map(|r| r.worst_window).max().unwrap_or(0);
        let mem = med(|r| r.memory_bytes as f64);
        let _ = writeln!(
            md,
            "| {} | {} | {:.0} | {:.1} | {:.1} | {:.1} | {:.3} | {:.1} % | {} | {} | {:.0} |",
            first.cell,
            first.threads,
            med(|r| r.decisions_per_s),
            med(|r| r.p50_us),
            med(|r| r.p99_us),
            med(|r| r.p999_us),
            med(|r| r.round_trips_per_decision),
            100.0 * med(|r| r.admitted_of_capacity),
            worst,
            over,
            mem
        );
        let _ = writeln!(
            json,
            "    {{\"cell\": {:?}, \"threads\": {}, \"decisions_per_s\": {:.1}, \"p50_us\": {:.2}, \"p99_us\": {:.2}, \"p999_us\": {:.2}, \"round_trips_per_decision\": {:.4}, \"admitted_of_capacity\": {:.4}, \"worst_window\": {worst}, \"over_admissions\": {over}, \"memory_bytes\": {mem:.0}, \"rounds\": [{}]}}{}",
            first.cell, first.threads, med(|r| r.decisions_per_s), med(|r| r.p50_us), med(|r| r.p99_us), med(|r| r.p999_us),
            med(|r| r.round_trips_per_decision), med(|r| r.admitted_of_capacity),
            runs.iter().map(|r| format!("{{\"decisions_per_s\": {:.1}, \"p99_us\": {:.2}, \"over_admissions\": {}}}", r.decisions_per_s, r.p99_us, r.over_admissions)).collect::<Vec<_>>().join(", "),
            if i + 1 == all.len() { "" } else { "," }
        );
    }
    json.push_str("  ],\n  \"interleaved\": [");
    let _ = writeln!(md, "\n## Interleaved, one thread\n");
    let _ = writeln!(md, "Each kind of call in turn, 5,000 times, on one thread, so that all meet the same machine state (the cells above run at different moments of a noisy shared machine):\n");
    let _ = writeln!(md, "| call | p50 µs | p99 µs |\n|---|---|---|");
    for (i, (name, p50, p99)) in probe.iter().enumerate() {
        let _ = writeln!(md, "| {name} | {p50:.1} | {p99:.1} |");
        let sep = if i + 1 == probe.len() { "" } else { ", " };
        let _ = write!(
            json,
            "{{\"call\": {name:?}, \"p50_us\": {p50:.2}, \"p99_us\": {p99:.2}}}{sep}"
        );
    }
    json.push_str("]\n}\n");
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../results/redis");
    std::fs::create_dir_all(&dir).expect("results/redis");
    std::fs::write(dir.join("compare.md"), md).expect("write compare.md");
    std::fs::write(dir.join("compare.json"), json).expect("write compare.json");
    eprintln!("wrote {}", dir.display());
}
