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
//!
//! # Locking
//! A key's lease sits behind a mutex that is held for local decisions and bookkeeping only,
//! never across a round trip. A caller that finds the lease spent or expired retires it
//! under the lock (its unused permits become the give-back, and `granted = used = 0`, so no
//! request uses them afterwards), marks the key as renewing, and lets the lock go for the
//! round trip; with the lock again it installs the new lease, takes its own permit from it,
//! clears the mark and wakes the waiters. Another caller of the key meanwhile waits on a
//! condition variable, at most until its own deadline (then [`Error::Timeout`]). Woken, it
//! decides from the renewal's outcome with no round trip of its own (a permit of the new
//! lease, or the refusal Redis gave), or, when the renewal failed or left no permit for it,
//! renews itself with what is left of its own timeout. So no caller
//! waits behind another's round trip past its own deadline, and the local path
//! ([`LeasedLimiter::try_check_and_hit_locally`], what the tower layer asks first) and
//! [`LeasedLimiter::forget_idle`] never wait for one at all.
//!
//! The proof above holds as it was: a permit is used only under the lock and at most once
//! (`used < granted`), from a lease whose members Redis admitted; a retired lease is never
//! used again; and a key has at most one renewal in flight, so a give-back names only
//! members that no request used and no other renewal names.

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

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
    /// A caller is renewing the lease, without the lock: the others wait for it.
    renewing: bool,
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
            renewing: false,
        }
    }
}

/// One key's lease, and the signal that its renewal ended.
#[derive(Debug)]
struct KeyLease {
    lease: Mutex<Lease>,
    /// Notified (every waiter) when a renewal ends, whatever its outcome.
    renewed: Condvar,
}

impl KeyLease {
    /// Waits until no renewal of the key is in flight, at most until `deadline`: the lock
    /// back, or the timeout error.
    fn wait_for_renewal<'a>(
        &'a self,
        mut lease: MutexGuard<'a, Lease>,
        deadline: Instant,
        timeout: Duration,
    ) -> Result<MutexGuard<'a, Lease>, Error> {
        while lease.renewing {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(Error::Timeout { after: timeout });
            }
            lease = self
                .renewed
                .wait_timeout(lease, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        Ok(lease)
    }
}

/// A renewal in flight: ends it (clears the mark, wakes the waiters) however the round trip
/// ends, an unwinding panic included, so no caller waits for a renewal that will never end.
struct InFlight<'a> {
    entry: &'a KeyLease,
    ended: bool,
}

impl<'a> InFlight<'a> {
    /// Ends the renewal and gives the lock back to the renewer, to install its lease
    /// before the waiters (woken now) can take the lock.
    fn end(mut self) -> MutexGuard<'a, Lease> {
        self.ended = true;
        let mut lease = lock(&self.entry.lease);
        lease.renewing = false;
        self.entry.renewed.notify_all();
        lease
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if !self.ended {
            lock(&self.entry.lease).renewing = false;
            self.entry.renewed.notify_all();
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
    leases: Mutex<HashMap<String, Arc<KeyLease>>>,
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

    fn entry(&self, key: &str) -> Arc<KeyLease> {
        let mut leases = lock(&self.leases);
        if let Some(entry) = leases.get(key) {
            return Arc::clone(entry);
        }
        let entry = Arc::new(KeyLease {
            lease: Mutex::new(Lease::empty(Instant::now())),
            renewed: Condvar::new(),
        });
        leases.insert(key.to_owned(), Arc::clone(&entry));
        entry
    }

    /// Admits one request of `key` from this process's lease, taking a new lease from Redis
    /// (and giving back the old one's unused permits) when the lease is spent or expired.
    ///
    /// While another caller renews the key's lease, this call waits for that renewal and
    /// decides from its outcome without a round trip (`remote: false`): a permit of the new
    /// lease, or the refusal Redis gave. If the renewal failed or its permits are gone, it
    /// renews itself. All within the configured timeout, counted from this call's start
    /// (see the [module docs](self#locking)).
    ///
    /// # Errors
    /// As [`RedisLimiter::check_and_hit`], only when a round trip was needed, and
    /// [`Error::Timeout`] when another caller's renewal of the key had not ended by this
    /// call's deadline. After a failed round trip the lease in hand is dropped (its unused
    /// permits are never used: whether the give-back ran is unknown).
    pub fn check_and_hit(&self, key: &str) -> Result<LeaseDecision, Error> {
        // The deadline starts before any wait: a caller that waits for another's renewal
        // spends only what is left of its own timeout.
        let timeout = self.remote.timeout();
        let deadline = Instant::now() + timeout;
        let entry = self.entry(key);
        let mut lease = lock(&entry.lease);
        loop {
            if let Some(decision) = self.decide_locally(&mut lease) {
                return Ok(decision);
            }
            if !lease.renewing {
                break;
            }
            lease = entry.wait_for_renewal(lease, deadline, timeout)?;
        }
        let (reply, mut lease) = self.renew(&entry, lease, key, self.batch, deadline)?;
        if reply.granted > 0 {
            // Taken with the lease's installation, before any waiter sees it.
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

    /// [`Self::check_and_hit`] if this process can answer without a round trip, and
    /// without waiting for another caller's round trip on the key: `None` otherwise (also
    /// while a renewal of the key is in flight). Never waits for I/O: the key's lock is
    /// never held across a round trip (what async callers take first; with the `tokio`
    /// feature the limiter's `Decide` does).
    pub fn try_check_and_hit_locally(&self, key: &str) -> Option<LeaseDecision> {
        let entry = self.entry(key);
        let mut lease = lock(&entry.lease);
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

    /// Gives back the unused part of the key's lease and takes up to `n` new permits (`n =
    /// 0`: give back only), in one script run by `deadline`. The lock is let go for the round
    /// trip (the key marked as renewing meanwhile) and handed back with the new lease
    /// installed; on an error, the old lease stays retired.
    fn renew<'a>(
        &self,
        entry: &'a KeyLease,
        mut lease: MutexGuard<'a, Lease>,
        key: &str,
        n: u64,
        deadline: Instant,
    ) -> Result<(crate::reply::Reply, MutexGuard<'a, Lease>), Error> {
        let (give_back, renewal) = self.retire(&mut lease);
        lease.renewing = true;
        drop(lease);
        let in_flight = InFlight {
            entry,
            ended: false,
        };
        let sent_at = Instant::now();
        let reply = self.take(key, give_back, n, deadline);
        let mut lease = in_flight.end();
        let reply = reply?;
        if reply.granted > 0 {
            crate::metrics::lease_taken(renewal);
        }
        lease.score = reply.now;
        lease.seq_hi = reply.seq_hi;
        lease.granted = reply.granted;
        lease.born = reply.born;
        lease.sent_at = sent_at;
        Ok((reply, lease))
    }

    /// Retires the lease in hand: from here on it is never used again, whatever the
    /// renewal's outcome. Returns what to give back of it, and whether it held a lease (a
    /// renewal, for the metrics).
    fn retire(&self, lease: &mut Lease) -> (Option<GiveBack>, bool) {
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
        lease.granted = 0;
        lease.used = 0;
        (give_back, renewal)
    }

    /// The script call of a renewal: `give_back` and up to `n` new permits, by `deadline`.
    fn take(
        &self,
        key: &str,
        give_back: Option<GiveBack>,
        n: u64,
        deadline: Instant,
    ) -> Result<crate::reply::Reply, Error> {
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
        reply
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
    /// the leases. Returns how many permits were given back. A key whose renewal is in
    /// flight is given back after it, each key within the configured timeout.
    ///
    /// # Errors
    /// The first backend error met; the leases are forgotten all the same (never used again).
    pub fn release_all(&self) -> Result<u64, Error> {
        let entries: Vec<(String, Arc<KeyLease>)> = lock(&self.leases).drain().collect();
        let timeout = self.remote.timeout();
        let mut returned = 0;
        let mut first_error = None;
        for (key, entry) in entries {
            let deadline = Instant::now() + timeout;
            let lease = match entry.wait_for_renewal(lock(&entry.lease), deadline, timeout) {
                Ok(lease) => lease,
                Err(err) => {
                    first_error.get_or_insert(err);
                    continue;
                }
            };
            let unused = lease.granted - lease.used;
            if unused == 0 {
                continue;
            }
            match self.renew(&entry, lease, &key, 0, deadline) {
                Ok(_) => returned += unused,
                Err(err) => {
                    first_error.get_or_insert(err);
                }
            }
        }
        first_error.map_or(Ok(returned), Err)
    }

    /// Forgets the local state of keys whose lease is spent or expired, that are not
    /// blocked and not being renewed; returns how many. (Their permits stay in Redis until
    /// they leave the window.) Never waits for a round trip.
    pub fn forget_idle(&self) -> usize {
        let mut leases = lock(&self.leases);
        let before = leases.len();
        leases.retain(|_, entry| {
            let lease = lock(&entry.lease);
            let local = self.local_now(&lease);
            let usable =
                lease.used < lease.granted && local < lease.score.saturating_add(self.lease_ticks);
            usable || local < lease.blocked_until || lease.renewing
        });
        before - leases.len()
    }
}

/// As the async limiter's: the limit was converted to microseconds when built.
#[cfg(feature = "tokio")]
impl slidelimit::decide::LimitInTicks for LeasedLimiter {}
