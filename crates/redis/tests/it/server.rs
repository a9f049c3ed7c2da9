//! A `redis-server` of the test's own on a free loopback port, in a temporary directory,
//! killed on drop; and a [`SilentListener`], a port that accepts connections and never
//! answers.

use std::collections::BTreeSet;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Every port this process has given a server (a cluster node's bus port included). None is
/// given twice: a node that a test kills and restarts on its own port finds it free however
/// many servers other tests start meanwhile, and two clusters starting at once never pick the
/// same port (both were seen to happen when the two cluster tests ran side by side).
static HANDED_OUT: Mutex<BTreeSet<u16>> = Mutex::new(BTreeSet::new());

/// A free loopback port (with `bus`, its cluster bus port `+ 10000` free too) that no server
/// of this process was given before; recorded as given.
fn hand_out_port(bus: bool) -> u16 {
    let free = |port: u16| TcpListener::bind(("127.0.0.1", port)).is_ok();
    loop {
        let port = if bus {
            free_port() % 30_000 + 20_000
        } else {
            free_port()
        };
        let mut handed_out = HANDED_OUT
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let wanted: &[u16] = if bus { &[port, port + 10_000] } else { &[port] };
        if wanted.iter().all(|p| !handed_out.contains(p) && free(*p)) {
            handed_out.extend(wanted);
            return port;
        }
    }
}

pub(crate) struct Server {
    child: Option<Child>,
    /// The shared server's watchdog (see [`Server::start_watched`]); it exits on its own.
    watchdog: Option<Child>,
    port: u16,
    dir: PathBuf,
    /// A Redis Cluster node (see [`Server::start_cluster_node`]).
    cluster: bool,
    /// More arguments for `redis-server` (see [`Server::start_with`]).
    extra: Vec<String>,
}

/// A free loopback port that no server of this process was given before, recorded as given:
/// for a server's second port (`--tls-port`, passed with [`Server::start_with`]).
#[cfg(feature = "tls")]
pub(crate) fn hand_out_extra_port() -> u16 {
    hand_out_port(false)
}

fn free_port() -> u16 {
    // Bind port 0, read the port, release it: the server binds it right after.
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    listener.local_addr().expect("local address").port()
}

fn spawn(port: u16, dir: &Path, cluster: bool, extra: &[String]) -> Child {
    let mut command = Command::new("redis-server");
    command
        .args(["--port", &port.to_string()])
        .args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
        .args(["--dir", dir.to_str().expect("utf-8 temp dir")])
        .args(extra);
    if cluster {
        // A primary is failed after 2 s without an answer: quick enough for a test. Validity
        // factor 0: a replica always takes over (with the default, an idle replica judged its
        // data too old after a few seconds at this node timeout and never did).
        command.args([
            "--cluster-enabled",
            "yes",
            "--cluster-config-file",
            "nodes.conf",
            "--cluster-node-timeout",
            "2000",
            "--cluster-replica-validity-factor",
            "0",
        ]);
    }
    command
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|err| {
            panic!(
                "cannot start redis-server ({err}): the Redis tests need it on PATH \
                 (bash ci/redis.sh installs it)"
            )
        })
}

impl Server {
    /// Starts a server and waits (up to 10 s) until it answers PING.
    pub(crate) fn start() -> Self {
        Self::start_as(false)
    }

    /// Starts a Redis Cluster node (cluster mode on, no slots yet), a directory of its own.
    #[cfg(feature = "cluster")]
    pub(crate) fn start_cluster_node() -> Self {
        Self::start_as(true)
    }

    /// Starts a server with more `redis-server` arguments (`--requirepass`, `--unixsocket`),
    /// each `{dir}` in them replaced by the server's own directory.
    pub(crate) fn start_with(extra: &[&str]) -> Self {
        Self::start_as_with(false, extra)
    }

    /// The server's own directory (for a Unix socket in it).
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    fn start_as(cluster: bool) -> Self {
        Self::start_as_with(cluster, &[])
    }

    fn start_as_with(cluster: bool, extra: &[&str]) -> Self {
        let dir = std::env::temp_dir().join(format!(
            "slidelimit-redis-{}-{}",
            std::process::id(),
            free_port()
        ));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let dir_text = dir.to_str().expect("utf-8 temp dir");
        let extra: Vec<String> = extra
            .iter()
            .map(|arg| arg.replace("{dir}", dir_text))
            .collect();
        for _attempt in 0..5 {
            // A cluster node needs its bus port (`port + 10000`, below 65536) free too.
            let port = hand_out_port(cluster);
            let mut server = Self {
                child: Some(spawn(port, &dir, cluster, &extra)),
                watchdog: None,
                port,
                dir: dir.clone(),
                cluster,
                extra: extra.clone(),
            };
            if server.wait_ready(Duration::from_secs(10)) {
                return server;
            }
            server.kill();
        }
        panic!("redis-server did not answer PING on any of 5 free ports");
    }

    /// Starts a server that also goes away when this test process does (a watchdog shell
    /// polls the process): for the shared server, which a static holds and nothing drops.
    pub(crate) fn start_watched() -> Self {
        let mut server = Self::start();
        let script = format!(
            "while kill -0 {parent} 2>/dev/null; do sleep 0.5; done; kill -9 {redis}; rm -rf '{dir}'",
            parent = std::process::id(),
            redis = server.pid(),
            dir = server.dir.display()
        );
        server.watchdog = Some(
            Command::new("sh")
                .args(["-c", &script])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("start the watchdog shell"),
        );
        server
    }

    /// Whether the server process is up (not killed).
    #[cfg(feature = "cluster")]
    pub(crate) fn is_running(&self) -> bool {
        self.child.is_some()
    }

    #[cfg(feature = "cluster")]
    pub(crate) fn port(&self) -> u16 {
        self.port
    }

    pub(crate) fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.as_ref().expect("running").id()
    }

    fn wait_ready(&mut self, limit: Duration) -> bool {
        let start = Instant::now();
        while start.elapsed() < limit {
            if let Some(child) = &mut self.child {
                if let Ok(Some(_status)) = child.try_wait() {
                    return false; // exited: the port was taken
                }
            }
            if let Ok(client) = redis::Client::open(self.url()) {
                if let Ok(mut con) = client.get_connection_with_timeout(Duration::from_millis(200))
                {
                    match redis::cmd("PING").query::<String>(&mut con) {
                        Ok(_) => return true,
                        // Up, and asking for the password it was started with.
                        Err(err) if err.code() == Some("NOAUTH") => return true,
                        Err(_) => {}
                    }
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    /// Kills the server (SIGKILL) and waits for it.
    pub(crate) fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts a fresh server on the same port (after [`Server::kill`]).
    pub(crate) fn restart(&mut self) {
        assert!(self.child.is_none(), "kill first");
        self.child = Some(spawn(self.port, &self.dir, self.cluster, &self.extra));
        assert!(
            self.wait_ready(Duration::from_secs(10)),
            "restarted server answers PING"
        );
    }

    /// SIGSTOP / SIGCONT: a server that accepts connections but answers nothing.
    pub(crate) fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .args([signal, &self.pid().to_string()])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill {signal} failed");
    }

    /// A plain connection for inspecting the server (MEMORY USAGE, KEYS, PTTL).
    pub(crate) fn connection(&self) -> redis::Connection {
        let client = redis::Client::open(self.url()).expect("url");
        let con = client
            .get_connection_with_timeout(Duration::from_secs(5))
            .expect("connect");
        con.set_read_timeout(Some(Duration::from_secs(5)))
            .expect("timeout");
        con
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(child) = &self.child {
            // SIGKILL ends a stopped process too; the SIGCONT only spares a paused server's
            // clients a hang if a test failed between its pause and its resume.
            let _ = Command::new("kill")
                .args(["-CONT", &child.id().to_string()])
                .status();
        }
        self.kill();
        if let Some(mut watchdog) = self.watchdog.take() {
            let _ = watchdog.kill();
            let _ = watchdog.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A loopback port that accepts every connection and never writes a byte: a server that
/// hangs after `accept` (or a proxy whose backend is gone). The connections are held open
/// until the listener is dropped.
pub(crate) struct SilentListener {
    port: u16,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl SilentListener {
    pub(crate) fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        let port = listener.local_addr().expect("local address").port();
        // Non-blocking accepts, so the thread sees the stop flag without a connection.
        listener
            .set_nonblocking(true)
            .expect("non-blocking listener");
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stopped = std::sync::Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            let mut held = Vec::new();
            // Relaxed: a stop flag; nothing is published with it.
            while !stopped.load(std::sync::atomic::Ordering::Relaxed) {
                match listener.accept() {
                    Ok((stream, _peer)) => held.push(stream),
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        Self {
            port,
            stop,
            thread: Some(thread),
        }
    }

    pub(crate) fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }
}

impl Drop for SilentListener {
    fn drop(&mut self) {
        // Relaxed: see the load.
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
