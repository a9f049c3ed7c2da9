//! A small pool of blocking connections, every call bounded by one deadline.
//!
//! # One deadline per call
//! A call's deadline is fixed when it starts, and everything the call does spends it:
//! taking a pooled connection or connecting (resolving the host name, then each resolved
//! address in turn, each with a share of what is left), the handshake (`AUTH`, `SELECT`),
//! loading the script and the script call, and at most one retry (below). Nothing waits
//! past it: a connection speaks RESP itself over a plain socket (the `redis` crate's parser
//! decodes the replies), and every blocking read or write waits at most [`SLICE`] before it
//! looks at the deadline again. So a call ends within the timeout plus the lateness of one
//! short socket wait, a kernel tick or two (`tests/it/timeouts.rs` asserts the timeout plus
//! 200 ms and measures 408 ms at 400 ms, on a 250 Hz kernel).
//!
//! Two things the `redis` crate's blocking connection does, and this one does not:
//! - its handshake sends `CLIENT SETINFO` twice in one pipeline and reads each reply with the
//!   whole remaining timeout, so a server that accepts a connection and never answers
//!   (stopped by `SIGSTOP`, or hung) held a new connection for twice the timeout (832 ms at
//!   400 ms, measured);
//! - it arms one socket timeout (`SO_RCVTIMEO`) for the whole wait: a kernel timer, which
//!   Linux fires late by up to an eighth of its length (its timer wheel's granularity; a
//!   2.1 s timeout fired after 2.30 s on the test machine), where a wait of at most
//!   [`SLICE`] fires within a tick or two.
//!
//! Two waits std gives no timeout for run on a helper thread that the call waits for until
//! its deadline (see [`Pool::on_helper`]): resolving a host name (`getaddrinfo` waits out
//! the system resolver's own timeouts) and connecting a Unix socket (which blocks while the
//! server's listen backlog is full: a stopped server held a call for more than 48 s).
//! The connection speaks RESP2 and does not name itself (no `HELLO`, no `CLIENT SETINFO`);
//! a `protocol` in the URL is ignored. TLS (`rediss://`, feature `tls`) runs over the same
//! socket (see [`crate::tls`]): its handshake is stepped one socket wait at a time like every
//! read and write, within the deadline of the call that opens the connection; without the
//! feature `rediss://` is refused.
//!
//! # Which connections are reused
//! A connection goes back to the pool only if its call ended cleanly: after a timeout or an
//! I/O error it may still hold a late reply, so it is dropped and never read again. One that
//! answered `READONLY`, `LOADING` or `MASTERDOWN` reaches a server that no longer takes
//! (or cannot yet take) the scripts' writes, a demoted primary after a failover most often:
//! it is dropped, and with it every connection opened before it (see
//! [`Pool::generation`]), so that the next calls dial the address again. A pooled
//! connection is checked before reuse: one whose server closed it (a restart, the server's
//! idle `timeout`) has its end of file waiting, and is dropped. A call whose pooled
//! connection fails all the same (closed while the call was on its way, or answering as
//! above) is retried once on a new connection, within its deadline (see
//! [`Pool::eval_by`] for why that is safe).
//!
//! # Atomic orderings
//! All `Relaxed`: a statistics counter, a soft cap on stranded helper threads (each helper
//! counts itself out under the lock it shares with its caller, which counted it in), and a
//! generation tag that only tells old connections from new; none of them publishes data.

use std::io::{self, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream, ToSocketAddrs};
#[cfg(unix)]
use std::os::unix::net::UnixStream;
#[cfg(unix)]
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use redis::{ConnectionAddr, FromRedisValue, IntoConnectionInfo, Parser, RedisError};

use crate::scripts::LuaScript;
use crate::tls::{self, TlsStream};
use crate::{Error, Options};

/// At most this many idle connections are kept; more are opened under load and closed when
/// they come back to a full pool.
const MAX_IDLE: usize = 64;

/// The longest single socket wait. Short enough that the kernel fires it on time, to the
/// tick (Linux's timer wheel keeps timers under 64 ticks exact to the tick: 64 ms at the
/// highest common tick rate, 1000 Hz), long enough that a wait for a stalled server wakes
/// only 20 times a second.
const SLICE: Duration = Duration::from_millis(50);

/// At most this many helper threads (see [`Pool::on_helper`]) may be left waiting by calls
/// that gave up on them; while that many are, a call that needs one fails at once. A helper
/// is left behind only when its wait outlasted a whole deadline, and a new one for the same
/// address would most likely wait the same way (a full listen backlog, a resolver that does
/// not answer): more threads would only pile up.
const MAX_STRANDED: usize = 4;

/// Where the pool connects.
#[derive(Debug)]
enum Address {
    Tcp {
        host: String,
        port: u16,
        /// Set for `rediss://`.
        tls: Option<tls::Connector>,
    },
    #[cfg(unix)]
    Unix(PathBuf),
}

/// What a new connection sends before its first call.
#[derive(Debug)]
struct Handshake {
    username: Option<String>,
    password: Option<String>,
    db: i64,
}

pub(crate) struct Pool {
    address: Address,
    handshake: Handshake,
    idle: Mutex<Vec<Connection>>,
    timeout: Duration,
    round_trips: AtomicU64,
    /// Helper threads whose callers gave up on them, still blocked (see
    /// [`Self::on_helper`]); shared with the helpers, which count themselves out.
    stranded: Arc<AtomicUsize>,
    /// Bumped when a connection answers that its server does not take writes (see
    /// [`retire_all`]): every connection opened under an older value is dropped rather than
    /// reused, since it was most likely opened to the same server (the address resolved
    /// then, a Unix socket path before it was pointed elsewhere).
    generation: AtomicU64,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool")
            .field("server", &self.address)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

/// The error of a call that ran out of time.
const fn timed_out(timeout: Duration) -> Error {
    Error::Timeout { after: timeout }
}

/// The time left before `deadline`, or the timeout error when none is.
fn left(deadline: Instant, timeout: Duration) -> Result<Duration, Error> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        Err(timed_out(timeout))
    } else {
        Ok(left)
    }
}

/// Whether a server error says that the connection's server does not take the scripts'
/// writes now: a replica (`READONLY`: a primary demoted by a failover keeps its clients'
/// connections), or one still loading its data (`LOADING`) or cut off from its primary
/// (`MASTERDOWN`). Such a connection is not reused (see [`Pool::generation`]).
fn retire_all(result: &Result<impl Sized, Error>) -> bool {
    matches!(
        result,
        Err(Error::Server(err)) if matches!(err.code(), Some("READONLY" | "LOADING" | "MASTERDOWN"))
    )
}

/// What a helper thread (see [`Pool::on_helper`]) and the call waiting for it share.
enum Handoff<T> {
    Running,
    Done(T),
    /// The call's deadline passed first: the helper drops its result and counts itself out
    /// of [`Pool::stranded`].
    Abandoned,
}

impl Pool {
    pub(crate) fn new(url: &str, options: &Options) -> Result<Self, Error> {
        let timeout = options.timeout_value();
        // `rediss://` comes back as `redis://` (`redis` is built without TLS) with settings.
        let (url, tls) = tls::scheme(url, options.tls_value())?;
        let info = url
            .as_ref()
            .into_connection_info()
            .map_err(|err| Error::from_redis(err, timeout))?;
        let address = match info.addr() {
            ConnectionAddr::Tcp(host, port) => Address::Tcp {
                host: host.clone(),
                port: *port,
                tls: tls.map(|tls| tls.connector(host)).transpose()?,
            },
            #[cfg(unix)]
            ConnectionAddr::Unix(path) => Address::Unix(path.clone()),
            other => {
                return Err(Error::Config(format!(
                    "the blocking limiters connect over plain TCP or a Unix socket, not {other}"
                )))
            }
        };
        let redis = info.redis_settings();
        Ok(Self {
            address,
            handshake: Handshake {
                username: redis.username().map(str::to_owned),
                password: redis.password().map(str::to_owned),
                db: redis.db(),
            },
            idle: Mutex::new(Vec::new()),
            timeout,
            round_trips: AtomicU64::new(0),
            stranded: Arc::new(AtomicUsize::new(0)),
            generation: AtomicU64::new(0),
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

    /// Runs `work` on a helper thread and waits for its result until `deadline`: for the
    /// blocking calls std gives no timeout for (resolving a host name, connecting a Unix
    /// socket). When the deadline passes first, the call gets the timeout error and the
    /// helper runs on, stranded, until its blocking call returns by itself (the server
    /// accepts, or goes away; the resolver answers); then it drops what it got. At most
    /// [`MAX_STRANDED`] are left so: past that, calls fail at once with a connection error
    /// instead of leaving more threads behind.
    fn on_helper<T: Send + 'static>(
        &self,
        deadline: Instant,
        what: &str,
        work: impl FnOnce() -> io::Result<T> + Send + 'static,
    ) -> Result<T, Error> {
        let timeout = self.timeout;
        left(deadline, timeout)?;
        // Relaxed: a soft cap; the count publishes nothing.
        let stranded = self.stranded.load(Ordering::Relaxed);
        if stranded >= MAX_STRANDED {
            return Err(Error::Connection(
                io::Error::other(format!(
                    "{what}: {stranded} earlier tries are still blocked past their deadline"
                ))
                .into(),
            ));
        }
        let shared = Arc::new((Mutex::new(Handoff::Running), Condvar::new()));
        let helper_shared = Arc::clone(&shared);
        let helper_stranded = Arc::clone(&self.stranded);
        std::thread::Builder::new()
            .name("slidelimit-connect".into())
            .spawn(move || {
                let result = work();
                let (slot, done) = &*helper_shared;
                let mut slot = slot
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                if matches!(*slot, Handoff::Abandoned) {
                    // Relaxed: see the load; the caller counted this helper in under the
                    // same lock, so this never goes below zero.
                    helper_stranded.fetch_sub(1, Ordering::Relaxed);
                } else {
                    *slot = Handoff::Done(result);
                    done.notify_one();
                }
            })
            .map_err(|err| Error::Connection(err.into()))?;
        let (slot, done) = &*shared;
        let mut slot = slot
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        loop {
            // Only this loop sets `Abandoned`: what it takes out is `Running` or `Done`.
            if let Handoff::Done(result) = std::mem::replace(&mut *slot, Handoff::Running) {
                return result.map_err(|err| Error::Connection(err.into()));
            }
            let wait = deadline.saturating_duration_since(Instant::now());
            if wait.is_zero() {
                *slot = Handoff::Abandoned;
                // Relaxed: see the load.
                self.stranded.fetch_add(1, Ordering::Relaxed);
                return Err(timed_out(timeout));
            }
            slot = done
                .wait_timeout(slot, wait)
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .0;
        }
    }

    /// The addresses `host` resolves to, by `deadline`: a literal address at once, a name
    /// on a helper thread (the system resolver may wait seconds for a server that does not
    /// answer).
    fn resolve(&self, host: &str, port: u16, deadline: Instant) -> Result<Vec<SocketAddr>, Error> {
        if let Ok(ip) = host.parse::<IpAddr>() {
            return Ok(vec![SocketAddr::new(ip, port)]);
        }
        let name = host.to_owned();
        let addresses = self.on_helper(deadline, &format!("resolving {host}"), move || {
            (name.as_str(), port)
                .to_socket_addrs()
                .map(Iterator::collect::<Vec<_>>)
        })?;
        if addresses.is_empty() {
            return Err(Error::Connection(
                io::Error::new(
                    io::ErrorKind::NotFound,
                    format!("{host} resolves to no address"),
                )
                .into(),
            ));
        }
        Ok(addresses)
    }

    /// A TCP connection to the first of `addresses` that accepts by `deadline`. Each try
    /// gets an even share of the time left (the last one all of it), so an address that
    /// drops connection attempts (an unreachable family, a host that is down) does not take
    /// the whole budget from the ones after it.
    fn connect_tcp(&self, addresses: &[SocketAddr], deadline: Instant) -> Result<TcpStream, Error> {
        let timeout = self.timeout;
        let mut last_error = None;
        for (tried, address) in addresses.iter().enumerate() {
            let tries_left = u32::try_from(addresses.len() - tried).unwrap_or(u32::MAX);
            let share = left(deadline, timeout)? / tries_left;
            // A share rounded down to nothing still gets a try (connect_timeout refuses 0).
            match TcpStream::connect_timeout(address, share.max(Duration::from_micros(1))) {
                Ok(stream) => return Ok(stream),
                Err(err) => last_error = Some(err),
            }
        }
        match last_error {
            _ if Instant::now() >= deadline => Err(timed_out(timeout)),
            Some(err) => Err(Error::Connection(err.into())),
            None => Err(Error::Connection(
                io::Error::new(io::ErrorKind::NotFound, "no address to connect to").into(),
            )),
        }
    }

    /// A new connection, connected and through its handshake by `deadline`.
    fn connect(&self, deadline: Instant) -> Result<Connection, Error> {
        let timeout = self.timeout;
        // Read before dialing: a connection opened after a bump of the generation carries
        // the new one.
        // Relaxed: the generation only tells connections apart; nothing is published with
        // it, and a connection that misses a concurrent bump is merely dropped later.
        let generation = self.generation.load(Ordering::Relaxed);
        let stream = match &self.address {
            Address::Tcp { host, port, tls } => {
                let addresses = self.resolve(host, *port, deadline)?;
                let stream = self.connect_tcp(&addresses, deadline)?;
                // Every call is one small request awaiting its reply.
                stream
                    .set_nodelay(true)
                    .map_err(|err| Error::Connection(err.into()))?;
                match tls {
                    None => Stream::Tcp(stream),
                    Some(connector) => Stream::Tls(Box::new(connector.start(stream)?)),
                }
            }
            #[cfg(unix)]
            Address::Unix(path) => {
                let dial = path.clone();
                Stream::Unix(self.on_helper(
                    deadline,
                    &format!("connecting {}", path.display()),
                    move || UnixStream::connect(dial),
                )?)
            }
        };
        let mut con = Connection {
            stream,
            generation,
            read_wait: None,
            write_wait: None,
            parser: Parser::new(),
        };
        con.handshake_tls(deadline, timeout)?;
        let Handshake {
            username,
            password,
            db,
        } = &self.handshake;
        if let Some(password) = password {
            let mut auth = redis::cmd("AUTH");
            auth.arg(username.as_deref()).arg(password);
            let () = con.query(&auth, deadline, timeout)?;
        }
        if *db != 0 {
            let () = con.query(redis::cmd("SELECT").arg(*db), deadline, timeout)?;
        }
        Ok(con)
    }

    /// Sends one command on `con` and decodes its reply, counting the round trip.
    fn send<T: FromRedisValue>(
        &self,
        con: &mut Connection,
        cmd: &redis::Cmd,
        deadline: Instant,
    ) -> Result<T, Error> {
        // Relaxed: a statistics counter.
        self.round_trips.fetch_add(1, Ordering::Relaxed);
        crate::metrics::round_trip();
        con.query(cmd, deadline, self.timeout)
    }

    /// Runs a script by SHA, loading it first if this process has not yet, and again if the
    /// server answers NOSCRIPT, all within the timeout. Decoded as `T`.
    pub(crate) fn eval<T: FromRedisValue>(
        &self,
        script: &LuaScript,
        keys: &[&str],
        args: &[&str],
    ) -> Result<T, Error> {
        self.eval_by(Instant::now() + self.timeout, script, keys, args)
    }

    /// [`Self::eval`] by an earlier `deadline`, on a pooled or new connection (a caller that
    /// already waited, for example for a lease's renewal, spends only what is left of its
    /// timeout).
    ///
    /// A pooled connection that fails with a connection error (its server closed it while
    /// the call was on its way: a restart, an idle timeout, a NAT that forgot it) or that
    /// answers as [`retire_all`] says (a failover demoted its server) gets the call retried
    /// once, on a new connection, within the same deadline. Retrying is safe although the
    /// lost request may have run: every script here only ever records more when run twice,
    /// never less (`check` and `hit` record their hits again, `take` grants a second lease
    /// whose first nobody holds, its give-back removes named members, which removes nothing
    /// the second time; `status` writes nothing that counts). So a repeated request can
    /// refuse a later caller early, until the extra hits leave the window, but never admit
    /// more than the limit. A timeout is not retried: the server may be slow rather than
    /// gone, and a second try would double its load when it can least take it.
    pub(crate) fn eval_by<T: FromRedisValue>(
        &self,
        deadline: Instant,
        script: &LuaScript,
        keys: &[&str],
        args: &[&str],
    ) -> Result<T, Error> {
        left(deadline, self.timeout)?;
        let (mut con, pooled) = match self.take_idle() {
            Some(con) => (con, true),
            None => (self.connect(deadline)?, false),
        };
        let mut result = self.eval_on(&mut con, deadline, script, keys, args);
        if retire_all(&result) {
            // Relaxed: see `connect`.
            self.generation.fetch_add(1, Ordering::Relaxed);
        }
        let retry = pooled && (retire_all(&result) || matches!(result, Err(Error::Connection(_))));
        if retry {
            drop(con);
            con = self.connect(deadline)?;
            result = self.eval_on(&mut con, deadline, script, keys, args);
            if retire_all(&result) {
                // Relaxed: see `connect`.
                self.generation.fetch_add(1, Ordering::Relaxed);
            }
        }
        self.put_back(con, &result);
        result
    }

    /// The most recently used idle connection still fit for a call: connections of an
    /// older generation, and those whose server closed them, are dropped on the way.
    fn take_idle(&self) -> Option<Connection> {
        loop {
            let mut con = self.idle().pop()?;
            // Relaxed: see `connect`.
            if con.generation == self.generation.load(Ordering::Relaxed) && con.is_open() {
                return Some(con);
            }
        }
    }

    /// Keeps `con` for a later call if its call left it in step with its server.
    fn put_back<T>(&self, con: Connection, result: &Result<T, Error>) {
        // A server error (the script raised, NOSCRIPT handled below) leaves the connection
        // in step, unless it says that the server no longer takes writes; a timeout, an
        // I/O error or a reply of the wrong shape may not leave it in step.
        let reusable = match result {
            Ok(_) => true,
            Err(Error::Server(_)) => !retire_all(result),
            Err(_) => false,
        };
        // Relaxed: see `connect`.
        if reusable && con.generation == self.generation.load(Ordering::Relaxed) {
            let mut idle = self.idle();
            if idle.len() < MAX_IDLE {
                idle.push(con);
            }
        }
    }

    fn eval_on<T: FromRedisValue>(
        &self,
        con: &mut Connection,
        deadline: Instant,
        script: &LuaScript,
        keys: &[&str],
        args: &[&str],
    ) -> Result<T, Error> {
        let load = |con: &mut Connection| -> Result<String, Error> {
            let sha: String = self.send(
                con,
                redis::cmd("SCRIPT").arg("LOAD").arg(script.source),
                deadline,
            )?;
            script.set_sha(sha.clone());
            Ok(sha)
        };
        let call = |sha: &str| {
            let mut cmd = redis::cmd("EVALSHA");
            cmd.arg(sha).arg(keys.len()).arg(keys).arg(args);
            cmd
        };
        let sha = match script.sha() {
            Some(sha) => sha,
            None => load(con)?,
        };
        match self.send(con, &call(&sha), deadline) {
            Err(Error::Server(err))
                if err.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::NoScript) =>
            {
                let sha = load(con)?;
                self.send(con, &call(&sha), deadline)
            }
            other => other,
        }
    }
}

/// A socket to the server.
enum Stream {
    Tcp(TcpStream),
    #[cfg(unix)]
    Unix(UnixStream),
    /// `rediss://` (feature `tls`).
    Tls(Box<TlsStream>),
}

impl Stream {
    /// Sets the socket's read or write timeout.
    fn set_wait(&self, write: bool, wait: Duration) -> io::Result<()> {
        match (self, write) {
            (Self::Tcp(tcp), false) => tcp.set_read_timeout(Some(wait)),
            (Self::Tcp(tcp), true) => tcp.set_write_timeout(Some(wait)),
            #[cfg(unix)]
            (Self::Unix(unix), false) => unix.set_read_timeout(Some(wait)),
            #[cfg(unix)]
            (Self::Unix(unix), true) => unix.set_write_timeout(Some(wait)),
            (Self::Tls(tls), false) => tls.socket().set_read_timeout(Some(wait)),
            (Self::Tls(tls), true) => tls.socket().set_write_timeout(Some(wait)),
        }
    }
}

/// One blocking connection: its socket, the socket waits currently set (to skip setting
/// them again), and the parser holding any bytes read past a reply.
struct Connection {
    stream: Stream,
    /// [`Pool::generation`] when it was opened.
    generation: u64,
    read_wait: Option<Duration>,
    write_wait: Option<Duration>,
    parser: Parser,
}

impl Connection {
    /// Whether the server has neither closed the connection nor sent anything unasked: one
    /// read that does not wait. An idle connection has nothing to read; an end of file
    /// (the server restarted, or closed it after its idle `timeout`), a reset, or stray
    /// bytes (out of step) all make it unfit. Three system calls on every reuse: 0.7-0.8 µs
    /// on the 2-core test machine, against 10.5-13 µs for a bare `PING` round trip over
    /// loopback (20,000 of each, three runs; a script call takes longer still). Without it,
    /// each connection closed while pooled cost a failed write and read before the retry.
    fn is_open(&mut self) -> bool {
        fn probe(mut stream: impl Read, set_nonblocking: impl Fn(bool) -> io::Result<()>) -> bool {
            if set_nonblocking(true).is_err() {
                return false;
            }
            let open = matches!(
                stream.read(&mut [0; 1]),
                Err(err) if err.kind() == io::ErrorKind::WouldBlock
            );
            // A socket left nonblocking would make the next read fail at once: dropped.
            set_nonblocking(false).is_ok() && open
        }
        match &mut self.stream {
            Stream::Tcp(tcp) => probe(&*tcp, |on| tcp.set_nonblocking(on)),
            #[cfg(unix)]
            Stream::Unix(unix) => probe(&*unix, |on| unix.set_nonblocking(on)),
            // Through rustls: a session ticket waiting is no reason to drop it.
            Stream::Tls(tls) => tls.is_open(),
        }
    }

    /// A TLS connection's handshake, by `deadline` (a plain connection has none).
    fn handshake_tls(&mut self, deadline: Instant, timeout: Duration) -> Result<(), Error> {
        if !matches!(self.stream, Stream::Tls(_)) {
            return Ok(());
        }
        let mut io = self.deadlined(deadline);
        let done = io.retry(true, |stream| match stream {
            Stream::Tls(tls) => tls.handshake_step(),
            _ => Ok(0),
        });
        match done {
            Ok(_) => Ok(()),
            Err(_) if io.expired => Err(timed_out(timeout)),
            Err(err) => Err(Error::Connection(err.into())),
        }
    }

    /// The connection's socket, giving up at `deadline`.
    fn deadlined(&mut self, deadline: Instant) -> Deadlined<'_> {
        Deadlined {
            stream: &mut self.stream,
            read_wait: &mut self.read_wait,
            write_wait: &mut self.write_wait,
            deadline,
            expired: false,
        }
    }

    /// Sends `cmd` and reads its reply, by `deadline`.
    fn query<T: FromRedisValue>(
        &mut self,
        cmd: &redis::Cmd,
        deadline: Instant,
        timeout: Duration,
    ) -> Result<T, Error> {
        let mut io = Deadlined {
            stream: &mut self.stream,
            read_wait: &mut self.read_wait,
            write_wait: &mut self.write_wait,
            deadline,
            expired: false,
        };
        let reply = io
            .write_all(&cmd.get_packed_command())
            .and_then(|()| io.flush())
            .map_err(RedisError::from)
            .and_then(|()| self.parser.parse_value(&mut io));
        let value = match reply {
            Ok(value) => value,
            Err(_) if io.expired => return Err(timed_out(timeout)),
            Err(err) => return Err(Error::from_redis(err, timeout)),
        };
        let value = value
            .extract_error()
            .map_err(|err| Error::from_redis(err, timeout))?;
        T::from_redis_value(value).map_err(|err| Error::from_redis(err.into(), timeout))
    }
}

/// A connection's socket as [`Read`] and [`Write`] that give up at `deadline` (an
/// [`io::ErrorKind::TimedOut`] error, and `expired` set), waiting at most [`SLICE`] at a
/// time.
struct Deadlined<'a> {
    stream: &'a mut Stream,
    read_wait: &'a mut Option<Duration>,
    write_wait: &'a mut Option<Duration>,
    deadline: Instant,
    expired: bool,
}

impl Deadlined<'_> {
    /// The next wait: [`SLICE`], or less near the deadline; an error once it has passed.
    fn next_wait(&mut self) -> io::Result<Duration> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            self.expired = true;
            return Err(io::ErrorKind::TimedOut.into());
        }
        Ok(left.min(SLICE))
    }

    /// Runs `op` (one read or write) until it does something or the deadline passes, each
    /// try waiting at most [`Self::next_wait`] (set on the socket only when it changed).
    /// A TLS step may read or write whichever its session needs (a handshake, an alert),
    /// so both of its waits are set.
    fn retry(
        &mut self,
        write: bool,
        mut op: impl FnMut(&mut Stream) -> io::Result<usize>,
    ) -> io::Result<usize> {
        let both = matches!(self.stream, Stream::Tls(_));
        loop {
            let wait = self.next_wait()?;
            if (write || both) && *self.write_wait != Some(wait) {
                self.stream.set_wait(true, wait)?;
                *self.write_wait = Some(wait);
            }
            if (!write || both) && *self.read_wait != Some(wait) {
                self.stream.set_wait(false, wait)?;
                *self.read_wait = Some(wait);
            }
            match op(self.stream) {
                // A wait that ran out, a signal, or a TLS step that made progress short of
                // what was asked: the deadline decides whether to go on.
                Err(err)
                    if matches!(
                        err.kind(),
                        io::ErrorKind::WouldBlock
                            | io::ErrorKind::TimedOut
                            | io::ErrorKind::Interrupted
                    ) => {}
                other => return other,
            }
        }
    }
}

impl Read for Deadlined<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.retry(false, |stream| match stream {
            Stream::Tcp(tcp) => tcp.read(buf),
            #[cfg(unix)]
            Stream::Unix(unix) => unix.read(buf),
            Stream::Tls(tls) => tls.read_step(buf),
        })
    }
}

impl Write for Deadlined<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.retry(true, |stream| match stream {
            Stream::Tcp(tcp) => tcp.write(buf),
            #[cfg(unix)]
            Stream::Unix(unix) => unix.write(buf),
            Stream::Tls(tls) => tls.write_step(buf),
        })
    }

    fn flush(&mut self) -> io::Result<()> {
        // A plain socket is unbuffered: every write went to it. A TLS session queues the
        // encrypted request until it is sent here.
        if !matches!(self.stream, Stream::Tls(_)) {
            return Ok(());
        }
        self.retry(true, |stream| match stream {
            Stream::Tls(tls) => tls.flush_step(),
            _ => Ok(0),
        })
        .map(drop)
    }
}

#[cfg(test)]
mod tests {
    //! The share of the time each resolved address gets (a host name with several
    //! addresses cannot be made on loopback by a test: the addresses are given directly).

    use std::net::{TcpListener, TcpStream};
    use std::time::{Duration, Instant};

    use super::Pool;
    use crate::Options;

    /// An address that drops connection attempts (a host that is down, a family with no
    /// route) takes only its share: the next address still connects within the deadline.
    #[test]
    fn an_address_that_drops_connects_leaves_time_for_the_next() {
        // A listener that never accepts, its backlog filled: Linux drops further SYNs, so a
        // connect to it waits out its whole timeout.
        let full = TcpListener::bind("127.0.0.1:0").expect("bind");
        let dropping = full.local_addr().expect("address");
        let mut held = Vec::new();
        while let Ok(stream) = TcpStream::connect_timeout(&dropping, Duration::from_millis(50)) {
            held.push(stream);
            assert!(held.len() < 10_000, "the backlog never filled");
        }
        let open = TcpListener::bind("127.0.0.1:0").expect("bind");
        let accepting = open.local_addr().expect("address");

        let timeout = Duration::from_millis(400);
        let options = Options::new().timeout(timeout);
        let pool = Pool::new("redis://127.0.0.1:1/", &options).expect("pool");
        let deadline = Instant::now() + timeout;
        let connected = pool.connect_tcp(&[dropping, accepting], deadline);
        let stream = connected.expect("the second address connects in what the first left");
        assert_eq!(stream.peer_addr().expect("peer"), accepting);
    }
}
