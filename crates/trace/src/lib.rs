//! Traces of requests and admissions for slidelimit's tools and tests: generate them (a
//! seeded generator and a Zipf sampler), read them (CSV or JSON lines, feature `read`), and
//! audit them against the window bound, never more than `N` admitted per key in any window of
//! `W` ticks; with the one duration grammar (`1500ms`) that every command and tool reads.
//!
//! ```
//! use slidelimit_trace::audit::Audit;
//! use slidelimit_trace::rng::SplitMix64;
//!
//! // A key's admissions, (tick, weight), as a limiter of 3 per 10 ticks might have made them.
//! let mut rng = SplitMix64::new(7);
//! let admitted: Vec<(u64, u64)> = (0..100).map(|i| (i * 4 + rng.below(2), 1)).collect();
//! let report = Audit::new(3, 10)?.key(admitted);
//! assert!(report.within_limit());
//! assert_eq!(report.peak(), 3);
//!
//! // Four in the ticks 1..=10: the audit finds the window and says so.
//! let error = Audit::new(3, 10)?.key([(1, 1), (2, 1), (3, 1), (10, 1)]).check().unwrap_err();
//! assert_eq!(error.window.last_tick, 10);
//! # Ok::<(), slidelimit_trace::audit::AuditError>(())
//! ```
//!
//! # Guarantees
//! - [`audit`] applies the project's own window rule (a hit at `s` is live at `t` iff
//!   `s + W > t`, saturating), whatever the order of the log, to weighted hits, with nothing
//!   wrapping near `u64::MAX`; it is checked against a brute-force reference.
//! - [`rng::SplitMix64`] gives the same stream for a seed on every platform and version of
//!   this crate, so a failing seed replays.
//! - Nothing here panics on its input: bad parameters are typed errors.
//!
//! # Implementation
//! This crate does not depend on the limiters (`slidelimit`), so the core crate's own tests
//! can use it. Its one dependency is `thiserror`; the others are optional: the governor peer
//! (`governor`, feature `governor`) and the trace reader (`read`, feature `read`: `serde` and
//! `serde_json`), for the CLI and the benchmarks.

pub mod audit;
pub mod duration;
#[cfg(feature = "governor")]
pub mod governor;
#[cfg(feature = "read")]
pub mod read;
pub mod rng;
pub mod zipf;

/// The crate's README, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
