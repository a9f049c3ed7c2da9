//! `AsyncRedisLimiter`: the same scripts and answers as [`RedisLimiter`](crate::RedisLimiter),
//! for tokio, over one multiplexed connection (feature `tokio`).
//!
//! One TCP connection carries every task's calls, pipelined; each call waits for its own
//! reply under `tokio::time::timeout`, so a slow or paused server costs a caller at most the
//! configured timeout. A late reply is matched to the call that timed out and dropped, never
//! read as another call's. After a connection or timeout error the connection is replaced
//! on the next call (a restarted server gets a fresh connection and, on `NOSCRIPT`, the
//! script again).

use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use redis::{Client, IntoConnectionInfo};
use slidelimit::{Limit, Status};

use crate::failure::Verdict;
use crate::limiter::{Op, Request, Setup};
use crate::reply::Reply;
use crate::{Decision, Error, Options};

mod connection;

use connection::{Backend, Connection};

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
    connection: Mutex<Option<Connection>>,
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
    /// A limiter of `limit` (ticks in microseconds) on the server at `url`. Connects
    /// lazily, on the first call (which must run inside a tokio runtime).
    ///
    /// # Errors
    /// As [`RedisLimiter::new`](crate::RedisLimiter::new).
    pub fn new(url: &str, limit: Limit, options: Options) -> Result<Self, Error> {
        let client = url
            .into_connection_info()
            .and_then(Client::open)
            .map_err(|err| Error::Config(err.to_string()))?;
        Self::with_backend(Backend::Server(client), limit, options)
    }

    /// A limiter of `limit` on the Redis Cluster that `nodes` (any of its nodes' URLs) lead
    /// to (feature `cluster`): each call goes to the node that owns its key's hash slot,
    /// following `MOVED` and `ASK` redirections while slots migrate. Connects lazily.
    ///
    /// What a failover can cost: a write the old primary acknowledged but had not yet sent to
    /// its replica is lost when the replica takes over (Redis replicates asynchronously), so
    /// the hits of that moment may be admitted again, at most one window's worth per key.
    ///
    /// # Errors
    /// As [`Self::new`], for each node's URL.
    #[cfg(feature = "cluster")]
    pub fn cluster(nodes: &[&str], limit: Limit, options: Options) -> Result<Self, Error> {
        let timeout = options.timeout_value();
        let client = redis::cluster::ClusterClient::builder(nodes.to_vec())
            .connection_timeout(timeout)
            .response_timeout(timeout)
            .build()
            .map_err(|err| Error::Config(err.to_string()))?;
        Self::with_backend(Backend::Cluster(client), limit, options)
    }

    fn with_backend(backend: Backend, limit: Limit, options: Options) -> Result<Self, Error> {
        let timeout = options.timeout_value();
        Ok(Self {
            backend,
            connection: Mutex::new(None),
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

    async fn connection(&self) -> Result<Connection, Error> {
        let cached = self
            .connection
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if let Some(con) = cached {
            return Ok(con);
        }
        let con = self.backend.connect(self.timeout).await?;
        *self
            .connection
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(con.clone());
        Ok(con)
    }

    async fn eval(&self, request: &Request) -> Result<Vec<i64>, Error> {
        let mut con = self.connection().await?;
        let timeout = self.timeout;
        let script = request.script;
        let load = |mut con: Connection| async move {
            crate::metrics::round_trip();
            let sha: String = redis::cmd("SCRIPT")
                .arg("LOAD")
                .arg(script.source)
                .query_async(&mut con)
                .await
                .map_err(|err| Error::from_redis(err, timeout))?;
            script.set_sha(sha.clone());
            Ok::<String, Error>(sha)
        };
        let sha = match script.sha() {
            Some(sha) => sha,
            None => load(con.clone()).await?,
        };
        let mut call = redis::cmd("EVALSHA");
        call.arg(&sha)
            .arg(request.keys.len())
            .arg(&request.keys)
            .arg(&request.args);
        crate::metrics::round_trip();
        match call.query_async::<Vec<i64>>(&mut con).await {
            Err(err)
                if err.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::NoScript) =>
            {
                let sha = load(con.clone()).await?;
                let mut call = redis::cmd("EVALSHA");
                call.arg(&sha)
                    .arg(request.keys.len())
                    .arg(&request.keys)
                    .arg(&request.args);
                crate::metrics::round_trip();
                call.query_async(&mut con)
                    .await
                    .map_err(|err| Error::from_redis(err, timeout))
            }
            other => other.map_err(|err| Error::from_redis(err, timeout)),
        }
    }

    async fn run(&self, key: &str, op: Op, n: u64) -> Result<Reply, Error> {
        let request = self.setup.request(key, op, n)?;
        let result = match tokio::time::timeout(self.timeout, self.eval(&request)).await {
            Ok(result) => result,
            Err(_elapsed) => Err(Error::Timeout {
                after: self.timeout,
            }),
        };
        crate::metrics::result(&result);
        if matches!(result, Err(Error::Timeout { .. } | Error::Connection(_))) {
            // Replace the connection on the next call: it may be dead (a restart) or
            // hold a server that stopped answering.
            *self
                .connection
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = None;
        }
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
        crate::decide::fallback_answer(self.setup.fallback(), key, err)
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
