//! The async limiter's backends: one multiplexed connection to a server, or (feature
//! `cluster`) a connection per node of a Redis Cluster, each call sent to the primary that
//! serves its key's slot ([`super::cluster`]). Both run a script call the same way
//! ([`eval_on`]). Every key of one limiter key shares a hash tag, so one call is one slot.

use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use redis::aio::{ConnectionLike, MultiplexedConnection};
use redis::{AsyncConnectionConfig, Client, RedisResult};
use tokio::time::Instant;

use crate::limiter::Request;
use crate::scripts::LuaScript;
use crate::Error;

/// Where the limiter's calls go.
pub(crate) enum Backend {
    /// One server (boxed: its client's settings dwarf the cluster's pointer).
    Server(Box<Server>),
    /// A Redis Cluster, reached through any of its nodes.
    #[cfg(feature = "cluster")]
    Cluster(std::sync::Arc<super::cluster::Cluster>),
}

impl Backend {
    /// Runs `request`'s script, giving up at `deadline` (`timeout` after the call began).
    pub(crate) async fn eval(
        &self,
        request: &Request,
        deadline: Instant,
        timeout: Duration,
    ) -> Result<Vec<i64>, Error> {
        match self {
            Self::Server(server) => server.eval(request, deadline, timeout).await,
            #[cfg(feature = "cluster")]
            Self::Cluster(cluster) => cluster.eval(request, deadline).await,
        }
    }
}

/// One server: a multiplexed connection, made on the first call and replaced after a
/// connection error or a timeout (the server may have restarted, or stopped answering).
pub(crate) struct Server {
    client: Client,
    connection: Mutex<Option<MultiplexedConnection>>,
}

impl Server {
    pub(crate) const fn new(client: Client) -> Self {
        Self {
            client,
            connection: Mutex::new(None),
        }
    }

    async fn connection(&self, timeout: Duration) -> Result<MultiplexedConnection, Error> {
        let cached = self
            .connection
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if let Some(con) = cached {
            return Ok(con);
        }
        let con = connect(&self.client, timeout)
            .await
            .map_err(|err| Error::from_redis(err, timeout))?;
        *self
            .connection
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(con.clone());
        Ok(con)
    }

    async fn eval(
        &self,
        request: &Request,
        deadline: Instant,
        timeout: Duration,
    ) -> Result<Vec<i64>, Error> {
        let call = async {
            let mut con = self.connection(timeout).await?;
            eval_on(&mut con, request, false)
                .await
                .map_err(|err| Error::from_redis(err, timeout))
        };
        let result = tokio::time::timeout_at(deadline, call)
            .await
            .unwrap_or(Err(Error::Timeout { after: timeout }));
        if matches!(result, Err(Error::Timeout { .. } | Error::Connection(_))) {
            // Replace the connection on the next call: it may be dead (a restart) or hold a
            // server that stopped answering.
            *self
                .connection
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = None;
        }
        result
    }
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
        // shared connection.
        let mut pipe = redis::pipe();
        pipe.cmd("ASKING").ignore().add_command(call);
        let (values,): (Vec<i64>,) = pipe.query_async(con).await?;
        Ok(values)
    } else {
        call.query_async(con).await
    }
}
