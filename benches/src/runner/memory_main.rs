//! `slidelimit-bench-memory`: the comparison runner's memory children, the one binary with
//! the counting allocator (see [`slidelimit_bench::runner::memory_program`]). The runner
//! starts it as `slidelimit-bench-memory --memory-child ...`; it prints one JSON line.

use std::process::ExitCode;

slidelimit_bench::counting_allocator!();

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().collect();
    slidelimit_bench::runner::child_entry(&argv).unwrap_or_else(|| {
        eprintln!(
            "{} is started by the comparison runner (`cargo run --release -p slidelimit-bench`), \
             not by hand: usage: {} {} per-key VARIANT N [KEYS] | rotation VARIANT | zipf VARIANT",
            slidelimit_bench::runner::MEMORY_BIN,
            slidelimit_bench::runner::MEMORY_BIN,
            slidelimit_bench::runner::CHILD_FLAG,
        );
        ExitCode::from(2)
    })
}
