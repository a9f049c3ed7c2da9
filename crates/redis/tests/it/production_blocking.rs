//! The blocking limiter's pool against servers that fail as production servers do: stopped
//! (`SIGSTOP`) with its listen backlog full, restarted or closing idle connections while
//! connections are pooled, demoted by a failover that moves its address to the promoted
//! replica, and named by a host name that does not resolve. Each test states the promise
//! the pool keeps (see `src/pool.rs`).
//!
//! Before the fix (`pool.rs` as of `1dfabd0`): a Unix-socket connect to a stopped server
//! blocked until the server resumed (this test's own watchdog ended it after 10 s); 8 of the
//! 20 calls after a restart failed ("unexpected end of file"), and so did every call on a
//! connection the server's idle `timeout` had closed; after a failover no call succeeded
//! again (`READONLY`, every time, on the pooled connections to the demoted primary).

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use slidelimit_redis::{Error, Options, RedisLimiter};

use crate::{limit, Server};

/// The timeout of the limiters whose calls are timed here.
const SHORT: Duration = Duration::from_millis(150);

/// What the pool promises over the timeout: the lateness of its last short socket wait.
const BOUND: Duration = Duration::from_millis(50);

/// Generous: the calls of the recovery tests must succeed, not be quick.
const LONG: Duration = Duration::from_secs(5);

/// A minute in the Redis limiters' microsecond ticks.
const MINUTE: u64 = 60_000_000;

fn limiter(url: &str, prefix: &str, timeout: Duration) -> RedisLimiter {
    let options = Options::new().prefix(prefix).timeout(timeout);
    RedisLimiter::new(url, limit(1_000_000, MINUTE), options).expect("limiter")
}

/// The Unix socket a server started with [`unix_server`] listens on.
fn socket_of(server: &Server) -> PathBuf {
    server.dir().join("redis.sock")
}

fn unix_url(path: &Path) -> String {
    format!("unix://{}", path.display())
}

/// A server on a Unix socket too, with `more` arguments.
fn unix_server(more: &[&str]) -> Server {
    let mut args = vec![
        "--unixsocket",
        "{dir}/redis.sock",
        "--unixsocketperm",
        "700",
    ];
    args.extend_from_slice(more);
    Server::start_with(&args)
}

/// The TCP port of `server` (from its URL).
fn port_of(server: &Server) -> u16 {
    let url = server.url();
    let port = url
        .trim_end_matches('/')
        .rsplit(':')
        .next()
        .expect("a port in the url");
    port.parse().expect("a numeric port")
}

/// A field of `INFO section`, over a new connection (one the server's idle timeout has not
/// closed).
fn info(server: &Server, section: &str, field: &str) -> String {
    let mut con = server.connection();
    let text: String = redis::cmd("INFO")
        .arg(section)
        .query(&mut con)
        .expect("INFO");
    text.lines()
        .find_map(|line| line.strip_prefix(&format!("{field}:")))
        .unwrap_or_else(|| panic!("no {field} in INFO {section}: {text}"))
        .trim()
        .to_owned()
}

/// Connections open to `server`, the one asking included.
fn clients(server: &Server) -> usize {
    info(server, "clients", "connected_clients")
        .parse()
        .expect("a count")
}

/// Fills the pool of `limiter` with `count` connections: with the server stopped, `count`
/// calls wait at once, each on a connection of its own, and all go back to the pool when the
/// server resumes.
fn pool_connections(server: &Server, limiter: &RedisLimiter, count: usize) {
    server.signal("-STOP");
    std::thread::scope(|scope| {
        let calls: Vec<_> = (0..count)
            .map(|_| scope.spawn(|| limiter.check_and_hit("warm")))
            .collect();
        // Every call is connected and waiting for its reply long before this.
        std::thread::sleep(Duration::from_millis(300));
        server.signal("-CONT");
        for call in calls {
            let decision = call.join().expect("no panic").expect("the warm-up call");
            assert!(decision.admitted, "a limit of a million admits the warm-up");
        }
    });
}

/// Runs `calls` calls of `limiter` on a thread of their own and returns how long each took
/// and how it ended; fails the test if they are not all over within `limit` (so that a call
/// blocked for good fails the test instead of hanging it).
fn timed_calls(
    limiter: RedisLimiter,
    calls: usize,
    limit: Duration,
) -> Vec<(Duration, Result<bool, Error>)> {
    let (send, receive) = mpsc::channel();
    std::thread::spawn(move || {
        for _ in 0..calls {
            let start = Instant::now();
            let result = limiter.check_and_hit("k").map(|d| d.admitted);
            if send.send((start.elapsed(), result)).is_err() {
                return;
            }
        }
    });
    let deadline = Instant::now() + limit;
    (0..calls)
        .map(|call| {
            let wait = deadline.saturating_duration_since(Instant::now());
            receive
                .recv_timeout(wait)
                .unwrap_or_else(|_| panic!("call {call} of {calls} still blocked after {limit:?}"))
        })
        .collect()
}

/// Every call to a stopped server ends within the timeout plus [`BOUND`], over a Unix
/// socket as over TCP, also once its listen backlog is full (a backlog of 2 here, so that
/// a few calls fill it; the default 511 filled after a few hundred) and a new connection
/// waits in `connect` itself.
#[test]
fn calls_to_a_stopped_server_end_within_the_timeout() {
    let server = unix_server(&["--tcp-backlog", "2"]);
    for url in [unix_url(&socket_of(&server)), server.url()] {
        let limiter = limiter(&url, "stopped", SHORT);
        assert!(limiter.check_and_hit("k").expect("warm-up").admitted);
        server.signal("-STOP");
        // The first call times out on the pooled connection; the next ones connect and
        // time out too, each leaving its connection in the backlog, until it is full.
        let results = timed_calls(limiter, 12, Duration::from_secs(10));
        server.signal("-CONT");
        eprintln!("{url}: {results:?}");
        for (call, (elapsed, result)) in results.iter().enumerate() {
            assert!(
                matches!(result, Err(Error::Timeout { .. } | Error::Connection(_))),
                "{url}, call {call}: {result:?}"
            );
            assert!(
                *elapsed < SHORT + BOUND,
                "{url}, call {call} took {elapsed:?}: {results:?}"
            );
        }
    }
    // The connects left waiting go through once the server resumes: it answers again.
    let limiter = limiter(&unix_url(&socket_of(&server)), "stopped", SHORT);
    let start = Instant::now();
    while limiter.check_and_hit("k").is_err() {
        assert!(start.elapsed() < LONG, "no call succeeded after SIGCONT");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Pooled connections to a server that restarted are not used: once it answers PING again,
/// every call succeeds.
#[test]
fn after_a_restart_no_call_fails() {
    let mut server = Server::start();
    let limiter = limiter(&server.url(), "restart", LONG);
    pool_connections(&server, &limiter, 8);
    assert!(
        clients(&server) > 8,
        "8 pooled connections and the one asking"
    );
    server.kill();
    server.restart();
    for call in 0..20 {
        let decision = limiter.check_and_hit("k");
        assert!(
            decision.is_ok(),
            "call {call} after the restart: {decision:?}"
        );
    }
}

/// Pooled connections that the server closed after its idle `timeout` (1 s here) are not
/// used: every later call succeeds.
#[test]
fn connections_the_server_closed_when_idle_are_not_used() {
    let server = Server::start_with(&["--timeout", "1"]);
    let limiter = limiter(&server.url(), "idle", LONG);
    pool_connections(&server, &limiter, 8);
    let start = Instant::now();
    while clients(&server) > 1 {
        assert!(start.elapsed() < Duration::from_secs(10), "idle timeout");
        std::thread::sleep(Duration::from_millis(100));
    }
    for call in 0..20 {
        let decision = limiter.check_and_hit("k");
        assert!(
            decision.is_ok(),
            "call {call} after the idle timeout: {decision:?}"
        );
    }
}

fn query<T: redis::FromRedisValue>(server: &Server, cmd: &redis::Cmd) -> T {
    cmd.query(&mut server.connection())
        .unwrap_or_else(|err| panic!("{cmd:?}: {err}"))
}

/// Points the symlink `link` at `target`, in one step (a rename over it).
fn point(link: &Path, target: &Path) {
    let next = link.with_extension("next");
    let _ = std::fs::remove_file(&next);
    std::os::unix::fs::symlink(target, &next).expect("symlink");
    std::fs::rename(&next, link).expect("rename the symlink");
}

/// After a failover that moves the address the limiter dials to the promoted replica (a
/// DNS name, here a symlink to a Unix socket) while the limiter's pooled connections stay
/// on the demoted primary, every call succeeds, on the new primary: a connection that
/// answers `READONLY` or `LOADING` is dropped with every connection opened before it, and
/// the call is retried once on a new one.
#[test]
fn after_a_failover_calls_reach_the_new_primary() {
    let old = unix_server(&[]);
    let new = unix_server(&[]);
    let link = old.dir().join("primary.sock");
    point(&link, &socket_of(&old));
    let limiter = limiter(&unix_url(&link), "failover", LONG);
    pool_connections(&old, &limiter, 4);
    assert!(clients(&old) > 4, "4 pooled connections and the one asking");

    // `new` follows `old` until it has its data, then takes over.
    let () = query(
        &new,
        redis::cmd("REPLICAOF").arg("127.0.0.1").arg(port_of(&old)),
    );
    let start = Instant::now();
    while info(&new, "replication", "master_link_status") != "up" {
        assert!(start.elapsed() < Duration::from_secs(10), "replication");
        std::thread::sleep(Duration::from_millis(50));
    }
    let () = query(&new, redis::cmd("REPLICAOF").arg("NO").arg("ONE"));
    let () = query(
        &old,
        redis::cmd("REPLICAOF").arg("127.0.0.1").arg(port_of(&new)),
    );
    point(&link, &socket_of(&new));

    for call in 0..10 {
        let decision = limiter.check_and_hit("k");
        assert!(
            decision.is_ok(),
            "call {call} after the failover: {decision:?}"
        );
    }
    // The scripts ran on the new primary (a replica applies its primary's script effects,
    // never an EVALSHA of its own).
    let calls = info(&new, "commandstats", "cmdstat_evalsha");
    assert!(calls.starts_with("calls="), "{calls}");
}

/// A host name that does not resolve gives a typed error within the timeout, and one that
/// resolves locally (`localhost`) connects: resolving runs within the call's deadline.
#[test]
fn host_names_are_resolved_within_the_timeout() {
    let unresolvable = limiter("redis://nonexistent.invalid:6379/", "dns", SHORT);
    for call in 0..3 {
        let start = Instant::now();
        let result = unresolvable.check_and_hit("k");
        let elapsed = start.elapsed();
        assert!(
            matches!(result, Err(Error::Connection(_) | Error::Timeout { .. })),
            "call {call}: {result:?}"
        );
        assert!(elapsed < SHORT + BOUND, "call {call} took {elapsed:?}");
    }
    let server = crate::shared();
    let url = server.url().replace("127.0.0.1", "localhost");
    let local = limiter(&url, "dns", LONG);
    assert!(local.check_and_hit("k").expect("localhost").admitted);
}
