//! criterion suites for slidelimit's variants and peers: single-thread cost per decision for
//! every variant and workload, and the contended cases at several thread counts.
//!
//! `cargo bench -p slidelimit-bench` runs both in a few minutes (short warm-up and measurement
//! times, set below; criterion's own flags such as `--measurement-time` override them). Tail
//! latency is not here: criterion gives none; the comparison runner measures it.

mod contended;
mod single;

use std::time::Duration;

use criterion::{criterion_main, Criterion};

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_millis(900))
        .sample_size(20)
}

/// Both suites under the short default configuration (command-line flags still apply).
fn suites() {
    let mut c = config().configure_from_args();
    single::bench(&mut c);
    contended::bench(&mut c);
}

criterion_main!(suites);
