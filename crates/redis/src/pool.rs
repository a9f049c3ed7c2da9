//! A small pool of blocking connections with one deadline per call.
//!
//! A call takes an idle connection (or opens one within the deadline), sets the socket's
//! read and write timeouts to the time left, and puts the connection back only if the call
//! ended cleanly: after a timeout or an I/O error the connection may still hold a late reply,
//! so it is dropped and never read again.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use redis::io::tcp::TcpSettings;
use redis::{Client, Connection, FromRedisValue, IntoConnectionInfo};

use crate::scripts::LuaScript;
use crate::Error;

/// At most this many idle connections are kept; more are opened under load and closed when
/// they come back to a full pool.
const MAX_IDLE: usize = 64;

pub(crate) struct Pool {
    client: Client,
    idle: Mutex<Vec<Connection>>,
    timeout: Duration,
    round_trips: AtomicU64,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool")
            .field("server", &self.client.get_connection_info().addr())
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl Pool {
    pub(crate) fn new(url: &str, timeout: Duration) -> Result<Self, Error> {
        // TCP_NODELAY: every call is one small request awaiting its reply.
        let info = url
            .into_connection_info()
            .map_err(|err| Error::from_redis(err, timeout))?
            .set_tcp_settings(TcpSettings::default().set_nodelay(true));
        let client = Client::open(info).map_err(|err| Error::from_redis(err, timeout))?;
        Ok(Self {
            client,
            idle: Mutex::new(Vec::new()),
            timeout,
            round_trips: AtomicU64::new(0),
        })
    }

    pub(crate) const fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Commands sent to the server so far (each one a round trip).
    pub(crate) fn round_trips(&self) -> u64 {
        // Relaxed: a statistics counter; nothing is published with it.
        self.round_trips.load(Ordering::Relaxed)
    }

    fn idle(&self) -> std::sync::MutexGuard<'_, Vec<Connection>> {
        self.idle
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Runs `f` on a connection with the socket timeouts set to the deadline; `f` gets a
    /// closure that re-arms the timeouts before each further command.
    pub(crate) fn with_connection<T>(
        &self,
        deadline: Instant,
        f: impl FnOnce(
            &mut Connection,
            &dyn Fn(&mut Connection) -> Result<(), Error>,
            &AtomicU64,
        ) -> Result<T, Error>,
    ) -> Result<T, Error> {
        let timeout = self.timeout;
        let arm = move |con: &mut Connection| -> Result<(), Error> {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(Error::Timeout { after: timeout });
            }
            con.set_read_timeout(Some(left))
                .and_then(|()| con.set_write_timeout(Some(left)))
                .map_err(|err| Error::from_redis(err, timeout))
        };
        let pooled = self.idle().pop();
        let mut con = match pooled {
            Some(con) => con,
            None => {
                let left = deadline.saturating_duration_since(Instant::now());
                self.client
                    .get_connection_with_timeout(left.max(Duration::from_millis(1)))
                    .map_err(|err| Error::from_redis(err, timeout))?
            }
        };
        arm(&mut con)?;
        let result = f(&mut con, &arm, &self.round_trips);
        // A server error (the script raised, NOSCRIPT handled above) leaves the connection
        // in step; a timeout or an I/O error may not.
        let reusable = match &result {
            Ok(_) | Err(Error::Server(_)) => true,
            Err(_) => false,
        };
        if reusable {
            let mut idle = self.idle();
            if idle.len() < MAX_IDLE {
                idle.push(con);
            }
        }
        result
    }

    /// Runs a script by SHA, loading it first if this process has not yet, and again if the
    /// server answers NOSCRIPT. Decoded as `T`.
    pub(crate) fn eval<T: FromRedisValue>(
        &self,
        script: &LuaScript,
        keys: &[&str],
        args: &[&str],
    ) -> Result<T, Error> {
        self.eval_by(Instant::now() + self.timeout, script, keys, args)
    }

    /// [`Self::eval`] by an earlier `deadline` (a caller that already waited, for example
    /// for a lease's lock, spends only what is left of its timeout).
    pub(crate) fn eval_by<T: FromRedisValue>(
        &self,
        deadline: Instant,
        script: &LuaScript,
        keys: &[&str],
        args: &[&str],
    ) -> Result<T, Error> {
        let timeout = self.timeout;
        if deadline <= Instant::now() {
            return Err(Error::Timeout {
                after: self.timeout,
            });
        }
        self.with_connection(deadline, |con, arm, round_trips| {
            let load = |con: &mut Connection| -> Result<String, Error> {
                arm(con)?;
                // Relaxed: a statistics counter.
                round_trips.fetch_add(1, Ordering::Relaxed);
                crate::metrics::round_trip();
                let sha: String = redis::cmd("SCRIPT")
                    .arg("LOAD")
                    .arg(script.source)
                    .query(con)
                    .map_err(|err| Error::from_redis(err, timeout))?;
                script.set_sha(sha.clone());
                Ok(sha)
            };
            let call = |con: &mut Connection, sha: &str| -> redis::RedisResult<T> {
                let mut cmd = redis::cmd("EVALSHA");
                cmd.arg(sha).arg(keys.len()).arg(keys).arg(args);
                // Relaxed: a statistics counter.
                round_trips.fetch_add(1, Ordering::Relaxed);
                crate::metrics::round_trip();
                cmd.query(con)
            };
            let sha = match script.sha() {
                Some(sha) => sha,
                None => load(con)?,
            };
            match call(con, &sha) {
                Err(err)
                    if err.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::NoScript) =>
                {
                    let sha = load(con)?;
                    arm(con)?;
                    call(con, &sha).map_err(|err| Error::from_redis(err, timeout))
                }
                other => other.map_err(|err| Error::from_redis(err, timeout)),
            }
        })
    }
}
