//! The numbers kept per replay and per (stream, pool), the machine facts, and the markdown.

use std::fmt::Write as _;

use serde::Serialize;
use slidelimit_bench::provenance::Facts;

use super::configs::Config;
use super::replay::Outcome;
use super::streams::Stream;

/// Where the numbers came from.
#[derive(Debug, Serialize)]
pub struct Machine {
    #[serde(flatten)]
    pub facts: Facts,
    /// Wall time of the replays (stream generation included), seconds.
    pub run_seconds: f64,
}

/// The pool and the run's length.
#[derive(Debug, Serialize)]
pub struct Params {
    pub keys: usize,
    pub uses_per_key: u64,
    pub total_uses: u64,
    pub cooldown_ticks: u64,
    pub hours: u64,
    pub seeds: u64,
    pub budgets: Vec<u64>,
}

impl Params {
    /// The most grants any pool can make over the run: `L` per `T`.
    pub fn capacity(&self) -> f64 {
        self.total_uses as f64 * (self.hours * 3_600_000) as f64 / self.cooldown_ticks as f64
    }
}

/// One trace through one pool.
#[derive(Clone, Debug, Serialize)]
pub struct Run {
    pub stream: &'static str,
    pub seed: u64,
    /// Index into [`Report::configs`].
    pub config: usize,
    pub strategy: String,
    pub budget: Option<u64>,
    pub outcome: Outcome,
    /// The same thresholds with eager release (`EagerModel`, the seed's way).
    pub eager: Outcome,
    /// Grants / the exact pool's grants on the same trace.
    pub served_vs_exact: f64,
    /// The eager model's grants / the exact pool's grants.
    pub eager_served_vs_exact: f64,
    /// False negatives / requests.
    pub false_negative_rate: f64,
    /// Grants / (`L` per `T` over the run).
    pub utilization: f64,
}

impl Run {
    pub fn new(
        stream: &'static str,
        seed: u64,
        config: usize,
        cfg: &Config,
        outcome: Outcome,
        eager: Outcome,
        capacity: f64,
    ) -> Self {
        Self {
            stream,
            seed,
            config,
            strategy: cfg.strategy.clone(),
            budget: cfg.budget,
            outcome,
            eager,
            served_vs_exact: f64::NAN,
            eager_served_vs_exact: f64::NAN,
            false_negative_rate: outcome.false_negatives as f64 / outcome.requests.max(1) as f64,
            utilization: outcome.grants as f64 / capacity,
        }
    }
}

/// Sets every run's `served_vs_exact` from the exact pool's run (config 0) on the same trace.
pub fn fill_relative(runs: &mut [Run]) {
    let exact: Vec<(&'static str, u64, u64)> = runs
        .iter()
        .filter(|r| r.config == 0)
        .map(|r| (r.stream, r.seed, r.outcome.grants))
        .collect();
    for run in runs.iter_mut() {
        let base = exact
            .iter()
            .find(|&&(s, seed, _)| s == run.stream && seed == run.seed)
            .map_or(0, |&(_, _, g)| g);
        run.served_vs_exact = run.outcome.grants as f64 / base.max(1) as f64;
        run.eager_served_vs_exact = run.eager.grants as f64 / base.max(1) as f64;
    }
}

/// Mean, least and greatest over the seeds.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Spread {
    pub mean: f64,
    pub min: f64,
    pub max: f64,
}

impl Spread {
    fn of(values: impl Iterator<Item = f64>) -> Self {
        let (mut n, mut sum, mut min, mut max) = (0.0, 0.0, f64::INFINITY, f64::NEG_INFINITY);
        for v in values {
            n += 1.0;
            sum += v;
            min = min.min(v);
            max = max.max(v);
        }
        Self {
            mean: sum / f64::max(n, 1.0),
            min,
            max,
        }
    }
}

/// One (stream, pool) over all seeds.
#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    pub stream: &'static str,
    pub config: usize,
    pub strategy: String,
    pub budget: Option<u64>,
    /// Requests / (`L` per `T` over the run).
    pub offered_load: f64,
    pub served_vs_exact: Spread,
    pub false_negative_rate: Spread,
    pub utilization: Spread,
    /// The same with eager release.
    pub eager_served_vs_exact: Spread,
    pub eager_false_negative_rate: Spread,
    /// The most uses truly free at any refusal, over all seeds.
    pub worst_free_at_refusal: u64,
    /// The raw counts, one per seed (seed order), library then eager model.
    pub requests_by_seed: Vec<u64>,
    pub grants_by_seed: Vec<u64>,
    pub false_negatives_by_seed: Vec<u64>,
    pub eager_grants_by_seed: Vec<u64>,
    pub eager_false_negatives_by_seed: Vec<u64>,
}

impl Summary {
    pub fn all(streams: &[Stream], configs: &[Config], runs: &[Run], capacity: f64) -> Vec<Self> {
        let mut out = Vec::new();
        for stream in streams {
            for (c, cfg) in configs.iter().enumerate() {
                let these: Vec<&Run> = runs
                    .iter()
                    .filter(|r| r.stream == stream.name && r.config == c)
                    .collect();
                out.push(Self {
                    stream: stream.name,
                    config: c,
                    strategy: cfg.strategy.clone(),
                    budget: cfg.budget,
                    offered_load: Spread::of(
                        these.iter().map(|r| r.outcome.requests as f64 / capacity),
                    )
                    .mean,
                    served_vs_exact: Spread::of(these.iter().map(|r| r.served_vs_exact)),
                    false_negative_rate: Spread::of(these.iter().map(|r| r.false_negative_rate)),
                    utilization: Spread::of(these.iter().map(|r| r.utilization)),
                    eager_served_vs_exact: Spread::of(
                        these.iter().map(|r| r.eager_served_vs_exact),
                    ),
                    eager_false_negative_rate: Spread::of(
                        these.iter().map(|r| {
                            r.eager.false_negatives as f64 / r.eager.requests.max(1) as f64
                        }),
                    ),
                    worst_free_at_refusal: these
                        .iter()
                        .map(|r| r.outcome.worst_free_at_refusal)
                        .max()
                        .unwrap_or(0),
                    requests_by_seed: these.iter().map(|r| r.outcome.requests).collect(),
                    grants_by_seed: these.iter().map(|r| r.outcome.grants).collect(),
                    false_negatives_by_seed: these
                        .iter()
                        .map(|r| r.outcome.false_negatives)
                        .collect(),
                    eager_grants_by_seed: these.iter().map(|r| r.eager.grants).collect(),
                    eager_false_negatives_by_seed: these
                        .iter()
                        .map(|r| r.eager.false_negatives)
                        .collect(),
                });
            }
        }
        out
    }
}

/// Everything the tool measured.
#[derive(Serialize)]
pub struct Report {
    pub machine: Machine,
    pub params: Params,
    pub configs: Vec<Config>,
    pub streams: Vec<Stream>,
    pub summaries: Vec<Summary>,
    /// Promises broken over all replays (false positives, bound violations, unexpected
    /// refusals), library and eager model: must be 0.
    pub violations: u64,
    /// Every replay; the JSON keeps their counts per seed in [`Summary`] instead.
    #[serde(skip)]
    pub runs: Vec<Run>,
}

/// `serde_json`'s pretty output with every array of numbers on one line (the per-seed
/// counts would otherwise take a line per number).
pub fn compact_number_arrays(pretty: &str) -> String {
    let lines: Vec<&str> = pretty.lines().collect();
    let is_number = |l: &str| {
        let t = l.trim().trim_end_matches(',');
        !t.is_empty() && t.parse::<f64>().is_ok()
    };
    let mut out = String::with_capacity(pretty.len());
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if line.ends_with('[') && i + 1 < lines.len() && is_number(lines[i + 1]) {
            let mut j = i + 1;
            let mut items = Vec::new();
            while j < lines.len() && is_number(lines[j]) {
                items.push(lines[j].trim().trim_end_matches(','));
                j += 1;
            }
            if j < lines.len() && lines[j].trim_start().starts_with(']') {
                out.push_str(line);
                out.push_str(&items.join(", "));
                out.push_str(lines[j].trim_start());
                out.push('\n');
                i = j + 1;
                continue;
            }
        }
        out.push_str(line);
        out.push('\n');
        i += 1;
    }
    out
}

impl Report {
    /// The summary of `stream` through the pool `strategy` at `budget`.
    pub fn summary(&self, stream: &str, strategy: &str, budget: Option<u64>) -> Option<&Summary> {
        self.summaries
            .iter()
            .find(|s| s.stream == stream && s.strategy == strategy && s.budget == budget)
    }

    /// In how many seeds `strategy` served at least as many requests as every other pool of
    /// `budget` on `stream` (a paired comparison: the same trace for all of them).
    pub fn seed_wins(&self, stream: &str, budget: u64, strategy: &str) -> u64 {
        (0..self.params.seeds)
            .filter(|&seed| {
                let grants = |label: &str| {
                    self.runs
                        .iter()
                        .find(|r| {
                            r.stream == stream
                                && r.seed == seed
                                && r.budget == Some(budget)
                                && r.strategy == label
                        })
                        .map_or(0, |r| r.outcome.grants)
                };
                let mine = grants(strategy);
                self.strategies().iter().all(|other| grants(other) <= mine)
            })
            .count() as u64
    }

    /// The strategy labels in column order (without `exact`).
    pub fn strategies(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for c in self.configs.iter().filter(|c| c.budget.is_some()) {
            if !out.contains(&c.strategy) {
                out.push(c.strategy.clone());
            }
        }
        out
    }
}

fn pct(x: f64, digits: usize) -> String {
    format!("{:.*}", digits, 100.0 * x)
}

fn seconds(ticks: Option<u64>) -> String {
    ticks.map_or_else(|| "–".to_owned(), |t| format!("{:.1} s", t as f64 / 1000.0))
}

/// The tables, machine facts and command, as `table.md`.
pub fn markdown(report: &Report) -> String {
    let p = &report.params;
    let m = &report.machine;
    let strategies = report.strategies();
    let mut md = String::new();
    let _ = writeln!(
        md,
        "# Key-pool utilization: A, B and AB at a fixed bucket budget\n"
    );
    let _ = writeln!(
        md,
        "Written by `benches/src/bin/pool_utilization/` (see `README.md` beside this file for the reading). \
         Pool: {} keys × {} uses = L = {} uses per T = {} min, ticks in ms; {} h of simulated time per trace, \
         {} seeds per stream (mean over seeds, with min–max where shown).\n",
        p.keys,
        p.uses_per_key,
        p.total_uses,
        p.cooldown_ticks / 60_000,
        p.hours,
        p.seeds
    );
    let _ = writeln!(
        md,
        "- **served vs exact**: grants / the exact pool's grants on the same trace."
    );
    let _ = writeln!(md, "- **false negatives**: refusals while fewer than L of the pool's *own* grants lay in (now − T, now] (a use was truly free), as a share of all requests.");
    let _ = writeln!(
        md,
        "- **utilization**: grants / (L per T over the run) = grants / {:.0}.",
        p.capacity()
    );
    let _ = writeln!(
        md,
        "- **worst free**: the most uses truly free at any refusal (B promises < k)."
    );
    let _ = writeln!(md, "- Every grant was checked against the limit and every refusal against its mode's promise (< k free; L grants within T + τ), in the library's pools and the eager model alike: **{} violations** (any would fail the run).\n", report.violations);

    let _ = writeln!(md, "## Pools\n");
    let _ = writeln!(md, "Each budget's thresholds are the strictest whose exact bucket bound (`slidelimit::pool::bucket_bound`) fits in it. `AB-tNN` closes about NN % of the budget by time and the rest by count. Bytes: `KeyPool::ledger().ledger_bytes()` (lock-free ledger, 24 B per ring slot, bound + 1 slots).\n");
    let _ = writeln!(
        md,
        "| budget | pool | τ (time threshold) | k (key threshold) | bucket bound | ledger bytes |"
    );
    let _ = writeln!(md, "|---:|---|---:|---:|---:|---:|");
    for c in &report.configs {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} |",
            c.budget.map_or_else(|| "–".to_owned(), |b| b.to_string()),
            c.strategy,
            seconds(c.threshold_ticks),
            c.key_threshold,
            c.bucket_bound,
            c.ledger_bytes
        );
    }

    let _ = writeln!(md, "\n## The exact pool (the reference)\n");
    let _ = writeln!(
        md,
        "| stream | offered load (x capacity) | exact: utilization | description |"
    );
    let _ = writeln!(md, "|---|---:|---:|---|");
    for s in &report.streams {
        if let Some(e) = report.summary(s.name, "exact", None) {
            let _ = writeln!(
                md,
                "| {} | {:.2} | {} % | {} |",
                s.name,
                e.offered_load,
                pct(e.utilization.mean, 2),
                s.description
            );
        }
    }

    let _ = writeln!(md, "\n## Served vs exact (%), by budget\n");
    let _ = writeln!(md, "Bold: the best pool of the row (within 0.01 points). *Best in seeds*: in how many seeds the row's best pool (the first if tied) served at least as many requests as each other pool on the same trace. `B eager`: B's thresholds with every cooled bucket released before a decision, as the seed's Python does (see *Library vs eager release* below); not a candidate for bold.\n");
    for &budget in &p.budgets {
        let _ = writeln!(md, "### {budget} buckets\n");
        let _ = writeln!(
            md,
            "| stream | {} | best in seeds | B eager |",
            strategies.join(" | ")
        );
        let _ = writeln!(md, "|---|{}---:|---:|", "---:|".repeat(strategies.len()));
        for s in &report.streams {
            let values: Vec<f64> = strategies
                .iter()
                .map(|st| {
                    report
                        .summary(s.name, st, Some(budget))
                        .map_or(f64::NAN, |x| x.served_vs_exact.mean)
                })
                .collect();
            let best = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let best_index = values.iter().position(|&v| v == best).unwrap_or(0);
            let wins = report.seed_wins(s.name, budget, &strategies[best_index]);
            let cells: Vec<String> = values
                .iter()
                .map(|&v| {
                    let text = pct(v, 2);
                    if best - v < 0.000_1 {
                        format!("**{text}**")
                    } else {
                        text
                    }
                })
                .collect();
            let eager = report
                .summary(s.name, "B", Some(budget))
                .map_or_else(String::new, |x| pct(x.eager_served_vs_exact.mean, 2));
            let _ = writeln!(
                md,
                "| {} | {} | {} {wins}/{} | {eager} |",
                s.name,
                cells.join(" | "),
                strategies[best_index],
                p.seeds
            );
        }
        let _ = writeln!(md);
    }

    let _ = writeln!(md, "## False negatives (% of requests), by budget\n");
    for &budget in &p.budgets {
        let _ = writeln!(md, "### {budget} buckets\n");
        let _ = writeln!(md, "| stream | {} |", strategies.join(" | "));
        let _ = writeln!(md, "|---|{}", "---:|".repeat(strategies.len()));
        for s in &report.streams {
            let cells: Vec<String> = strategies
                .iter()
                .map(|st| {
                    report
                        .summary(s.name, st, Some(budget))
                        .map_or_else(String::new, |x| pct(x.false_negative_rate.mean, 2))
                })
                .collect();
            let _ = writeln!(md, "| {} | {} |", s.name, cells.join(" | "));
        }
        let _ = writeln!(md);
    }

    let _ = writeln!(md, "## Library vs eager release\n");
    let differing: Vec<&Summary> = report
        .summaries
        .iter()
        .filter(|s| {
            (s.served_vs_exact.mean - s.eager_served_vs_exact.mean).abs() > 0.000_05
                || (s.false_negative_rate.mean - s.eager_false_negative_rate.mean).abs() > 0.000_05
        })
        .collect();
    if differing.is_empty() {
        let _ = writeln!(md, "The library's pools (lazy release) and the eager-release model granted alike on every (stream, pool).\n");
    } else {
        let _ = writeln!(md, "The library releases a cooled bucket only when it needs its uses or its slot, and a use joins the newest bucket if that bucket takes more uses, even when it has already cooled down. With a time threshold τ ≤ T a bucket stops taking uses before it can cool, so this never matters; without one (B), a partial bucket left from an earlier burst is joined after it has cooled, and its old uses are held for another T. The eager model releases every cooled bucket first. (Stream, pool) pairs where the two differ by more than 0.005 points:\n");
        let _ = writeln!(md, "| stream | budget | pool | k | served vs exact: library | eager | false negatives: library | eager |");
        let _ = writeln!(md, "|---|---:|---|---:|---:|---:|---:|---:|");
        for s in differing {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} % | {} % | {} % | {} % |",
                s.stream,
                s.budget.map_or_else(|| "–".to_owned(), |b| b.to_string()),
                s.strategy,
                report.configs[s.config].key_threshold,
                pct(s.served_vs_exact.mean, 2),
                pct(s.eager_served_vs_exact.mean, 2),
                pct(s.false_negative_rate.mean, 3),
                pct(s.eager_false_negative_rate.mean, 3)
            );
        }
        let _ = writeln!(md);
    }

    let _ = writeln!(md, "## Every (stream, pool)\n");
    let _ = writeln!(md, "| stream | budget | pool | served vs exact (min–max over seeds) | false negatives | utilization | worst free | eager: served vs exact |");
    let _ = writeln!(md, "|---|---:|---|---:|---:|---:|---:|---:|");
    for s in &report.summaries {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} % ({}–{}) | {} % | {} % | {} | {} % |",
            s.stream,
            s.budget.map_or_else(|| "–".to_owned(), |b| b.to_string()),
            s.strategy,
            pct(s.served_vs_exact.mean, 2),
            pct(s.served_vs_exact.min, 2),
            pct(s.served_vs_exact.max, 2),
            pct(s.false_negative_rate.mean, 3),
            pct(s.utilization.mean, 2),
            s.worst_free_at_refusal,
            pct(s.eager_served_vs_exact.mean, 2)
        );
    }

    let _ = writeln!(
        md,
        "\n![served vs exact against the bucket budget](served-vs-budget.svg)\n"
    );
    let _ = writeln!(
        md,
        "![false negatives against the bucket budget](false-negatives-vs-budget.svg)\n"
    );
    let _ = writeln!(md, "## Machine\n");
    let f = &m.facts;
    let _ = writeln!(md, "- CPU: {} ({} logical CPUs)", f.cpu_model, f.cores);
    let _ = writeln!(md, "- rustc: {} ({} profile)", f.rustc, f.profile);
    let _ = writeln!(md, "- commit: `{}`", f.commit);
    let _ = writeln!(md, "- command: `{}`", f.command);
    let _ = writeln!(
        md,
        "- run time: {:.1} s (replays; the numbers do not depend on the machine)",
        m.run_seconds
    );
    md
}
