//! Defects found in production against real `redis-server` 7.0 processes, each test the
//! promise its fix keeps: no error text holds a password; a cluster URL naming a database
//! is refused at construction; `CLUSTER SLOTS` without endpoints is read; a node outside
//! the cluster cannot empty the slot map; the async server connection survives a restart
//! and a failover behind one name, and callers share the connection made after a reset.
//!
//! The names say which of ci/test.sh's runs takes each test: `cluster_…` under feature
//! `cluster`, `asynchronous_…` under feature `tokio`.

#[cfg(feature = "cluster")]
mod cluster {
    use std::io::{BufRead, BufReader, Read, Write};
    use std::net::{TcpListener, TcpStream};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    use slidelimit_redis::{AsyncRedisLimiter, Error, Options, RedisLimiter};

    use crate::cluster::Cluster;
    use crate::{limit, runtime, Server};

    const SECRET: &str = "s3cr3t";
    const MINUTE: u64 = 60_000_000;

    /// Both texts of `err`, checked for the secret.
    fn assert_hidden(what: &str, err: &Error) {
        for text in [
            format!("{err}"),
            format!("{err:?}"),
            format!("{err:#?}"),
            format!("{:?}", Some(err)),
        ] {
            assert!(!text.contains(SECRET), "{what}: the password shows: {text}");
        }
    }

    /// A loopback port with nothing listening on it.
    fn closed_port() -> u16 {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        listener.local_addr().expect("local address").port()
    }

    /// Every error a URL with a password can lead to, from every constructor and from calls:
    /// URLs that do not parse, a cluster URL with a database or a Unix socket, a wrong
    /// password against a server that asks for one, a server that is not there.
    #[test]
    fn cluster_and_server_errors_never_show_a_password() {
        let server = Server::start_with(&["--requirepass", "right-one"]);
        let port = closed_port();
        let bad_urls = [
            format!("rediss://default:{SECRET}@127.0.0.1:notaport/"),
            format!("redis://default:{SECRET}@127.0.0.1:99999/"),
            format!("redis://default:{SECRET}@127.0.0.1:7000/notanumber"),
            format!("redis://default:{SECRET}@0.0.0.0:7000/"),
            format!("redis://default:{SECRET}@127.0.0.1:7000/?protocol=9"),
            format!("redis://u:pa/ss{SECRET}@127.0.0.1:7000/"),
            format!("ftp://default:{SECRET}@127.0.0.1:7000/"),
            format!("rediss://default:{SECRET}@127.0.0.1:7000/"),
            format!("redis+unix:///tmp/none.sock?pass={SECRET}"),
        ];
        let options = || Options::new().prefix("secrets").timeout(crate::TIMEOUT);
        let mut seen = 0;
        for url in &bad_urls {
            if let Err(err) = RedisLimiter::new(url, limit(2, MINUTE), options()) {
                assert_hidden(url, &err);
                seen += 1;
            }
            if let Err(err) = AsyncRedisLimiter::new(url, limit(2, MINUTE), options()) {
                assert_hidden(url, &err);
                seen += 1;
            }
            let err = AsyncRedisLimiter::cluster(&[url.as_str()], limit(2, MINUTE), options())
                .expect_err("no cluster from a bad URL");
            assert_hidden(url, &err);
        }
        // A database in a cluster URL (refused at construction) and a good URL after a bad one.
        for nodes in [
            vec![format!("redis://default:{SECRET}@127.0.0.1:7000/3")],
            vec![
                format!("redis://default:{SECRET}@127.0.0.1:7000/"),
                format!("redis+unix:///tmp/none.sock?pass={SECRET}"),
            ],
        ] {
            let nodes: Vec<&str> = nodes.iter().map(String::as_str).collect();
            let err = AsyncRedisLimiter::cluster(&nodes, limit(2, MINUTE), options())
                .expect_err("a refused cluster URL");
            assert_hidden(&nodes.join(" "), &err);
        }
        assert!(
            seen >= bad_urls.len(),
            "the single-server constructors refused them"
        );

        // Calls: a wrong password, and no server at all.
        let wrong = server
            .url()
            .replace("redis://", &format!("redis://default:{SECRET}@"));
        let absent = format!("redis://default:{SECRET}@127.0.0.1:{port}/");
        for url in [&wrong, &absent] {
            let blocking = RedisLimiter::new(url, limit(2, MINUTE), options()).expect("limiter");
            let err = blocking.check_and_hit("k").expect_err("no decision");
            assert!(err.is_backend_failure(), "{url}: {err}");
            assert_hidden(url, &err);
            runtime().block_on(async {
                let limiter =
                    AsyncRedisLimiter::new(url, limit(2, MINUTE), options()).expect("limiter");
                let err = limiter.check_and_hit("k").await.expect_err("no decision");
                assert_hidden(url, &err);
                let nodes = [url.as_str()];
                let limiter = AsyncRedisLimiter::cluster(&nodes, limit(2, MINUTE), options())
                    .expect("limiter");
                let err = limiter.check_and_hit("k").await.expect_err("no decision");
                assert_hidden(url, &err);
            });
        }
    }

    /// Every node refuses `SELECT` in cluster mode: a database in a cluster URL would fail
    /// every call, as connection errors that a failure policy hides.
    #[test]
    fn cluster_url_with_a_database_is_a_config_error() {
        let options = || Options::new().prefix("cluster-db");
        for nodes in [
            &["redis://127.0.0.1:7000/3"][..],
            &["redis://127.0.0.1:7000/", "redis://127.0.0.1:7001/1"],
        ] {
            let built = AsyncRedisLimiter::cluster(nodes, limit(2, MINUTE), options());
            assert!(
                matches!(built, Err(Error::Config(_))),
                "{nodes:?}: {built:?}"
            );
        }
        for nodes in [
            &["redis://127.0.0.1:7000/0"][..],
            &["redis://127.0.0.1:7000"],
        ] {
            assert!(
                AsyncRedisLimiter::cluster(nodes, limit(2, MINUTE), options()).is_ok(),
                "{nodes:?}: database 0 is the cluster's"
            );
        }
    }

    /// Calls that must all be decided: `calls` sequential calls on distinct keys (so that
    /// they reach every primary), each under a generous timeout.
    fn all_decided(nodes: &[String], prefix: &str, calls: usize) {
        let nodes: Vec<&str> = nodes.iter().map(String::as_str).collect();
        let options = Options::new().prefix(prefix).timeout(crate::TIMEOUT);
        runtime().block_on(async {
            let limiter =
                AsyncRedisLimiter::cluster(&nodes, limit(1_000, MINUTE), options).expect("limiter");
            let mut failed = Vec::new();
            for call in 0..calls {
                if let Err(err) = limiter.check_and_hit(&format!("key-{call}")).await {
                    failed.push(format!("{call}: {err}"));
                }
            }
            assert!(
                failed.is_empty(),
                "{} of {calls} calls failed, first: {:?}",
                failed.len(),
                failed.first()
            );
        });
    }

    /// `cluster-preferred-endpoint-type unknown-endpoint`: `CLUSTER SLOTS` names no host
    /// (NULL); the node that answered serves those ranges.
    #[test]
    fn cluster_reads_a_map_without_endpoints() {
        let cluster = Cluster::start();
        for url in cluster.urls() {
            let client = redis::Client::open(url).expect("url");
            let mut con = client
                .get_connection_with_timeout(Duration::from_secs(5))
                .expect("connect");
            let _: () = redis::cmd("CONFIG")
                .arg("SET")
                .arg("cluster-preferred-endpoint-type")
                .arg("unknown-endpoint")
                .query(&mut con)
                .expect("CONFIG SET");
            // The premise: no endpoint in the map.
            let map: Vec<Vec<redis::Value>> = redis::cmd("CLUSTER")
                .arg("SLOTS")
                .query(&mut con)
                .expect("CLUSTER SLOTS");
            assert!(
                map.iter().all(|range| matches!(
                    range.get(2),
                    Some(redis::Value::Array(primary)) if primary.first() == Some(&redis::Value::Nil)
                )),
                "{map:?}"
            );
        }
        all_decided(&cluster.urls(), "no-endpoint", 300);
    }

    /// A cluster-enabled node that never joined answers an empty map; named first among
    /// the seeds, it must not leave the limiter without one.
    #[test]
    fn cluster_keeps_a_map_that_a_node_outside_it_would_empty() {
        let cluster = Cluster::start();
        let lone = Server::start_cluster_node();
        let mut nodes = vec![lone.url()];
        nodes.extend(cluster.urls());
        all_decided(&nodes, "lone-seed", 300);
        // The lone node asked last, after the cluster's: the same.
        let mut nodes = cluster.urls();
        nodes.push(lone.url());
        all_decided(&nodes, "lone-seed-last", 100);
    }

    /// A plain connection to the node at `url`.
    fn node(url: &str) -> redis::Connection {
        redis::Client::open(url)
            .expect("url")
            .get_connection_with_timeout(Duration::from_secs(5))
            .expect("connect")
    }

    fn port_of(url: &str) -> u16 {
        url.trim_end_matches('/')
            .rsplit(':')
            .next()
            .and_then(|port| port.parse().ok())
            .expect("a port")
    }

    /// The primary (its URL and id) serving `slot`, and another primary's.
    fn source_and_target(urls: &[String], slot: u16) -> ((String, String), (String, String)) {
        let map: Vec<Vec<redis::Value>> = redis::cmd("CLUSTER")
            .arg("SLOTS")
            .query(&mut node(&urls[0]))
            .expect("CLUSTER SLOTS");
        let mut owner = None;
        let mut other = None;
        for range in &map {
            let (Some(redis::Value::Int(first)), Some(redis::Value::Int(last))) =
                (range.first(), range.get(1))
            else {
                panic!("{range:?}");
            };
            let Some(redis::Value::Array(primary)) = range.get(2) else {
                panic!("{range:?}");
            };
            let (Some(redis::Value::Int(port)), Some(redis::Value::BulkString(id))) =
                (primary.get(1), primary.get(2))
            else {
                panic!("{primary:?}");
            };
            let url = urls
                .iter()
                .find(|url| i64::from(port_of(url)) == *port)
                .expect("a node of ours")
                .clone();
            let entry = (url, String::from_utf8_lossy(id).into_owned());
            if (*first..=*last).contains(&i64::from(slot)) {
                owner = Some(entry);
            } else if other.is_none() {
                other = Some(entry);
            }
        }
        (owner.expect("an owner"), other.expect("another primary"))
    }

    fn set_slot(url: &str, slot: u16, state: &str, id: &str) {
        let _: () = redis::cmd("CLUSTER")
            .arg("SETSLOT")
            .arg(slot)
            .arg(state)
            .arg(id)
            .query(&mut node(url))
            .expect("SETSLOT");
    }

    /// While a slot migrates, the importing node's answer to `ASKING` + `EVALSHA` is read
    /// as the answer it is: `NOSCRIPT` loads the script there, and `TRYAGAIN` (a new key,
    /// whose keys the importing node does not all hold) is asked again until the migration
    /// ends, within the call's deadline, however many `ASK` rounds that takes.
    #[test]
    fn cluster_reads_the_importing_nodes_answers_and_waits_out_tryagain() {
        let cluster = Cluster::start();
        let urls = cluster.urls();
        let nodes: Vec<&str> = urls.iter().map(String::as_str).collect();
        let options = Options::new().prefix("ask").timeout(crate::TIMEOUT);
        let limiter =
            AsyncRedisLimiter::cluster(&nodes, limit(1_000, MINUTE), options).expect("limiter");
        let rt = runtime();
        rt.block_on(async {
            for key in ["k", "warm-1", "warm-2", "warm-3", "warm-4", "warm-5"] {
                let _decision = limiter.check_and_hit(key).await.expect("a healthy cluster");
            }
        });
        let slot: u16 = redis::cmd("CLUSTER")
            .arg("KEYSLOT")
            .arg("#k")
            .query(&mut node(&urls[0]))
            .expect("KEYSLOT");
        let ((source, source_id), (target, target_id)) = source_and_target(&urls, slot);
        set_slot(&target, slot, "IMPORTING", &source_id);
        set_slot(&source, slot, "MIGRATING", &target_id);
        let _: redis::Value = redis::cmd("MIGRATE")
            .arg("127.0.0.1")
            .arg(port_of(&target))
            .arg("")
            .arg(0)
            .arg(5_000)
            .arg("KEYS")
            .arg(&["ask:{#k}:log", "ask:{#k}:meta"])
            .query(&mut node(&source))
            .expect("MIGRATE");
        let _: () = redis::cmd("SCRIPT")
            .arg("FLUSH")
            .query(&mut node(&target))
            .expect("SCRIPT FLUSH");
        rt.block_on(async {
            let decided = limiter.check_and_hit("k").await;
            assert!(
                decided.is_ok(),
                "ASK, then NOSCRIPT after ASKING: {decided:?}"
            );
        });

        // The importing node now lacks one of the key's two keys: TRYAGAIN after each ASK,
        // until the slot is the target's, some 300 ms from now.
        let mut asking = redis::pipe();
        asking.cmd("ASKING").cmd("DEL").arg("ask:{#k}:meta");
        let _: redis::Value = asking.query(&mut node(&target)).expect("ASKING DEL");
        let finish = std::thread::spawn({
            let urls = urls.clone();
            move || {
                std::thread::sleep(Duration::from_millis(300));
                for url in &urls {
                    let _: redis::RedisResult<()> = redis::cmd("CLUSTER")
                        .arg("SETSLOT")
                        .arg(slot)
                        .arg("NODE")
                        .arg(&target_id)
                        .query(&mut node(url));
                }
            }
        });
        rt.block_on(async {
            let decided = limiter.check_and_hit("k").await;
            assert!(
                decided.is_ok(),
                "TRYAGAIN until the migration ended: {decided:?}"
            );
        });
        finish.join().expect("finish the migration");
    }

    /// A cluster node the test plays: `answer` gives the raw RESP reply to a command (the
    /// node's own port, the command's arguments), or `None` to pass the command on to a real
    /// server (which runs the scripts). Connections are served by threads of their own; all end when the node is
    /// dropped.
    struct FakeNode {
        port: u16,
        stop: Arc<AtomicBool>,
        thread: Option<std::thread::JoinHandle<()>>,
    }

    type Answer = dyn Fn(u16, &[String]) -> Option<String> + Send + Sync;

    impl FakeNode {
        fn start(real: &str, answer: Arc<Answer>) -> Self {
            let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
            let port = listener.local_addr().expect("local address").port();
            listener.set_nonblocking(true).expect("non-blocking");
            let stop = Arc::new(AtomicBool::new(false));
            let stopped = Arc::clone(&stop);
            let real = real.to_owned();
            let thread = std::thread::spawn(move || {
                let mut served = Vec::new();
                // Relaxed: a stop flag; nothing is published with it.
                while !stopped.load(Ordering::Relaxed) {
                    match listener.accept() {
                        Ok((stream, _peer)) => {
                            let (real, answer) = (real.clone(), Arc::clone(&answer));
                            let stopped = Arc::clone(&stopped);
                            served.push(std::thread::spawn(move || {
                                serve(stream, port, &real, &*answer, &stopped);
                            }));
                        }
                        Err(_) => std::thread::sleep(Duration::from_millis(2)),
                    }
                }
                for connection in served {
                    let _ = connection.join();
                }
            });
            Self {
                port,
                stop,
                thread: Some(thread),
            }
        }

        fn url(&self) -> String {
            format!("redis://127.0.0.1:{}/", self.port)
        }
    }

    impl Drop for FakeNode {
        fn drop(&mut self) {
            // Relaxed: see the load.
            self.stop.store(true, Ordering::Relaxed);
            if let Some(thread) = self.thread.take() {
                let _ = thread.join();
            }
        }
    }

    /// Reads commands (RESP arrays of bulk strings) from `stream` and answers each in turn.
    fn serve(stream: TcpStream, port: u16, real: &str, answer: &Answer, stopped: &AtomicBool) {
        stream
            .set_read_timeout(Some(Duration::from_millis(50)))
            .expect("read timeout");
        let mut writer = stream.try_clone().expect("clone the stream");
        let mut reader = BufReader::new(stream);
        let mut backend: Option<redis::Connection> = None;
        let mut line = String::new();
        loop {
            // Relaxed: see FakeNode's load.
            if stopped.load(Ordering::Relaxed) {
                return;
            }
            line.clear();
            match reader.read_line(&mut line) {
                Ok(0) => return,
                Ok(_) => {}
                Err(err)
                    if matches!(
                        err.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) && line.is_empty() =>
                {
                    continue
                }
                Err(_) => return,
            }
            let Some(count) = line.trim_end().strip_prefix('*') else {
                return;
            };
            let count: usize = count.parse().expect("an argument count");
            let mut args = Vec::with_capacity(count);
            for _ in 0..count {
                let mut header = String::new();
                read_fully(&mut reader, |r| r.read_line(&mut header));
                let len: usize = header.trim_end()[1..].parse().expect("a bulk length");
                let mut bytes = vec![0; len + 2];
                read_fully(&mut reader, |r| r.read_exact(&mut bytes).map(|()| len));
                bytes.truncate(len);
                args.push(String::from_utf8_lossy(&bytes).into_owned());
            }
            let reply = answer(port, &args).unwrap_or_else(|| {
                let con = backend.get_or_insert_with(|| {
                    redis::Client::open(real)
                        .expect("url")
                        .get_connection()
                        .expect("the real server")
                });
                let mut cmd = redis::cmd(&args[0]);
                for arg in &args[1..] {
                    cmd.arg(arg.as_str());
                }
                match cmd.query::<redis::Value>(con) {
                    Ok(value) => resp(&value),
                    Err(err) => format!(
                        "-{} {}\r\n",
                        err.code().unwrap_or("ERR"),
                        err.detail().unwrap_or("")
                    ),
                }
            });
            if writer.write_all(reply.as_bytes()).is_err() {
                return;
            }
        }
    }

    /// Retries a read that the read timeout interrupted (the rest of a command is coming).
    fn read_fully<R>(reader: &mut R, mut read: impl FnMut(&mut R) -> std::io::Result<usize>) {
        loop {
            match read(reader) {
                Ok(_) => return,
                Err(err)
                    if matches!(
                        err.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) => {}
                Err(err) => panic!("reading a command: {err}"),
            }
        }
    }

    /// `value` in RESP2.
    fn resp(value: &redis::Value) -> String {
        match value {
            redis::Value::Nil => "$-1\r\n".to_owned(),
            redis::Value::Int(int) => format!(":{int}\r\n"),
            redis::Value::BulkString(bytes) => {
                format!("${}\r\n{}\r\n", bytes.len(), String::from_utf8_lossy(bytes))
            }
            redis::Value::SimpleString(text) => format!("+{text}\r\n"),
            redis::Value::Okay => "+OK\r\n".to_owned(),
            redis::Value::Array(items) => {
                let mut out = format!("*{}\r\n", items.len());
                for item in items {
                    out.push_str(&resp(item));
                }
                out
            }
            other => panic!("no RESP2 form for {other:?}"),
        }
    }

    /// A `CLUSTER SLOTS` answer: every slot served by the node at `port`.
    fn all_slots(port: u16) -> String {
        format!("*1\r\n*3\r\n:0\r\n:16383\r\n*3\r\n$9\r\n127.0.0.1\r\n:{port}\r\n$2\r\nid\r\n")
    }

    fn is(args: &[String], name: &str) -> bool {
        args.first()
            .is_some_and(|first| first.eq_ignore_ascii_case(name))
    }

    /// Ten calls, each of which must be decided.
    fn ten_decided(nodes: &[String], prefix: &str) {
        let nodes: Vec<&str> = nodes.iter().map(String::as_str).collect();
        let options = Options::new().prefix(prefix).timeout(crate::TIMEOUT);
        runtime().block_on(async {
            let limiter =
                AsyncRedisLimiter::cluster(&nodes, limit(1_000, MINUTE), options).expect("limiter");
            let mut results = Vec::new();
            for _ in 0..10 {
                results.push(limiter.check_and_hit("k").await);
            }
            assert!(results.iter().all(Result::is_ok), "{results:?}");
        });
    }

    /// A node the map names as a slot's primary answers `READONLY` (it became a replica):
    /// the map is read again and the calls go to the primary it names now.
    #[test]
    fn cluster_reads_the_map_again_after_readonly() {
        let real = Server::start();
        let promoted = FakeNode::start(
            &real.url(),
            Arc::new(|own: u16, args: &[String]| is(args, "CLUSTER").then(|| all_slots(own))),
        );
        let promoted_port = promoted.port;
        // The demoted node: its map names itself until its first `READONLY`, then the
        // promoted node, as a cluster's maps do once the failover is known.
        let said_readonly = Arc::new(AtomicBool::new(false));
        let demoted = FakeNode::start(&real.url(), {
            let said = Arc::clone(&said_readonly);
            Arc::new(move |own: u16, args: &[String]| {
                // Relaxed: the flag alone is read and written, nothing published with it.
                if is(args, "CLUSTER") {
                    let primary = if said.load(Ordering::Relaxed) {
                        promoted_port
                    } else {
                        own
                    };
                    return Some(all_slots(primary));
                }
                if is(args, "EVALSHA") {
                    // Relaxed: a flag the test reads after joining this node's thread.
                    said.store(true, Ordering::Relaxed);
                    return Some(
                        "-READONLY You can't write against a read only replica.\r\n".to_owned(),
                    );
                }
                None
            })
        });
        ten_decided(&[demoted.url()], "readonly");
        // Relaxed: read after the calls that set it, on this thread's view of the flag.
        assert!(
            said_readonly.load(Ordering::Relaxed),
            "the premise: READONLY was answered"
        );
    }

    /// `ASK` to a node that answers `MOVED` to `ASKING` + `EVALSHA` (its view of the slot's
    /// owner): the call follows it.
    #[test]
    fn cluster_follows_moved_inside_the_asking_pipeline() {
        let real = Server::start();
        let owner = FakeNode::start(&real.url(), Arc::new(|_own: u16, _args: &[String]| None));
        let owner_port = owner.port;
        let moved_inside_asking = Arc::new(AtomicBool::new(false));
        let asked = FakeNode::start(&real.url(), {
            let moved = Arc::clone(&moved_inside_asking);
            Arc::new(move |_own: u16, args: &[String]| {
                if is(args, "ASKING") {
                    return Some("+OK\r\n".to_owned());
                }
                if is(args, "EVALSHA") {
                    // Relaxed: the flag alone is read.
                    moved.store(true, Ordering::Relaxed);
                    return Some(format!("-MOVED 0 127.0.0.1:{owner_port}\r\n"));
                }
                None
            })
        });
        let asked_port = asked.port;
        let source = FakeNode::start(
            &real.url(),
            Arc::new(move |own: u16, args: &[String]| {
                if is(args, "CLUSTER") {
                    return Some(all_slots(own));
                }
                is(args, "EVALSHA").then(|| format!("-ASK 0 127.0.0.1:{asked_port}\r\n"))
            }),
        );
        ten_decided(&[source.url()], "ask-moved");
        // Relaxed: as above.
        assert!(moved_inside_asking.load(Ordering::Relaxed), "the premise");
    }
}

#[cfg(feature = "tokio")]
mod server {
    use std::path::Path;
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use slidelimit_redis::{AsyncRedisLimiter, Error, Options};

    use crate::{limit, runtime, Server};

    const MINUTE: u64 = 60_000_000;

    /// After a restart, once the server answers again, no call fails: the connection the
    /// restart broke is replaced before a call is lost on it.
    #[test]
    fn asynchronous_restart_loses_no_call_once_the_server_answers() {
        let mut server = Server::start();
        runtime().block_on(async {
            let options = Options::new().prefix("restart").timeout(crate::TIMEOUT);
            let limiter =
                AsyncRedisLimiter::new(&server.url(), limit(1_000, MINUTE), options).unwrap();
            for round in 0..3 {
                assert!(limiter.check_and_hit("k").await.is_ok(), "round {round}");
                server.kill();
                // `restart` returns once the new server answers PING.
                server.restart();
                let results: Vec<Result<_, Error>> = {
                    let mut results = Vec::new();
                    for _ in 0..5 {
                        results.push(limiter.check_and_hit("k").await);
                    }
                    results
                };
                assert!(
                    results.iter().all(Result::is_ok),
                    "round {round}: {results:?}"
                );
            }
        });
    }

    fn command(server: &Server, args: &[&str]) -> redis::Value {
        let mut cmd = redis::cmd(args[0]);
        for arg in &args[1..] {
            cmd.arg(*arg);
        }
        cmd.query(&mut server.connection()).expect(args[0])
    }

    fn info(server: &Server, section: &str) -> String {
        redis::cmd("INFO")
            .arg(section)
            .query(&mut server.connection())
            .expect("INFO")
    }

    #[cfg(unix)]
    /// Points the symlink `link` at `target`, atomically (rename over it).
    fn point(link: &Path, target: &Path) {
        let fresh = link.with_extension("new");
        let _ = std::fs::remove_file(&fresh);
        std::os::unix::fs::symlink(target, &fresh).expect("symlink");
        std::fs::rename(&fresh, link).expect("rename the symlink");
    }

    fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
        let start = Instant::now();
        while !done() {
            assert!(start.elapsed() < Duration::from_secs(20), "{what}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    #[cfg(unix)]
    /// A DNS-style failover: one name (here a symlink to a Unix socket) moves from the old
    /// primary, now a replica that answers `READONLY`, to the new one. The next calls reach
    /// the new primary: at most the first fails.
    #[test]
    fn asynchronous_failover_behind_one_name_reaches_the_new_primary() {
        let socket = [
            "--unixsocket",
            "{dir}/redis.sock",
            "--unixsocketperm",
            "700",
        ];
        let (a, b) = (Server::start_with(&socket), Server::start_with(&socket));
        let link = b.dir().join("primary.sock");
        point(&link, &a.dir().join("redis.sock"));
        let a_port = a
            .url()
            .rsplit(':')
            .next()
            .unwrap()
            .trim_end_matches('/')
            .to_owned();
        let b_port = b
            .url()
            .rsplit(':')
            .next()
            .unwrap()
            .trim_end_matches('/')
            .to_owned();
        command(&b, &["REPLICAOF", "127.0.0.1", &a_port]);
        wait_until("B replicates A", || {
            info(&b, "replication").contains("master_link_status:up")
        });
        runtime().block_on(async {
            let url = format!("redis+unix://{}", link.display());
            let options = Options::new().prefix("failover").timeout(crate::TIMEOUT);
            let limiter = AsyncRedisLimiter::new(&url, limit(1_000, MINUTE), options).unwrap();
            assert!(limiter.check_and_hit("k").await.is_ok(), "on A");

            command(&b, &["REPLICAOF", "NO", "ONE"]);
            command(&a, &["REPLICAOF", "127.0.0.1", &b_port]);
            point(&link, &b.dir().join("redis.sock"));
            wait_until("A is B's replica", || {
                info(&a, "replication").contains("role:slave")
            });

            let mut results = Vec::new();
            for _ in 0..10 {
                results.push(limiter.check_and_hit("k").await);
            }
            assert!(
                results[1..].iter().all(Result::is_ok),
                "after the first, every call reaches B: {results:?}"
            );
        });
        let keys: u64 = redis::cmd("DBSIZE")
            .query(&mut b.connection())
            .expect("DBSIZE");
        assert!(keys > 0, "the calls wrote B");
    }

    /// After the connection breaks, concurrent callers share the one new connection (each
    /// opening its own would storm a server that just came back).
    #[test]
    fn asynchronous_callers_share_the_connection_made_after_a_reset() {
        let server = Server::start();
        let mut inspect = server.connection();
        let connections = |con: &mut redis::Connection| -> u64 {
            let text: String = redis::cmd("INFO").arg("stats").query(con).expect("INFO");
            text.lines()
                .find_map(|line| line.strip_prefix("total_connections_received:"))
                .and_then(|count| count.trim().parse().ok())
                .expect("total_connections_received")
        };
        runtime().block_on(async {
            let options = Options::new().prefix("share").timeout(crate::TIMEOUT);
            let limiter = Arc::new(
                AsyncRedisLimiter::new(&server.url(), limit(1_000, MINUTE), options).unwrap(),
            );
            assert!(limiter.check_and_hit("k").await.is_ok());
            let before = connections(&mut inspect);
            let _: redis::Value = redis::cmd("CLIENT")
                .arg(&["KILL", "TYPE", "normal", "SKIPME", "yes"])
                .query(&mut inspect)
                .expect("CLIENT KILL");
            let calls: Vec<_> = (0..16)
                .map(|task| {
                    let limiter = Arc::clone(&limiter);
                    tokio::spawn(async move { limiter.check_and_hit(&format!("k{task}")).await })
                })
                .collect();
            let mut results = Vec::new();
            for call in calls {
                results.push(call.await.expect("task"));
            }
            assert!(results.iter().all(Result::is_ok), "{results:?}");
            assert_eq!(
                connections(&mut inspect) - before,
                1,
                "one new connection for all sixteen"
            );
        });
    }
}
