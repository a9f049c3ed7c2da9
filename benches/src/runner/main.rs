//! `cargo run --release -p slidelimit-bench`: the comparison runner
//! ([`slidelimit_bench::runner`]), with the counting allocator its memory figures need.

slidelimit_bench::counting_allocator!();

fn main() -> std::process::ExitCode {
    slidelimit_bench::runner::run_cli(std::env::args())
}
