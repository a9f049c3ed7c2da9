//! The user guide's Redis page (`docs/fleet.md`), compiled and run as doc tests.
//!
//! Its examples use the async limiter, the tower layer and axum (dev-dependencies), so they
//! are tested here, with the feature `tokio`: `cargo test -p slidelimit-redis --features tokio
//! --doc`. Examples that need a running Redis are `no_run`. Compiled only under
//! `cfg(doctest)`.

#[cfg(feature = "tokio")]
#[doc = include_str!("../../../docs/fleet.md")]
pub struct Fleet;
