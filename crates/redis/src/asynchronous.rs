//! `AsyncRedisLimiter`: the same scripts and answers as [`RedisLimiter`](crate::RedisLimiter),
//! for tokio, over one multiplexed connection (feature `tokio`) or a Redis Cluster (feature
//! `cluster`).
//!
//! One TCP connection carries every task's calls, pipelined; each call waits for its own
//! reply under `tokio::time::timeout`, so a slow or paused server costs a caller at most the
//! configured timeout. A late reply is matched to the call that timed out and dropped, never
//! read as another call's. After a connection or timeout error, or a `READONLY` answer,
//! the connection is replaced on the next call (a restarted server gets a fresh connection
//! and, on `NOSCRIPT`, the script again; a name that now leads to a new primary is looked up
//! again); concurrent callers share the one new connection. A call that meets a connection
//! found broken or answering `READONLY` runs once more on a new one, so that no call fails
//! once the restarted server answers or the name leads to the new primary (a call in flight
//! when the connection broke may then be recorded twice: capacity wasted, never an
//! over-admission). Connections are made with `TCP_NODELAY`.
//!
//! # Redis Cluster
//! `AsyncRedisLimiter::cluster` (feature `cluster`) keeps a connection like that to each
//! primary and a map of which primary serves which of the 16384 hash slots, so that one
//! shard's failure costs only its own slots:
//! - A call computes its key's slot (CRC16 of the hash tag, as Redis does) and goes to that
//!   slot's primary; it waits for no other node, and for nothing beyond its deadline.
//! - `MOVED` corrects that slot's entry at once and the call follows it; `ASK` sends it once
//!   to the importing node, after `ASKING` (whose own `MOVED`, `ASK` or `TRYAGAIN` is
//!   followed the same way); `TRYAGAIN`, `CLUSTERDOWN`, `MASTERDOWN`, `LOADING` and
//!   `READONLY` (the node is a replica now; the map is read again) repeat it after a short
//!   pause (2 ms, doubling to 50 ms) while its deadline allows, and it fails with that answer
//!   ([`Error::Server`]) when the next pause would not end in time. At most five
//!   redirections are followed between two pauses.
//! - A node whose connection is refused, dropped or not answered within the timeout is left
//!   alone for 100 ms: calls to its slots fail at once ([`Error::Connection`]). Then a call
//!   starts a reconnection in the background, and calls keep failing at once until it
//!   succeeds. Only the calls already waiting on the node when it failed wait for their
//!   timeout.
//! - Node failures, `MOVED`, `READONLY` and `CLUSTERDOWN` ask for the map again: one
//!   background task reads `CLUSTER SLOTS` from the nodes in turn (those with a working
//!   connection first, the first one asked turning from one reading to the next), at most
//!   once per 100 ms; a request for it meanwhile is not dropped but served by one more
//!   reading after (however many asked). A map is taken only if it serves at least as many
//!   slots as the one in use; else the next node is asked: a node outside the cluster (an
//!   empty map) or one that lost track of it never replaces a good map. The `MOVED`
//!   corrections made while a map was being read are put back on top of it. A range whose
//!   endpoint is NULL, empty or `?` is the answering node's. Nodes that a taken map no
//!   longer names are dropped (not asked, not connected), except the URLs given and the
//!   nodes calls are using. No call waits for the reading except the first ones, which
//!   need a map.
//!
//! `redis`'s own cluster client (`cluster_async`, 1.2) drives every node's calls from one
//! task that dispatches nothing while it rebuilds its slot map or reconnects, and that
//! rebuild waits on every node, the failed one included; its retries sleep at least 1.28 s.
//! A primary that stopped answering stalled every shard's calls until their timeout, for as
//! long as it was down (`results/cluster-failover.md`).

use std::time::Duration;

use redis::{Client, IntoConnectionInfo};
use slidelimit::{Limit, Status};

use crate::failure::Verdict;
use crate::limiter::{Op, Request, Setup};
use crate::reply::Reply;
use crate::{Decision, Error, Options};

#[cfg(feature = "cluster")]
mod cluster;
mod connection;

/// Where the limiter's calls go: here, above both backends, so that neither module
/// imports the other's parent.
pub(crate) enum Backend {
    /// One server (boxed: its client's settings dwarf the cluster's pointer).
    Server(Box<connection::Server>),
    /// A Redis Cluster, reached through any of its nodes.
    #[cfg(feature = "cluster")]
    Cluster(std::sync::Arc<cluster::Cluster>),
}

impl Backend {
    /// Runs `request`'s script, giving up at `deadline` (`timeout` after the call began).
    pub(crate) async fn eval(
        &self,
        request: &Request,
        deadline: tokio::time::Instant,
        timeout: Duration,
    ) -> Result<Vec<i64>, Error> {
        match self {
            Self::Server(server) => server.eval(request, deadline, timeout).await,
            #[cfg(feature = "cluster")]
            Self::Cluster(cluster) => cluster.eval(request, deadline).await,
        }
    }
}

/// An async limiter of `N` per `W` per key on Redis; see the [module docs](self).
///
/// ```no_run
/// # async fn example() -> Result<(), slidelimit_redis::Error> {
/// use slidelimit::Limit;
/// use slidelimit_redis::{AsyncRedisLimiter, Options};
/// let limit = Limit::new(100, 1_000_000).expect("valid limit");
/// let limiter = AsyncRedisLimiter::new("redis://127.0.0.1:6379/", limit, Options::new())?;
/// let decision = limiter.check_and_hit("user:42").await?;
/// # let _ = decision;
/// # Ok(())
/// # }
/// ```
pub struct AsyncRedisLimiter {
    backend: Backend,
    timeout: Duration,
    setup: Setup,
    /// Refusals remembered for middleware (see [`Options::refusal_cache`]).
    refusals: Option<slidelimit::decide::RefusalMemory<String>>,
}

impl std::fmt::Debug for AsyncRedisLimiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AsyncRedisLimiter")
            .field("timeout", &self.timeout)
            .field("setup", &self.setup)
            .finish_non_exhaustive()
    }
}

impl AsyncRedisLimiter {
    /// A limiter of `limit` on the server at `url`. Connects lazily, on the first call
    /// (which must run inside a tokio runtime). It counts in microseconds: a limit built from
    /// durations is converted to them exactly, one of raw ticks is taken to be in them (as
    /// [`RedisLimiter::new`](crate::RedisLimiter::new) does).
    ///
    /// A `rediss://` URL (feature `tls`) connects over TLS, with the CA and client
    /// certificate of [`Options::tls`] (the system's roots without it), through `redis`'s
    /// own rustls client; the handshake is part of connecting, so it ends within the
    /// call's timeout like the rest of the call. That client takes the process's default
    /// rustls crypto provider: the first `rediss://` limiter installs `ring`'s unless the
    /// process already installed one.
    ///
    /// # Errors
    /// As [`RedisLimiter::new`](crate::RedisLimiter::new): [`Error::Config`] for a malformed
    /// URL (`rediss://` without the feature `tls`, or with a fragment), TLS options for a
    /// URL that is not `rediss://`, or options the limit cannot take; [`Error::Limit`] for a
    /// limit whose windows are not whole numbers of microseconds.
    pub fn new(url: &str, limit: Limit, options: Options) -> Result<Self, Error> {
        // `rediss://` is read as the blocking limiters read it (the same checks, the same
        // `Tls`), then handed to `redis`'s own rustls client.
        let (url, tls) = crate::tls::scheme(url, options.tls_value())?;
        let info = url
            .as_ref()
            .into_connection_info()
            .map(connection::with_nodelay)
            .map_err(|err| Error::Config(err.to_string()))?;
        let client = match tls {
            None => Client::open(info).map_err(|err| Error::Config(err.to_string()))?,
            Some(tls) => tls.async_client(info)?,
        };
        Self::with_backend(
            Backend::Server(Box::new(connection::Server::new(client))),
            limit,
            options,
        )
    }

    /// A limiter of `limit` on the Redis Cluster that `nodes` (any of its nodes' URLs) lead
    /// to (feature `cluster`): each call goes straight to the primary that serves its key's
    /// hash slot, by a slot map read from `CLUSTER SLOTS`, over one multiplexed connection
    /// per node, following `MOVED` and `ASK` redirections while slots migrate. Connects
    /// lazily, on the first call (which must run inside a tokio runtime).
    ///
    /// One shard's failure costs only its own slots: a call waits for no node but its own
    /// slot's, and never past the timeout. Calls to a primary that died or stopped answering
    /// fail (typed, [`Error::is_backend_failure`]) until its replica is promoted; the map is
    /// read again in the background after such failures and `MOVED` answers, so the
    /// promoted replica serves the slot's calls soon after (see the
    /// [module docs](self#redis-cluster)). The servers should run with
    /// `cluster-require-full-coverage no`: with the default `yes`, every node refuses every
    /// call (`CLUSTERDOWN`) from the moment a primary is marked failed until its replica
    /// takes over.
    ///
    /// What a failover can cost: a write the old primary acknowledged but had not yet sent to
    /// its replica is lost when the replica takes over (Redis replicates asynchronously), so
    /// the hits of that moment may be admitted again, at most one window's worth per key.
    ///
    /// # Errors
    /// [`Error::Config`] if a URL does not parse, names a Unix socket or a database other
    /// than 0 (every cluster node refuses `SELECT`), or no URL is given; for `rediss://`
    /// (TLS is not supported over a cluster yet) and for [`Options::tls`] given.
    #[cfg(feature = "cluster")]
    pub fn cluster(nodes: &[&str], limit: Limit, options: Options) -> Result<Self, Error> {
        for url in nodes {
            // TLS is not wired through the cluster's connections yet. With the feature `tls`,
            // `redis`'s parser would take a `rediss://` URL on its own (the system's roots,
            // the `Tls` given ignored): refused instead, as it is without the feature.
            if crate::tls::scheme(url, options.tls_value())?.1.is_some() {
                return Err(Error::Config(
                    "`AsyncRedisLimiter::cluster` does not take `rediss://` (TLS) yet".to_owned(),
                ));
            }
        }
        let cluster = cluster::Cluster::new(nodes, options.timeout_value())?;
        Self::with_backend(
            Backend::Cluster(std::sync::Arc::new(cluster)),
            limit,
            options,
        )
    }

    fn with_backend(backend: Backend, limit: Limit, options: Options) -> Result<Self, Error> {
        let timeout = options.timeout_value();
        Ok(Self {
            backend,
            timeout,
            setup: Setup::new(limit, &options)?,
            refusals: options
                .refusal_cache_value()
                .then(slidelimit::decide::RefusalMemory::new),
        })
    }

    /// The limit enforced per key.
    #[must_use]
    pub const fn limit(&self) -> Limit {
        self.setup.limit()
    }

    /// The refusals remembered for middleware, with the counts of requests answered from
    /// them and sent to Redis; `None` with [`Options::refusal_cache`] off.
    #[must_use]
    pub const fn refusal_cache(&self) -> Option<&slidelimit::decide::RefusalMemory<String>> {
        self.refusals.as_ref()
    }

    async fn run(&self, key: &str, op: Op, n: u64) -> Result<Reply, Error> {
        let request = self.setup.request(key, op, n)?;
        let deadline = tokio::time::Instant::now() + self.timeout;
        // The backend gives up at the deadline itself (and learns from it: which connection
        // to replace, which node failed); this bound holds whatever it awaits.
        let result = tokio::time::timeout_at(
            deadline,
            self.backend.eval(&request, deadline, self.timeout),
        )
        .await
        .unwrap_or(Err(Error::Timeout {
            after: self.timeout,
        }));
        crate::metrics::result(&result);
        Reply::parse(&result?)
    }

    /// Atomically, on the server: if `key` has room for one more hit now, records it.
    ///
    /// # Errors
    /// As [`RedisLimiter::check_and_hit`](crate::RedisLimiter::check_and_hit).
    pub async fn check_and_hit(&self, key: &str) -> Result<Decision, Error> {
        self.check_and_hit_n(key, 1).await
    }

    /// `n` hits, all or nothing.
    ///
    /// # Errors
    /// As [`RedisLimiter::check_and_hit_n`](crate::RedisLimiter::check_and_hit_n).
    pub async fn check_and_hit_n(&self, key: &str, n: u64) -> Result<Decision, Error> {
        let reply = self.run(key, Op::Check, n).await?;
        Ok(self.setup.decision(&reply))
    }

    /// Records `n` hits of `key` now, unconditionally.
    ///
    /// # Errors
    /// As [`RedisLimiter::hit_n`](crate::RedisLimiter::hit_n).
    pub async fn hit_n(&self, key: &str, n: u64) -> Result<(), Error> {
        self.run(key, Op::Hit, n).await.map(|_| ())
    }

    /// Whether `n` more hits of `key` would be admitted now. Records nothing.
    ///
    /// # Errors
    /// As [`RedisLimiter::allowed_n`](crate::RedisLimiter::allowed_n).
    pub async fn allowed_n(&self, key: &str, n: u64) -> Result<bool, Error> {
        let reply = self.run(key, Op::Status, n).await?;
        Ok(self.setup.allows(&reply, n))
    }

    /// What `key`'s window holds now. Records nothing.
    ///
    /// # Errors
    /// As [`RedisLimiter::status`](crate::RedisLimiter::status).
    pub async fn status(&self, key: &str) -> Result<Status, Error> {
        let reply = self.run(key, Op::Status, 1).await?;
        Ok(reply.status(self.setup.limit()))
    }

    /// The failure policy's answer for middleware after `err` (see [`crate::decide`]).
    pub(crate) fn fallback_answer(&self, key: &str, err: &Error) -> slidelimit::Answer {
        self.setup.fallback().answer_after(key, err)
    }

    /// [`Self::check_and_hit_n`] with the configured failure policy standing in when Redis
    /// fails; never longer than the timeout.
    ///
    /// # Errors
    /// Only [`Error::Weight`] and [`Error::TickOutOfRange`].
    pub async fn decide(&self, key: &str, n: u64) -> Result<Verdict, Error> {
        match self.check_and_hit_n(key, n).await {
            Ok(decision) => Ok(Verdict::from_redis(decision.admitted)),
            Err(err) if err.is_backend_failure() => Ok(self.setup.fallback().decide(key, n, err)),
            Err(err) => Err(err),
        }
    }
}

/// The Redis limiters decide by the server's clock (or the one in their options), in
/// microseconds, and converted their limit's tick when built (`limiter::in_micros`): a
/// middleware has nothing to check against its own clock.
impl slidelimit::decide::LimitInTicks for AsyncRedisLimiter {}
