//! Shared pieces of slidelimit's benchmarks: the workload matrix, the peers, the floor, the
//! variant registry and the thread driver, used by the comparison runner and by the criterion
//! suites alike.
//!
//! ```
//! use slidelimit_bench::{variants, workload};
//! // Every registered variant and peer, and which workloads each one runs.
//! let zipf = workload::find("zipf").expect("a default workload");
//! let metas = variants::metas();
//! assert!(metas.iter().any(|m| m.name == "lock-free" && (m.supports)(&zipf)));
//! assert!(metas.iter().any(|m| m.name == "governor-keyed"));
//! ```
//!
//! # Guarantees
//! Every variant runs the same pre-generated key streams against the same shared clock; the
//! driver builds its threads before the timed region and releases them with a barrier.
//!
//! # Implementation
//! [`workload`] defines the matrix and its key streams (`slidelimit_trace`'s Zipf sampler
//! draws the heavy tail);
//! [`target`] is the one trait the driver calls, implemented for every
//! [`slidelimit::RateLimiter`] and for the peers ([`deque_baseline`], [`peers`]) and the machine
//! floor ([`floor`]); [`variants`] is the registry; [`drive`] runs one cell. [`pool_cells`]
//! runs the key pool's `get_next_key` through the same driver, as two more workloads with
//! their own two variants. [`runner`] is the comparison run itself, callable from any binary.

pub mod clock;
pub mod deque_baseline;
pub mod drive;
pub mod floor;
pub mod peers;
pub mod plot;
pub mod pool_cells;
pub mod provenance;
pub mod runner;
pub mod target;
pub mod variants;
pub mod workload;

/// Re-exported for [`counting_allocator!`]: host binaries need no `stats_alloc` dependency.
#[doc(hidden)]
pub use stats_alloc;

/// Installs the counting global allocator (stats_alloc's wrapper around the system allocator)
/// that the runner's heap-per-key figures read. The runner's memory children need it: the
/// comparison's own `slidelimit-bench-memory` binary invokes it, and so may a binary that hosts
/// the runner and wants to be its own child. It adds two `SeqCst` adds on process-wide words
/// to every allocation and free of that binary, which is why the timed cells never run under
/// it in the comparison (see [`runner::memory_program`]).
///
/// ```no_run
/// slidelimit_bench::counting_allocator!();
/// fn main() -> std::process::ExitCode {
///     slidelimit_bench::runner::run_cli(std::env::args())
/// }
/// ```
#[macro_export]
macro_rules! counting_allocator {
    () => {
        #[global_allocator]
        static SLIDELIMIT_BENCH_COUNTING_ALLOCATOR: &$crate::stats_alloc::StatsAlloc<
            ::std::alloc::System,
        > = &$crate::stats_alloc::INSTRUMENTED_SYSTEM;
    };
}
