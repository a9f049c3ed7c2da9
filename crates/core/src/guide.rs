//! The user guide's pages (`docs/*.md`), compiled and run as doc tests.
//!
//! Each page whose Rust examples need only this crate (and its dev-dependencies) is the
//! documentation of one item below, so `cargo test -p slidelimit --doc` runs every example
//! in it, and a fenced block without a language tag fails the run instead of being left
//! unchecked. The HTTP page is tested by `slidelimit-tower`, the Redis page by
//! `slidelimit-redis` (feature `tokio`). Compiled only under `cfg(doctest)`.

#[doc = include_str!("../../../docs/README.md")]
pub struct Index;

#[doc = include_str!("../../../docs/guarantees.md")]
pub struct Guarantees;

#[doc = include_str!("../../../docs/windows.md")]
pub struct Windows;

#[doc = include_str!("../../../docs/limits-and-snapshots.md")]
pub struct LimitsAndSnapshots;

/// The waiting page's examples need the feature `tokio`:
/// `cargo test -p slidelimit --features tokio --doc`.
#[cfg(feature = "tokio")]
#[doc = include_str!("../../../docs/waiting.md")]
pub struct Waiting;

#[doc = include_str!("../../../docs/cli.md")]
pub struct Cli;

#[doc = include_str!("../../../docs/key-pool.md")]
pub struct KeyPool;

#[doc = include_str!("../../../docs/metrics.md")]
pub struct Metrics;

#[doc = include_str!("../../../docs/architecture.md")]
pub struct Architecture;

#[doc = include_str!("../../../docs/results.md")]
pub struct Results;
