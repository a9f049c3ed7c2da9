//! `cargo run --release -p slidelimit-bench`: the comparison runner
//! ([`slidelimit_bench::runner`]). It installs no counting allocator: its timed cells run on
//! the plain system allocator, as a service embedding the limiter would, and its memory
//! figures come from `slidelimit-bench-memory` children (see
//! [`slidelimit_bench::runner::memory_program`]).

fn main() -> std::process::ExitCode {
    slidelimit_bench::runner::run_cli(std::env::args())
}
