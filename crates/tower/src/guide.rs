//! The user guide's HTTP page (`docs/http.md`), compiled and run as doc tests.
//!
//! Its examples use this crate with axum (a dev-dependency with the feature `axum`), so they
//! are tested here: `cargo test -p slidelimit-tower --doc`. Compiled only under
//! `cfg(doctest)`.

#[doc = include_str!("../../../docs/http.md")]
pub struct Http;
