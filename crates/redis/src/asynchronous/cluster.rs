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
    /// Every node met: the URLs given (the first `seeds`), then those the maps and
    /// redirections named, less those dropped since (see [`State::prune`]; their entries
    /// are reused, so that the list does not grow with every node the cluster ever had).
    nodes: Vec<Node>,
    seeds: usize,
    refresh: Refresh,
    /// The `MOVED` corrections made to `slots` since the running reading of the map began
    /// (`(slot, node)`, oldest first): the map it installs was read before them, so they go
    /// back on top of it rather than being undone by an older view.
    corrections: Vec<(u16, u16)>,
    /// Numbers connections, so that a failure reported on a connection already replaced
    /// leaves its successor alone.
    next_connection: u64,
}

/// The reading of the map: one at a time, at most one per [`REFRESH_EVERY`]; one asked
/// for meanwhile is not dropped but runs once after it (see [`Refresh::ask`]).
#[derive(Default)]
struct Refresh {
    /// A task reads the map, or waits out [`REFRESH_EVERY`] to read it.
    running: bool,
    /// A reading was asked for after the running one began: the task reads once more.
    pending: bool,
    started: Option<Instant>,
    /// Why the last reading found no map (no node answered one), for the calls waiting on
    /// it.
    failed: Option<RedisError>,
    /// Turns the order in which the nodes are asked (see [`Cluster::refresh_now`]).
    turn: usize,
}

/// What [`Refresh::ask`] decided.
#[derive(Debug, PartialEq, Eq)]
enum Ask {
    /// Read the map now.
    Now,
    /// Read it at this instant ([`REFRESH_EVERY`] after the last reading began).
    At(Instant),
    /// A reading runs or waits to run: it reads once more after (or it is that one).
    Coalesced,
}

impl Refresh {
    /// A reading of the map is asked for at `now`. Never dropped: within
    /// [`REFRESH_EVERY`] of the last one it is put off, and while one runs it is kept
    /// (once, however many ask) for the task to run after: a `MOVED` seen just after a
    /// reading began would otherwise wait for the next unrelated request.
    fn ask(&mut self, now: Instant) -> Ask {
        if self.running {
            self.pending = true;
            return Ask::Coalesced;
        }
        self.running = true;
        self.pending = false;
        match self.started {
            Some(started) if now < started + REFRESH_EVERY => Ask::At(started + REFRESH_EVERY),
            _ => Ask::Now,
        }
    }

    /// A reading ended: when the task is to read again (a reading was asked for after
    /// this one began), or `None` when it ends.
    fn finished(&mut self) -> Option<Instant> {
        if self.pending {
            // `pending` stays set until that reading begins, so that the asks of the
            // meantime join it rather than queue one more.
            Some(
                self.started
                    .map_or_else(Instant::now, |started| started + REFRESH_EVERY),
            )
        } else {
            self.running = false;
            None
        }
    }
}

struct Node {
    host: String,
    port: u16,
    link: Link,
    /// The calls that hold this node's index ([`InUse`]): it is not dropped under them.
    calls: usize,
    /// No longer in the cluster: never asked, and the entry is free for a new node.
    dropped: bool,
}

impl Node {
    const fn new(host: String, port: u16) -> Self {
        Self {
            host,
            port,
            link: Link::Idle,
            calls: 0,
            dropped: false,
        }
    }
}

/// A call's hold on a node's index, taken under the lock that found it: the entry is not
/// dropped and reused for another node while the call may still use it.
struct InUse<'a> {
    cluster: &'a Cluster,
    index: usize,
}

impl<'a> InUse<'a> {
    fn new(cluster: &'a Cluster, state: &mut State, index: usize) -> Self {
        state.nodes[index].calls += 1;
        Self { cluster, index }
    }
}

impl Drop for InUse<'_> {
    fn drop(&mut self) {
        self.cluster.state().nodes[self.index].calls -= 1;
    }
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
enum Next<'a> {
    /// Go to this node (`MOVED`), after `ASKING` if `true` (`ASK`).
    Redirect(InUse<'a>, bool),
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
            nodes.push(Node::new(host, port));
            template.get_or_insert_with(|| with_nodelay(info));
        }
        let template =
            template.ok_or_else(|| Error::Config("no URL of a cluster node".to_owned()))?;
        Ok(Self {
            template,
            timeout,
            state: Mutex::new(State {
                slots: Vec::new(),
                seeds: nodes.len(),
                nodes,
                refresh: Refresh::default(),
                corrections: Vec::new(),
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
            // `node` holds the index until the next one is held (a redirection's).
            let index = node.index;
            let (mut connection, number) = self.connection(index, deadline).await?;
            let answer =
                tokio::time::timeout_at(deadline, eval_on(&mut connection, request, asking))
                    .await
                    .unwrap_or_else(|_elapsed| Err(self.no_answer(index)));
            let err = match answer {
                Ok(values) => return Ok(values),
                Err(err) => err,
            };
            match self.next(slot, index, number, err) {
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
    fn next(self: &Arc<Self>, slot: u16, node: usize, number: u64, err: RedisError) -> Next<'_> {
        match err.kind() {
            ErrorKind::Server(ServerErrorKind::Moved) => {
                let Some(to) = self.redirection(&err, node) else {
                    return Next::Fail(Error::from_redis(err, self.timeout));
                };
                // The slot's owner changed: this call and the next ones go there now, and
                // the rest of the map is read again (a failover moves many slots at once).
                let mut state = self.state();
                state.correct(slot, u16::try_from(to.index).unwrap_or(UNSERVED));
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
    fn redirection(&self, err: &RedisError, from: usize) -> Option<InUse<'_>> {
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
        let index = state.node(&host, port);
        Some(InUse::new(self, &mut state, index))
    }

    /// The primary serving `slot`, by the map; the first calls wait for the first map.
    async fn primary(self: &Arc<Self>, slot: u16, deadline: Instant) -> Result<InUse<'_>, Error> {
        let mut waited = false;
        loop {
            {
                let mut state = self.state();
                if let Some(&node) = state.slots.get(usize::from(slot)) {
                    if node != UNSERVED {
                        return Ok(InUse::new(self, &mut state, usize::from(node)));
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

    /// Has the map read again: now, or once [`REFRESH_EVERY`] after the last reading
    /// began, or (while one runs) once more after it.
    fn refresh_soon(self: &Arc<Self>, state: &mut State) {
        match state.refresh.ask(Instant::now()) {
            Ask::Now => self.spawn_refresh(state, None),
            Ask::At(at) => self.spawn_refresh(state, Some(at)),
            Ask::Coalesced => {}
        }
    }

    /// Starts reading the map at once (the first calls, waiting for a map, do not wait out
    /// [`REFRESH_EVERY`]); only when no reading runs.
    fn refresh_now(self: &Arc<Self>, state: &mut State) {
        self.spawn_refresh(state, None);
    }

    /// Starts the task that reads the map, at `at` if given, and again (once per
    /// [`REFRESH_EVERY`]) as long as readings were asked for while it ran.
    fn spawn_refresh(self: &Arc<Self>, state: &mut State, at: Option<Instant>) {
        state.refresh.running = true;
        state.refresh.pending = false;
        let cluster = Arc::clone(self);
        tokio::spawn(async move {
            let mut at = at;
            loop {
                if let Some(at) = at {
                    tokio::time::sleep_until(at).await;
                }
                let candidates = cluster.state().begin_reading(Instant::now());
                cluster.read_slots(candidates).await;
                let next = cluster.state().refresh.finished();
                match next {
                    Some(next) => at = Some(next),
                    None => break,
                }
            }
        });
    }

    /// Reads the map (`CLUSTER SLOTS`) from the `candidates` ([`State::begin_reading`]
    /// ordered them), each node given the timeout to answer.
    ///
    /// A map is taken only if it serves at least as many slots as the one in use (which a
    /// node that is not in the cluster, or that lost track of it, does not: it answers an
    /// empty map, or a part); otherwise the next node is asked. When no node gives such a
    /// map, the one in use stays, or, without one yet, the largest non-empty map read.
    async fn read_slots(self: &Arc<Self>, candidates: Vec<usize>) {
        let mut failed = None;
        let mut fallback: Option<(usize, Ranges)> = None;
        let mut taken = false;
        for node in candidates {
            let ranges = match self.read_map(node).await {
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
            let mut state = self.state();
            if served >= state.served() {
                state.install_read(&ranges);
                // A map as good as the last: the nodes it no longer names left.
                state.prune();
                taken = true;
                break;
            }
            if fallback.as_ref().is_none_or(|(best, _)| served > *best) {
                fallback = Some((served, ranges));
            }
        }
        let mut state = self.state();
        if !taken && state.slots.is_empty() {
            if let Some((_, ranges)) = fallback {
                state.install_read(&ranges);
            }
        }
        state.refresh.failed = if state.slots.is_empty() {
            Some(failed.unwrap_or_else(|| {
                RedisError::from((ErrorKind::ClusterConnectionNotFound, "no node to ask"))
            }))
        } else {
            None
        };
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

    /// A `MOVED` answer says `slot` is `node`'s now. While a reading of the map runs it
    /// is noted, for [`State::install_read`] to put back on top of that reading's map.
    fn correct(&mut self, slot: u16, node: u16) {
        if let Some(entry) = self.slots.get_mut(usize::from(slot)) {
            *entry = node;
            if self.refresh.running {
                self.corrections.push((slot, node));
            }
        }
    }

    /// A reading of the map begins at `now`: the nodes to ask, in order, from the nodes
    /// with a connection first, then those never tried, then those that failed (longest
    /// ago first), each group in an order that turns by one node per reading, so that no
    /// one node is always asked first.
    fn begin_reading(&mut self, now: Instant) -> Vec<usize> {
        self.refresh.started = Some(now);
        // Asked for before this reading began: this reading answers them.
        self.refresh.pending = false;
        // This reading's map will be at least as new as the corrections made so far.
        self.corrections.clear();
        let turn = self.refresh.turn;
        self.refresh.turn = turn.wrapping_add(1);
        let count = self.nodes.len().max(1);
        let mut candidates: Vec<(u8, Option<Instant>, usize, usize)> = self
            .nodes
            .iter()
            .enumerate()
            .filter_map(|(index, node)| {
                let place = (index + count - turn % count) % count;
                match &node.link {
                    _ if node.dropped => None,
                    Link::Up { .. } => Some((0, None, place, index)),
                    Link::Idle => Some((1, None, place, index)),
                    Link::Down { since, .. } => Some((2, Some(*since), place, index)),
                    // Its own task is connecting; the reading does not wait for that.
                    Link::Connecting { .. } => None,
                }
            })
            .collect();
        candidates.sort_unstable();
        candidates.into_iter().map(|(.., index)| index).collect()
    }

    /// Makes `ranges`, read by the running reading, the map in use, with the `MOVED`
    /// corrections made since that reading began put back on top: they are newer than
    /// what it read (a reading is never asked for after its corrections, so a slot it
    /// reads moved again is corrected by the next `MOVED`, not left stale for good).
    fn install_read(&mut self, ranges: &Ranges) {
        self.install(ranges);
        for (slot, node) in std::mem::take(&mut self.corrections) {
            self.slots[usize::from(slot)] = node;
        }
    }

    /// Drops the nodes the map in use does not name, but for the seeds (the way back in,
    /// should every node named fail), the nodes a call holds, and those a task connects
    /// to: a node that left the cluster is no longer asked for maps nor kept connected.
    fn prune(&mut self) {
        let mut named = vec![false; self.nodes.len()];
        for &node in &self.slots {
            if let Some(named) = named.get_mut(usize::from(node)) {
                *named = true;
            }
        }
        for (node, named) in self.nodes.iter_mut().zip(named).skip(self.seeds) {
            let held = node.calls > 0 || matches!(node.link, Link::Connecting { .. });
            if !named && !held && !node.dropped {
                // Its connection (if any) closes once the calls that cloned it are done.
                *node = Node::new(String::new(), 0);
                node.dropped = true;
            }
        }
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
            .position(|node| !node.dropped && node.port == port && node.host == host)
        {
            return index;
        }
        let node = Node::new(host.to_owned(), port);
        if let Some(index) = self.nodes.iter().position(|node| node.dropped) {
            self.nodes[index] = node;
            return index;
        }
        self.nodes.push(node);
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
    use super::{parse_slots, slot, Ask, Refresh, State, REFRESH_EVERY, SLOTS};
    use redis::Value;
    use std::time::Duration;
    use tokio::time::Instant;

    fn state() -> State {
        State {
            slots: Vec::new(),
            nodes: Vec::new(),
            seeds: 0,
            refresh: Refresh::default(),
            corrections: Vec::new(),
            next_connection: 0,
        }
    }

    /// A map of every slot served by `port` on 10.0.0.1.
    fn all_on(port: u16) -> super::Ranges {
        vec![(
            0,
            u16::try_from(SLOTS - 1).expect("fits"),
            "10.0.0.1".to_owned(),
            port,
        )]
    }

    #[test]
    fn cluster_map_read_before_a_moved_never_undoes_it() {
        let mut state = state();
        state.install(&all_on(7000));
        let old = state.node("10.0.0.1", 7000);
        let new = u16::try_from(state.node("10.0.0.1", 7001)).expect("fits");
        let now = Instant::now();
        assert_eq!(state.refresh.ask(now), Ask::Now);
        let _candidates = state.begin_reading(now);
        // The reading's CLUSTER SLOTS answered (slot 42 still on 7000), then a call's
        // MOVED moved slot 42 to 7001, then the reading installs what it read.
        state.correct(42, new);
        state.install_read(&all_on(7000));
        assert_eq!(state.slots[42], new, "the older map undid the MOVED");
        assert_eq!(usize::from(state.slots[41]), old);
        // A reading that began after the correction is newer than it: its map stands.
        assert_eq!(state.refresh.finished(), None);
        let later = now + REFRESH_EVERY;
        assert_eq!(state.refresh.ask(later), Ask::Now);
        let _candidates = state.begin_reading(later);
        state.install_read(&all_on(7000));
        assert_eq!(usize::from(state.slots[42]), old);
    }

    #[test]
    fn cluster_nodes_gone_from_the_map_are_dropped_but_seeds_and_held_ones() {
        let mut state = state();
        let seed = state.node("10.0.0.1", 7000);
        state.seeds = 1;
        state.install(&vec![
            (0, 8191, "10.0.0.1".to_owned(), 7001),
            (8192, 16383, "10.0.0.1".to_owned(), 7002),
        ]);
        let gone = state.node("10.0.0.1", 7001);
        let held = state.node("10.0.0.1", 7002);
        // A call holds 7002 (its index), as a call that was sent there holds it.
        state.nodes[held].calls = 1;
        let live = |state: &State| {
            let mut ports: Vec<u16> = state
                .nodes
                .iter()
                .filter(|node| !node.dropped)
                .map(|node| node.port)
                .collect();
            ports.sort_unstable();
            ports
        };
        assert_eq!(live(&state), [7000, 7001, 7002]);
        // The cluster now is 7003 alone: a good map that names neither 7001 nor 7002.
        state.install_read(&all_on(7003));
        state.prune();
        assert_eq!(live(&state), [7000, 7002, 7003], "7001 stays listed");
        let asked: Vec<u16> = state
            .begin_reading(Instant::now())
            .into_iter()
            .map(|index| state.nodes[index].port)
            .collect();
        assert!(!asked.contains(&7001), "the reading asks 7001: {asked:?}");
        assert!(
            asked.contains(&7000),
            "the seed is no longer asked: {asked:?}"
        );
        // The call let go: the next good map drops 7002 too.
        state.nodes[held].calls = 0;
        state.install_read(&all_on(7003));
        state.prune();
        assert_eq!(live(&state), [7000, 7003]);
        // The list does not grow with the next node met: a dropped entry is reused.
        let before = state.nodes.len();
        let new = state.node("10.0.0.1", 7004);
        assert!(new == gone || new == held, "{new}");
        assert_eq!(state.nodes.len(), before);
        assert_eq!(state.node("10.0.0.1", 7000), seed);
    }

    #[test]
    fn cluster_refresh_asked_meanwhile_runs_once_after() {
        let mut state = state();
        let start = Instant::now();
        let ms = Duration::from_millis;
        assert_eq!(state.refresh.ask(start), Ask::Now);
        let _candidates = state.begin_reading(start);
        // A MOVED just after the reading began, and more: one reading more, after it.
        assert_eq!(state.refresh.ask(start + ms(1)), Ask::Coalesced);
        assert_eq!(state.refresh.ask(start + ms(2)), Ask::Coalesced);
        let again = start + REFRESH_EVERY;
        assert_eq!(state.refresh.finished(), Some(again), "the ask was dropped");
        // Asks while it waits to run join it.
        assert_eq!(state.refresh.ask(start + ms(50)), Ask::Coalesced);
        let _candidates = state.begin_reading(again);
        assert_eq!(state.refresh.finished(), None, "more than one pending");
        assert!(!state.refresh.running);
        // Within the rate limit of the last reading: put off, not dropped.
        assert_eq!(
            state.refresh.ask(again + ms(10)),
            Ask::At(again + REFRESH_EVERY)
        );
        assert!(state.refresh.running);
        let _candidates = state.begin_reading(again + REFRESH_EVERY);
        assert_eq!(state.refresh.finished(), None);
        assert_eq!(state.refresh.ask(again + REFRESH_EVERY * 2), Ask::Now);
    }

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
