//! The readable outputs: the stdout tables and the markdown file.

use std::fmt::Write as _;

use super::results::{CellResult, PoolSetupInfo, Report};

/// Nanoseconds for people: `85 ns`, `12.3 µs`, `1.24 ms`.
#[must_use]
pub fn human_ns(ns: u64) -> String {
    match ns {
        0..=999 => format!("{ns} ns"),
        1_000..=999_999 => format!("{:.1} µs", ns as f64 / 1e3),
        1_000_000..=999_999_999 => format!("{:.2} ms", ns as f64 / 1e6),
        _ => format!("{:.2} s", ns as f64 / 1e9),
    }
}

/// Bytes for people: `812 B`, `3.4 KiB`, `61.2 MiB`.
#[must_use]
pub fn human_bytes(bytes: i64) -> String {
    let b = bytes as f64;
    if bytes.abs() < 1024 {
        format!("{bytes} B")
    } else if bytes.abs() < 1024 * 1024 {
        format!("{:.1} KiB", b / 1024.0)
    } else {
        format!("{:.1} MiB", b / (1024.0 * 1024.0))
    }
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map_or_else(|| "-".to_owned(), |v| v.to_string())
}

/// Variant names in registry order that have at least one cell on `workload`.
fn variants_on<'a>(report: &'a Report, workload: &str) -> Vec<&'a str> {
    report
        .variants
        .iter()
        .map(|v| v.name)
        .filter(|name| {
            report
                .cells
                .iter()
                .any(|c| c.workload == workload && c.variant == *name)
        })
        .collect()
}

fn find<'a>(
    report: &'a Report,
    workload: &str,
    variant: &str,
    threads: usize,
) -> Option<&'a CellResult> {
    report
        .cells
        .iter()
        .find(|c| c.workload == workload && c.variant == variant && c.threads == threads)
}

fn pool_cell<'a>(
    report: &'a Report,
    setup: &str,
    variant: &str,
    threads: usize,
) -> Option<&'a CellResult> {
    report
        .pool_cells
        .iter()
        .find(|c| c.workload == setup && c.variant == variant && c.threads == threads)
}

/// The pool's variants, in the order they ran.
fn pool_variants(report: &Report) -> Vec<&'static str> {
    let mut names: Vec<&'static str> = Vec::new();
    for c in &report.pool_cells {
        if !names.contains(&c.variant) {
            names.push(c.variant);
        }
    }
    names
}

/// `a ÷ b` of two cells' ns per call, to two places.
fn ns_ratio(a: Option<&CellResult>, b: Option<&CellResult>) -> String {
    opt(a
        .zip(b)
        .map(|(a, b)| format!("{:.2}", a.ns_per_decision / b.ns_per_decision)))
}

/// The key pool's side-by-side rows: per thread count, ns per call of every (setup, variant)
/// pair, then lock-free ÷ mutex per setup and AB ÷ exact per variant. Returns the header
/// cells and one row of cells per thread count.
fn pool_rows(report: &Report) -> (Vec<String>, Vec<Vec<String>>) {
    let setups: Vec<&PoolSetupInfo> = report.pool_setups.iter().collect();
    let variants = pool_variants(report);
    let exact = setups.iter().find(|s| s.mode == "exact").map(|s| s.name);
    let ab = setups.iter().find(|s| s.mode == "AB").map(|s| s.name);
    let mut header = vec!["threads".to_owned()];
    for s in &setups {
        for v in &variants {
            header.push(format!("{} {v}", s.mode));
        }
    }
    let pairs = variants.contains(&"lock-free") && variants.contains(&"mutex");
    if pairs {
        for s in &setups {
            header.push(format!("lock-free ÷ mutex, {}", s.mode));
        }
    }
    if let (Some(_), Some(_)) = (exact, ab) {
        for v in &variants {
            header.push(format!("AB ÷ exact, {v}"));
        }
    }
    let mut rows = Vec::new();
    for &t in &report.config.threads {
        let mut row = vec![t.to_string()];
        for s in &setups {
            for v in &variants {
                let cell = pool_cell(report, s.name, v, t);
                row.push(opt(cell.map(|c| format!("{:.1}", c.ns_per_decision))));
            }
        }
        if pairs {
            for s in &setups {
                row.push(ns_ratio(
                    pool_cell(report, s.name, "lock-free", t),
                    pool_cell(report, s.name, "mutex", t),
                ));
            }
        }
        if let (Some(exact), Some(ab)) = (exact, ab) {
            for v in &variants {
                row.push(ns_ratio(
                    pool_cell(report, ab, v, t),
                    pool_cell(report, exact, v, t),
                ));
            }
        }
        rows.push(row);
    }
    (header, rows)
}

fn pool_setup_line(s: &PoolSetupInfo) -> String {
    let mode = match (s.threshold_ns, s.key_threshold) {
        (Some(tau), Some(k)) => format!(
            "AB, τ = {} (T/10), k = {k} (L/10): buckets close after τ or k uses",
            human_ns(tau)
        ),
        _ => "exact: one bucket per use".to_owned(),
    };
    format!(
        "`{}`: {mode}; at most {} buckets held, a ring of {} slots, ledger {}",
        s.name,
        s.bucket_bound,
        s.ring_slots,
        human_bytes(i64::try_from(s.ledger_bytes).unwrap_or(i64::MAX))
    )
}

fn pool_markdown(md: &mut String, report: &Report) {
    let Some(first) = report.pool_setups.first() else {
        return;
    };
    let c = &report.config;
    let calls_per_cooldown = first.cooldown_ns / c.tick_ns * c.ops_per_tick;
    let _ = writeln!(md, "## Key pool: get_next_key\n");
    let _ = writeln!(
        md,
        "A pool of API keys scaled to the fake clock: {keys} keys × {per} uses = L = {total} \
         uses per cooldown T = {cooldown} ({ticks} ticks). Every call is one `get_next_key(now)` \
         at the shared fake clock, which moves one tick per {opt} calls in all, so a cooldown \
         holds {calls} calls and, over whole cooldowns, no pool grants more than {ceiling:.1}% of \
         them, whatever a variant's speed or the thread count: the pool grants a burst until it is exhausted, \
         refuses until the burst's first uses cool down, then mirrors the burst a cooldown \
         later. `lock-free` is `slidelimit::pool::KeyPool` (one CAS on a packed control word \
         per decision), `mutex` is `slidelimit_mutex::MutexKeyPool` (the same algorithm on \
         plain integers under one `Mutex`).\n",
        keys = first.keys,
        per = first.total_uses / first.keys.max(1),
        total = first.total_uses,
        cooldown = human_ns(first.cooldown_ns),
        ticks = first.cooldown_ns / c.tick_ns,
        opt = c.ops_per_tick,
        calls = calls_per_cooldown,
        ceiling = first.grant_ceiling * 100.0,
    );
    for s in &report.pool_setups {
        let _ = writeln!(md, "- {}", pool_setup_line(s));
    }
    let _ = writeln!(
        md,
        "\n**ns per call** is wall time over calls, all threads together (1e3 / throughput): \
         at 1 thread the cost of one call, above it the inverse of the throughput. A ratio \
         below 1 means the first is faster; both sides of each ratio come from this run. This \
         machine has {cores} core(s): at more threads than that the cells are oversubscribed, \
         and a thread that holds the lock or is between its reads and its CAS can be \
         descheduled for a whole slice, so those cells measure what each strategy does under \
         preemption, not parallel speed-up. With several threads a call whose `now` lags a \
         release another thread made is refused as late, so the granted share can fall below \
         the ceiling.\n",
        cores = report.machine.cores
    );
    let (header, rows) = pool_rows(report);
    let _ = writeln!(md, "ns per call:\n");
    let _ = writeln!(md, "| {} |", header.join(" | "));
    let _ = writeln!(md, "|{}", "---:|".repeat(header.len()));
    for row in rows {
        let _ = writeln!(md, "| {} |", row.join(" | "));
    }
    let _ = writeln!(md);
    let _ = writeln!(
        md,
        "| setup | variant | threads | M calls/s | ns/call | granted | p50 | p99 | p99.9 | p99.99 | max | samples |"
    );
    let _ = writeln!(
        md,
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    for s in &report.pool_setups {
        for v in pool_variants(report) {
            for &t in &c.threads {
                if let Some(cell) = pool_cell(report, s.name, v, t) {
                    let l = cell.latency;
                    let _ = writeln!(
                        md,
                        "| {} | {} | {} | {:.2} | {:.1} | {:.1}% | {} | {} | {} | {} | {} | {} |",
                        s.name,
                        v,
                        t,
                        cell.mops,
                        cell.ns_per_decision,
                        cell.allowed_fraction * 100.0,
                        human_ns(l.p50),
                        human_ns(l.p99),
                        human_ns(l.p999),
                        human_ns(l.p9999),
                        human_ns(l.max),
                        l.samples
                    );
                }
            }
        }
    }
    let _ = writeln!(md);
}

/// The stdout summary: one compact table per workload, then targets and memory.
#[must_use]
pub fn stdout_tables(report: &Report) -> String {
    let mut out = String::new();
    let threads = &report.config.threads;
    for w in &report.workloads {
        let _ = writeln!(
            out,
            "\n== {} — {} · {} · {} ({} clock)",
            w.name, w.keys, w.limit, w.mix, w.clock
        );
        let mut header = format!("{:<16}", "variant");
        for t in threads {
            let _ = write!(header, " {:>9}", format!("{t}t Mop/s"));
        }
        let _ = write!(header, " {:>8}", "allowed");
        for t in threads {
            let _ = write!(header, " {:>10}", format!("p99.9 {t}t"));
        }
        let _ = writeln!(out, "{header}");
        for variant in variants_on(report, w.name) {
            let mut line = format!("{variant:<16}");
            for &t in threads {
                let cell = find(report, w.name, variant, t);
                let _ = write!(line, " {:>9}", opt(cell.map(|c| format!("{:.2}", c.mops))));
            }
            let allowed = threads
                .iter()
                .find_map(|&t| find(report, w.name, variant, t))
                .map(|c| format!("{:.1}%", c.allowed_fraction * 100.0));
            let _ = write!(line, " {:>8}", opt(allowed));
            for &t in threads {
                let cell = find(report, w.name, variant, t);
                let _ = write!(line, " {:>10}", opt(cell.map(|c| human_ns(c.latency.p999))));
            }
            let _ = writeln!(out, "{line}");
        }
    }
    if !report.targets.is_empty() {
        let _ = writeln!(out, "\n== Targets (ratios from this run)");
        for t in &report.targets {
            let _ = writeln!(
                out,
                "{:<8} {:<40} {:<16} {}t  ratio {:>6}  (want {})  {}",
                t.verdict.label(),
                t.target,
                t.workload,
                t.threads,
                opt(t.ratio.map(|r| format!("{r:.2}"))),
                t.threshold,
                t.detail
            );
        }
    }
    if !report.memory.is_empty() {
        let _ = writeln!(
            out,
            "\n== Memory per tracked key ({} keys)",
            super::memory::KEYS
        );
        for m in &report.memory {
            let _ = writeln!(
                out,
                "{:<20} N = {:<4} heap {:>6.0} B/key after 1 hit, {:>6.0} full   RSS {:>6} B/key ({} × heap)",
                m.variant,
                m.max_requests,
                m.bytes_per_key_one_hit,
                m.bytes_per_key_full,
                opt(m.rss_bytes_per_key.map(|r| format!("{r:.0}"))),
                opt(m.rss_over_heap.map(|r| format!("{r:.2}")))
            );
        }
    }
    if !report.rotation.is_empty() {
        let r0 = &report.rotation[0];
        let _ = writeln!(
            out,
            "\n== Key rotation ({} active keys, each for {} windows, {} windows)",
            r0.active_keys, r0.lifetime_windows, r0.windows
        );
        for r in &report.rotation {
            let _ = writeln!(
                out,
                "{:<20} tracked at most {:>8} ({:>5} × active)   heap {:>5.0} B (peak {:>5.0})   RSS {:>5} B per active key",
                r.variant,
                opt(r.max_tracked),
                opt(r.max_tracked_over_active.map(|x| format!("{x:.2}"))),
                r.heap_bytes_per_active_key,
                r.max_heap_bytes_per_active_key,
                opt(r.rss_bytes_per_active_key.map(|x| format!("{x:.0}")))
            );
        }
    }
    let worst: Vec<_> = report
        .cells
        .iter()
        .filter(|c| c.worst_call_bound_ns.is_some())
        .collect();
    if !worst.is_empty() {
        let _ = writeln!(
            out,
            "\n== The slowest call (every call covered: slowest round of {} calls)",
            report.config.sample_every
        );
        for c in worst {
            let _ = writeln!(
                out,
                "{:<16} {:<20} {}t  sampled max {:>9}   every call ≤ {:>9}",
                c.workload,
                c.variant,
                c.threads,
                human_ns(c.latency.max),
                opt(c.worst_call_bound_ns.map(human_ns))
            );
        }
    }
    if !report.zipf_memory.is_empty() {
        let _ = writeln!(
            out,
            "\n== Zipf memory around remove_idle ({} calls)",
            super::memory::ZIPF_OPS
        );
        for z in &report.zipf_memory {
            let _ = writeln!(
                out,
                "{:<16} before: {:>8} keys {:>10}   after: {:>8} keys {:>10}   ({:.1} ms)",
                z.variant,
                opt(z.tracked_before),
                human_bytes(z.bytes_before),
                opt(z.tracked_after),
                human_bytes(z.bytes_after),
                z.remove_ms
            );
        }
    }
    if !report.pool_setups.is_empty() {
        let _ = writeln!(
            out,
            "\n== Key pool: get_next_key, ns per call (ratios < 1: the first is faster)"
        );
        let (header, rows) = pool_rows(report);
        let widths: Vec<usize> = header.iter().map(|h| h.chars().count().max(7)).collect();
        let line = |cells: &[String]| {
            cells
                .iter()
                .zip(&widths)
                .map(|(cell, &w)| format!("{cell:>w$}"))
                .collect::<Vec<_>>()
                .join("  ")
        };
        let _ = writeln!(out, "{}", line(&header));
        for row in rows {
            let _ = writeln!(out, "{}", line(&row));
        }
        let granted: Vec<String> = report
            .pool_cells
            .iter()
            .map(|c| format!("{:.0}%", c.allowed_fraction * 100.0))
            .collect();
        let _ = writeln!(
            out,
            "granted (cell order): {} of at most {:.0}%",
            granted.join(" "),
            report.pool_setups[0].grant_ceiling * 100.0
        );
    }
    let _ = writeln!(out, "\nTotal runtime: {:.0} s.", report.runtime_s);
    out
}

fn memory_markdown(md: &mut String, report: &Report) {
    let _ = writeln!(md, "## Memory per tracked key\n");
    let _ = writeln!(
        md,
        "Each (variant, N) in a fresh child process: {} keys (fewer at large N: at most ten \
         million calls) created at one tick under uniform-allowed's window, one hit each, then \
         N hits each (a full window), then one `remove_idle` and one more (refused) \
         `check_and_hit` per key so that deferred frees get their chance. **heap**: live heap bytes per key, requested sizes \
         counted by the runner's global allocator (memory the map has retired but not yet \
         freed, papaya's old tables and seize's deferred entries, is still allocated, so it \
         is counted). **RSS**: the child's resident-memory growth (`VmRSS`) per key at the \
         same moment as the settled heap figure: the heap plus the allocator's headers, \
         rounding, fragmentation and freed pages it kept.\n",
        super::memory::KEYS
    );
    let _ = writeln!(
        md,
        "| variant | N | keys | heap B/key after 1 hit | heap B/key, full window | heap B/key, settled | RSS B/key | RSS ÷ heap |"
    );
    let _ = writeln!(md, "|---|---:|---:|---:|---:|---:|---:|---:|");
    for r in &report.memory {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {:.0} | {:.0} | {:.0} | {} | {} |",
            r.variant,
            r.max_requests,
            opt(r.tracked),
            r.bytes_per_key_one_hit,
            r.bytes_per_key_full,
            r.heap_bytes_per_key_settled,
            opt(r.rss_bytes_per_key.map(|x| format!("{x:.0}"))),
            opt(r.rss_over_heap.map(|x| format!("{x:.2}")))
        );
    }
    let _ = writeln!(md);
}

fn rotation_markdown(md: &mut String, report: &Report) {
    let r0 = &report.rotation[0];
    let _ = writeln!(md, "## Keys rotating at a steady active population\n");
    let _ = writeln!(
        md,
        "Each variant in a fresh child process, one thread, explicit ticks: {active} keys are \
         in rotation at any time, each called once per window (limit 32 per 4000 ticks, so \
         every call is admitted) for {life} windows and then never again; {join} new keys join \
         every window; {windows} windows, {calls} calls. A key must be kept for the window plus \
         the lateness tolerance (one window by default) after its last call, so at least \
         about {floor:.2} × the active keys are tracked at any time; the automatic sweep \
         decides how far above that the count climbs. Tracked keys and heap are read every 64 \
         calls; RSS is the child's `VmRSS` growth at the end.\n",
        active = r0.active_keys,
        life = r0.lifetime_windows,
        join = r0.active_keys / r0.lifetime_windows.max(1),
        windows = r0.windows,
        calls = r0.calls,
        floor = 1.0 + 2.0 / r0.lifetime_windows.max(1) as f64,
    );
    let _ = writeln!(
        md,
        "| variant | most keys tracked | ÷ active | keys at the end | heap B per active key, end | heap B per active key, peak | RSS B per active key, end |"
    );
    let _ = writeln!(md, "|---|---:|---:|---:|---:|---:|---:|");
    for r in &report.rotation {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {:.0} | {:.0} | {} |",
            r.variant,
            opt(r.max_tracked),
            opt(r.max_tracked_over_active.map(|x| format!("{x:.2}"))),
            opt(r.final_tracked),
            r.heap_bytes_per_active_key,
            r.max_heap_bytes_per_active_key,
            opt(r.rss_bytes_per_active_key.map(|x| format!("{x:.0}")))
        );
    }
    let _ = writeln!(md);
}

/// One table per workload that covers every call: the slowest call per variant.
fn slowest_call_markdown(md: &mut String, report: &Report) {
    for w in &report.workloads {
        let cells: Vec<&CellResult> = report
            .cells
            .iter()
            .filter(|c| c.workload == w.name && c.worst_call_bound_ns.is_some())
            .collect();
        if cells.is_empty() {
            continue;
        }
        let _ = writeln!(md, "## {}: the slowest call per variant\n", w.name);
        let _ = writeln!(
            md,
            "**sampled max**: the slowest of the timed calls (one in {every}). **every call ≤**: \
             each round of {every} consecutive calls on a thread is timed as a whole, so no \
             call escapes it: the slowest round bounds the slowest single call from above (by \
             at most the time of the round's other calls, a few microseconds).\n",
            every = report.config.sample_every
        );
        let threads = &report.config.threads;
        let _ = writeln!(
            md,
            "| variant |{} |",
            threads
                .iter()
                .map(|t| format!(" {t}t sampled max | {t}t every call ≤"))
                .collect::<Vec<_>>()
                .join(" |")
        );
        let _ = writeln!(md, "|---|{}", "---:|---:|".repeat(threads.len()));
        for variant in variants_on(report, w.name) {
            let _ = write!(md, "| {variant} |");
            for &t in threads {
                let cell = cells
                    .iter()
                    .find(|c| c.variant == variant && c.threads == t);
                let _ = write!(
                    md,
                    " {} | {} |",
                    opt(cell.map(|c| human_ns(c.latency.max))),
                    opt(cell.and_then(|c| c.worst_call_bound_ns).map(human_ns))
                );
            }
            let _ = writeln!(md);
        }
        let _ = writeln!(md);
    }
}

/// The workloads of the key-lifecycle issue, whose tails [`churn_tails_markdown`] sets side by
/// side.
const CHURN_TAIL_WORKLOADS: [&str; 2] = ["churn", "zipf"];
/// The thread counts it shows: those the key-lifecycle targets name.
const CHURN_TAIL_THREADS: [usize; 2] = [1, 2];

/// The sampled p99.9 and p99.99 of every variant on churn and Zipf at 1 and 2 threads, one
/// table per workload that ran: where creating and forgetting keys shows in the tail.
fn churn_tails_markdown(md: &mut String, report: &Report) {
    let workloads: Vec<&str> = CHURN_TAIL_WORKLOADS
        .into_iter()
        .filter(|w| report.cells.iter().any(|c| c.workload == *w))
        .collect();
    if workloads.is_empty() {
        return;
    }
    let fewest_samples = report
        .cells
        .iter()
        .filter(|c| workloads.contains(&c.workload) && CHURN_TAIL_THREADS.contains(&c.threads))
        .map(|c| c.latency.samples)
        .min()
        .unwrap_or(0);
    let _ = writeln!(
        md,
        "## Tails under key churn
"
    );
    let _ = writeln!(
        md,
        "The sampled p99.9 and p99.99 (one call in {every} timed) of every variant on the \
         workloads that create and forget keys (`churn`: nearly every call creates a key; \
         `zipf`: a long tail of keys seen once), at 1 and 2 threads; `-` where a cell did not \
         run. The fewest samples behind any cell here: {fewest_samples}; below 10,000 a \
         p99.99 is the slowest sample.\n",
        every = report.config.sample_every
    );
    let header: String = CHURN_TAIL_THREADS
        .iter()
        .map(|t| format!(" {t}t p99.9 | {t}t p99.99 |"))
        .collect();
    for w in workloads {
        let _ = writeln!(md, "### {w}: tails\n");
        let _ = writeln!(md, "| variant |{header}");
        let _ = writeln!(md, "|---|{}", "---:|---:|".repeat(CHURN_TAIL_THREADS.len()));
        for variant in variants_on(report, w) {
            let _ = write!(md, "| {variant} |");
            for t in CHURN_TAIL_THREADS {
                let latency = find(report, w, variant, t).map(|c| c.latency);
                let _ = write!(
                    md,
                    " {} | {} |",
                    opt(latency.map(|l| human_ns(l.p999))),
                    opt(latency.map(|l| human_ns(l.p9999)))
                );
            }
            let _ = writeln!(md);
        }
        let _ = writeln!(md);
    }
}

/// The markdown results file.
#[must_use]
pub fn markdown(report: &Report, svgs: &[String]) -> String {
    let mut md = String::new();
    let m = &report.machine;
    let c = &report.config;
    let _ = writeln!(
        md,
        "# slidelimit: variants and peers, one workload matrix\n"
    );
    let _ = writeln!(
        md,
        "Generated by the comparison runner; see `results/README.md` for how to read and \
         reproduce it.\n"
    );
    let _ = writeln!(md, "| machine | |\n|---|---|");
    for (label, value) in m.facts() {
        if label == "command" {
            let _ = writeln!(md, "| {label} | `{value}` |");
        } else {
            let _ = writeln!(md, "| {label} | {value} |");
        }
    }
    let _ = writeln!(md, "| kernel | {} |", m.kernel);
    let _ = writeln!(
        md,
        "| load average (1/5/15 min) | {} at start, {} at end (the start includes any \
         compile that `cargo run` just did, the end the run's own threads) |",
        m.loadavg_start, report.loadavg_end
    );
    let _ = writeln!(
        md,
        "| per cell | {} ms × {} trial(s) (median-throughput trial reported), threads {} |",
        c.duration_ms,
        c.trials,
        c.threads
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    );
    let _ = writeln!(
        md,
        "| latency | 1 call in {} timed with the TSC; timer overhead {} ns per sample, included |",
        c.sample_every, m.timer_overhead_ns
    );
    let _ = writeln!(
        md,
        "| fake clock | 1 tick = {} ns, advanced by each thread every {} of its calls |",
        c.tick_ns, c.ops_per_tick
    );
    let _ = writeln!(md, "| total runtime | {:.0} s |\n", report.runtime_s);
    let _ = writeln!(
        md,
        "**Peers are compared on cost per decision, not on semantics.** governor implements \
         GCRA (a virtual-scheduling token bucket), not a sliding window: its quota is the \
         nearest GCRA equivalent of each limit (burst = `max_requests`, one cell back every \
         `window / max_requests`), so its allowed fraction differs from the sliding log's by \
         design. With the fake clock it reads the same `FakeRelativeClock` every variant is \
         driven by; on `real-clock` it uses its default (quanta TSC) clock while slidelimit \
         reads `std::time::Instant`. `deque-mutex` is the plain baseline, one global lock \
         over a `HashMap<key, VecDeque>`. `floor` is one lookup in a pre-filled read-only \
         map plus one CAS.\n"
    );

    if !report.targets.is_empty() {
        let _ = writeln!(md, "## Targets\n");
        let _ = writeln!(
            md,
            "| target | workload | threads | ratio | want | verdict | numbers |"
        );
        let _ = writeln!(md, "|---|---|---:|---:|---|---|---|");
        for t in &report.targets {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} | **{}** | {} |",
                t.target,
                t.workload,
                t.threads,
                opt(t.ratio.map(|r| format!("{r:.2}"))),
                t.threshold,
                t.verdict.label(),
                t.detail
            );
        }
        let _ = writeln!(md);
    }

    if let Some(&first) = c.threads.first() {
        let _ = writeln!(md, "## Cost per decision at {first} thread(s), ns\n");
        let names: Vec<&str> = report.workloads.iter().map(|w| w.name).collect();
        let _ = writeln!(md, "| variant | {} |", names.join(" | "));
        let _ = writeln!(md, "|---|{}", "---:|".repeat(names.len()));
        for v in &report.variants {
            let _ = write!(md, "| {} |", v.name);
            for w in &names {
                let _ = write!(
                    md,
                    " {} |",
                    opt(find(report, w, v.name, first).map(|c| format!("{:.1}", c.ns_per_decision)))
                );
            }
            let _ = writeln!(md);
        }
        let _ = writeln!(md);
    }

    let _ = writeln!(md, "## Every cell\n");
    let _ = writeln!(
        md,
        "Throughput is all threads together. Latency is per call, sampled (see the README). \
         `allowed` is the share of decisions that said yes.\n"
    );
    for w in &report.workloads {
        let _ = writeln!(md, "### {}\n", w.name);
        let _ = writeln!(
            md,
            "{} · {} · {} · {} clock. {}\n",
            w.keys, w.limit, w.mix, w.clock, w.about
        );
        // Workloads that cover every call get the bound on the slowest one beside the
        // sampled max.
        let covered = report
            .cells
            .iter()
            .any(|cell| cell.workload == w.name && cell.worst_call_bound_ns.is_some());
        let _ = writeln!(
            md,
            "| variant | threads | M decisions/s | ns/decision | allowed | p50 | p99 | p99.9 | p99.99 | max |{} samples | keys after |",
            if covered { " every call ≤ |" } else { "" }
        );
        let _ = writeln!(
            md,
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|{}---:|---:|",
            if covered { "---:|" } else { "" }
        );
        for variant in variants_on(report, w.name) {
            for &t in &c.threads {
                if let Some(cell) = find(report, w.name, variant, t) {
                    let l = cell.latency;
                    let bound = if covered {
                        format!(" {} |", opt(cell.worst_call_bound_ns.map(human_ns)))
                    } else {
                        String::new()
                    };
                    let _ = writeln!(
                        md,
                        "| {} | {} | {:.2} | {:.1} | {:.1}% | {} | {} | {} | {} | {} |{} {} | {} |",
                        variant,
                        t,
                        cell.mops,
                        cell.ns_per_decision,
                        cell.allowed_fraction * 100.0,
                        human_ns(l.p50),
                        human_ns(l.p99),
                        human_ns(l.p999),
                        human_ns(l.p9999),
                        human_ns(l.max),
                        bound,
                        l.samples,
                        opt(cell.tracked_keys)
                    );
                }
            }
        }
        let _ = writeln!(md);
    }

    pool_markdown(&mut md, report);
    if !report.memory.is_empty() {
        memory_markdown(&mut md, report);
    }
    if !report.rotation.is_empty() {
        rotation_markdown(&mut md, report);
    }
    slowest_call_markdown(&mut md, report);
    churn_tails_markdown(&mut md, report);
    if !report.zipf_memory.is_empty() {
        let _ = writeln!(md, "## Zipf: memory before and after `remove_idle`\n");
        let _ = writeln!(
            md,
            "{} `check_and_hit` calls on the zipf stream, one thread, fake clock; then one \
             `remove_idle(now)` (governor: `retain_recent` + `shrink_to_fit`; deque-mutex: its own \
             cleanup over every key).\n",
            super::memory::ZIPF_OPS
        );
        let _ = writeln!(
            md,
            "| variant | keys before | heap before | removed | keys after | heap after | remove_idle |"
        );
        let _ = writeln!(md, "|---|---:|---:|---:|---:|---:|---:|");
        for z in &report.zipf_memory {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} | {} | {:.1} ms |",
                z.variant,
                opt(z.tracked_before),
                human_bytes(z.bytes_before),
                opt(z.removed),
                opt(z.tracked_after),
                human_bytes(z.bytes_after),
                z.remove_ms
            );
        }
        let _ = writeln!(md);
    }
    if !svgs.is_empty() {
        let _ = writeln!(md, "## Plots\n");
        for svg in svgs {
            let _ = writeln!(md, "- [{svg}]({svg})");
        }
    }
    md
}
