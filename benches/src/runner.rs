//! The comparison runner: every slidelimit variant and its peers over one workload matrix,
//! with throughput, sampled latency percentiles (and, on `zipf`, a bound on the slowest call),
//! allowed fractions, heap and resident memory per key, tracked keys under key rotation and
//! the issues' target ratios, plus the key pool's `get_next_key` (exact and AB, lock-free and
//! mutex), written to `results/` as markdown, JSON and SVG.
//!
//! `cargo run --release -p slidelimit-bench` runs the default matrix (about three minutes on
//! two cores); `--help` lists the flags. Its memory figures come from children of a second
//! binary, `slidelimit-bench-memory`, the only one with the counting allocator (see
//! [`memory_program`]). Any other binary can host the same run; one that installs the counting
//! allocator is its own memory child (its timed cells then pay the counter on every
//! allocation):
//!
//! ```no_run
//! slidelimit_bench::counting_allocator!();
//!
//! fn main() -> std::process::ExitCode {
//!     let argv: Vec<String> = std::env::args().collect();
//!     // The runner re-executes this binary for each memory measurement: serve those first.
//!     if let Some(code) = slidelimit_bench::runner::child_entry(&argv) {
//!         return code;
//!     }
//!     // ... the host's own flags; then, for its `bench` command:
//!     slidelimit_bench::runner::run_cli(
//!         std::iter::once("slidelimit bench".to_owned()).chain(argv.into_iter().skip(2)),
//!     )
//! }
//! ```
//!
//! # Host requirements
//! - Either install the counting global allocator with
//!   [`counting_allocator!`](crate::counting_allocator) (stats_alloc's wrapper around the
//!   system allocator), or have `slidelimit-bench-memory` beside the host's executable (a
//!   host started by `cargo run` gets it built); with neither, a run that measures memory
//!   stops with an error (`--skip-memory` runs anyway).
//! - Call [`child_entry`] with the process's command line before parsing any flags of the
//!   host's own: a counting host's memory children are `current_exe() --memory-child ...`
//!   ([`CHILD_FLAG`]).

mod args;
mod machine;
mod matrix;
mod memory;
mod report;
mod results;
mod svg;
mod targets;

use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use clap::Parser;

use crate::clock::{OPS_PER_TICK, TICK_NS};
use crate::drive::SAMPLE_EVERY;
use crate::workload::{self, Workload};
use crate::{pool_cells, variants};

use self::args::{Args, Flags};
use self::machine::Machine;
use self::matrix::{Progress, WorkloadRun};
use self::memory::MemoryRun;
use self::results::{Config, PoolSetupInfo, Report, VariantInfo, WorkloadInfo};

pub use self::memory::{memory_program, CHILD_FLAG, MEMORY_BIN};

/// Serves a memory child's command line: when `argv[1]` is [`CHILD_FLAG`], measures what the
/// rest asks, prints one JSON line and returns the exit status; otherwise returns `None` and
/// does nothing. Host binaries call it first thing in `main` (see the [module docs](self)).
#[must_use]
pub fn child_entry(argv: &[String]) -> Option<ExitCode> {
    (argv.get(1).map(String::as_str) == Some(CHILD_FLAG)).then(|| memory::child_main(&argv[2..]))
}

/// Runs the comparison as its command line `argv` asks (`argv[0]` is the program's name, as in
/// [`std::env::args`]): parses the flags, runs the selected cells, writes the results files
/// and prints the summary tables on stdout, with progress on stderr.
///
/// A memory child's command line (see [`child_entry`]) is served too, so a host that passes
/// its whole command line here needs nothing else; a host with flags of its own calls
/// [`child_entry`] first.
///
/// # Errors
/// Bad flags exit with status 2 (the message on stderr); a failed run (an unwritable output
/// directory, no program to measure memory with) with status 1.
pub fn run_cli<I: IntoIterator<Item = String>>(argv: I) -> ExitCode {
    let argv: Vec<String> = argv.into_iter().collect();
    if let Some(code) = child_entry(&argv) {
        return code;
    }
    let args: Args = match Flags::try_parse_from(&argv) {
        Ok(flags) => flags.into(),
        // --help prints to stdout and exits 0; a bad flag prints to stderr and exits 2.
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2));
        }
    };
    let all_workloads = workload::all();
    let metas = variants::metas();
    if args.list {
        println!("variants:");
        for m in &metas {
            println!("  {:<16} {}", m.name, m.about);
        }
        println!("workloads:");
        for w in &all_workloads {
            println!("  {:<16} {}", w.name, w.about);
        }
        println!("key-pool workloads (get_next_key; variants lock-free and mutex):");
        for s in pool_cells::setups() {
            println!("  {:<16} {}", s.name, s.workload().about);
        }
        return ExitCode::SUCCESS;
    }
    if let Some(bad) = args
        .variants
        .iter()
        .find(|v| !metas.iter().any(|m| m.name == v.as_str()))
    {
        eprintln!("error: unknown variant {bad:?} (see --list)");
        return ExitCode::from(2);
    }
    if let Some(bad) = args.workloads.iter().find(|w| {
        !all_workloads.iter().any(|x| x.name == w.as_str())
            && pool_cells::find(w.as_str()).is_none()
    }) {
        eprintln!("error: unknown workload {bad:?} (see --list)");
        return ExitCode::from(2);
    }
    let memory_program = if args.skip_memory {
        None
    } else {
        match memory::memory_program() {
            Ok(program) => Some(program),
            Err(message) => {
                eprintln!("error: {message}");
                return ExitCode::FAILURE;
            }
        }
    };
    match run(&args, &argv, all_workloads, memory_program.as_deref()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}

fn run(
    args: &Args,
    argv: &[String],
    all_workloads: Vec<Workload>,
    memory_program: Option<&Path>,
) -> Result<(), String> {
    let started = Instant::now();
    let timer = quanta::Clock::new();
    let machine = Machine::probe(argv, &timer);
    if machine.profile != "release" {
        eprintln!(
            "warning: a {} build; its numbers mean nothing (use --release)",
            machine.profile
        );
    }
    eprintln!(
        "slidelimit-bench on {} ({} cores), {}, commit {}",
        machine.cpu_model, machine.cores, machine.rustc, machine.commit
    );
    let workloads: Vec<Workload> = all_workloads
        .iter()
        .filter(|w| args.workloads.is_empty() || args.workloads.iter().any(|n| n == w.name))
        .cloned()
        .collect();
    let pool_setups: Vec<pool_cells::PoolSetup> = pool_cells::setups()
        .into_iter()
        .filter(|s| args.workloads.is_empty() || args.workloads.iter().any(|n| n == s.name))
        .collect();
    let pool_workloads: Vec<Workload> = pool_setups.iter().map(|s| s.workload()).collect();
    let mut progress = Progress::new(
        matrix::count_cells(args, &workloads) + matrix::count_pool_cells(args, &pool_workloads),
    );

    // Memory first: single-threaded and short. Keys are created under uniform-allowed's limit.
    let (mut memory_rows, mut rotation_rows, mut zipf_rows) = (Vec::new(), Vec::new(), Vec::new());
    if let Some(program) = memory_program {
        progress.note(
            "memory: heap and resident bytes per key, key rotation, Zipf idle-key removal \
             (a child process each) …",
        );
        let mut run = MemoryRun {
            args,
            program,
            per_key_limits: &memory::PER_KEY_LIMITS,
            zipf: workloads.iter().find(|w| w.name == "zipf"),
            progress: &progress,
            rows: Vec::new(),
            rotation_rows: Vec::new(),
            zipf_rows: Vec::new(),
        };
        variants::for_each(&mut run);
        memory_rows = run.rows;
        rotation_rows = run.rotation_rows;
        zipf_rows = run.zipf_rows;
    }

    let mut cells = Vec::new();
    for w in &workloads {
        progress.note(&format!(
            "{}: generating the key stream ({}) …",
            w.name,
            w.keys.describe()
        ));
        let stream = w.stream();
        variants::for_each(&mut WorkloadRun {
            args,
            workload: w,
            stream: &stream,
            timer: &timer,
            progress: &mut progress,
            cells: &mut cells,
        });
    }

    // The key pool last: a hot-key workload each, its own two variants.
    let mut pool_results = Vec::new();
    for w in &pool_workloads {
        let stream = w.stream();
        pool_cells::for_each(&mut WorkloadRun {
            args,
            workload: w,
            stream: &stream,
            timer: &timer,
            progress: &mut progress,
            cells: &mut pool_results,
        });
    }

    let mut targets = targets::evaluate(&cells);
    targets.extend(targets::evaluate_memory(&memory_rows, &rotation_rows));
    let report = Report {
        machine,
        config: Config {
            duration_ms: args.duration.as_millis(),
            trials: args.trials,
            threads: args.threads.clone(),
            sample_every: SAMPLE_EVERY,
            ops_per_tick: OPS_PER_TICK,
            tick_ns: TICK_NS,
        },
        variants: metas_ran(args, &cells),
        workloads: workloads.iter().map(WorkloadInfo::from).collect(),
        cells,
        memory: memory_rows,
        rotation: rotation_rows,
        zipf_memory: zipf_rows,
        targets,
        pool_setups: pool_setups
            .iter()
            .filter(|s| pool_results.iter().any(|c| c.workload == s.name))
            .map(PoolSetupInfo::from)
            .collect(),
        pool_cells: pool_results,
        runtime_s: started.elapsed().as_secs_f64(),
        loadavg_end: machine::loadavg(),
    };
    let files = write_files(&report, &args.out)?;
    print!("{}", report::stdout_tables(&report));
    eprintln!("wrote {} files to {}", files, args.out.display());
    Ok(())
}

fn metas_ran(args: &Args, cells: &[results::CellResult]) -> Vec<VariantInfo> {
    variants::metas()
        .iter()
        .filter(|m| matrix::selected(args, m) && cells.iter().any(|c| c.variant == m.name))
        .map(VariantInfo::from)
        .collect()
}

fn write_files(report: &Report, out: &Path) -> Result<usize, String> {
    std::fs::create_dir_all(out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    let write = |name: &str, text: &str| {
        let path = out.join(name);
        std::fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
    };
    let mut svgs = Vec::new();
    for w in &report.workloads {
        let name = format!("throughput-{}.svg", w.name);
        write(&name, &svg::throughput(report, w.name)?)?;
        svgs.push(name);
    }
    for v in &report.variants {
        let name = format!("latency-{}.svg", v.name);
        write(&name, &svg::latency(report, v.name)?)?;
        svgs.push(name);
    }
    write("comparison.md", &report::markdown(report, &svgs))?;
    let json = serde_json::to_string_pretty(report).map_err(|e| format!("JSON: {e}"))?;
    write("comparison.json", &(json + "\n"))?;
    Ok(svgs.len() + 2)
}
