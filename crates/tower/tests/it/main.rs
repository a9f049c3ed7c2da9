//! The layer in real servers on loopback ports, asked by a real HTTP client: axum and plain
//! hyper, every limiter variant, concurrent load, the fields a client parses.
//!
//! Every limit has a window of ten minutes, so a test's requests all fall in one window and no
//! assertion depends on how fast the machine is.

mod axum_server;
mod fields;
mod hyper_server;
mod keys;
#[cfg(feature = "metrics")]
mod metrics;
mod proxy;
mod support;
