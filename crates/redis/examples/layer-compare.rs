//! The tower layer over each backend, side by side on loopback: requests per second and the
//! time a request spends in the layer (p50, p99) for the in-process lock-free limiter, the
//! Redis exact log, the Redis rolling buckets, leases and the exact log on a Redis Cluster
//! (six nodes on this machine); then round trips per admitted
//! request on a flooded key with and without the local refusal cache. Starts its own
//! `redis-server` on a free loopback port (`bash ci/redis.sh` installs it) and writes
//! `results/fleet.md`.
//!
//! ```text
//! cargo run --release -p slidelimit-redis --features cluster --example layer-compare
//! ```

use std::convert::Infallible;
use std::fmt::Write as _;
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use http::{Request, Response, StatusCode};
use slidelimit::{Decide, Limit, LockFreeLimiter};
use slidelimit_redis::{AsyncRedisLimiter, LeasedLimiter, Options};
use slidelimit_tower::{Header, RateLimitLayer, ResponseBody};
use tower::{service_fn, Layer, Service, ServiceExt};

/// Concurrent callers, each a tokio task on a two-worker runtime.
const TASKS: usize = 32;
/// Keys of the admitting workload, drawn in turn by each task.
const KEYS: usize = 1_000;
/// Rounds: every contender once per round, in turn.
const ROUNDS: usize = 3;
const ROUND: Duration = Duration::from_secs(2);

/// A `redis-server` of this run's own (a cluster node with `cluster`), in a directory of its
/// own, killed on drop.
struct Server {
    child: Child,
    port: u16,
    dir: std::path::PathBuf,
}

impl Server {
    fn start(cluster: bool) -> Self {
        // A port whose cluster bus port (+10000) is free too.
        let port = loop {
            let port = TcpListener::bind("127.0.0.1:0")
                .and_then(|listener| listener.local_addr())
                .expect("a free port")
                .port()
                % 30_000
                + 20_000;
            if TcpListener::bind(("127.0.0.1", port)).is_ok()
                && TcpListener::bind(("127.0.0.1", port + 10_000)).is_ok()
            {
                break port;
            }
        };
        let dir = std::env::temp_dir().join(format!("layer-compare-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a directory");
        let mut command = Command::new("redis-server");
        command
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .args(["--dir", dir.to_str().expect("utf-8")]);
        if cluster {
            command.args([
                "--cluster-enabled",
                "yes",
                "--cluster-config-file",
                "nodes.conf",
            ]);
        }
        let child = command
            .stdout(Stdio::null())
            .spawn()
            .expect("redis-server on PATH (bash ci/redis.sh installs it)");
        let start = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "redis-server did not start"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Self { child, port, dir }
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Six cluster nodes joined by `redis-cli --cluster create` (three primaries, a replica
/// each), once every slot is served.
fn start_cluster() -> Vec<Server> {
    let nodes: Vec<Server> = (0..6).map(|_| Server::start(true)).collect();
    let addresses: Vec<String> = nodes
        .iter()
        .map(|n| format!("127.0.0.1:{}", n.port))
        .collect();
    let status = Command::new("redis-cli")
        .args(["--cluster", "create"])
        .args(&addresses)
        .args(["--cluster-replicas", "1", "--cluster-yes"])
        .stdout(Stdio::null())
        .status()
        .expect("redis-cli on PATH");
    assert!(status.success(), "redis-cli --cluster create");
    let start = Instant::now();
    while !nodes.iter().all(|node| {
        Command::new("redis-cli")
            .args(["-p", &node.port.to_string(), "cluster", "info"])
            .output()
            .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).contains("cluster_state:ok"))
    }) {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the cluster is not healthy"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    nodes
}

type Body = ResponseBody<String>;

/// The layer over `limiter` around a service that answers at once, keyed by `x-api-key`.
fn service<L: Decide<String> + ?Sized>(
    limiter: Arc<L>,
) -> impl Service<Request<String>, Response = Response<Body>, Error = Infallible, Future: Send>
       + Clone
       + Send
       + 'static {
    let layer = RateLimitLayer::new(limiter, Header::new("x-api-key".parse().expect("name")));
    layer.layer(service_fn(|_request: Request<String>| async {
        Ok::<_, Infallible>(Response::new(String::from("ok")))
    }))
}

fn request(key: &str) -> Request<String> {
    Request::get("/")
        .header("x-api-key", key)
        .body(String::new())
        .expect("request")
}

/// One run: `tasks` tasks for `ROUND`, each request on `key(task, i)`: requests per second,
/// admitted, and every request's time in the layer.
async fn drive<S>(
    service: S,
    key: fn(usize, usize) -> String,
    tasks: usize,
) -> (f64, u64, Vec<Duration>)
where
    S: Service<Request<String>, Response = Response<Body>, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send,
{
    let start = Instant::now();
    let tasks: Vec<_> = (0..tasks)
        .map(|task| {
            let service = service.clone();
            tokio::spawn(async move {
                let (mut times, mut admitted, mut i) = (Vec::new(), 0u64, 0);
                while start.elapsed() < ROUND {
                    let asked = Instant::now();
                    let response = service.clone().oneshot(request(&key(task, i))).await;
                    times.push(asked.elapsed());
                    admitted += u64::from(response.expect("infallible").status() == StatusCode::OK);
                    i += 1;
                }
                (times, admitted)
            })
        })
        .collect();
    let (mut times, mut admitted) = (Vec::new(), 0);
    for task in tasks {
        let (t, a) = task.await.expect("task");
        times.extend(t);
        admitted += a;
    }
    let rate = times.len() as f64 / start.elapsed().as_secs_f64();
    (rate, admitted, times)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn spread(task: usize, i: usize) -> String {
    format!("key-{}", (task * 7919 + i) % KEYS)
}

fn flooded(_task: usize, _i: usize) -> String {
    String::from("flooded")
}

fn main() {
    let server = Server::start(false);
    let url = server.url();
    let cluster = start_cluster();
    let cluster_urls: Vec<String> = cluster.iter().map(Server::url).collect();
    let cluster_nodes: Vec<&str> = cluster_urls.iter().map(String::as_str).collect();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    // Admitting: 1,000 per second per key, far above what 32 tasks send to 1,000 keys.
    let roomy = Limit::new(1_000, 1_000_000).expect("limit");
    let options = |prefix: &str| {
        Options::new()
            .prefix(prefix)
            .timeout(Duration::from_secs(2))
            .expiry_slack(Duration::from_secs(10))
    };
    let contenders = [
        "in-process lock-free",
        "Redis exact log",
        "Redis rolling buckets",
        "Redis leases (batch 50)",
        "Redis Cluster exact log (3 primaries)",
    ];
    // Per contender: requests per second under load, and the times under load and alone.
    let mut results: Vec<(f64, Vec<Duration>, Vec<Duration>)> =
        vec![(0.0, Vec::new(), Vec::new()); contenders.len()];
    runtime.block_on(async {
        for round in 0..ROUNDS {
            for (index, name) in contenders.iter().enumerate() {
                for tasks in [TASKS, 1] {
                    let prefix = format!("compare-{index}-{round}-{tasks}");
                    let (rate, _, times) = match index {
                        0 => {
                            let limiter = Arc::new(LockFreeLimiter::<String>::new(
                                Limit::new(1_000, 1_000_000_000).expect("limit"),
                            ));
                            drive(service(limiter), spread, tasks).await
                        }
                        1 | 2 => {
                            let options = if index == 2 {
                                options(&prefix).buckets(10)
                            } else {
                                options(&prefix)
                            };
                            let limiter = Arc::new(
                                AsyncRedisLimiter::new(&url, roomy, options).expect("limiter"),
                            );
                            drive(service(limiter), spread, tasks).await
                        }
                        3 => {
                            let limiter = Arc::new(
                                LeasedLimiter::new(&url, roomy, options(&prefix), 50, 100_000)
                                    .expect("limiter"),
                            );
                            drive(service(limiter), spread, tasks).await
                        }
                        _ => {
                            let limiter = Arc::new(
                                AsyncRedisLimiter::cluster(&cluster_nodes, roomy, options(&prefix))
                                    .expect("limiter"),
                            );
                            drive(service(limiter), spread, tasks).await
                        }
                    };
                    eprintln!("round {round}: {name}, {tasks} task(s): {rate:.0} requests/s");
                    if tasks == TASKS {
                        results[index].0 += rate / ROUNDS as f64;
                        results[index].1.extend(times);
                    } else {
                        results[index].2.extend(times);
                    }
                }
            }
        }
    });

    // The flood: every task on one key of 100 per second.
    let flood_limit = Limit::new(100, 1_000_000).expect("limit");
    let (plain, cached) = runtime.block_on(async {
        let plain_limiter = Arc::new(
            AsyncRedisLimiter::new(
                &url,
                flood_limit,
                options("flood-plain").refusal_cache(false),
            )
            .expect("limiter"),
        );
        let (_, plain_admitted, plain_times) = drive(service(plain_limiter), flooded, TASKS).await;
        let cached_limiter = Arc::new(
            AsyncRedisLimiter::new(&url, flood_limit, options("flood-cached")).expect("limiter"),
        );
        let (_, cached_admitted, cached_times) =
            drive(service(Arc::clone(&cached_limiter)), flooded, TASKS).await;
        let cache = cached_limiter.refusal_cache().expect("on by default");
        (
            (
                plain_times.len() as u64,
                plain_admitted,
                plain_times.len() as u64,
            ),
            (cached_times.len() as u64, cached_admitted, cache.asked()),
        )
    });

    let mut out = String::new();
    let commit = Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    let rustc = Command::new("rustc")
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    let cpus = std::thread::available_parallelism().map_or(0, usize::from);
    let _ = writeln!(out, "# The tower layer over each backend, on loopback\n");
    let _ = writeln!(
        out,
        "Written by `cargo run --release -p slidelimit-redis --features cluster --example \
         layer-compare` (commit {commit}, {rustc}, {cpus} CPUs; a `redis-server` of its own on \
         loopback, the same machine). {TASKS} tokio tasks on a two-worker runtime call the layer \
         (`tower::ServiceExt::oneshot`, no HTTP) around a service that answers at once, for \
         {} s per cell; {ROUNDS} rounds visit every contender in turn. The time is a request's \
         in the layer: the decision (a round trip for Redis) and the fields. Admitting \
         workload: {KEYS} keys in turn at 1,000 per second per key, so nearly all admitted.\n",
        ROUND.as_secs()
    );
    let _ = writeln!(
        out,
        "Under load ({TASKS} tasks: a request's time includes waiting for the others' turns on \
         two workers and one connection) and alone (one task, one request at a time: what the \
         layer adds to a request on an idle server):\n"
    );
    let _ = writeln!(
        out,
        "| backend | requests/s, {TASKS} tasks | p50 | p99 | p50 alone | p99 alone |\n\
         |---|---:|---:|---:|---:|---:|"
    );
    let micros = |d: Duration| d.as_secs_f64() * 1e6;
    for (name, (rate, loaded, alone)) in contenders.iter().zip(&mut results) {
        loaded.sort_unstable();
        alone.sort_unstable();
        let _ = writeln!(
            out,
            "| {name} | {rate:.0} | {:.1} µs | {:.1} µs | {:.1} µs | {:.1} µs |",
            micros(percentile(loaded, 0.5)),
            micros(percentile(loaded, 0.99)),
            micros(percentile(alone, 0.5)),
            micros(percentile(alone, 0.99)),
        );
    }
    let _ = writeln!(
        out,
        "\nA flood: the same {TASKS} tasks for {} s on one key of 100 per second, through the \
         Redis exact log with the refusal cache off (`Options::refusal_cache(false)`: every \
         request asks Redis) and on (the default):\n",
        ROUND.as_secs()
    );
    let _ = writeln!(
        out,
        "| layer | requests | admitted | round trips | round trips per admitted request |\n|---|---:|---:|---:|---:|"
    );
    for (name, (requests, admitted, trips)) in [
        ("refusal cache off", plain),
        ("refusal cache on (default)", cached),
    ] {
        let _ = writeln!(
            out,
            "| {name} | {requests} | {admitted} | {trips} | {:.2} |",
            trips as f64 / admitted.max(1) as f64
        );
    }
    print!("{out}");
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../results/fleet.md");
    std::fs::write(path, out).expect("write results/fleet.md");
}
