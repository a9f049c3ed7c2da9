//! The async limiter's connection: one multiplexed connection to a server, or (feature
//! `cluster`) a cluster connection that routes each script call to the node owning its keys'
//! slot. Every key of one limiter key shares a hash tag, so one call is one slot.

use std::time::Duration;

use redis::aio::{ConnectionLike, MultiplexedConnection};
use redis::{AsyncConnectionConfig, Client, Cmd, Pipeline, RedisFuture, Value};

use crate::Error;

/// Where the limiter connects.
pub(crate) enum Backend {
    /// One server.
    Server(Client),
    /// A Redis Cluster, reached through any of its nodes.
    #[cfg(feature = "cluster")]
    Cluster(redis::cluster::ClusterClient),
}

impl Backend {
    /// A fresh connection, under `timeout` for connecting and for each response.
    pub(crate) async fn connect(&self, timeout: Duration) -> Result<Connection, Error> {
        match self {
            Self::Server(client) => {
                let config = AsyncConnectionConfig::new()
                    .set_connection_timeout(Some(timeout))
                    .set_response_timeout(Some(timeout));
                client
                    .get_multiplexed_async_connection_with_config(&config)
                    .await
                    .map(Connection::Server)
                    .map_err(|err| Error::from_redis(err, timeout))
            }
            #[cfg(feature = "cluster")]
            Self::Cluster(client) => client
                .get_async_connection()
                .await
                .map(Connection::Cluster)
                .map_err(|err| Error::from_redis(err, timeout)),
        }
    }
}

/// A connection of either kind; cheap to clone (both share their socket or sockets).
#[derive(Clone)]
pub(crate) enum Connection {
    Server(MultiplexedConnection),
    #[cfg(feature = "cluster")]
    Cluster(redis::cluster_async::ClusterConnection),
}

impl ConnectionLike for Connection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Self::Server(con) => con.req_packed_command(cmd),
            #[cfg(feature = "cluster")]
            Self::Cluster(con) => con.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        cmd: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Self::Server(con) => con.req_packed_commands(cmd, offset, count),
            #[cfg(feature = "cluster")]
            Self::Cluster(con) => con.req_packed_commands(cmd, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Self::Server(con) => con.get_db(),
            #[cfg(feature = "cluster")]
            Self::Cluster(con) => con.get_db(),
        }
    }
}
