//! Metrics through the [`metrics`](https://docs.rs/metrics) facade (feature `metrics`, off by
//! default): what a limiter decides, how many keys it holds, how long its sweeps take.
//!
//! | name | type | unit | labels | meaning |
//! |---|---|---|---|---|
//! | `slidelimit_decisions_total` | counter | decisions | `limiter`, `outcome` = `admitted` / `refused` | answers of `check_and_hit` and `check_and_hit_n` |
//! | `slidelimit_keys_tracked` | gauge | keys | `limiter` | keys with state, after the last creation, sweep or restore (moved by each creation and automatic sweep, set by `remove_idle` and restores) |
//! | `slidelimit_keys_created_total` | counter | keys | `limiter` | calls that created a key's state (its first use, or its first after a removal) |
//! | `slidelimit_keys_removed_total` | counter | keys | `limiter` | idle keys removed, by the automatic sweep and by `remove_idle` |
//! | `slidelimit_budget_refusals_total` | counter | decisions | `limiter` | `check_and_hit` calls on keys with no state refused because the key budget was full ([`Options::max_keys`](crate::Options::max_keys)); each is also a refused decision |
//! | `slidelimit_sweep_seconds` | histogram | seconds | `limiter` | how long each `remove_idle` call took |
//! | `slidelimit_tombstones` | gauge | keys | `limiter` | removed keys still refused below their last hit + `W` (see [`crate::keyed`]), after the last sweep or restore |
//!
//! Every variant emits the same metrics, from the key policy they share ([`crate::keyed`]):
//! the lock-free limiter and the mutex, per-key-lock and rwlock crates alike.
//!
//! **What counts as a decision**: each `check_and_hit` / `check_and_hit_n` call that returned
//! a verdict (the clock helpers `check_and_hit_now` and `check_and_hit_stamped` included).
//! `hit`, `allowed` and `status` decide nothing and are not counted; a weight refused with a
//! `WeightError` is not counted either. A weighted call counts once, whatever its weight.
//!
//! **The `limiter` label** is [`Options::limiter_name`](crate::Options::limiter_name),
//! `"default"` unless set: name each limiter of a process (`"login"`, `"api"`) to tell them
//! apart. Limiters with the same name share their series (their counters add up, their
//! gauges mix), so give each limiter its own name.
//!
//! **Handles, registered when the limiter is built.** A limiter registers its counters,
//! gauges and histogram once, when it is constructed, and afterwards only increments those
//! handles: no key lookup per decision. So install the recorder (your exporter) *before*
//! building limiters; a limiter built with no recorder installed keeps no-op handles for its
//! whole life. Call [`describe`] (once, after installing the recorder) to give exporters each
//! metric's description and unit.
//!
//! **Cost.** Off (the default), the limiter carries a zero-sized stand-in whose methods are
//! empty: the hot path is the same machine code as without the feature. On, a decision adds
//! one counter increment through its handle (see docs/metrics.md, "Cost", for the
//! measured instructions per call).

#[cfg(feature = "metrics")]
mod handles;
#[cfg(not(feature = "metrics"))]
mod noop;

#[cfg(feature = "metrics")]
pub(crate) use handles::LimiterMetrics;
#[cfg(not(feature = "metrics"))]
pub(crate) use noop::LimiterMetrics;

/// Counter: `check_and_hit` answers, by `outcome` (`admitted`, `refused`).
pub const DECISIONS: &str = "slidelimit_decisions_total";
/// Gauge: keys with state.
pub const KEYS_TRACKED: &str = "slidelimit_keys_tracked";
/// Counter: keys whose state a call created.
pub const KEYS_CREATED: &str = "slidelimit_keys_created_total";
/// Counter: idle keys removed.
pub const KEYS_REMOVED: &str = "slidelimit_keys_removed_total";
/// Counter: decisions on keys with no state refused because the key budget was full.
pub const BUDGET_REFUSALS: &str = "slidelimit_budget_refusals_total";
/// Histogram: the duration of each `remove_idle`, in seconds.
pub const SWEEP_SECONDS: &str = "slidelimit_sweep_seconds";
/// Gauge: tombstones held (removed keys still refused below a tick).
pub const TOMBSTONES: &str = "slidelimit_tombstones";

/// The label naming the limiter ([`Options::limiter_name`](crate::Options::limiter_name)).
pub const LIMITER_LABEL: &str = "limiter";

/// The `limiter` label's value when [`Options::limiter_name`](crate::Options::limiter_name)
/// is not set.
pub const DEFAULT_LIMITER_NAME: &str = "default";

/// Without the feature `metrics` nothing is recorded, so there is nothing to describe: this
/// does nothing (it exists so that callers need no `cfg` of their own).
#[cfg(not(feature = "metrics"))]
pub fn describe() {}

/// Gives the installed recorder each metric's unit and description (the exporters show them,
/// Prometheus as `# HELP`). Call it once, after installing the recorder.
#[cfg(feature = "metrics")]
pub fn describe() {
    use metrics::Unit;
    metrics::describe_counter!(
        DECISIONS,
        Unit::Count,
        "check_and_hit answers, by outcome (admitted, refused)"
    );
    metrics::describe_gauge!(KEYS_TRACKED, Unit::Count, "keys with state");
    metrics::describe_counter!(KEYS_CREATED, Unit::Count, "keys whose state a call created");
    metrics::describe_counter!(KEYS_REMOVED, Unit::Count, "idle keys removed by sweeps");
    metrics::describe_counter!(
        BUDGET_REFUSALS,
        Unit::Count,
        "decisions on new keys refused because the key budget was full"
    );
    metrics::describe_histogram!(
        SWEEP_SECONDS,
        Unit::Seconds,
        "duration of each remove_idle sweep"
    );
    metrics::describe_gauge!(
        TOMBSTONES,
        Unit::Count,
        "removed keys still refused below their last hit plus the window"
    );
}
