//! Quota leasing: each process takes a key's permits from Redis in batches and decides
//! locally, so most decisions cost no round trip, and still never over-admits across all
//! processes together.
//!
//! # How
//! The leases of a key live in an exact log in Redis (the [`exact`] script)
//! with window `W' = W + d`, where `d` is the lease duration. A lease taken at tick `t_l`
//! admits up to `b` members scored `t_l` in that log (fewer if fewer fit; the batch `b` is
//! the round-trip reduction). The process then admits requests from it, locally, only
//! while its time is in `[t_l, t_l + d)`. When it needs a new lease, the same script call
//! first removes the old lease's unused members, which no request used and none will, if
//! they are still live (the lease is less than `W'` old) and the key is the one the lease
//! was taken from (its `born` stamp matches: a key that expired, or a restarted server,
//! numbers its members anew, and another process's members must never be removed).
//!
//! # Why the processes together never over-admit
//! Take any window `(x - W, x]` of request times. A request admitted from a lease at `t_l`
//! has a time `r` with `t_l <= r < t_l + d`, so a lease that served a request in the window
//! has `t_l <= x` and `t_l > x - W - d`: its members are scored in `(x - W', x]`, one window
//! of the lease log. That log never holds more than `N` members scored in one of its
//! windows (see [`exact`]'s proof, which holds in any call order; a give-back
//! only removes members, and only ones no request used). Every admitted request used its own
//! member of its lease, so the window holds at most `N` admitted requests. ∎
//!
//! With the server's clock, `t_l` is the server's `TIME`; the process measures `[t_l, t_l +
//! d)` from the moment it *sent* the lease request (before the server read `TIME`), so its
//! estimate of the server's time is never behind: a lease is never used past `t_l + d` in
//! server time (given clocks that run at the same rate, up to a negligible drift over `d`).
//!
//! # The price
//! A lease holds its permits for `W + d` rather than `W`, so a saturated key admits `N` per
//! `W + d` (with `d = W / 10`, about 91 % of the exact log's rate); permits leased by a
//! process that then goes quiet stay unused until it leases again or they leave the window.
//! After a refusal the process refuses that key locally until the retry-after the server
//! gave (no round trip), which may miss permits other processes give back meanwhile.
//! Refusals are always safe, so none of this can over-admit.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use slidelimit::Limit;

use crate::exact::{self, ExactOp, GiveBack};
use crate::failure::Verdict;
use crate::reply::tick_arg;
use crate::{Error, Options, RedisLimiter};

/// The answer of a [`LeasedLimiter`].
#[must_use]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeaseDecision {
    /// Whether the request was admitted.
    pub admitted: bool,
    /// Whether this decision needed a round trip to Redis.
    pub remote: bool,
    /// The tick it was decided at: the caller's tick, or (server clock) the lease's server
    /// tick plus the time since it was requested, never behind the server's time.
    pub now: u64,
    /// For a refusal, the ticks until this process asks Redis again for the key (the
    /// retry-after Redis gave); 0 for an admission.
    pub retry_after_ticks: u64,
}

#[derive(Debug)]
struct Lease {
    /// The lease's tick `t_l` (its members' score).
    score: u64,
    /// The highest sequence number of its members (they are `seq_hi - granted + 1 ..=
    /// seq_hi`), for the give-back.
    seq_hi: u64,
    granted: u64,
    used: u64,
    /// The key's `born` stamp the lease was taken under (see [`GiveBack`]).
    born: u64,
    /// When the lease request was sent: the local anchor of `score` in server-clock mode.
    sent_at: Instant,
    /// No lease can be had before this tick (a refusal's retry-after); 0 when none.
    blocked_until: u64,
}

impl Lease {
    const fn empty(now: Instant) -> Self {
        Self {
            score: 0,
            seq_hi: 0,
            granted: 0,
            used: 0,
            born: 0,
            sent_at: now,
            blocked_until: 0,
        }
    }
}

/// A limiter that leases each key's quota from Redis in batches and decides locally.
/// `N` per `W` across every process using the same server, prefix and limit; about one
/// round trip per `batch` admissions.
///
/// Use one `LeasedLimiter` per process (it is `Sync`; share it between threads). Only the
/// exact log leases; the [`Options`]' bucket count is refused.
pub struct LeasedLimiter {
    remote: RedisLimiter,
    limit: Limit,
    batch: u64,
    lease_ticks: u64,
    /// `W + d`: the lease log's window.
    lease_window: u64,
    leases: Mutex<HashMap<String, Arc<Mutex<Lease>>>>,
}

impl std::fmt::Debug for LeasedLimiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeasedLimiter")
            .field("remote", &self.remote)
            .field("limit", &self.limit)
            .field("batch", &self.batch)
            .field("lease_ticks", &self.lease_ticks)
            .finish_non_exhaustive()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl LeasedLimiter {
    /// `limit` (ticks in microseconds) across every process, leasing `batch` permits at a
    /// time, each lease usable for `lease_ticks` (`d`).
    ///
    /// # Errors
    /// [`Error::Config`] for a zero batch or lease duration, a batch above the limit, bucket
    /// options, a timeout not below the expiry slack, or what [`RedisLimiter::new`]
    /// refuses.
    pub fn new(
        url: &str,
        limit: Limit,
        options: Options,
        batch: u64,
        lease_ticks: u64,
    ) -> Result<Self, Error> {
        // In microseconds before the lease's own limit is built from its window below.
        let limit = crate::limiter::in_micros(limit)?;
        if limit.is_layered() {
            return Err(Error::Config(
                "a leased limiter takes a limit of one window (a lease is a batch of one \
                 window's permits); use RedisLimiter for several windows"
                    .to_owned(),
            ));
        }
        if batch == 0 || batch > limit.max_requests() || lease_ticks == 0 {
            return Err(Error::Config(format!(
                "batch must be 1..={} and the lease duration at least 1 tick (got {batch}, {lease_ticks})",
                limit.max_requests()
            )));
        }
        let lease_window = limit
            .window_ticks()
            .checked_add(lease_ticks)
            .ok_or_else(|| Error::Config("window + lease duration overflows".to_owned()))?;
        let lease_limit = Limit::new(limit.max_requests(), lease_window)
            .map_err(|err| Error::Config(err.to_string()))?;
        if options.timeout_value() >= options.expiry_slack_value() {
            return Err(Error::Config(
                "a lease needs a timeout below the expiry slack (see the lease module docs)"
                    .to_owned(),
            ));
        }
        // Lease logs get keys of their own (`<prefix>:lease:{#key}:…`): a direct caller's
        // `check` trims by rank, which a lease log's give-back must not meet.
        let prefix = format!("{}:lease", options.prefix_value());
        let remote = RedisLimiter::new(url, lease_limit, options.prefix(&prefix))?;
        if remote.exact_params().is_none() {
            return Err(Error::Config(
                "leases need the exact log, not buckets".to_owned(),
            ));
        }
        Ok(Self {
            remote,
            limit,
            batch,
            lease_ticks,
            lease_window,
            leases: Mutex::new(HashMap::new()),
        })
    }

    /// The limit enforced per key across every process.
    #[must_use]
    pub const fn limit(&self) -> Limit {
        self.limit
    }

    /// Round trips to Redis so far.
    #[must_use]
    pub fn round_trips(&self) -> u64 {
        self.remote.round_trips()
    }

    /// The local time of a lease's clock: the caller's tick, or the server tick estimated
    /// from the lease's anchor.
    fn local_now(&self, lease: &Lease) -> u64 {
        match self.remote.caller_clock() {
            Some(clock) => clock.now_ticks(),
            None => {
                let elapsed =
                    u64::try_from(lease.sent_at.elapsed().as_micros()).unwrap_or(u64::MAX);
                lease.score.saturating_add(elapsed)
            }
        }
    }

    fn entry(&self, key: &str) -> Arc<Mutex<Lease>> {
        let mut leases = lock(&self.leases);
        if let Some(entry) = leases.get(key) {
            return Arc::clone(entry);
        }
        let entry = Arc::new(Mutex::new(Lease::empty(Instant::now())));
        leases.insert(key.to_owned(), Arc::clone(&entry));
        entry
    }

    /// Admits one request of `key` from this process's lease, taking a new lease from Redis
    /// (and giving back the old one's unused permits) when the lease is spent or expired.
    ///
    /// # Errors
    /// As [`RedisLimiter::check_and_hit`], only when a round trip was needed. The lease in
    /// hand is then dropped (its unused permits are never used: whether the give-back ran
    /// is unknown).
    pub fn check_and_hit(&self, key: &str) -> Result<LeaseDecision, Error> {
        // The deadline starts before the key's lock: a thread that queued behind another's
        // lease call spends only what is left of its own timeout.
        let deadline = Instant::now() + self.remote.timeout();
        let entry = self.entry(key);
        let mut lease = lock(&entry);
        if let Some(decision) = self.decide_locally(&mut lease) {
            return Ok(decision);
        }
        self.decide_remotely(key, &mut lease, deadline)
    }

    /// [`Self::check_and_hit`] if this process can answer without a round trip, and
    /// without waiting for another caller's round trip on the key: `None` otherwise. Never
    /// blocks on I/O (what async callers take first; with the `tokio` feature the
    /// limiter's `Decide` does).
    pub fn try_check_and_hit_locally(&self, key: &str) -> Option<LeaseDecision> {
        let entry = self.entry(key);
        let mut lease = match entry.try_lock() {
            Ok(lease) => lease,
            Err(std::sync::TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return None,
        };
        self.decide_locally(&mut lease)
    }

    /// The answer from the lease in hand, or from the refusal it remembers; `None` when only
    /// Redis can answer.
    fn decide_locally(&self, lease: &mut Lease) -> Option<LeaseDecision> {
        let decision = self.decide_from_lease(lease);
        if let Some(decision) = &decision {
            crate::metrics::lease_decision(decision.admitted);
        }
        decision
    }

    /// [`Self::decide_locally`], before it is counted.
    fn decide_from_lease(&self, lease: &mut Lease) -> Option<LeaseDecision> {
        let local = self.local_now(lease);
        if lease.used < lease.granted
            && local >= lease.score
            && local < lease.score.saturating_add(self.lease_ticks)
        {
            lease.used += 1;
            return Some(LeaseDecision {
                admitted: true,
                remote: false,
                now: local,
                retry_after_ticks: 0,
            });
        }
        if local < lease.blocked_until {
            return Some(LeaseDecision {
                admitted: false,
                remote: false,
                now: local,
                retry_after_ticks: lease.blocked_until - local,
            });
        }
        None
    }

    /// A new lease from Redis (the old one's unused permits given back), and the answer it
    /// gives.
    fn decide_remotely(
        &self,
        key: &str,
        lease: &mut Lease,
        deadline: Instant,
    ) -> Result<LeaseDecision, Error> {
        let reply = self.take(key, lease, self.batch, deadline)?;
        if reply.granted > 0 {
            lease.used = 1;
            Ok(LeaseDecision {
                admitted: true,
                remote: true,
                now: reply.now,
                retry_after_ticks: 0,
            })
        } else {
            lease.blocked_until = reply.now.saturating_add(reply.retry_after_ticks);
            Ok(LeaseDecision {
                admitted: false,
                remote: true,
                now: reply.now,
                retry_after_ticks: reply.retry_after_ticks,
            })
        }
    }

    /// Gives back the unused part of `lease` and takes up to `n` new permits (`n = 0`: give
    /// back only), in one script run.
    fn take(
        &self,
        key: &str,
        lease: &mut Lease,
        n: u64,
        deadline: Instant,
    ) -> Result<crate::reply::Reply, Error> {
        // Give back only while the lease's members are live (its tick is less than one lease
        // window `W + d` old): the lease's own write then keeps the key from expiring
        // before the give-back lands (the expiry is that window plus the lateness plus a
        // slack longer than the timeout), so the members it names are still its own. An
        // older lease's members count for nobody any more; they are left to be trimmed.
        let local = self.local_now(lease);
        let live = local < lease.score.saturating_add(self.lease_window);
        // A renewal replaces a lease the key held (spent or expired).
        let renewal = lease.granted > 0;
        let give_back = (lease.granted > lease.used && live).then(|| GiveBack {
            score: lease.score,
            seq_hi: lease.seq_hi,
            unused: lease.granted - lease.used,
            born: lease.born,
        });
        // From here on the old lease is never used again, whatever the outcome.
        lease.granted = 0;
        lease.used = 0;
        let sent_at = Instant::now();
        let now = tick_arg(self.remote.caller_clock().map(|clock| clock.now_ticks()))?;
        let params = self
            .remote
            .exact_params()
            .ok_or_else(|| Error::Config("leases need the exact log".to_owned()))?;
        let keys = self.remote.key_space().exact(key);
        let reply = exact::call(
            self.remote.pool(),
            deadline,
            &keys,
            params,
            ExactOp::Take(give_back),
            &now,
            n,
        );
        crate::metrics::result(&reply);
        let reply = reply?;
        if reply.granted > 0 {
            crate::metrics::lease_taken(renewal);
        }
        lease.score = reply.now;
        lease.seq_hi = reply.seq_hi;
        lease.granted = reply.granted;
        lease.born = reply.born;
        lease.sent_at = sent_at;
        Ok(reply)
    }

    /// [`Self::check_and_hit`] with the configured failure policy standing in when Redis
    /// fails (see [`RedisLimiter::decide`]).
    ///
    /// # Errors
    /// Only [`Error::TickOutOfRange`].
    pub fn decide(&self, key: &str) -> Result<Verdict, Error> {
        match self.check_and_hit(key) {
            Ok(decision) => Ok(Verdict::from_redis(decision.admitted)),
            Err(err) if err.is_backend_failure() => Ok(self.remote.fallback_decide(key, 1, err)),
            Err(err) => Err(err),
        }
    }

    /// The failure policy's answer for middleware after `err` (see [`crate::decide`]).
    #[cfg(feature = "tokio")]
    pub(crate) fn fallback_answer(&self, key: &str, err: &Error) -> slidelimit::Answer {
        self.remote.fallback_answer(key, err)
    }

    /// Gives every unused leased permit back to Redis (for a clean shutdown) and forgets
    /// the leases. Returns how many permits were given back.
    ///
    /// # Errors
    /// The first backend error met; the leases are forgotten all the same (never used again).
    pub fn release_all(&self) -> Result<u64, Error> {
        let entries: Vec<(String, Arc<Mutex<Lease>>)> = lock(&self.leases).drain().collect();
        let mut returned = 0;
        let mut first_error = None;
        for (key, entry) in entries {
            let mut lease = lock(&entry);
            let unused = lease.granted - lease.used;
            if unused == 0 {
                continue;
            }
            match self.take(&key, &mut lease, 0, Instant::now() + self.remote.timeout()) {
                Ok(_) => returned += unused,
                Err(err) => {
                    first_error.get_or_insert(err);
                }
            }
        }
        first_error.map_or(Ok(returned), Err)
    }

    /// Forgets the local state of keys whose lease is spent or expired and that are not
    /// blocked; returns how many. (Their permits stay in Redis until they leave the window.)
    pub fn forget_idle(&self) -> usize {
        let mut leases = lock(&self.leases);
        let before = leases.len();
        leases.retain(|_, entry| {
            let lease = lock(entry);
            let local = self.local_now(&lease);
            let usable =
                lease.used < lease.granted && local < lease.score.saturating_add(self.lease_ticks);
            usable || local < lease.blocked_until
        });
        before - leases.len()
    }
}
