//! [`RateLimitLayer`]: the configuration, and the [`Layer`] that wraps a service in
//! [`RateLimit`].

use std::any::type_name;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use http::StatusCode;
use slidelimit::decide::LimitInTicks;
use slidelimit::{Clock, Limit, LimitError, MonotonicClock};
use tower_layer::Layer;

use crate::{PolicyName, RateLimit};

/// What the layer does with a request its key extractor finds no key in.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MissingKey {
    /// Answer with this status and a short plain-text body, without calling the service.
    /// The default, with `400 Bad Request`: a request without a key is never served unlimited
    /// unless you say so.
    Reject(StatusCode),
    /// Serve the request without limiting it (and without rate-limit headers). Only safe when
    /// a client cannot choose to send no key: when "no key" means "not limited by this layer",
    /// as for a closure that keys only some routes.
    Allow,
}

impl Default for MissingKey {
    fn default() -> Self {
        Self::Reject(StatusCode::BAD_REQUEST)
    }
}

/// The settings every service of one layer shares.
#[derive(Clone)]
pub(crate) struct Config {
    pub(crate) clock: Arc<dyn Clock>,
    /// The length of one of `clock`'s ticks (the limiter's unit), never zero.
    pub(crate) tick: Duration,
    pub(crate) policy: PolicyName,
    /// Whether admitted responses carry `RateLimit` and `RateLimit-Policy`.
    pub(crate) informational: bool,
    pub(crate) missing_key: MissingKey,
}

/// A [`Layer`] that limits each request by the key `E` extracts from it, with the limiter `L`
/// shared by every service the layer makes.
///
/// Defaults: a [`MonotonicClock`] with 1 ns ticks (so the limiter's `Limit` is in nanoseconds:
/// `Limit::per_minute(100, Duration::from_nanos(1))`), the policy name `"default"`,
/// informational headers on admitted responses, and [`MissingKey::Reject`] with 400.
///
/// The policy the headers report is the limiter's default limit ([`RateLimiter::limit`],
/// read on every request, so a `set_limit` shows at once); limits set for single keys are not
/// reflected in `q` and `w`, though `r` and `t` come from the key's own window.
///
/// # Panics
/// Applying the layer to a service ([`Layer::layer`], which `axum::Router::layer` and
/// `tower::ServiceBuilder` call while the app is built) panics, with the fix in the message,
/// where every request would otherwise be limited wrongly or refused:
/// - an in-process limiter whose limit carries a tick ([`Limit::tick`], a limit built from
///   durations) other than the layer's (1 ns unless [`RateLimitLayer::with_clock`] says
///   otherwise): its windows would last that many times longer or shorter than meant. A limit
///   of raw ticks ([`Limit::new`]) is taken to be in the layer's ticks, and a remote limiter
///   (Redis) converts a limit to its own ticks itself;
/// - [`PeerIp`](crate::PeerIp) reading the connection's address in front of an axum service
///   while this crate's `axum` feature is off: it could never read axum's `ConnectInfo`, so
///   every request would get `400 request has no rate-limit key`. Turn the feature on, or,
///   if your own middleware inserts [`PeerAddr`](crate::PeerAddr), use
///   [`PeerIp::from_peer_addr`](crate::PeerIp::from_peer_addr).
///
/// ```should_panic
/// use std::sync::Arc;
/// use std::time::Duration;
/// use slidelimit::{Limit, LockFreeLimiter};
/// use slidelimit_tower::{Path, RateLimitLayer};
/// use tower::{service_fn, Layer};
///
/// // 100 per minute in milliseconds, under the layer's default nanosecond clock: 100 per
/// // 60 µs. Refused when the layer is applied.
/// let limit = Limit::per_minute(100, Duration::from_millis(1)).unwrap();
/// let layer = RateLimitLayer::new(Arc::new(LockFreeLimiter::<String>::new(limit)), Path);
/// let _service = layer.layer(service_fn(|_: http::Request<()>| async {
///     Ok::<_, std::convert::Infallible>(http::Response::new(()))
/// }));
/// ```
///
/// [`RateLimiter::limit`]: slidelimit::RateLimiter::limit
/// [`Limit::tick`]: slidelimit::Limit::tick
/// [`Limit::new`]: slidelimit::Limit::new
pub struct RateLimitLayer<L: ?Sized, E> {
    limiter: Arc<L>,
    extractor: E,
    config: Arc<Config>,
}

impl<L: ?Sized, E> RateLimitLayer<L, E> {
    /// Limits requests by `extractor`'s key with `limiter`, whose ticks are nanoseconds of a
    /// [`MonotonicClock`] (see [`RateLimitLayer::with_clock`] for another unit).
    pub fn new(limiter: Arc<L>, extractor: E) -> Self {
        Self {
            limiter,
            extractor,
            config: Arc::new(Config {
                clock: Arc::new(MonotonicClock::new()),
                tick: Duration::from_nanos(1),
                policy: PolicyName::default(),
                informational: true,
                missing_key: MissingKey::default(),
            }),
        }
    }

    /// Takes `now` from `clock`, whose ticks last `tick` (the unit of the limiter's `Limit`,
    /// used to turn windows and waits into seconds). The clock is shared, so the caller may
    /// keep a handle (a [`ManualClock`](slidelimit::ManualClock) to move in tests).
    ///
    /// # Errors
    /// [`LimitError::ZeroTick`] for a zero `tick`.
    pub fn with_clock<C: Clock + 'static>(
        mut self,
        clock: Arc<C>,
        tick: Duration,
    ) -> Result<Self, LimitError> {
        if tick.is_zero() {
            return Err(LimitError::ZeroTick);
        }
        let config = Arc::make_mut(&mut self.config);
        config.clock = clock;
        config.tick = tick;
        Ok(self)
    }

    /// The name both headers give the policy (`"default"` unless set). Give each layer its
    /// own name when several limit the same response: their fields are appended side by side.
    #[must_use]
    pub fn policy_name(mut self, name: PolicyName) -> Self {
        Arc::make_mut(&mut self.config).policy = name;
        self
    }

    /// Whether admitted responses carry the informational `RateLimit` and `RateLimit-Policy`
    /// fields (on by default). Refusals always carry them, with `Retry-After`.
    #[must_use]
    pub fn informational_headers(mut self, on: bool) -> Self {
        Arc::make_mut(&mut self.config).informational = on;
        self
    }

    /// What to do with a request that has no key (see [`MissingKey`]).
    #[must_use]
    pub fn on_missing_key(mut self, policy: MissingKey) -> Self {
        Arc::make_mut(&mut self.config).missing_key = policy;
        self
    }

    /// The shared limiter.
    #[must_use]
    pub fn limiter(&self) -> &Arc<L> {
        &self.limiter
    }
}

impl<L: LimitInTicks + ?Sized, E: 'static> RateLimitLayer<L, E> {
    /// Why this layer can never limit requests to `S` as meant (see the type's "Panics"),
    /// with the fix, or `Ok` (the checks [`Layer::layer`] makes).
    fn check<S>(&self) -> Result<(), String> {
        if let Some(limit) = self.limiter.limit_in_callers_ticks() {
            tick_mismatch(limit, self.config.tick)?;
        }
        crate::key::peer::unreadable_connection(
            &self.extractor,
            type_name::<S>(),
            cfg!(feature = "axum"),
        )
    }
}

/// The fix, when `limit` cannot be counted in the layer's `layer_tick` (the core's check,
/// with the layer's own way out: a clock of the limit's tick).
pub(crate) fn tick_mismatch(limit: Limit, layer_tick: Duration) -> Result<(), String> {
    limit.check_counted_in(layer_tick).map_err(|err| {
        let limit_tick = limit.tick().unwrap_or(layer_tick);
        format!(
            "slidelimit-tower: {err} (`Limit::per_minute(n, Duration::from_nanos(1))` for the \
             default clock), or give the layer a clock counting {limit_tick:?} ticks with \
             `RateLimitLayer::with_clock(clock, {limit_tick:?})`"
        )
    })
}

/// Applies the layer: every service it makes shares the limiter, the extractor's settings
/// and the configuration.
///
/// # Panics
/// When the limiter's limit or the key extractor can never work with this layer or `S` (see
/// [`RateLimitLayer`]'s "Panics"): at start-up, with the fix in the message, rather than a
/// wrong limit or a 400 on every request.
impl<S, L, E> Layer<S> for RateLimitLayer<L, E>
where
    L: LimitInTicks + ?Sized,
    E: Clone + 'static,
{
    type Service = RateLimit<S, L, E>;

    fn layer(&self, inner: S) -> Self::Service {
        if let Err(fix) = self.check::<S>() {
            panic!("{fix}");
        }
        RateLimit::from_parts(
            inner,
            Arc::clone(&self.limiter),
            self.extractor.clone(),
            Arc::clone(&self.config),
        )
    }
}

impl<L: ?Sized, E: Clone> Clone for RateLimitLayer<L, E> {
    fn clone(&self) -> Self {
        Self {
            limiter: Arc::clone(&self.limiter),
            extractor: self.extractor.clone(),
            config: Arc::clone(&self.config),
        }
    }
}

impl<L: ?Sized, E: fmt::Debug> fmt::Debug for RateLimitLayer<L, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimitLayer")
            .field("extractor", &self.extractor)
            .field("config", &*self.config)
            .finish_non_exhaustive()
    }
}

impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Config")
            .field("tick", &self.tick)
            .field("policy", &self.policy.as_str())
            .field("informational", &self.informational)
            .field("missing_key", &self.missing_key)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use slidelimit::{Limit, LockFreeLimiter, ManualClock};

    fn layer() -> RateLimitLayer<LockFreeLimiter<String>, crate::Path> {
        let limiter = LockFreeLimiter::new(Limit::new(1, 10).unwrap());
        RateLimitLayer::new(Arc::new(limiter), crate::Path)
    }

    #[test]
    fn defaults_are_the_documented_ones() {
        let config = &layer().config;
        assert_eq!(config.tick, Duration::from_nanos(1));
        assert_eq!(config.policy, PolicyName::default());
        assert!(config.informational);
        assert_eq!(
            config.missing_key,
            MissingKey::Reject(StatusCode::BAD_REQUEST)
        );
    }

    #[test]
    fn a_zero_tick_is_refused() {
        let clock = Arc::new(ManualClock::new(0));
        assert!(matches!(
            layer().with_clock(Arc::clone(&clock), Duration::ZERO),
            Err(LimitError::ZeroTick)
        ));
        let layer = layer().with_clock(clock, Duration::from_millis(1)).unwrap();
        assert_eq!(layer.config.tick, Duration::from_millis(1));
    }

    #[test]
    fn a_limit_in_other_ticks_than_the_clock_is_refused_with_the_fix() {
        let (ns, ms) = (Duration::from_nanos(1), Duration::from_millis(1));
        let raw = Limit::new(100, 60_000).unwrap();
        let in_ns = Limit::per_minute(100, ns).unwrap();
        let in_ms = Limit::per_minute(100, ms).unwrap();
        assert_eq!(tick_mismatch(raw, ns), Ok(()), "raw ticks: the layer's");
        assert_eq!(tick_mismatch(in_ns, ns), Ok(()));
        let fix = tick_mismatch(in_ms, ns).unwrap_err();
        assert!(fix.contains("ticks of 1ms"), "{fix}");
        assert!(fix.contains("ticks of 1ns"), "{fix}");
        assert!(fix.contains("in_ticks_of(1ns)"), "{fix}");
        assert!(fix.contains("with_clock(clock, 1ms)"), "{fix}");
    }

    #[test]
    fn applying_the_layer_checks_the_limiters_tick() {
        type Limiter = LockFreeLimiter<String>;
        let service = || tower::service_fn(|_: http::Request<()>| async { Ok::<_, ()>(()) });
        let in_ms = Limit::per_minute(100, Duration::from_millis(1)).unwrap();
        let layer = RateLimitLayer::new(Arc::new(Limiter::new(in_ms)), crate::Path);
        let applied = std::panic::AssertUnwindSafe(|| layer.layer(service()));
        let panicked = std::panic::catch_unwind(applied).unwrap_err();
        let message = panicked
            .downcast_ref::<String>()
            .expect("a formatted message");
        assert!(message.contains("built in ticks of 1ms"), "{message}");
        // The same limit under a clock in milliseconds, or converted to nanoseconds: applied.
        let clock = Arc::new(ManualClock::new(0));
        let _ = layer
            .clone()
            .with_clock(clock, Duration::from_millis(1))
            .unwrap()
            .layer(service());
        let in_ns = in_ms.in_ticks_of(Duration::from_nanos(1)).unwrap();
        let _ = RateLimitLayer::new(Arc::new(Limiter::new(in_ns)), crate::Path).layer(service());
        // A remote limiter answers no limit: nothing to check.
        struct Remote;
        impl LimitInTicks for Remote {}
        let _ = RateLimitLayer::new(Arc::new(Remote), crate::Path).layer(service());
    }

    #[test]
    fn settings_do_not_leak_into_clones_made_before() {
        let before = layer();
        let after = before
            .clone()
            .informational_headers(false)
            .on_missing_key(MissingKey::Allow);
        assert!(before.config.informational);
        assert_eq!(before.config.missing_key, MissingKey::default());
        assert!(!after.config.informational);
        assert_eq!(after.config.missing_key, MissingKey::Allow);
        assert!(
            Arc::ptr_eq(before.limiter(), after.limiter()),
            "one limiter"
        );
    }
}
