//! A small pool of blocking connections, every call bounded by one deadline.
//!
//! # One deadline per call
//! A call's deadline is fixed when it starts, and everything the call does spends it:
//! taking a pooled connection or connecting (each resolved address in turn, with what is
//! left), the handshake (`AUTH`, `SELECT`), loading the script and the script call. Nothing
//! waits past it: a connection speaks RESP itself over a plain socket (the `redis` crate's
//! parser decodes the replies), and every blocking read or write waits at most [`SLICE`]
//! before it looks at the deadline again. So a call ends within the timeout plus the
//! lateness of one short socket wait, a kernel tick or two (`tests/it/timeouts.rs` asserts
//! the timeout plus 200 ms and measures 408 ms at 400 ms, on a 250 Hz kernel).
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
//! Not bounded: resolving a host name (the system resolver's own timeouts apply; give an
//! address, or a name the resolver answers locally) and connecting a Unix socket (local).
//! The connection speaks RESP2 and does not name itself (no `HELLO`, no `CLIENT SETINFO`);
//! a `protocol` in the URL is ignored, TLS (`rediss://`) is refused.
//!
//! A connection goes back to the pool only if its call ended cleanly: after a timeout or an
//! I/O error it may still hold a late reply, so it is dropped and never read again.

use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
#[cfg(unix)]
use std::os::unix::net::UnixStream;
#[cfg(unix)]
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use redis::{ConnectionAddr, FromRedisValue, IntoConnectionInfo, Parser, RedisError};

use crate::scripts::LuaScript;
use crate::Error;

/// At most this many idle connections are kept; more are opened under load and closed when
/// they come back to a full pool.
const MAX_IDLE: usize = 64;

/// The longest single socket wait. Short enough that the kernel fires it on time, to the
/// tick (Linux's timer wheel keeps timers under 64 ticks exact to the tick: 64 ms at the
/// highest common tick rate, 1000 Hz), long enough that a wait for a stalled server wakes
/// only 20 times a second.
const SLICE: Duration = Duration::from_millis(50);

/// Where the pool connects.
#[derive(Debug)]
enum Address {
    Tcp {
        host: String,
        port: u16,
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

impl Pool {
    pub(crate) fn new(url: &str, timeout: Duration) -> Result<Self, Error> {
        let info = url
            .into_connection_info()
            .map_err(|err| Error::from_redis(err, timeout))?;
        let address = match info.addr() {
            ConnectionAddr::Tcp(host, port) => Address::Tcp {
                host: host.clone(),
                port: *port,
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

    /// A new connection, connected and through its handshake by `deadline`.
    fn connect(&self, deadline: Instant) -> Result<Connection, Error> {
        let timeout = self.timeout;
        let stream = match &self.address {
            Address::Tcp { host, port } => {
                let addresses = (host.as_str(), *port)
                    .to_socket_addrs()
                    .map_err(|err| Error::Connection(err.into()))?;
                let mut last_error = None;
                let mut connected = None;
                // Each address gets only what the earlier ones left.
                for address in addresses {
                    match TcpStream::connect_timeout(&address, left(deadline, timeout)?) {
                        Ok(stream) => {
                            connected = Some(stream);
                            break;
                        }
                        Err(err) => last_error = Some(err),
                    }
                }
                let stream = match (connected, last_error) {
                    (Some(stream), _) => stream,
                    (None, Some(_)) if Instant::now() >= deadline => {
                        return Err(timed_out(timeout))
                    }
                    (None, Some(err)) => return Err(Error::Connection(err.into())),
                    (None, None) => {
                        return Err(Error::Connection(
                            io::Error::new(
                                io::ErrorKind::NotFound,
                                format!("{host} resolves to no address"),
                            )
                            .into(),
                        ))
                    }
                };
                // Every call is one small request awaiting its reply.
                stream
                    .set_nodelay(true)
                    .map_err(|err| Error::Connection(err.into()))?;
                Stream::Tcp(stream)
            }
            #[cfg(unix)]
            Address::Unix(path) => Stream::Unix(
                UnixStream::connect(path).map_err(|err| Error::Connection(err.into()))?,
            ),
        };
        let mut con = Connection {
            stream,
            read_wait: None,
            write_wait: None,
            parser: Parser::new(),
        };
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
    pub(crate) fn eval_by<T: FromRedisValue>(
        &self,
        deadline: Instant,
        script: &LuaScript,
        keys: &[&str],
        args: &[&str],
    ) -> Result<T, Error> {
        left(deadline, self.timeout)?;
        let pooled = self.idle().pop();
        let mut con = match pooled {
            Some(con) => con,
            None => self.connect(deadline)?,
        };
        let result = self.eval_on(&mut con, deadline, script, keys, args);
        // A server error (the script raised, NOSCRIPT handled below) leaves the connection
        // in step; a timeout, an I/O error or a reply of the wrong shape may not.
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
}

/// One blocking connection: its socket, the socket waits currently set (to skip setting
/// them again), and the parser holding any bytes read past a reply.
struct Connection {
    stream: Stream,
    read_wait: Option<Duration>,
    write_wait: Option<Duration>,
    parser: Parser,
}

impl Connection {
    /// Sends `cmd` and reads its reply, by `deadline`.
    fn query<T: FromRedisValue>(
        &mut self,
        cmd: &redis::Cmd,
        deadline: Instant,
        timeout: Duration,
    ) -> Result<T, Error> {
        let mut io = Deadlined {
            stream: &self.stream,
            read_wait: &mut self.read_wait,
            write_wait: &mut self.write_wait,
            deadline,
            expired: false,
        };
        let reply = io
            .write_all(&cmd.get_packed_command())
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
    stream: &'a Stream,
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
    fn retry(
        &mut self,
        write: bool,
        mut op: impl FnMut(&Stream) -> io::Result<usize>,
    ) -> io::Result<usize> {
        loop {
            let wait = self.next_wait()?;
            let current = if write {
                &mut *self.write_wait
            } else {
                &mut *self.read_wait
            };
            if *current != Some(wait) {
                match (self.stream, write) {
                    (Stream::Tcp(tcp), false) => tcp.set_read_timeout(Some(wait))?,
                    (Stream::Tcp(tcp), true) => tcp.set_write_timeout(Some(wait))?,
                    #[cfg(unix)]
                    (Stream::Unix(unix), false) => unix.set_read_timeout(Some(wait))?,
                    #[cfg(unix)]
                    (Stream::Unix(unix), true) => unix.set_write_timeout(Some(wait))?,
                }
                *current = Some(wait);
            }
            match op(self.stream) {
                // A wait that ran out (or a signal): the deadline decides whether to go on.
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
            // `Read` for `&TcpStream`: reading needs no `&mut` of the socket.
            Stream::Tcp(tcp) => {
                let mut tcp = tcp;
                tcp.read(buf)
            }
            #[cfg(unix)]
            Stream::Unix(unix) => {
                let mut unix = unix;
                unix.read(buf)
            }
        })
    }
}

impl Write for Deadlined<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.retry(true, |stream| match stream {
            Stream::Tcp(tcp) => {
                let mut tcp = tcp;
                tcp.write(buf)
            }
            #[cfg(unix)]
            Stream::Unix(unix) => {
                let mut unix = unix;
                unix.write(buf)
            }
        })
    }

    fn flush(&mut self) -> io::Result<()> {
        // Unbuffered: every write went to the socket.
        Ok(())
    }
}
