//! A limiter's metrics as Prometheus text: install `metrics-exporter-prometheus`'s recorder,
//! build and drive two named limiters, and print what a scrape of `/metrics` would return.
//!
//! ```text
//! cargo run -p slidelimit --features metrics --example prometheus_metrics
//! ```
//!
//! Expect `slidelimit_decisions_total` by `limiter` and `outcome` (`login`: 5 admitted and 3
//! refused; `api`: 20 admitted), the keys each limiter tracks and created, the idle keys a
//! sweep removed, and the sweep's duration as a summary, each with its `# HELP` and unit.
//! A server would serve `handle.render()` on its own route, or turn on the exporter's
//! `http-listener` feature and let it listen.

use std::error::Error;

use metrics_exporter_prometheus::PrometheusBuilder;
use slidelimit::{ExactLog, Limit, LockFreeLimiter, Options, RateLimiter};

fn main() -> Result<(), Box<dyn Error>> {
    // First the recorder: a limiter registers its counters when it is built, and one built
    // before any recorder is installed keeps no-op handles for good.
    let handle = PrometheusBuilder::new().install_recorder()?;
    // Then the units and help texts, which the exporter prints as `# HELP`.
    slidelimit::metrics::describe();

    // Each limiter names its series with the `limiter` label.
    let login: LockFreeLimiter<String> = LockFreeLimiter::with_options(
        ExactLog::new(Limit::new(5, 60)?),
        Options::default().limiter_name("login"),
    );
    let api: LockFreeLimiter<u64> = LockFreeLimiter::with_options(
        ExactLog::new(Limit::new(100, 60)?),
        Options::default().limiter_name("api"),
    );

    // Eight login attempts by one user within the window: five pass.
    for now in 0..8 {
        let _ = login.check_and_hit("mallory", now);
    }
    // Twenty API calls spread over ten clients.
    for call in 0..20u64 {
        let _ = api.check_and_hit(&(call % 10), call);
    }
    // Long after: every key has gone idle, and a sweep removes them.
    let removed = api.remove_idle(1_000);
    println!("# the api limiter's sweep removed {removed} idle keys\n");

    print!("{}", handle.render());
    Ok(())
}
