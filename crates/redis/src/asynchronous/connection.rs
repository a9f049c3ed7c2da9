//! The async limiter's connection to one server, and how any connection runs a script call
//! ([`eval_on`]): the single-server backend, and the ground the cluster's routing
//! (`super::cluster`, a connection per node) stands on. Every key of one limiter key shares
//! a hash tag, so one call is one slot.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use redis::aio::{ConnectionLike, MultiplexedConnection};
use redis::{AsyncConnectionConfig, Client, ConnectionInfo, ErrorKind, RedisError, RedisResult};
use redis::{FromRedisValue, ServerErrorKind, Value};
use tokio::time::Instant;

use crate::limiter::Request;
use crate::scripts::LuaScript;
use crate::Error;

/// One server: a multiplexed connection, made on the first call and replaced after a
/// connection error, a timeout or a `READONLY` answer (the server may have restarted,
/// stopped answering, or been demoted to a replica while its name now leads to the new
/// primary).
///
/// A new connection is made by a task of its own, which every call that needs it waits for:
/// after a reset, concurrent callers share one new connection instead of each opening one,
/// and a call that gives up abandons nothing.
pub(crate) struct Server {
    client: Client,
    link: Arc<Mutex<Link>>,
}

/// The state of a [`Server`]'s connection.
struct Link {
    state: LinkState,
    /// Numbers the connections (and the attempts at one), so that a failure seen on a
    /// connection already replaced leaves its successor alone.
    next: u64,
}

enum LinkState {
    /// No connection: the next call starts one.
    Idle,
    /// The attempt with this number is under way.
    Connecting(u64),
    /// A connection, numbered as the attempt that made it.
    Up(MultiplexedConnection, u64),
    /// The attempt with this number failed: the calls that waited for it fail with this
    /// error; the next call tries again.
    Failed(u64, RedisError),
}

impl Server {
    pub(crate) fn new(client: Client) -> Self {
        Self {
            client,
            link: Arc::new(Mutex::new(Link {
                state: LinkState::Idle,
                next: 0,
            })),
        }
    }

    fn link(&self) -> MutexGuard<'_, Link> {
        self.link.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The connection and its number: the one in use, or the one a task is making (started
    /// by this call if none is).
    async fn connection(
        &self,
        deadline: Instant,
        timeout: Duration,
    ) -> Result<(MultiplexedConnection, u64), Error> {
        let mut waiting_for = None;
        let mut started = false;
        loop {
            {
                let mut link = self.link();
                match &link.state {
                    LinkState::Up(con, number) => return Ok((con.clone(), *number)),
                    LinkState::Connecting(attempt) => waiting_for = Some(*attempt),
                    LinkState::Failed(attempt, err) if waiting_for == Some(*attempt) && started => {
                        return Err(Error::from_redis(err.clone(), timeout));
                    }
                    // Idle, an older failure, or another call's attempt that failed: that one
                    // may have begun long before this call (while the server was paused, say)
                    // and says nothing of the server now, so this call makes its own.
                    LinkState::Idle | LinkState::Failed(..) => {
                        waiting_for = Some(self.start_connecting(&mut link, timeout));
                        started = true;
                    }
                }
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(Error::Timeout { after: timeout });
            }
            tokio::time::sleep_until((now + WAIT_STEP).min(deadline)).await;
        }
    }

    /// Starts a task making a new connection; its attempt's number.
    fn start_connecting(&self, link: &mut Link, timeout: Duration) -> u64 {
        link.next += 1;
        let attempt = link.next;
        link.state = LinkState::Connecting(attempt);
        let (client, shared) = (self.client.clone(), Arc::clone(&self.link));
        tokio::spawn(async move {
            let connected = tokio::time::timeout(timeout, connect(&client, timeout))
                .await
                .unwrap_or_else(|_elapsed| {
                    Err(RedisError::from(std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        "connecting took longer than the timeout",
                    )))
                });
            let mut link = shared.lock().unwrap_or_else(PoisonError::into_inner);
            link.state = match connected {
                Ok(con) => LinkState::Up(con, attempt),
                Err(err) => LinkState::Failed(attempt, err),
            };
        });
        attempt
    }

    /// Drops connection `number` if it is still the one in use.
    fn reset(&self, number: u64) {
        let mut link = self.link();
        if matches!(link.state, LinkState::Up(_, current) if current == number) {
            link.state = LinkState::Idle;
        }
    }

    pub(super) async fn eval(
        &self,
        request: &Request,
        deadline: Instant,
        timeout: Duration,
    ) -> Result<Vec<i64>, Error> {
        // A connection found in use may have died since its last call (a restart) or lead
        // to a server demoted since (a failover behind the same name): a call that fails
        // on it that way runs once more on a new connection, which finds the server as it
        // is now. A call the old server never ran costs nothing twice; one it ran before
        // its connection broke (a call in flight) is recorded twice at worst, which wastes
        // capacity and never admits more.
        let mut retried = false;
        loop {
            let (mut con, number) = self.connection(deadline, timeout).await?;
            let result = tokio::time::timeout_at(deadline, eval_on(&mut con, request, false))
                .await
                .unwrap_or_else(|_elapsed| {
                    Err(RedisError::from(std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        "no reply within the timeout",
                    )))
                });
            let err = match result {
                Ok(values) => return Ok(values),
                Err(err) => err,
            };
            let read_only = err.kind() == ErrorKind::Server(ServerErrorKind::ReadOnly);
            let broken = err.is_connection_dropped()
                || (err.is_io_error() && !err.is_timeout() && !err.is_connection_refusal());
            if read_only || broken || err.is_timeout() {
                // Replace it on the next call: it may be dead, hold a server that stopped
                // answering, or a replica.
                self.reset(number);
            }
            if (read_only || broken) && !retried && Instant::now() < deadline {
                retried = true;
                continue;
            }
            return Err(Error::from_redis(err, timeout));
        }
    }
}

/// How often a call waiting for a new connection looks again.
const WAIT_STEP: Duration = Duration::from_millis(1);

/// `info` with `TCP_NODELAY` on: a call is one small write that waits for its reply, which
/// Nagle's algorithm would hold back while an earlier call's reply is unacknowledged.
pub(crate) fn with_nodelay(info: ConnectionInfo) -> ConnectionInfo {
    let settings = info.tcp_settings().clone().set_nodelay(true);
    info.set_tcp_settings(settings)
}

/// A multiplexed connection to `client`'s server, under `timeout` for connecting and for
/// each response.
pub(crate) async fn connect(
    client: &Client,
    timeout: Duration,
) -> RedisResult<MultiplexedConnection> {
    let config = AsyncConnectionConfig::new()
        .set_connection_timeout(Some(timeout))
        .set_response_timeout(Some(timeout));
    client
        .get_multiplexed_async_connection_with_config(&config)
        .await
}

/// Runs `request`'s script on `con`: `EVALSHA` by the SHA the script was loaded under,
/// loading it on this connection's server first (`SCRIPT LOAD`) when no SHA is known yet or
/// the server answers `NOSCRIPT` (it restarted, or is a replica promoted since). With
/// `asking`, each `EVALSHA` follows an `ASKING` in the same pipeline: the key's slot is being
/// imported by this server (Redis Cluster's `ASK` redirection), which then serves the next
/// command only.
pub(crate) async fn eval_on<C: ConnectionLike>(
    con: &mut C,
    request: &Request,
    asking: bool,
) -> RedisResult<Vec<i64>> {
    let sha = match request.script.sha() {
        Some(sha) => sha,
        None => load(con, request.script).await?,
    };
    match evalsha(con, request, &sha, asking).await {
        Err(err) if err.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::NoScript) => {
            let sha = load(con, request.script).await?;
            evalsha(con, request, &sha, asking).await
        }
        other => other,
    }
}

/// `SCRIPT LOAD`: the script on this connection's server, and its SHA remembered.
async fn load<C: ConnectionLike>(con: &mut C, script: &LuaScript) -> RedisResult<String> {
    crate::metrics::round_trip();
    let sha: String = redis::cmd("SCRIPT")
        .arg("LOAD")
        .arg(script.source)
        .query_async(con)
        .await?;
    script.set_sha(sha.clone());
    Ok(sha)
}

async fn evalsha<C: ConnectionLike>(
    con: &mut C,
    request: &Request,
    sha: &str,
    asking: bool,
) -> RedisResult<Vec<i64>> {
    let mut call = redis::cmd("EVALSHA");
    call.arg(sha)
        .arg(request.keys.len())
        .arg(&request.keys)
        .arg(&request.args);
    crate::metrics::round_trip();
    if asking {
        // One pipeline, so that no other call's command comes between the two on this
        // shared connection. Only `EVALSHA`'s reply is read, and its error as the server
        // gave it (`MOVED`, `ASK`, `TRYAGAIN`, `NOSCRIPT`): a typed pipeline query would
        // wrap it in a pipeline error that no caller recognizes.
        let mut pipe = redis::pipe();
        pipe.cmd("ASKING").add_command(call);
        let reply = con
            .req_packed_commands(&pipe, 1, 1)
            .await?
            .into_iter()
            .next()
            .unwrap_or(Value::Nil)
            .extract_error()?;
        Ok(Vec::<i64>::from_redis_value(reply)?)
    } else {
        call.query_async(con).await
    }
}
