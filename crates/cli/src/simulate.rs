//! `slidelimit simulate`: a generated workload through one or more limits, each with the exact
//! log and the rolling buckets asked for, so an operator can choose `N`, `W` and `B`.
//!
//! The workload is a Poisson process of bursts: `rate / burst` bursts per second, each of
//! `burst` requests of one key at one tick, the key drawn by a Zipf law (the benchmarks'
//! sampler) or uniformly, all from one seeded generator. It is generated again for every
//! limit, identically, rather than kept in memory.

use std::collections::HashMap;
use std::fmt::Write as _;

use serde::Serialize;
use slidelimit::Limit;
use slidelimit_trace::audit::RunningPeak;
use slidelimit_trace::duration::format as format_duration;
use slidelimit_trace::rng::SplitMix64;
use slidelimit_trace::zipf::Zipf;

use crate::audit::{audit, audits};
use crate::cli::SimulateArgs;
use crate::outcome::{Done, Failure};
use crate::progress::Progress;
use crate::replay::to_json;
use crate::spec::WindowSpec;
use crate::table::{percent, Table};
use crate::variant::{build, DynLimiter, WindowName};

/// The generated requests: `(tick, key rank)` in non-decreasing tick order; rank 1 is the
/// most popular key.
struct Workload {
    rng: SplitMix64,
    zipf: Option<Zipf>,
    keys: u64,
    burst: u64,
    bursts_per_tick: f64,
    end_tick: f64,
    now: f64,
    left_in_burst: u64,
    current: (u64, u64),
}

impl Workload {
    /// The workload `args` ask for.
    ///
    /// # Errors
    /// [`Failure::Usage`] when `--keys` and `--zipf` make no Zipf law.
    fn new(args: &SimulateArgs) -> Result<Self, Failure> {
        let tick_secs = args.tick.as_secs_f64();
        let zipf = if args.zipf > 0.0 {
            Some(Zipf::new(args.keys, args.zipf).map_err(|err| {
                Failure::Usage(format!("--keys {} --zipf {}: {err}", args.keys, args.zipf))
            })?)
        } else {
            None
        };
        Ok(Self {
            rng: SplitMix64::new(args.seed),
            zipf,
            keys: args.keys,
            burst: args.burst,
            bursts_per_tick: args.rate / args.burst as f64 * tick_secs,
            end_tick: args.duration.as_secs_f64() / tick_secs,
            now: 0.0,
            left_in_burst: 0,
            current: (0, 0),
        })
    }
}

impl Iterator for Workload {
    type Item = (u64, u64);

    fn next(&mut self) -> Option<(u64, u64)> {
        if self.left_in_burst == 0 {
            // Exponential gaps between bursts; 1 - u is in (0, 1], so the log is finite.
            self.now += -(1.0 - self.rng.next_f64()).ln() / self.bursts_per_tick;
            if self.now >= self.end_tick {
                return None;
            }
            let rank = match &self.zipf {
                Some(zipf) => zipf.sample(&mut self.rng),
                None => 1 + self.rng.below(self.keys),
            };
            // `now` is below `end_tick`, a finite, non-negative tick count.
            self.current = (self.now as u64, rank);
            self.left_in_burst = self.burst;
        }
        self.left_in_burst -= 1;
        Some(self.current)
    }
}

/// What one limiter did to the workload.
struct Run {
    window: WindowSpec,
    limiter: DynLimiter,
    admitted: u64,
    refused: u64,
    refused_by_key: HashMap<u64, u64>,
    /// Per key, one running peak per window of the limit (narrowest first, the widest last).
    peaks: HashMap<u64, Vec<RunningPeak>>,
    false_negatives: u64,
    false_positives: u64,
}

/// One row of the report: a limit with one window.
#[derive(Serialize)]
struct Row {
    limit: String,
    max_requests: u64,
    window_ticks: u64,
    window: String,
    requests: u64,
    admitted: u64,
    refused: u64,
    admitted_fraction: f64,
    keys_refused: usize,
    worst_key: Option<WorstKey>,
    peak_window: u64,
    offered_peak_window: u64,
    /// Admitted by the exact log, refused here (`None` for the exact log itself).
    false_negatives: Option<u64>,
    /// Refused by the exact log, admitted here.
    false_positives: Option<u64>,
}

/// The key with the most refusals.
#[derive(Serialize)]
struct WorstKey {
    key: String,
    requests: u64,
    refused: u64,
}

/// Runs `slidelimit simulate` and returns the report to print.
///
/// # Errors
/// [`Failure::Usage`] for a limit, window or exponent the run cannot take; [`Failure::Bug`]
/// when a limiter admitted more than `N` in one window.
pub fn run(args: &SimulateArgs, allow_progress: bool) -> Result<(String, Done), Failure> {
    if !args.zipf.is_finite() || args.zipf < 0.0 {
        return Err(Failure::Usage(format!(
            "--zipf {}: the exponent must be 0 (uniform) or positive",
            args.zipf
        )));
    }
    let mut windows = vec![WindowSpec::Exact];
    for window in &args.window {
        if !windows.contains(window) {
            windows.push(*window);
        }
    }
    let mut limits = Vec::new();
    for spec in &args.limit {
        let limit = spec
            .to_limit(args.tick)
            .map_err(|err| Failure::Usage(format!("--limit {spec}: {err}")))?;
        for &window in &windows {
            // Checked here so that a bad combination fails before any work.
            build(args.variant, window, limit).map_err(|err| {
                Failure::Usage(format!("--limit {spec} with --window {window}: {err}"))
            })?;
        }
        limits.push((spec.to_string(), limit));
    }

    let expected = (args.rate * args.duration.as_secs_f64()).ceil() as u64;
    let mut rows = Vec::new();
    let mut summary = None;
    for (name, limit) in &limits {
        let (pass_rows, pass_summary) =
            run_limit(args, name, *limit, &windows, expected, allow_progress)?;
        rows.extend(pass_rows);
        summary.get_or_insert(pass_summary);
    }
    let summary = summary.unwrap_or_default();
    let report = if args.json {
        #[derive(Serialize)]
        struct Report<'a> {
            rate_per_second: f64,
            burst: u64,
            keys: u64,
            zipf: f64,
            duration: String,
            tick: String,
            seed: u64,
            variant: String,
            #[serde(flatten)]
            summary: &'a Summary,
            rows: &'a [Row],
        }
        to_json(&Report {
            rate_per_second: args.rate,
            burst: args.burst,
            keys: args.keys,
            zipf: args.zipf,
            duration: format_duration(args.duration),
            tick: format_duration(args.tick),
            seed: args.seed,
            variant: variant_name(args),
            summary: &summary,
            rows: &rows,
        })
    } else {
        text_report(args, &summary, &rows)
    };
    Ok((report, Done::Clean))
}

/// What the workload held (the same for every limit).
#[derive(Default, Serialize)]
struct Summary {
    requests: u64,
    keys_seen: usize,
    hottest_key_requests: u64,
}

fn key_name(rank: u64) -> String {
    format!("key-{rank}")
}

fn variant_name(args: &SimulateArgs) -> String {
    clap::ValueEnum::to_possible_value(&args.variant)
        .map(|v| v.get_name().to_owned())
        .unwrap_or_default()
}

/// One pass of the workload through `limit` with every window, in lockstep.
fn run_limit(
    args: &SimulateArgs,
    name: &str,
    limit: Limit,
    windows: &[WindowSpec],
    expected: u64,
    allow_progress: bool,
) -> Result<(Vec<Row>, Summary), Failure> {
    let window_ticks = limit.window_ticks();
    let audit = audit(limit);
    let audits = audits(limit);
    let mut runs: Vec<Run> = Vec::new();
    for &window in windows {
        let limiter = build(args.variant, window, limit)
            .map_err(|err| Failure::Usage(format!("--window {window}: {err}")))?;
        runs.push(Run {
            window,
            limiter,
            admitted: 0,
            refused: 0,
            refused_by_key: HashMap::new(),
            peaks: HashMap::new(),
            false_negatives: 0,
            false_positives: 0,
        });
    }
    let mut names: HashMap<u64, String> = HashMap::new();
    let mut requests_by_key: HashMap<u64, u64> = HashMap::new();
    let mut offered: HashMap<u64, RunningPeak> = HashMap::new();
    let mut requests = 0u64;
    let mut progress = Progress::new(
        &format!("simulating {name}"),
        Some(expected),
        "requests",
        allow_progress,
    );
    for (now, rank) in Workload::new(args)? {
        requests += 1;
        *requests_by_key.entry(rank).or_default() += 1;
        offered
            .entry(rank)
            .or_insert_with(|| audit.running())
            .push(now, 1);
        let key = names.entry(rank).or_insert_with(|| key_name(rank));
        let mut exact_admitted = false;
        for (i, run) in runs.iter_mut().enumerate() {
            let admitted = run.limiter.check_and_hit(key, now);
            if i == 0 {
                exact_admitted = admitted;
            } else if exact_admitted && !admitted {
                run.false_negatives += 1;
            } else if !exact_admitted && admitted {
                run.false_positives += 1;
            }
            if admitted {
                run.admitted += 1;
                let peaks = run
                    .peaks
                    .entry(rank)
                    .or_insert_with(|| audits.iter().map(|(_, audit)| audit.running()).collect());
                for peak in peaks {
                    peak.push(now, 1);
                }
            } else {
                run.refused += 1;
                *run.refused_by_key.entry(rank).or_default() += 1;
            }
        }
        progress.inc(1);
    }
    progress.finish();

    let offered_peak = offered.values().map(RunningPeak::peak).max().unwrap_or(0);
    let mut rows = Vec::new();
    for run in &runs {
        for (index, (window, _)) in audits.iter().enumerate() {
            let peak = run
                .peaks
                .values()
                .map(|peaks| peaks[index].peak())
                .max()
                .unwrap_or(0);
            if peak > window.max_requests() {
                return Err(Failure::Bug(format!(
                    "{} with {} admitted {peak} in one window of {} ticks, above the limit's {}",
                    variant_name(args),
                    WindowName(run.window),
                    window.window_ticks(),
                    window.max_requests()
                )));
            }
        }
        // The widest window's, as the report gives it.
        let peak = run
            .peaks
            .values()
            .filter_map(|peaks| peaks.last().map(RunningPeak::peak))
            .max()
            .unwrap_or(0);
        // The most refusals, then the most popular (lowest rank).
        let worst = run
            .refused_by_key
            .iter()
            .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
            .map(|(&rank, &refused)| WorstKey {
                key: key_name(rank),
                requests: requests_by_key[&rank],
                refused,
            });
        let exact = run.window == WindowSpec::Exact;
        rows.push(Row {
            limit: name.to_owned(),
            max_requests: limit.max_requests(),
            window_ticks,
            window: run.window.to_string(),
            requests,
            admitted: run.admitted,
            refused: run.refused,
            admitted_fraction: if requests == 0 {
                1.0
            } else {
                run.admitted as f64 / requests as f64
            },
            keys_refused: run.refused_by_key.len(),
            worst_key: worst,
            peak_window: peak,
            offered_peak_window: offered_peak,
            false_negatives: (!exact).then_some(run.false_negatives),
            false_positives: (!exact).then_some(run.false_positives),
        });
    }
    let summary = Summary {
        requests,
        keys_seen: requests_by_key.len(),
        hottest_key_requests: requests_by_key.values().copied().max().unwrap_or(0),
    };
    Ok((rows, summary))
}

fn text_report(args: &SimulateArgs, summary: &Summary, rows: &[Row]) -> String {
    let popularity = if args.zipf > 0.0 {
        format!("Zipf s={}", args.zipf)
    } else {
        "uniform".to_owned()
    };
    let mut out = format!(
        "simulate: {} requests over {} ({}/s offered, bursts of {}), {} keys ({popularity}), seed {}; {} keys seen, the busiest sent {} ({}); {}, ticks of {}\n",
        summary.requests,
        format_duration(args.duration),
        args.rate,
        args.burst,
        args.keys,
        args.seed,
        summary.keys_seen,
        summary.hottest_key_requests,
        percent(summary.hottest_key_requests, summary.requests),
        variant_name(args),
        format_duration(args.tick),
    );
    let mut table = Table::new(&[
        "limit",
        "window",
        "admitted",
        "refused",
        "keys refused",
        "worst key (refused/requests)",
        "peak",
        "offered peak",
        "false neg",
        "false pos",
    ]);
    let or_dash = |value: Option<u64>| value.map_or_else(|| "-".to_owned(), |v| v.to_string());
    for row in rows {
        let worst = row.worst_key.as_ref().map_or_else(
            || "-".to_owned(),
            |w| format!("{} ({}/{})", w.key, w.refused, w.requests),
        );
        table.row(&[
            row.limit.clone(),
            WindowName(row.window.parse().unwrap_or(WindowSpec::Exact)).to_string(),
            percent(row.admitted, row.requests),
            row.refused.to_string(),
            row.keys_refused.to_string(),
            worst,
            row.peak_window.to_string(),
            row.offered_peak_window.to_string(),
            or_dash(row.false_negatives),
            or_dash(row.false_positives),
        ]);
    }
    out.push_str(&table.render());
    let _ = writeln!(
        out,
        "peak: the most one key had admitted in one window; offered peak: the most one key asked for in one window"
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn args(line: &str) -> SimulateArgs {
        let cli = crate::cli::Cli::parse_from(line.split_whitespace());
        match cli.command {
            crate::cli::Command::Simulate(args) => args,
            _ => unreachable!("a simulate line"),
        }
    }

    #[test]
    fn the_workload_has_the_rate_bursts_and_order_asked_for() {
        let args = args(
            "slidelimit simulate --rate 1000/s --burst 4 --keys 50 --duration 20s --limit 1/s",
        );
        let requests: Vec<_> = Workload::new(&args).unwrap().collect();
        // 20,000 expected; a Poisson count of 5,000 bursts has a standard deviation of ~71.
        assert!(
            (19_000..21_000).contains(&requests.len()),
            "{}",
            requests.len()
        );
        assert_eq!(requests.len() % 4, 0, "whole bursts");
        assert!(requests.chunks(4).all(|b| b.iter().all(|r| *r == b[0])));
        assert!(requests.windows(2).all(|w| w[0].0 <= w[1].0), "time order");
        assert!(requests
            .iter()
            .all(|r| (1..=50).contains(&r.1) && r.0 < 20_000));
        let hottest = requests.iter().filter(|r| r.1 == 1).count();
        let coldest = requests.iter().filter(|r| r.1 == 50).count();
        assert!(hottest > 10 * coldest, "Zipf s=1: rank 1 is 50x rank 50");
    }

    #[test]
    fn uniform_keys_when_the_exponent_is_zero() {
        let args =
            args("slidelimit simulate --rate 1000/s --keys 4 --zipf 0 --duration 10s --limit 1/s");
        let mut counts = [0u32; 5];
        for (_, rank) in Workload::new(&args).unwrap() {
            counts[rank as usize] += 1;
        }
        assert_eq!(counts[0], 0);
        assert!(
            counts[1..].iter().all(|&c| (2_200..2_800).contains(&c)),
            "{counts:?}"
        );
    }
}
