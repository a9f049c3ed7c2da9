//! The async limiter on a Redis Cluster (feature `cluster`): a slot map read from
//! `CLUSTER SLOTS`, one multiplexed connection per node, and each call sent straight to the
//! primary serving its key's slot (the rules are in the [parent module's
//! docs](super#redis-cluster)).
//!
//! Everything shared sits in one [`State`] behind a `std` mutex, held for a few field
//! reads and writes and never across an await. Two things happen in tasks of their own, so
//! that a call that gives up (its deadline, or its caller went away) abandons neither:
//! connecting to a node, and reading the map. A call that needs one waits for it by
//! looking again every millisecond, under its own deadline.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use redis::aio::MultiplexedConnection;
use redis::{Client, ConnectionAddr, ConnectionInfo, ErrorKind, IntoConnectionInfo, RedisError};
use redis::{ServerErrorKind, Value};
use tokio::time::Instant;

use super::connection::{connect, eval_on, with_nodelay};
use crate::error::redact;
use crate::limiter::Request;
use crate::Error;

/// The number of hash slots of a Redis Cluster.
const SLOTS: usize = 16_384;
/// A slot no node serves (in the map, in place of a node's index).
const UNSERVED: u16 = u16::MAX;
/// How long a node that failed is left alone (its calls fail at once) before a call
/// connects to it again.
const RETRY_AFTER: Duration = Duration::from_millis(100);
/// At most one reading of the map per this long.
const REFRESH_EVERY: Duration = Duration::from_millis(100);
/// How often a waiting call looks again for the connection or the map it waits for.
const WAIT_STEP: Duration = Duration::from_millis(1);
/// The pauses before repeating a call that `TRYAGAIN`, `CLUSTERDOWN`, `MASTERDOWN` or
/// `LOADING` answered: the first, doubling up to the last.
const FIRST_PAUSE: Duration = Duration::from_millis(2);
const LAST_PAUSE: Duration = Duration::from_millis(50);
/// Redirections (`MOVED`, `ASK`) one call follows at most: a slot moves once at a time, so
/// more means the nodes disagree; the call then fails with the last one.
const MAX_REDIRECTIONS: usize = 5;

/// A Redis Cluster as the limiter sees it; see the module docs.
pub(crate) struct Cluster {
    /// The first node's URL settings (credentials, TLS, protocol) serve for every node.
    template: ConnectionInfo,
    timeout: Duration,
    state: Mutex<State>,
}

struct State {
    /// Each slot's primary (an index into `nodes`) or [`UNSERVED`]; empty until the first
    /// map is read.
    slots: Vec<u16>,
    /// Every node met: the URLs given, then those the maps and redirections named.
    nodes: Vec<Node>,
    refresh: Refresh,
    /// Numbers connections, so that a failure reported on a connection already replaced
    /// leaves its successor alone.
    next_connection: u64,
}

/// The reading of the map: one at a time, at most one per [`REFRESH_EVERY`].
#[derive(Default)]
struct Refresh {
    running: bool,
    started: Option<Instant>,
    /// Why the last reading found no map (no node answered one), for the calls waiting on
    /// it.
    failed: Option<RedisError>,
    /// Turns the order in which the nodes are asked (see [`Cluster::refresh_now`]).
    turn: usize,
}

struct Node {
    host: String,
    port: u16,
    link: Link,
}

enum Link {
    /// No connection: the next call starts one and waits for it.
    Idle,
    /// A task is connecting: a call waits for it if the node has not failed, and fails at
    /// once with `failed` if it has (the connection it had failed).
    Connecting { failed: Option<RedisError> },
    Up {
        connection: MultiplexedConnection,
        number: u64,
    },
    /// The node failed at `since` (`error`): its calls fail at once until [`RETRY_AFTER`].
    Down { since: Instant, error: RedisError },
}

/// What to do after a node's answer other than a result.
enum Next {
    /// Go to this node (`MOVED`), after `ASKING` if `true` (`ASK`).
    Redirect(usize, bool),
    /// Pause, then ask again; give up with this answer if the pause would pass the deadline.
    Pause(RedisError),
    /// Give up with this error.
    Fail(Error),
}

impl Cluster {
    /// A cluster reached through the nodes at `urls`; no connection yet.
    pub(crate) fn new(urls: &[&str], timeout: Duration) -> Result<Self, Error> {
        let mut nodes = Vec::new();
        let mut template = None;
        for url in urls {
            // The URL as an error may quote it: without its password.
            let shown = redact(url);
            let info = url
                .into_connection_info()
                .map_err(|err| Error::Config(format!("{shown}: {err}")))?;
            let db = info.redis_settings().db();
            if db != 0 {
                // Every node refuses SELECT in cluster mode, so each call would fail, as a
                // connection error a failure policy would hide: refused here instead.
                return Err(Error::Config(format!(
                    "{shown}: database {db}: a Redis Cluster has only database 0"
                )));
            }
            let (host, port) = match info.addr() {
                ConnectionAddr::Tcp(host, port) | ConnectionAddr::TcpTls { host, port, .. } => {
                    (host.clone(), *port)
                }
                _ => {
                    return Err(Error::Config(format!(
                        "{shown}: a cluster node is reached over TCP"
                    )))
                }
            };
            nodes.push(Node {
                host,
                port,
                link: Link::Idle,
            });
            template.get_or_insert_with(|| with_nodelay(info));
        }
        let template =
            template.ok_or_else(|| Error::Config("no URL of a cluster node".to_owned()))?;
        Ok(Self {
            template,
            timeout,
            state: Mutex::new(State {
                slots: Vec::new(),
                nodes,
                refresh: Refresh::default(),
                next_connection: 0,
            }),
        })
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `request`'s script on its slot's primary, following redirections and repeating
    /// after a busy answer, until `deadline`.
    pub(crate) async fn eval(
        self: &Arc<Self>,
        request: &Request,
        deadline: Instant,
    ) -> Result<Vec<i64>, Error> {
        let key = request.keys.first().map_or(&[][..], |key| key.as_bytes());
        let slot = slot(key);
        let mut redirected = None;
        let mut redirections = 0;
        let mut pause = FIRST_PAUSE;
        loop {
            let (node, asking) = match redirected.take() {
                Some(redirection) => redirection,
                None => (self.primary(slot, deadline).await?, false),
            };
            let (mut connection, number) = self.connection(node, deadline).await?;
            let answer =
                tokio::time::timeout_at(deadline, eval_on(&mut connection, request, asking))
                    .await
                    .unwrap_or_else(|_elapsed| Err(self.no_answer(node)));
            let err = match answer {
                Ok(values) => return Ok(values),
                Err(err) => err,
            };
            match self.next(slot, node, number, err) {
                Next::Redirect(to, asking) if redirections < MAX_REDIRECTIONS => {
                    redirections += 1;
                    redirected = Some((to, asking));
                }
                Next::Redirect(..) => {
                    return Err(Error::Reply(format!(
                        "slot {slot}: more than {MAX_REDIRECTIONS} redirections"
                    )))
                }
                Next::Pause(err) => {
                    let resume = Instant::now() + pause;
                    if resume >= deadline {
                        return Err(Error::from_redis(err, self.timeout));
                    }
                    tokio::time::sleep_until(resume).await;
                    pause = (pause * 2).min(LAST_PAUSE);
                    // A migrating slot answers `ASK`, then `TRYAGAIN` from the importing
                    // node, until the migration ends: those redirections are bounded by the
                    // deadline (each round pauses), not by the count meant for nodes that
                    // disagree.
                    redirections = 0;
                }
                Next::Fail(err) => return Err(err),
            }
        }
    }

    const fn timeout_error(&self) -> Error {
        Error::Timeout {
            after: self.timeout,
        }
    }

    /// The error standing for a node that did not answer within the timeout.
    fn no_answer(&self, node: usize) -> RedisError {
        let state = self.state();
        let node = &state.nodes[node];
        RedisError::from(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            format!(
                "{}:{} did not answer within {:?}",
                node.host, node.port, self.timeout
            ),
        ))
    }

    /// What to do after `node` (over connection `number`) answered `err` for `slot`.
    fn next(self: &Arc<Self>, slot: u16, node: usize, number: u64, err: RedisError) -> Next {
        match err.kind() {
            ErrorKind::Server(ServerErrorKind::Moved) => {
                let Some(to) = self.redirection(&err, node) else {
                    return Next::Fail(Error::from_redis(err, self.timeout));
                };
                // The slot's owner changed: this call and the next ones go there now, and
                // the rest of the map is read again (a failover moves many slots at once).
                let mut state = self.state();
                if let Some(entry) = state.slots.get_mut(usize::from(slot)) {
                    *entry = u16::try_from(to).unwrap_or(UNSERVED);
                }
                self.refresh_soon(&mut state);
                Next::Redirect(to, false)
            }
            ErrorKind::Server(ServerErrorKind::Ask) => match self.redirection(&err, node) {
                Some(to) => Next::Redirect(to, true),
                None => Next::Fail(Error::from_redis(err, self.timeout)),
            },
            ErrorKind::Server(ServerErrorKind::ClusterDown | ServerErrorKind::MasterDown) => {
                self.refresh_soon(&mut self.state());
                Next::Pause(err)
            }
            ErrorKind::Server(ServerErrorKind::TryAgain | ServerErrorKind::BusyLoading) => {
                Next::Pause(err)
            }
            ErrorKind::Server(ServerErrorKind::ReadOnly) => {
                // The map named a node that is a replica now (a failover it has not seen
                // yet): nothing was written; read the map again and ask its primary.
                self.refresh_soon(&mut self.state());
                Next::Pause(err)
            }
            _ if err.is_io_error() || err.is_connection_dropped() || err.is_timeout() => {
                let error = Error::from_redis(err.clone(), self.timeout);
                self.failed(node, number, err);
                Next::Fail(error)
            }
            _ => Next::Fail(Error::from_redis(err, self.timeout)),
        }
    }

    /// The node a `MOVED` or `ASK` answer from `from` names (an empty host is `from`'s).
    fn redirection(&self, err: &RedisError, from: usize) -> Option<usize> {
        let (address, _slot) = err.redirect_node()?;
        let (host, port) = address.rsplit_once(':')?;
        let port = port.parse().ok()?;
        let mut state = self.state();
        let host = if host.is_empty() {
            state.nodes[from].host.clone()
        } else {
            host.trim_start_matches('[')
                .trim_end_matches(']')
                .to_owned()
        };
        Some(state.node(&host, port))
    }

    /// The primary serving `slot`, by the map; the first calls wait for the first map.
    async fn primary(self: &Arc<Self>, slot: u16, deadline: Instant) -> Result<usize, Error> {
        let mut waited = false;
        loop {
            {
                let mut state = self.state();
                if let Some(&node) = state.slots.get(usize::from(slot)) {
                    if node != UNSERVED {
                        return Ok(usize::from(node));
                    }
                    self.refresh_soon(&mut state);
                    return Err(Error::Connection(RedisError::from((
                        ErrorKind::ClusterConnectionNotFound,
                        "no node serves the slot",
                        format!("slot {slot}"),
                    ))));
                }
                if !state.refresh.running {
                    match (waited, &state.refresh.failed) {
                        // The reading this call waited for found no node that answers.
                        (true, Some(err)) => return Err(Error::Connection(err.clone())),
                        _ => self.refresh_now(&mut state),
                    }
                }
            }
            waited = true;
            wait(deadline).await.ok_or_else(|| self.timeout_error())?;
        }
    }

    /// A connection to `node` and its number: the node's own, or a new one made by a task
    /// this or an earlier call started. A node that failed fails its calls at once.
    async fn connection(
        self: &Arc<Self>,
        node: usize,
        deadline: Instant,
    ) -> Result<(MultiplexedConnection, u64), Error> {
        loop {
            {
                let mut state = self.state();
                match &state.nodes[node].link {
                    Link::Up { connection, number } => return Ok((connection.clone(), *number)),
                    Link::Connecting { failed: None } => {}
                    Link::Connecting {
                        failed: Some(error),
                    } => {
                        let error = error.clone();
                        self.refresh_soon(&mut state);
                        return Err(Error::Connection(error));
                    }
                    Link::Down { since, error } if since.elapsed() < RETRY_AFTER => {
                        let error = error.clone();
                        // While a node is down its replica may be promoted: look again.
                        self.refresh_soon(&mut state);
                        return Err(Error::Connection(error));
                    }
                    Link::Down { error, .. } => {
                        // Time to try again; the calls fail at once until it connects.
                        let error = error.clone();
                        self.start_connecting(&mut state, node, Some(error.clone()));
                        return Err(Error::Connection(error));
                    }
                    Link::Idle => self.start_connecting(&mut state, node, None),
                }
            }
            wait(deadline).await.ok_or_else(|| self.timeout_error())?;
        }
    }

    /// Starts a task connecting to `node`; `failed` is why the node's last connection
    /// ended, if it failed (its calls then fail at once until the task is done).
    fn start_connecting(
        self: &Arc<Self>,
        state: &mut State,
        node: usize,
        failed: Option<RedisError>,
    ) {
        let keep_failing = failed.is_some();
        state.nodes[node].link = Link::Connecting { failed };
        let info = self.info(&state.nodes[node]);
        let cluster = Arc::clone(self);
        tokio::spawn(async move {
            let connected = cluster.connect(info).await;
            let mut state = cluster.state();
            state.nodes[node].link = match connected {
                Ok(connection) => Link::Up {
                    connection,
                    number: state.number(),
                },
                Err(error) => Link::Down {
                    since: Instant::now(),
                    error,
                },
            };
            if keep_failing {
                // A node back after a failure may be a demoted primary: check the map.
                cluster.refresh_soon(&mut state);
            }
        });
    }

    /// The URL settings of the first node given, at `node`'s address.
    fn info(&self, node: &Node) -> ConnectionInfo {
        let address = match self.template.addr() {
            ConnectionAddr::TcpTls {
                insecure,
                tls_params,
                ..
            } => ConnectionAddr::TcpTls {
                host: node.host.clone(),
                port: node.port,
                insecure: *insecure,
                tls_params: tls_params.clone(),
            },
            _ => ConnectionAddr::Tcp(node.host.clone(), node.port),
        };
        self.template.clone().set_addr(address)
    }

    /// A new connection under the timeout (the connecting task's only bound).
    async fn connect(&self, info: ConnectionInfo) -> Result<MultiplexedConnection, RedisError> {
        let client = Client::open(info)?;
        tokio::time::timeout(self.timeout, connect(&client, self.timeout))
            .await
            .unwrap_or_else(|_elapsed| {
                Err(RedisError::from(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    "connecting took longer than the timeout",
                )))
            })
    }

    /// `node`'s connection `number` failed with `error`: the node's calls fail at once
    /// for [`RETRY_AFTER`], and the map is read again (its replica may be taking over).
    fn failed(self: &Arc<Self>, node: usize, number: u64, error: RedisError) {
        let mut state = self.state();
        let link = &mut state.nodes[node].link;
        if matches!(link, Link::Up { number: current, .. } if *current == number) {
            *link = Link::Down {
                since: Instant::now(),
                error,
            };
        }
        self.refresh_soon(&mut state);
    }

    /// Starts reading the map unless a reading runs or began less than [`REFRESH_EVERY`]
    /// ago.
    fn refresh_soon(self: &Arc<Self>, state: &mut State) {
        let recent = state
            .refresh
            .started
            .is_some_and(|started| started.elapsed() < REFRESH_EVERY);
        if !state.refresh.running && !recent {
            self.refresh_now(state);
        }
    }

    /// Starts a task reading the map (`CLUSTER SLOTS`): from the nodes with a connection
    /// first, then those never tried, then those that failed (longest ago first), each group
    /// in an order that turns by one node per reading, so that no one node is always asked
    /// first. Each node gets the timeout to answer.
    ///
    /// A map is taken only if it serves at least as many slots as the one in use (which a
    /// node that is not in the cluster, or that lost track of it, does not: it answers an
    /// empty map, or a part); otherwise the next node is asked. When no node gives such a
    /// map, the one in use stays, or, without one yet, the largest non-empty map read.
    fn refresh_now(self: &Arc<Self>, state: &mut State) {
        state.refresh.running = true;
        state.refresh.started = Some(Instant::now());
        let turn = state.refresh.turn;
        state.refresh.turn = turn.wrapping_add(1);
        let count = state.nodes.len().max(1);
        let mut candidates: Vec<(u8, Option<Instant>, usize, usize)> = state
            .nodes
            .iter()
            .enumerate()
            .filter_map(|(index, node)| {
                let place = (index + count - turn % count) % count;
                match &node.link {
                    Link::Up { .. } => Some((0, None, place, index)),
                    Link::Idle => Some((1, None, place, index)),
                    Link::Down { since, .. } => Some((2, Some(*since), place, index)),
                    // Its own task is connecting; the reading does not wait for that.
                    Link::Connecting { .. } => None,
                }
            })
            .collect();
        candidates.sort_unstable();
        let cluster = Arc::clone(self);
        tokio::spawn(async move {
            let mut failed = None;
            let mut fallback: Option<(usize, Ranges)> = None;
            let mut taken = false;
            for (_, _, _, node) in candidates {
                let ranges = match cluster.read_map(node).await {
                    Ok(ranges) => ranges,
                    Err(err) => {
                        failed = Some(err);
                        continue;
                    }
                };
                let served = served(&ranges);
                if served == 0 {
                    failed = Some(RedisError::from((
                        ErrorKind::ClusterConnectionNotFound,
                        "a node answered a map that serves no slot",
                    )));
                    continue;
                }
                let mut state = cluster.state();
                if served >= state.served() {
                    state.install(&ranges);
                    taken = true;
                    break;
                }
                if fallback.as_ref().is_none_or(|(best, _)| served > *best) {
                    fallback = Some((served, ranges));
                }
            }
            let mut state = cluster.state();
            if !taken && state.slots.is_empty() {
                if let Some((_, ranges)) = fallback {
                    state.install(&ranges);
                }
            }
            state.refresh.running = false;
            state.refresh.failed = if state.slots.is_empty() {
                Some(failed.unwrap_or_else(|| {
                    RedisError::from((ErrorKind::ClusterConnectionNotFound, "no node to ask"))
                }))
            } else {
                None
            };
        });
    }

    /// Reads the map from `node`, over its connection or a new one (kept if it works).
    async fn read_map(self: &Arc<Self>, node: usize) -> Result<Ranges, RedisError> {
        let (existing, info, host) = {
            let state = self.state();
            let entry = &state.nodes[node];
            let existing = match &entry.link {
                Link::Up { connection, .. } => Some(connection.clone()),
                _ => None,
            };
            (existing, self.info(entry), entry.host.clone())
        };
        let fresh = existing.is_none();
        let mut connection = match existing {
            Some(connection) => connection,
            None => self.connect(info).await?,
        };
        let mut command = redis::cmd("CLUSTER");
        command.arg("SLOTS");
        let query = command.query_async::<Value>(&mut connection);
        let value = tokio::time::timeout(self.timeout, query)
            .await
            .unwrap_or_else(|_elapsed| {
                Err(RedisError::from(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    "CLUSTER SLOTS took longer than the timeout",
                )))
            })?;
        let ranges = parse_slots(&value, &host)?;
        let mut state = self.state();
        if fresh && matches!(state.nodes[node].link, Link::Idle | Link::Down { .. }) {
            // It answered: the node's calls may use this connection.
            let number = state.number();
            state.nodes[node].link = Link::Up { connection, number };
        }
        Ok(ranges)
    }
}

/// A `CLUSTER SLOTS` answer's primaries: `(first, last, host, port)` per range.
type Ranges = Vec<(u16, u16, String, u16)>;

/// How many slots `ranges` serve (a slot named twice counts once).
fn served(ranges: &Ranges) -> usize {
    let mut slots = vec![false; SLOTS];
    for (first, last, _, _) in ranges {
        slots[usize::from(*first)..=usize::from(*last)].fill(true);
    }
    slots.into_iter().filter(|&served| served).count()
}

impl State {
    /// How many slots the map in use serves.
    fn served(&self) -> usize {
        self.slots.iter().filter(|&&node| node != UNSERVED).count()
    }

    /// Makes `ranges` the map in use.
    fn install(&mut self, ranges: &Ranges) {
        let mut slots = vec![UNSERVED; SLOTS];
        for (first, last, host, port) in ranges {
            let node = u16::try_from(self.node(host, *port)).unwrap_or(UNSERVED);
            slots[usize::from(*first)..=usize::from(*last)].fill(node);
        }
        self.slots = slots;
    }

    /// The index of the node at `host:port`, added if new.
    fn node(&mut self, host: &str, port: u16) -> usize {
        if let Some(index) = self
            .nodes
            .iter()
            .position(|node| node.port == port && node.host == host)
        {
            return index;
        }
        self.nodes.push(Node {
            host: host.to_owned(),
            port,
            link: Link::Idle,
        });
        self.nodes.len() - 1
    }

    const fn number(&mut self) -> u64 {
        self.next_connection += 1;
        self.next_connection
    }
}

/// Waits one [`WAIT_STEP`]; `None` once `deadline` has passed.
async fn wait(deadline: Instant) -> Option<()> {
    let now = Instant::now();
    if now >= deadline {
        return None;
    }
    tokio::time::sleep_until((now + WAIT_STEP).min(deadline)).await;
    Some(())
}

/// The primaries' slot ranges in a `CLUSTER SLOTS` answer: `(first, last, host, port)`.
/// Each entry is `[first, last, [host, port, id, …], replicas…]`; a host that is NULL,
/// empty or unknown (`?`) is the answering node's (`asked`).
fn parse_slots(value: &Value, asked: &str) -> Result<Ranges, RedisError> {
    let invalid = || RedisError::from((ErrorKind::Parse, "an unexpected CLUSTER SLOTS answer"));
    let Value::Array(entries) = value else {
        return Err(invalid());
    };
    let mut ranges = Vec::with_capacity(entries.len());
    for entry in entries {
        let Value::Array(fields) = entry else {
            return Err(invalid());
        };
        let (Some(Value::Int(first)), Some(Value::Int(last)), Some(Value::Array(primary))) =
            (fields.first(), fields.get(1), fields.get(2))
        else {
            return Err(invalid());
        };
        let (Some(host), Some(Value::Int(port))) = (primary.first(), primary.get(1)) else {
            return Err(invalid());
        };
        let host = match host {
            Value::BulkString(bytes) => String::from_utf8_lossy(bytes).into_owned(),
            Value::SimpleString(text) => text.clone(),
            // `cluster-preferred-endpoint-type unknown-endpoint`: the node that answered.
            Value::Nil => String::new(),
            _ => return Err(invalid()),
        };
        let (Ok(first), Ok(last), Ok(port)) = (
            u16::try_from(*first),
            u16::try_from(*last),
            u16::try_from(*port),
        ) else {
            return Err(invalid());
        };
        if first > last || usize::from(last) >= SLOTS {
            return Err(invalid());
        }
        // No endpoint (NULL), an empty one or an unknown one (`?`) is the answering node's,
        // as `redis`'s own cluster client reads them: the node knows no better name for
        // itself than the one it was reached by.
        let host = match host.as_str() {
            "" | "?" => asked.to_owned(),
            _ => host,
        };
        ranges.push((first, last, host, port));
    }
    Ok(ranges)
}

/// The Redis Cluster hash slot of `key`: CRC16 (XMODEM: polynomial 0x1021, initial value 0)
/// of its hash tag (the bytes between the first `{` and the next `}`, when there are any)
/// or else of the whole key, modulo 16384.
pub(crate) fn slot(key: &[u8]) -> u16 {
    let tag = key.iter().position(|&byte| byte == b'{').and_then(|open| {
        let rest = &key[open + 1..];
        let close = rest.iter().position(|&byte| byte == b'}')?;
        (close > 0).then(|| &rest[..close])
    });
    let mut crc: u16 = 0;
    for &byte in tag.unwrap_or(key) {
        crc ^= u16::from(byte) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 == 0 {
                crc << 1
            } else {
                (crc << 1) ^ 0x1021
            };
        }
    }
    // SLOTS is a power of two: the low 14 bits.
    crc & 0x3fff
}

#[cfg(test)]
mod tests {
    use super::{parse_slots, slot};
    use redis::Value;

    #[test]
    fn slots_as_redis_computes_them() {
        // CRC16/XMODEM's check value: 0x31C3.
        assert_eq!(slot(b"123456789"), 0x31c3 & 0x3fff);
        // `CLUSTER KEYSLOT` of redis-server 7.0. The tag is up to the first `}` after the
        // first `{`; an empty one hashes the whole key.
        for (key, expected) in [
            (&b"foo"[..], 12_182),
            (b"somekey", 11_058),
            (b"{user1000}.following", 3_443),
            (b"slidelimit:{#user:42}:log", 3_349),
            (b"a{b}c{d}", 3_300),
            (b"foo{}{bar}", 8_363),
            (b"foo{{bar}}zap", 4_015),
        ] {
            assert_eq!(slot(key), expected, "{}", String::from_utf8_lossy(key));
        }
    }

    #[test]
    fn cluster_slots_answers() {
        let node = |host: &str, port: i64| {
            Value::Array(vec![
                Value::BulkString(host.as_bytes().to_vec()),
                Value::Int(port),
                Value::BulkString(b"id".to_vec()),
            ])
        };
        let answer = Value::Array(vec![
            Value::Array(vec![
                Value::Int(0),
                Value::Int(5460),
                node("10.0.0.1", 7000),
                node("10.0.0.4", 7003),
            ]),
            Value::Array(vec![Value::Int(5461), Value::Int(10922), node("", 7001)]),
            Value::Array(vec![Value::Int(10923), Value::Int(16000), node("?", 7002)]),
            Value::Array(vec![
                Value::Int(16001),
                Value::Int(16383),
                Value::Array(vec![Value::Nil, Value::Int(7003), Value::Nil]),
            ]),
        ]);
        assert_eq!(
            parse_slots(&answer, "10.0.0.9").expect("parses"),
            vec![
                (0, 5460, "10.0.0.1".to_owned(), 7000),
                (5461, 10922, "10.0.0.9".to_owned(), 7001),
                (10923, 16000, "10.0.0.9".to_owned(), 7002),
                (16001, 16383, "10.0.0.9".to_owned(), 7003),
            ]
        );
        for bad in [
            Value::Int(1),
            Value::Array(vec![Value::Array(vec![Value::Int(0)])]),
            Value::Array(vec![Value::Array(vec![
                Value::Int(10),
                Value::Int(5),
                node("h", 1),
            ])]),
            Value::Array(vec![Value::Array(vec![
                Value::Int(0),
                Value::Int(16384),
                node("h", 1),
            ])]),
            Value::Array(vec![Value::Array(vec![
                Value::Int(0),
                Value::Int(1),
                node("h", 70_000),
            ])]),
        ] {
            assert!(parse_slots(&bad, "h").is_err(), "{bad:?}");
        }
    }
}
