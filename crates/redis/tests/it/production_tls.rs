//! TLS (`rediss://`, feature `tls`) for the blocking limiters, against a real `redis-server`
//! with its TLS port on (Debian's is built with TLS), and certificates each test makes with
//! the `openssl` command line (`bash ci/redis.sh` installs it): a test CA, a server
//! certificate for `127.0.0.1` and `localhost`, a client certificate, and a second CA that
//! signed neither. The server keeps a plain port too, for readiness and for inspecting what
//! the limiters wrote.

#![cfg(feature = "tls")]

use std::io::Read;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use slidelimit_redis::{Error, LeasedLimiter, Options, RedisLimiter, Tls};

use crate::server::{hand_out_extra_port, SilentListener};
use crate::{limit, Server};

/// Certificates in a temporary directory of the test's own, removed on drop.
pub(crate) struct Pki {
    dir: PathBuf,
}

fn openssl(dir: &Path, args: &[&str]) {
    let output = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|err| {
            panic!("cannot run openssl ({err}): the TLS tests need it (bash ci/redis.sh)")
        });
    assert!(
        output.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

impl Pki {
    pub(crate) fn new() -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "slidelimit-tls-{}-{}",
            std::process::id(),
            // Relaxed: a counter that only tells directories apart.
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).expect("temp dir");
        // P-256 keys: quick to make, and both rustls (ring) and OpenSSL take them.
        let ec = "-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes";
        for ca in ["ca", "other-ca"] {
            let args = format!("req -x509 {ec} -keyout {ca}.key -out {ca}.crt -days 2");
            let mut args: Vec<&str> = args.split(' ').collect();
            let subject = format!("/CN=slidelimit {ca}");
            args.extend(["-subj", &subject]);
            openssl(&dir, &args);
        }
        // webpki checks the name in the subject alternative names only, and refuses a CA
        // certificate as the server's: a leaf with both said.
        std::fs::write(
            dir.join("leaf.ext"),
            "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature\n\
             extendedKeyUsage=serverAuth,clientAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n",
        )
        .expect("write leaf.ext");
        for (serial, leaf) in [("1001", "server"), ("1002", "client")] {
            let request =
                format!("req -new {ec} -keyout {leaf}.key -out {leaf}.csr -subj /CN={leaf}");
            openssl(&dir, &request.split(' ').collect::<Vec<_>>());
            let sign = format!(
                "x509 -req -in {leaf}.csr -CA ca.crt -CAkey ca.key -set_serial {serial} \
                 -days 2 -extfile leaf.ext -out {leaf}.crt"
            );
            openssl(&dir, &sign.split_whitespace().collect::<Vec<_>>());
        }
        Self { dir }
    }

    pub(crate) fn path(&self, name: &str) -> String {
        self.dir
            .join(name)
            .to_str()
            .expect("utf-8 temp dir")
            .to_owned()
    }

    pub(crate) fn read(&self, name: &str) -> Vec<u8> {
        std::fs::read(self.dir.join(name)).expect("read a certificate")
    }

    /// Trusting the test CA only.
    pub(crate) fn trust(&self) -> Tls {
        Tls::ca_pem(self.read("ca.crt")).expect("the test CA")
    }
}

impl Drop for Pki {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A server with a TLS port (and its plain one), its certificate signed by the test CA;
/// with `auth_clients`, it takes only clients that show a certificate the CA signed.
pub(crate) struct TlsServer {
    pub(crate) server: Server,
    pub(crate) tls_port: u16,
}

impl TlsServer {
    pub(crate) fn start(pki: &Pki, auth_clients: bool) -> Self {
        let tls_port = hand_out_extra_port();
        let server = Server::start_with(&[
            "--tls-port",
            &tls_port.to_string(),
            "--tls-cert-file",
            &pki.path("server.crt"),
            "--tls-key-file",
            &pki.path("server.key"),
            "--tls-ca-cert-file",
            &pki.path("ca.crt"),
            "--tls-auth-clients",
            if auth_clients { "yes" } else { "no" },
        ]);
        Self { server, tls_port }
    }

    pub(crate) fn url(&self) -> String {
        format!("rediss://127.0.0.1:{}/", self.tls_port)
    }

    /// Connections the server has accepted, on either port (this question's included).
    fn connections_received(&self) -> u64 {
        let info: String = redis::cmd("INFO")
            .arg("stats")
            .query(&mut self.server.connection())
            .expect("INFO stats");
        info.lines()
            .find_map(|line| line.strip_prefix("total_connections_received:"))
            .and_then(|count| count.trim().parse().ok())
            .expect("a connection count")
    }

    /// How many times the server ran a command, by `INFO commandstats` on the plain port.
    pub(crate) fn calls(&self, command: &str) -> u64 {
        let info: String = redis::cmd("INFO")
            .arg("commandstats")
            .query(&mut self.server.connection())
            .expect("INFO commandstats");
        let prefix = format!("cmdstat_{command}:calls=");
        info.lines()
            .find_map(|line| line.strip_prefix(prefix.as_str()))
            .map_or(0, |rest| {
                rest.split(',')
                    .next()
                    .and_then(|calls| calls.parse().ok())
                    .expect("a call count")
            })
    }
}

pub(crate) fn options(prefix: &str) -> Options {
    Options::new().prefix(prefix).timeout(crate::TIMEOUT)
}

/// (a) Both blocking limiters decide over TLS, trusting the CA the test gives; the
/// decisions are the server's (its keys are there, read on the plain port).
#[test]
fn blocking_and_leased_limiters_decide_over_tls() {
    let pki = Pki::new();
    let server = TlsServer::start(&pki, false);

    // 3 per minute: no window ends during the test.
    let limiter = RedisLimiter::new(
        &server.url(),
        limit(3, 60_000_000),
        options("tls-a").tls(pki.trust()),
    )
    .expect("limiter");
    let connections = server.connections_received();
    let admitted: Vec<bool> = (0..4)
        .map(|_| limiter.check_and_hit("k").expect("decided").admitted)
        .collect();
    assert_eq!(admitted, [true, true, true, false]);
    // One TLS connection for all four calls (the session tickets the server sends after
    // the handshake do not make the pool's check before reuse drop it), plus the plain one
    // that asks.
    assert_eq!(server.connections_received() - connections, 2);
    assert!(server.calls("evalsha") >= 4, "the calls reached the server");
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg("tls-a*")
        .query(&mut server.server.connection())
        .expect("KEYS");
    assert!(!keys.is_empty(), "the limiter wrote its key over TLS");

    // The leased limiter, by host name: the name is checked against the certificate's DNS
    // name this time (and `localhost` may resolve to ::1 first, where nothing listens).
    let by_name = format!("rediss://localhost:{}/", server.tls_port);
    let leased = LeasedLimiter::new(
        &by_name,
        limit(4, 60_000_000),
        // A lease's expiry slack must exceed the (generous) timeout.
        options("tls-a-lease")
            .expiry_slack(Duration::from_secs(10))
            .tls(pki.trust()),
        2,
        10_000_000,
    )
    .expect("leased limiter");
    let admitted = (0..6)
        .filter(|_| leased.check_and_hit("k").expect("decided").admitted)
        .count();
    assert_eq!(
        admitted, 4,
        "the leased limiter admits the limit and no more"
    );
}

/// (b) Mutual TLS (`tls-auth-clients yes`): a client with a certificate the CA signed is
/// served; one without gets a connection error, never a decision.
#[test]
fn mutual_tls_needs_the_client_identity() {
    let pki = Pki::new();
    let server = TlsServer::start(&pki, true);

    let identified = pki
        .trust()
        .client_identity(pki.read("client.crt"), pki.read("client.key"))
        .expect("the client identity");
    let limiter = RedisLimiter::new(
        &server.url(),
        limit(2, 60_000_000),
        options("tls-b").tls(identified),
    )
    .expect("limiter");
    assert!(limiter.check_and_hit("k").expect("decided").admitted);
    // Twice on a fresh server if another test loaded the script first (NOSCRIPT, load, call).
    let ran = server.calls("evalsha");
    assert!(ran >= 1);

    let anonymous = RedisLimiter::new(
        &server.url(),
        limit(2, 60_000_000),
        options("tls-b-anonymous").tls(pki.trust()),
    )
    .expect("limiter");
    for _ in 0..2 {
        let err = anonymous.check_and_hit("k").unwrap_err();
        assert!(
            matches!(err, Error::Connection(_)),
            "no client certificate: a connection error, got {err:?}"
        );
    }
    assert_eq!(server.calls("evalsha"), ran, "only the identified call ran");
}

/// (c) A port that accepts TCP and never answers the handshake: every call ends by its
/// timeout (plus a socket wait's lateness), with the timeout error.
#[test]
fn a_handshake_that_never_completes_ends_at_the_timeout() {
    let pki = Pki::new();
    let silent = SilentListener::start();
    let url = silent.url().replacen("redis://", "rediss://", 1);
    let timeout = Duration::from_millis(150);
    let limiter = RedisLimiter::new(
        &url,
        limit(2, 60_000_000),
        options("tls-c").timeout(timeout).tls(pki.trust()),
    )
    .expect("limiter");
    for _ in 0..3 {
        let start = Instant::now();
        let result = limiter.check_and_hit("k");
        assert_timed_out_in_time(result, start.elapsed(), timeout);
    }
}

/// A call against a stalled handshake: `Error::Timeout`, within the timeout plus 50 ms.
pub(crate) fn assert_timed_out_in_time<T: std::fmt::Debug>(
    result: Result<T, Error>,
    took: Duration,
    timeout: Duration,
) {
    let err = result.unwrap_err();
    assert!(
        matches!(err, Error::Timeout { .. }),
        "a stalled handshake times out, got {err:?}"
    );
    assert!(
        took < timeout + Duration::from_millis(50),
        "a call took {took:?} at a timeout of {timeout:?}"
    );
}

/// A server that answers the handshake one byte at a time, every 10 ms (a record header
/// that announces 16 KiB, then its body): the calls still end by their timeout. A client
/// that read until a whole record was in (rustls' own blocking stream does) would wait for
/// as long as the bytes kept coming.
#[test]
fn a_handshake_that_trickles_ends_at_the_timeout() {
    let pki = Pki::new();
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    let port = listener.local_addr().expect("local address").port();
    let trickler = std::thread::spawn(move || {
        // One connection per call below; each gets at most 3 s of bytes.
        for _ in 0..2 {
            let Ok((mut stream, _peer)) = listener.accept() else {
                return;
            };
            let started = Instant::now();
            let header = [0x16, 0x03, 0x03, 0x40, 0x00];
            let mut sent = 0;
            while started.elapsed() < Duration::from_secs(3) {
                let byte = header.get(sent).copied().unwrap_or(0);
                if std::io::Write::write_all(&mut stream, &[byte]).is_err() {
                    break; // the client gave up and closed it
                }
                sent += 1;
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    });
    let timeout = Duration::from_millis(150);
    let limiter = RedisLimiter::new(
        &format!("rediss://127.0.0.1:{port}/"),
        limit(2, 60_000_000),
        options("tls-trickle").timeout(timeout).tls(pki.trust()),
    )
    .expect("limiter");
    for _ in 0..2 {
        let start = Instant::now();
        let err = limiter.check_and_hit("k").unwrap_err();
        let took = start.elapsed();
        assert!(matches!(err, Error::Timeout { .. }), "got {err:?}");
        assert!(
            took < timeout + Duration::from_millis(50),
            "a call took {took:?} at a timeout of {timeout:?}"
        );
    }
    drop(limiter);
    trickler.join().expect("the trickling server");
}

/// A port that records the first bytes of the first connection and then holds it without
/// a word (so the client waits out its timeout with nothing more to send).
fn first_bytes_listener() -> (u16, mpsc::Receiver<Vec<u8>>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    let port = listener.local_addr().expect("local address").port();
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        let Ok((mut stream, _peer)) = listener.accept() else {
            return;
        };
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .expect("read timeout");
        let mut first = vec![0; 512];
        let read = stream.read(&mut first).unwrap_or(0);
        first.truncate(read);
        let _ = sender.send(first);
        // Held until the client gives up and closes it.
        let _ = stream.read(&mut [0; 512]);
    });
    (port, receiver)
}

/// (d) A server whose certificate the given CA did not sign: a connection error that says
/// why, and the server ran nothing; the first bytes a client sends are a TLS ClientHello,
/// never RESP (not even the `AUTH` of a password in the URL).
#[test]
fn a_wrong_ca_is_refused_and_nothing_goes_in_plain_text() {
    let pki = Pki::new();
    let server = TlsServer::start(&pki, false);
    let other_ca = Tls::ca_pem(pki.read("other-ca.crt")).expect("the other CA");
    let limiter = RedisLimiter::new(
        &server.url(),
        limit(2, 60_000_000),
        options("tls-d").tls(other_ca.clone()),
    )
    .expect("limiter");
    let err = limiter.check_and_hit("k").unwrap_err();
    assert!(
        matches!(err, Error::Connection(_)),
        "an unknown issuer: a connection error, got {err:?}"
    );
    assert!(
        err.to_string().contains("certificate"),
        "the error says why: {err}"
    );
    assert_eq!(server.calls("evalsha"), 0);
    assert_eq!(server.calls("script"), 0);

    let (port, first_bytes) = first_bytes_listener();
    let url = format!("rediss://:hunter2@127.0.0.1:{port}/");
    let limiter = RedisLimiter::new(
        &url,
        limit(2, 60_000_000),
        options("tls-d-raw")
            .timeout(Duration::from_millis(300))
            .tls(other_ca),
    )
    .expect("limiter");
    let err = limiter.check_and_hit("k").unwrap_err();
    assert!(matches!(err, Error::Timeout { .. }), "got {err:?}");
    let first = first_bytes
        .recv_timeout(Duration::from_secs(5))
        .expect("the listener saw a connection");
    // A TLS record of type handshake (0x16), version 3.x, carrying a ClientHello (1).
    assert!(first.len() > 5, "got {first:?}");
    assert_eq!(
        first[0], 0x16,
        "a TLS handshake record, not RESP: {first:?}"
    );
    assert_eq!(first[1], 3);
    assert_eq!(first[5], 1, "a ClientHello");
    assert!(!first.windows(7).any(|window| window == b"hunter2"));
}

/// Configuration that cannot work is refused when the limiter is built, with a typed
/// error: PEM that holds no certificate or key, `#insecure`, and TLS options for a plain
/// URL (which would otherwise connect in plain text).
#[test]
fn bad_tls_configuration_is_a_config_error() {
    let pki = Pki::new();
    assert!(matches!(Tls::ca_pem(b""), Err(Error::Config(_))));
    assert!(matches!(
        Tls::ca_pem(pki.read("ca.key")),
        Err(Error::Config(_))
    ));
    assert!(matches!(
        pki.trust()
            .client_identity(pki.read("client.crt"), b"no key here"),
        Err(Error::Config(_))
    ));
    assert!(matches!(
        pki.trust()
            .client_identity(pki.read("client.key"), pki.read("client.key")),
        Err(Error::Config(_))
    ));
    // The server's key with the client's certificate: rustls sees they do not match.
    assert!(matches!(
        pki.trust()
            .client_identity(pki.read("client.crt"), pki.read("server.key")),
        Err(Error::Config(_))
    ));
    let build =
        |url: &str| RedisLimiter::new(url, limit(2, 1_000_000), options("tls-e").tls(pki.trust()));
    let insecure = build("rediss://127.0.0.1:6380/#insecure").unwrap_err();
    assert!(matches!(insecure, Error::Config(_)), "got {insecure:?}");
    let plain = build("redis://127.0.0.1:6379/").unwrap_err();
    assert!(matches!(plain, Error::Config(_)), "got {plain:?}");
    // A password in the URL never shows in the error.
    let quoted = build("rediss://:hunter2@127.0.0.1:6380/#insecure").unwrap_err();
    assert!(!quoted.to_string().contains("hunter2"), "{quoted}");
}
