//! `slidelimit replay`: a trace through one limiter, or through the exact log, rolling
//! buckets and governor side by side (`--compare`).

use std::fmt::Write as _;
use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::time::Duration;

use serde::Serialize;
use slidelimit::Limit;
use slidelimit_trace::duration::format as format_duration;

use crate::cli::ReplayArgs;
use crate::decide::{self, Counts, Decider, Governor, Ours, Outcome};
use crate::outcome::{Done, Failure};
use crate::progress::Progress;
use crate::spec::WindowSpec;
use crate::table::{percent, Table};
use slidelimit_trace::read::ReadError;

use crate::trace::{self, LineError, LineFault, Request};
use crate::variant::{build, WindowName};

/// The rolling buckets' `B` under `--compare` when `--window` does not give one.
const COMPARE_DEFAULT_BUCKETS: u64 = 10;

/// Runs `slidelimit replay` and returns the report to print.
///
/// # Errors
/// [`Failure::Usage`] for a limit or window the limiter refuses; [`Failure::Input`] when the
/// trace cannot be read or has a malformed line without `--keep-going`; [`Failure::Bug`] when
/// a sliding-window limiter admitted more than `N` in one window.
pub fn run(args: &ReplayArgs, allow_progress: bool) -> Result<(String, Done), Failure> {
    let limit = args
        .limit
        .to_limit(args.tick)
        .map_err(|err| Failure::Usage(format!("--limit {}: {err}", args.limit)))?;
    let buckets = match args.window {
        WindowSpec::Buckets(b) => b,
        WindowSpec::Exact => COMPARE_DEFAULT_BUCKETS,
    };
    // Build every limiter before reading, so that a bad configuration is reported at once.
    let windows = if args.compare {
        vec![WindowSpec::Exact, WindowSpec::Buckets(buckets)]
    } else {
        vec![args.window]
    };
    let mut deciders: Vec<Box<dyn Decider>> = Vec::new();
    for window in windows {
        let limiter = build(args.variant, window, limit)
            .map_err(|err| Failure::Usage(format!("--window {window}: {err}")))?;
        deciders.push(Box::new(Ours {
            limiter,
            label: WindowName(window).to_string(),
        }));
    }
    let mut notes = Vec::new();
    if args.compare && limit.is_layered() {
        notes.push("governor left out: it takes one window, not several".to_owned());
    } else if args.compare {
        match Governor::new(limit, args.tick) {
            Ok(governor) => deciders.push(Box::new(governor)),
            Err(err) => notes.push(format!("governor left out: {err}")),
        }
    }

    let mut trace = read_trace(args, allow_progress)?;
    if args.sort {
        trace.requests.sort_by_key(|r| r.timestamp);
    }
    if args.compare {
        // The exact log and governor take weight 1 only; check before deciding anything, so
        // every decider sees the same requests.
        let mut kept = Vec::with_capacity(trace.requests.len());
        for request in std::mem::take(&mut trace.requests) {
            if request.weight == 1 {
                kept.push(request);
                continue;
            }
            let fault = LineFault {
                line: request.line,
                error: LineError::CompareWeight(request.weight),
            };
            if !args.keep_going {
                return Err(Failure::Input(format!(
                    "{fault} (use --keep-going to skip such lines)"
                )));
            }
            trace.faults.push(fault);
        }
        trace.requests = kept;
    }

    let mut outcomes = Vec::new();
    for decider in &mut deciders {
        let outcome = decide::run(
            decider.as_mut(),
            &trace.requests,
            limit,
            args.keep_going,
            allow_progress,
        )
        .map_err(|fault| {
            Failure::Input(format!("{fault} (use --keep-going to skip such lines)"))
        })?;
        trace.faults.extend(outcome.faults.iter().cloned());
        outcomes.push(outcome);
    }
    trace.faults.sort_by_key(|fault| fault.line);

    for outcome in &outcomes {
        if !outcome.sliding_window {
            continue;
        }
        for &(window, peak) in &outcome.window_peaks {
            if peak > window.max_requests() {
                return Err(Failure::Bug(format!(
                    "{} admitted {peak} in one window of {} ticks, above the limit's {}",
                    outcome.label,
                    window.window_ticks(),
                    window.max_requests()
                )));
            }
        }
    }

    let header = Header {
        limit: describe_limit(limit, args.tick),
        max_requests: limit.max_requests(),
        window_ticks: limit.window_ticks(),
        tick: format_duration(args.tick),
        variant: clap::ValueEnum::to_possible_value(&args.variant)
            .map(|v| v.get_name().to_owned())
            .unwrap_or_default(),
        // What was decided: every decider took the same requests.
        requests: outcomes.first().map_or(0, |o| o.total.requests),
        skipped_lines: trace.faults.iter().map(|f| f.line).collect(),
    };
    let report = if args.compare {
        compare_report(&header, &outcomes, &trace.requests, args, &notes)
    } else {
        single_report(&header, &outcomes[0], args)
    };
    let done = if trace.faults.is_empty() {
        Done::Clean
    } else {
        Done::Skipped(trace.faults)
    };
    Ok((report, done))
}

fn read_trace(args: &ReplayArgs, allow_progress: bool) -> Result<trace::Trace, Failure> {
    let (input, len): (Box<dyn BufRead>, Option<u64>) = if args.trace.as_os_str() == "-" {
        (Box::new(io::stdin().lock()), None)
    } else {
        let file = File::open(&args.trace).map_err(|err| {
            Failure::Input(format!("cannot open {}: {err}", args.trace.display()))
        })?;
        let len = file.metadata().ok().map(|m| m.len());
        (Box::new(BufReader::with_capacity(1 << 16, file)), len)
    };
    let mut progress = Progress::new("reading the trace", len, "bytes", allow_progress);
    let trace = trace::read(input, args.format, args.keep_going, |n| progress.inc(n));
    progress.finish();
    trace.map_err(|err| match err {
        ReadError::Io(err) => {
            Failure::Input(format!("cannot read {}: {err}", args.trace.display()))
        }
        ReadError::Malformed(fault) => Failure::Input(format!(
            "{fault} (use --keep-going to skip malformed lines)"
        )),
        other => Failure::Input(format!("cannot read {}: {other}", args.trace.display())),
    })
}

/// `3/10ms (3 per 10 ticks of 1ms)`; each window of a limit of several, joined by ` + `.
fn describe_limit(limit: Limit, tick: Duration) -> String {
    limit
        .windows()
        .map(|window| describe_window(window, tick))
        .collect::<Vec<_>>()
        .join(" + ")
}

/// One window: `3/10ms (3 per 10 ticks of 1ms)`.
fn describe_window(limit: Limit, tick: Duration) -> String {
    let nanos = u128::from(limit.window_ticks()) * tick.as_nanos();
    let window = u64::try_from(nanos / 1_000_000_000).map_or_else(
        |_| "?".to_owned(),
        // The remainder of a division by 10^9 fits in a u32.
        |secs| format_duration(Duration::new(secs, (nanos % 1_000_000_000) as u32)),
    );
    format!(
        "{}/{window} ({} per {} ticks of {})",
        limit.max_requests(),
        limit.max_requests(),
        limit.window_ticks(),
        format_duration(tick)
    )
}

/// What every replay report starts with.
#[derive(Serialize)]
struct Header {
    limit: String,
    max_requests: u64,
    window_ticks: u64,
    tick: String,
    variant: String,
    requests: u64,
    skipped_lines: Vec<usize>,
}

#[derive(Serialize)]
struct KeyRow<'a> {
    key: &'a str,
    #[serde(flatten)]
    counts: Counts,
}

/// Keys with the most refusals first, then the most requests, then by name.
fn ranked(outcome: &Outcome) -> Vec<KeyRow<'_>> {
    let mut rows: Vec<KeyRow<'_>> = outcome
        .per_key
        .iter()
        .map(|(key, counts)| KeyRow {
            key,
            counts: *counts,
        })
        .collect();
    rows.sort_by(|a, b| {
        (b.counts.refused, b.counts.requests)
            .cmp(&(a.counts.refused, a.counts.requests))
            .then_with(|| a.key.cmp(b.key))
    });
    rows
}

fn single_report(header: &Header, outcome: &Outcome, args: &ReplayArgs) -> String {
    let rows = ranked(outcome);
    if args.json {
        #[derive(Serialize)]
        struct Report<'a> {
            #[serde(flatten)]
            header: &'a Header,
            window: String,
            total: Counts,
            keys: Vec<KeyRow<'a>>,
        }
        let report = Report {
            header,
            window: args.window.to_string(),
            total: outcome.total,
            keys: rows,
        };
        return to_json(&report);
    }
    let weighted =
        outcome.total.admitted_weight + outcome.total.refused_weight != outcome.total.requests;
    let mut out = format!(
        "replay: {} requests, {} keys; limit {}; {}, {}\n",
        header.requests,
        outcome.per_key.len(),
        header.limit,
        header.variant,
        outcome.label
    );
    let mut columns = vec!["key", "requests", "admitted", "refused", "refused %"];
    if weighted {
        columns.extend(["admitted weight", "refused weight"]);
    }
    columns.push("peak window");
    let mut table = Table::new(&columns);
    let shown = if args.top == 0 {
        rows.len()
    } else {
        args.top.min(rows.len())
    };
    for row in rows.iter().take(shown) {
        table.row(&key_cells(row.key, &row.counts, weighted));
    }
    table.row(&key_cells("total", &outcome.total, weighted));
    out.push_str(&table.render());
    if shown < rows.len() {
        let _ = writeln!(
            out,
            "({} more keys not shown; --top 0 lists every key)",
            rows.len() - shown
        );
    }
    out
}

fn key_cells(key: &str, counts: &Counts, weighted: bool) -> Vec<String> {
    let mut cells = vec![
        key.to_owned(),
        counts.requests.to_string(),
        counts.admitted.to_string(),
        counts.refused.to_string(),
        percent(counts.refused, counts.requests),
    ];
    if weighted {
        cells.push(counts.admitted_weight.to_string());
        cells.push(counts.refused_weight.to_string());
    }
    cells.push(counts.peak.to_string());
    cells
}

/// One request two deciders answered differently.
#[derive(Serialize)]
struct Example<'a> {
    line: usize,
    timestamp: u64,
    key: &'a str,
    exact: bool,
    other: bool,
}

/// How one decider differs from the exact log.
#[derive(Serialize)]
struct Difference<'a> {
    decider: &'a str,
    /// Admitted by this decider, refused by the exact log.
    admitted_only_here: u64,
    /// Refused by this decider, admitted by the exact log.
    refused_only_here: u64,
    examples: Vec<Example<'a>>,
}

fn compare_report(
    header: &Header,
    outcomes: &[Outcome],
    requests: &[Request],
    args: &ReplayArgs,
    notes: &[String],
) -> String {
    let exact = &outcomes[0];
    let differences: Vec<Difference<'_>> = outcomes[1..]
        .iter()
        .map(|other| {
            let mut difference = Difference {
                decider: &other.label,
                admitted_only_here: 0,
                refused_only_here: 0,
                examples: Vec::new(),
            };
            for ((request, e), o) in requests.iter().zip(&exact.decisions).zip(&other.decisions) {
                let (Some(e), Some(o)) = (*e, *o) else {
                    continue;
                };
                if e == o {
                    continue;
                }
                if o {
                    difference.admitted_only_here += 1;
                } else {
                    difference.refused_only_here += 1;
                }
                if difference.examples.len() < args.examples {
                    difference.examples.push(Example {
                        line: request.line,
                        timestamp: request.timestamp,
                        key: &request.key,
                        exact: e,
                        other: o,
                    });
                }
            }
            difference
        })
        .collect();
    if args.json {
        #[derive(Serialize)]
        struct Decided<'a> {
            decider: &'a str,
            sliding_window: bool,
            #[serde(flatten)]
            total: Counts,
        }
        #[derive(Serialize)]
        struct Report<'a> {
            #[serde(flatten)]
            header: &'a Header,
            deciders: Vec<Decided<'a>>,
            differences: Vec<Difference<'a>>,
            notes: &'a [String],
        }
        let report = Report {
            header,
            deciders: outcomes
                .iter()
                .map(|o| Decided {
                    decider: &o.label,
                    sliding_window: o.sliding_window,
                    total: o.total,
                })
                .collect(),
            differences,
            notes,
        };
        return to_json(&report);
    }
    let mut out = format!(
        "compare: {} requests, {} keys; limit {}; {}\n",
        header.requests,
        exact.per_key.len(),
        header.limit,
        header.variant
    );
    let mut table = Table::new(&["decider", "admitted", "refused", "refused %", "peak window"]);
    for outcome in outcomes {
        let t = &outcome.total;
        table.row(&[
            outcome.label.clone(),
            t.admitted.to_string(),
            t.refused.to_string(),
            percent(t.refused, t.requests),
            t.peak.to_string(),
        ]);
    }
    out.push_str(&table.render());
    for note in notes {
        let _ = writeln!(out, "note: {note}");
    }
    if outcomes.iter().any(|o| !o.sliding_window) {
        out.push_str(
            "note: governor runs GCRA (a token bucket refilled one request every W/N), not a sliding window: its peak window may exceed N\n",
        );
    }
    out.push_str("\ndecided differently from the exact log:\n");
    for difference in &differences {
        let _ = writeln!(
            out,
            "{}: {} (admitted only by it: {}; refused only by it: {})",
            difference.decider,
            difference.admitted_only_here + difference.refused_only_here,
            difference.admitted_only_here,
            difference.refused_only_here
        );
        for example in &difference.examples {
            let verb = |admitted: bool| if admitted { "admits" } else { "refuses" };
            let _ = writeln!(
                out,
                "  line {}: t={} key={}: exact log {}, {} {}",
                example.line,
                example.timestamp,
                example.key,
                verb(example.exact),
                difference.decider,
                verb(example.other)
            );
        }
    }
    out
}

/// A report as pretty JSON with a final newline.
pub fn to_json(value: &impl Serialize) -> String {
    let mut text = serde_json::to_string_pretty(value).unwrap_or_else(|err| {
        // Every report is plain structs of strings and integers, which always serialise.
        unreachable!("a report failed to serialise: {err}")
    });
    text.push('\n');
    text
}
