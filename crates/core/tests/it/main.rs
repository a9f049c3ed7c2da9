//! Integration tests of every variant through the `RateLimiter` trait.
//!
//! [`variants`] builds all four limiters; every test runs its body against each of them.
//! [`reference`] is the model the property tests compare against, [`trace`] runs a trace
//! against a limiter and the model side by side.

mod bad_input;
mod broken_clock;
mod buckets;
mod budget;
mod edges;
mod layered;
mod limit;
mod limit_changes;
mod memory;
#[cfg(feature = "metrics")]
mod metrics;
mod pool;
mod properties;
mod race;
mod reference;
mod removal;
mod ring_order;
mod runtime;
mod seal;
mod seed_examples;
mod stress;
mod trace;
mod variants;
#[cfg(feature = "tokio")]
mod wait;
