//! How much of a key pool's capacity the bucketed relaxations (A, B and AB) give
//! up against the exact pool, for a fixed bucket budget, on request streams of different
//! burstiness: for a fixed budget, should buckets close on time or on uses?
//!
//! ```text
//! cargo run --release -p slidelimit-bench --bin pool_utilization [-- --out DIR | --out -]
//!     [--seeds N] [--hours H]
//! ```
//!
//! The pool: 5 keys × 100 uses = `L` = 500 uses per cooldown `T` = 10 min, ticks in ms. For
//! each budget (5, 10, 20, 40, 80 buckets) five pools are built, from time-strict to
//! key-strict: A (the smallest `τ` whose exact bucket bound fits), AB with about 75 / 50 /
//! 25 % of the budget closed by time (`k` from the rest, then the smallest `τ` that fits),
//! and B (the smallest `k` that fits). Beside them runs the exact pool (500 buckets of one).
//! Every stream (Poisson at 0.5x/1x/2x capacity, on-off bursts of 50 to 1000, a burst of 451
//! then a trickle, a diurnal sine) is drawn for `--seeds` seeds (default 20) over `--hours`
//! simulated hours (default 24) and replayed through every pool ([`mod@replay`]), and through
//! [`eager::EagerModel`] (the same thresholds, every cooled bucket released first, as the
//! seed's Python does); per (stream, pool) the tool reports grants
//! relative to the exact pool, the false-negative rate (a refusal while fewer than `L` of the
//! pool's own grants lie in `(now - T, now]`), utilization (grants / `L` per `T` over the
//! run) and the pool's ledger bytes. Every refusal is also checked against the mode's promise
//! (fewer than `k` uses free; every held use within `T + τ`) and every grant against the
//! limit: any violation fails the run.
//!
//! Writes `table.md`, `pool-utilization.json`, `served-vs-budget.svg` and
//! `false-negatives-vs-budget.svg` into `results/pool-utilization/` unless `--out` says
//! otherwise; `--out -` prints the tables only.

mod configs;
mod eager;
mod plot;
mod replay;
mod report;
mod streams;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use rayon::prelude::*;
use slidelimit::pool::{PoolGeometry, PoolMode, SequentialLedger};
use slidelimit::KeyPool;

use slidelimit_bench::provenance::Facts;

use configs::{choose, config, Config, STRATEGIES};
use replay::{replay, Outcome};
use report::{Machine, Params, Report, Run, Summary};

const KEYS: usize = 5;
const USES_PER_KEY: u64 = 100;
const TOTAL_USES: u64 = KEYS as u64 * USES_PER_KEY;
const COOLDOWN_TICKS: u64 = 10 * 60_000;
const BUDGETS: [u64; 5] = [5, 10, 20, 40, 80];

struct Args {
    out: Option<PathBuf>,
    seeds: u64,
    hours: u64,
}

fn parse_args(root: &Path) -> Result<Option<Args>, String> {
    let mut args = Args {
        out: Some(root.join("results").join("pool-utilization")),
        seeds: 20,
        hours: 24,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = |flag: &str| it.next().ok_or(format!("{flag} needs a value"));
        match arg.as_str() {
            "--out" => {
                let v = value("--out")?;
                args.out = (v != "-").then(|| PathBuf::from(v));
            }
            "--seeds" => {
                args.seeds = value("--seeds")?
                    .parse()
                    .map_err(|e| format!("--seeds: {e}"))?;
            }
            "--hours" => {
                args.hours = value("--hours")?
                    .parse()
                    .map_err(|e| format!("--hours: {e}"))?;
            }
            "-h" | "--help" => {
                println!("usage: pool_utilization [--out DIR | --out -] [--seeds N] [--hours H]");
                return Ok(None);
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if args.seeds == 0 || args.hours == 0 {
        return Err("--seeds and --hours must be at least 1".to_owned());
    }
    Ok(Some(args))
}

/// Every pool of the study: the exact one first, then each budget's five.
fn all_configs() -> Vec<Config> {
    let mut out = vec![config(
        "exact".to_owned(),
        None,
        KEYS,
        USES_PER_KEY,
        COOLDOWN_TICKS,
        PoolMode::Exact,
    )];
    for budget in BUDGETS {
        for strategy in STRATEGIES {
            let mode = choose(strategy, TOTAL_USES, COOLDOWN_TICKS, budget)
                .expect("every strategy fits every budget of the study");
            out.push(config(
                strategy.label(),
                Some(budget),
                KEYS,
                USES_PER_KEY,
                COOLDOWN_TICKS,
                mode,
            ));
        }
    }
    out
}

fn geometry(mode: PoolMode) -> PoolGeometry {
    PoolGeometry::new(KEYS, USES_PER_KEY, COOLDOWN_TICKS, mode).expect("a chosen mode is valid")
}

/// Replays one trace through the sequential ledger and through the eager-release model; on
/// `check`, also through the lock-free `KeyPool`, which must answer as the ledger does.
fn run_one(mode: PoolMode, ticks: &[u64], check: bool) -> (Outcome, Outcome) {
    let geometry = geometry(mode);
    let mut ledger = SequentialLedger::new(geometry);
    let outcome = replay(&geometry, ticks, |now| ledger.take(now));
    let mut model = eager::EagerModel::new(&geometry);
    let eager = replay(&geometry, ticks, |now| model.take(now));
    if check {
        let pool = KeyPool::<u64>::new(0..KEYS as u64, USES_PER_KEY, COOLDOWN_TICKS, mode)
            .expect("a chosen mode is valid");
        let lock_free = replay(&geometry, ticks, |now| pool.take(now).map(|i| i as u64));
        assert_eq!(
            lock_free, outcome,
            "the lock-free pool and the sequential ledger must agree"
        );
    }
    (outcome, eager)
}

fn main() -> ExitCode {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap_or(Path::new("."))
        .to_path_buf();
    let args = match parse_args(&root) {
        Ok(Some(args)) => args,
        Ok(None) => return ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("pool_utilization: {e}");
            return ExitCode::FAILURE;
        }
    };
    let started = Instant::now();
    let duration = args.hours * 3_600_000;
    let params = Params {
        keys: KEYS,
        uses_per_key: USES_PER_KEY,
        total_uses: TOTAL_USES,
        cooldown_ticks: COOLDOWN_TICKS,
        hours: args.hours,
        seeds: args.seeds,
        budgets: BUDGETS.to_vec(),
    };
    let capacity = params.capacity();
    let configs = all_configs();
    let streams = streams::streams(TOTAL_USES, COOLDOWN_TICKS);
    let jobs: Vec<(usize, u64)> = (0..streams.len())
        .flat_map(|s| (0..args.seeds).map(move |seed| (s, seed)))
        .collect();
    // Every (stream, seed) job replays its trace through every pool, the jobs in parallel;
    // rayon collects them in job order, and the sort below fixes the report's order anyway.
    let mut runs: Vec<Run> = jobs
        .par_iter()
        .flat_map_iter(|&(s, seed)| {
            let stream = &streams[s];
            let trace_seed = 0x9001_0000 + 1_000 * s as u64 + seed;
            let ticks = streams::generate(
                stream.shape,
                trace_seed,
                duration,
                TOTAL_USES,
                COOLDOWN_TICKS,
            );
            let configs = &configs;
            (0..configs.len())
                .map(|c| {
                    let (outcome, eager) = run_one(configs[c].mode, &ticks, seed == 0);
                    Run::new(stream.name, seed, c, &configs[c], outcome, eager, capacity)
                })
                .collect::<Vec<_>>()
        })
        .collect();
    runs.sort_by_key(|r| {
        (
            streams.iter().position(|s| s.name == r.stream),
            r.config,
            r.seed,
        )
    });
    report::fill_relative(&mut runs);
    let summaries = Summary::all(&streams, &configs, &runs, capacity);
    let report = Report {
        machine: Machine {
            facts: Facts::collect("pool_utilization"),
            run_seconds: started.elapsed().as_secs_f64(),
        },
        params,
        configs,
        streams,
        summaries,
        violations: runs
            .iter()
            .map(|r| r.outcome.violations() + r.eager.violations())
            .sum(),
        runs,
    };
    let table = report::markdown(&report);
    match &args.out {
        None => print!("{table}"),
        Some(dir) => {
            let written = std::fs::create_dir_all(dir)
                .and_then(|()| std::fs::write(dir.join("table.md"), &table))
                .and_then(|()| {
                    let json =
                        serde_json::to_string_pretty(&report).map_err(std::io::Error::other)?;
                    std::fs::write(
                        dir.join("pool-utilization.json"),
                        report::compact_number_arrays(&json),
                    )
                })
                .and_then(|()| {
                    std::fs::write(
                        dir.join("served-vs-budget.svg"),
                        plot::per_stream(&report, plot::Metric::Served)
                            .map_err(std::io::Error::other)?,
                    )
                })
                .and_then(|()| {
                    std::fs::write(
                        dir.join("false-negatives-vs-budget.svg"),
                        plot::per_stream(&report, plot::Metric::FalseNegatives)
                            .map_err(std::io::Error::other)?,
                    )
                });
            if let Err(e) = written {
                eprintln!("pool_utilization: writing {}: {e}", dir.display());
                return ExitCode::FAILURE;
            }
            eprintln!(
                "wrote {}/{{table.md,pool-utilization.json,*.svg}}",
                dir.display()
            );
        }
    }
    eprintln!(
        "{} replays of {} streams x {} seeds in {:.1} s",
        report.runs.len(),
        report.streams.len(),
        args.seeds,
        started.elapsed().as_secs_f64()
    );
    let unsound: Vec<&Run> = report
        .runs
        .iter()
        .filter(|r| !r.outcome.sound() || !r.eager.sound())
        .collect();
    if let Some(first) = unsound.first() {
        eprintln!(
            "pool_utilization: {} replays broke a promise (first: {} seed {} pool {}: {:?})",
            unsound.len(),
            first.stream,
            first.seed,
            first.strategy,
            first.outcome
        );
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
