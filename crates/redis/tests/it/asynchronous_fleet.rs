//! A fleet of HTTP front-ends in real processes: three OS processes (this test binary,
//! re-executed) each serve HTTP with the tower layer over one shared Redis; a load generator
//! spreads many concurrent clients over the three; each process records the admissions it
//! served with Redis's deciding time; the parent merges the logs and slides the window over
//! them: at most `N` in any window of any key, with the counts reported.

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::io::{BufRead, BufReader, Read, Write};
use std::pin::Pin;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http::{Request, Response, StatusCode};
use http_body_util::BodyExt;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::service::TowerToHyperService;
use slidelimit::{Answer, Decide, Decision};
use slidelimit_redis::{AsyncRedisLimiter, Options};
use slidelimit_tower::{Header, RateLimitLayer};
use tower::ServiceBuilder;

use crate::over_admissions;
use crate::{limit, Server};
use slidelimit_trace::rng::SplitMix64;

const CHILD_OUT: &str = "SLIDELIMIT_FLEET_OUT";
const CHILD_URL: &str = "SLIDELIMIT_FLEET_URL";
const CHILD_PREFIX: &str = "SLIDELIMIT_FLEET_PREFIX";
const PROCESSES: usize = 3;
const CLIENTS: usize = 48;
const MAX: u64 = 40;
const WINDOW: u64 = 200_000; // 40 per 200 ms, in microseconds
const RUN: Duration = Duration::from_millis(1500);
const KEYS: [&str; 3] = ["tenant-0", "tenant-1", "tenant-2"];

/// The Redis limiter as the layer asks it, recording each admission with the tick Redis
/// decided it at (its `TIME`): the log the parent checks.
struct Recording {
    limiter: AsyncRedisLimiter,
    admitted: Mutex<Vec<(String, u64)>>,
}

/// Remote, like the limiter it wraps: no limit in the caller's ticks to check.
impl slidelimit::decide::LimitInTicks for Recording {}

impl Decide<String> for Recording {
    type Pending = Pin<Box<dyn Future<Output = Answer> + Send>>;

    fn decide(this: &Arc<Self>, key: &String, _now: u64, _status: bool) -> Decision<Self::Pending> {
        let (this, key) = (Arc::clone(this), key.clone());
        Decision::Pending(Box::pin(async move {
            match this.limiter.check_and_hit(&key).await {
                Ok(decision) => {
                    if decision.admitted {
                        this.admitted.lock().expect("log").push((key, decision.now));
                    }
                    Answer::Decided {
                        admitted: decision.admitted,
                        limit: this.limiter.limit(),
                        status: Some(decision.status),
                        windows: Some(decision.windows),
                    }
                }
                Err(_) => Answer::Undecided {
                    admitted: false,
                    retry_after: Duration::from_secs(1),
                },
            }
        }))
    }

    fn tick(&self) -> Option<Duration> {
        Some(Duration::from_micros(1))
    }

    fn is_remote(&self) -> bool {
        true
    }
}

/// The child role: an HTTP server with the layer over the shared Redis, on a free loopback
/// port it prints; it stops when its stdin closes and writes its admissions to a file. Does
/// nothing unless started by the parent test below.
#[test]
fn asynchronous_fleet_child() {
    let Ok(out) = std::env::var(CHILD_OUT) else {
        return;
    };
    let url = std::env::var(CHILD_URL).expect("url");
    let prefix = std::env::var(CHILD_PREFIX).expect("prefix");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async move {
        let options = Options::new()
            .prefix(&prefix)
            .timeout(Duration::from_secs(5));
        // Several URLs: the nodes of a Redis Cluster.
        let nodes: Vec<&str> = url.split(',').collect();
        let limiter = match nodes.as_slice() {
            [one] => AsyncRedisLimiter::new(one, limit(MAX, WINDOW), options),
            #[cfg(feature = "cluster")]
            many => AsyncRedisLimiter::cluster(many, limit(MAX, WINDOW), options),
            #[cfg(not(feature = "cluster"))]
            _ => panic!("a cluster needs the `cluster` feature"),
        };
        let limiter = Arc::new(Recording {
            limiter: limiter.expect("limiter"),
            admitted: Mutex::new(Vec::new()),
        });
        let layer = RateLimitLayer::new(
            Arc::clone(&limiter),
            Header::new("x-api-key".parse().expect("name")),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        println!("PORT {}", listener.local_addr().expect("addr").port());
        std::io::stdout().flush().expect("flush");

        // Stop when the parent closes our stdin.
        let (stop_tx, mut stop) = tokio::sync::oneshot::channel::<()>();
        std::thread::spawn(move || {
            let _ = std::io::stdin().read_to_end(&mut Vec::new());
            let _ = stop_tx.send(());
        });
        let served = Arc::new(std::sync::atomic::AtomicU64::new(0));
        loop {
            tokio::select! {
                accepted = listener.accept() => {
                    let (stream, _) = accepted.expect("accept");
                    let served = Arc::clone(&served);
                    let service = ServiceBuilder::new().layer(layer.clone()).service_fn(
                        move |_request: Request<hyper::body::Incoming>| {
                            // Relaxed: a count read once the server has stopped.
                            served.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            async { Ok::<_, Infallible>(Response::new(String::from("ok"))) }
                        },
                    );
                    tokio::spawn(
                        hyper::server::conn::http1::Builder::new()
                            .serve_connection(TokioIo::new(stream), TowerToHyperService::new(service)),
                    );
                }
                _ = &mut stop => break,
            }
        }
        let mut file = std::io::BufWriter::new(std::fs::File::create(&out).expect("log"));
        for (key, now) in limiter.admitted.lock().expect("log").iter() {
            writeln!(file, "{key} {now}").expect("write");
        }
        // Relaxed: the accept loop has stopped; the count orders nothing.
        let served = served.load(std::sync::atomic::Ordering::Relaxed);
        writeln!(
            file,
            "# {}",
            served
        )
        .expect("write");
    });
}

/// A started child: the process, the port it serves and the file it will write.
struct FrontEnd {
    child: Child,
    port: u16,
    log: std::path::PathBuf,
}

fn start_front_end(redis: &str, prefix: &str, log: std::path::PathBuf) -> FrontEnd {
    let mut child = Command::new(std::env::current_exe().expect("exe"))
        .args([
            "--exact",
            "asynchronous_fleet::asynchronous_fleet_child",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env(CHILD_OUT, &log)
        .env(CHILD_URL, redis)
        .env(CHILD_PREFIX, prefix)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn a front-end");
    // Read the port, then keep draining the child's output (libtest writes its result at the
    // end; a closed pipe would fail the child).
    let stdout = child.stdout.take().expect("stdout");
    let (port_tx, port_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            // libtest prints the test's name on the same line first.
            if let Some((_, port)) = line.split_once("PORT ") {
                let _ = port_tx.send(port.trim().parse::<u16>().expect("port"));
            }
        }
    });
    let port = port_rx
        .recv_timeout(Duration::from_secs(60))
        .expect("the front-end prints its port");
    FrontEnd { child, port, log }
}

/// `CLIENTS` concurrent clients for `RUN`, spread over `ports`, on keys drawn skewed (the
/// first key 70 %): the status of every response, by key.
async fn load(ports: &[u16]) -> HashMap<&'static str, (u64, u64)> {
    let client: Client<_, String> = Client::builder(TokioExecutor::new()).build_http();
    let tasks: Vec<_> = (0..CLIENTS)
        .map(|task| {
            let client = client.clone();
            let ports = ports.to_vec();
            tokio::spawn(async move {
                let mut rng = SplitMix64::new(task as u64 + 1);
                let mut counts: HashMap<&'static str, (u64, u64)> = HashMap::new();
                let start = Instant::now();
                let mut sent = 0usize;
                while start.elapsed() < RUN {
                    let roll = rng.below(10);
                    let key = KEYS[usize::from(roll >= 7) + usize::from(roll >= 9)];
                    let port = ports[(task + sent) % ports.len()];
                    sent += 1;
                    let request = Request::get(format!("http://127.0.0.1:{port}/"))
                        .header("x-api-key", key)
                        .body(String::new())
                        .expect("request");
                    let response = client.request(request).await.expect("response");
                    let status = response.status();
                    let _ = response.into_body().collect().await;
                    let entry = counts.entry(key).or_default();
                    match status {
                        StatusCode::OK => entry.0 += 1,
                        StatusCode::TOO_MANY_REQUESTS => entry.1 += 1,
                        other => panic!("unexpected status {other}"),
                    }
                }
                counts
            })
        })
        .collect();
    let mut totals: HashMap<&'static str, (u64, u64)> = HashMap::new();
    for task in tasks {
        for (key, (ok, refused)) in task.await.expect("client task") {
            let entry = totals.entry(key).or_default();
            entry.0 += ok;
            entry.1 += refused;
        }
    }
    totals
}

/// What one fleet run saw: per key, the merged admissions log and the 200s and 429s the
/// clients got; and how many requests the services behind the layers served.
struct FleetRun {
    keys: HashMap<&'static str, KeyRun>,
    served: u64,
}

/// One key's admissions log (tick, weight) merged from every front-end, and the 200s and
/// 429s the clients got.
type KeyRun = (Vec<(u64, u64)>, u64, u64);

/// Starts the front-ends over `redis` (a server's URL, or a cluster's node URLs joined by
/// commas) on one key prefix (or, for the broken control, one each), loads them, stops them
/// and merges their logs.
fn run_fleet(redis: &str, shared: bool) -> FleetRun {
    let dir =
        std::env::temp_dir().join(format!("slidelimit-fleet-{}-{shared}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let mut front_ends: Vec<FrontEnd> = (0..PROCESSES)
        .map(|p| {
            let prefix = if shared {
                String::from("fleet")
            } else {
                format!("alone-{p}")
            };
            start_front_end(redis, &prefix, dir.join(format!("front-end-{p}.txt")))
        })
        .collect();
    let ports: Vec<u16> = front_ends.iter().map(|f| f.port).collect();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let seen = runtime.block_on(load(&ports));

    let mut admitted: HashMap<String, Vec<(u64, u64)>> = HashMap::new();
    let mut served = 0;
    for front_end in &mut front_ends {
        drop(front_end.child.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(60);
        let status = loop {
            if let Some(status) = front_end.child.try_wait().expect("wait") {
                break status;
            }
            assert!(Instant::now() < deadline, "a front-end ran past 60 s");
            std::thread::sleep(Duration::from_millis(20));
        };
        assert!(status.success(), "a front-end failed");
        let text = std::fs::read_to_string(&front_end.log).expect("log");
        for line in text.lines() {
            let (first, rest) = line.split_once(' ').expect("two fields");
            if first == "#" {
                served += rest.parse::<u64>().expect("count");
            } else {
                admitted
                    .entry(first.to_owned())
                    .or_default()
                    .push((rest.parse().expect("tick"), 1));
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    let keys = KEYS
        .iter()
        .map(|key| {
            let (ok, refused) = seen.get(key).copied().unwrap_or_default();
            (
                *key,
                (admitted.remove(*key).unwrap_or_default(), ok, refused),
            )
        })
        .collect();
    FleetRun { keys, served }
}

/// The checks of a shared fleet run: every 200 a client saw is a recorded admission, the
/// limit bit, no window over it; prints the counts.
fn check_fleet(what: &str, run: &FleetRun) {
    let mut total_admitted = 0;
    let mut total_requests = 0;
    for key in KEYS {
        let (log, ok, refused) = run.keys[key].clone();
        assert_eq!(
            log.len() as u64,
            ok,
            "{what}: {key}: every 200 a client saw is an admission a front-end recorded"
        );
        if key == KEYS[0] {
            assert!(
                ok > 2 * MAX && refused > 0,
                "{what}: {key}: the limit must bite: {ok} / {refused}"
            );
        }
        let over = over_admissions(log, MAX, WINDOW);
        println!(
            "fleet {what}: {key}: {ok} admitted, {refused} refused, {over} windows over {MAX} per \
             {} ms",
            WINDOW / 1_000
        );
        assert_eq!(over, 0, "{what}: {key}");
        total_admitted += ok;
        total_requests += ok + refused;
    }
    assert_eq!(
        run.served, total_admitted,
        "{what}: the services saw exactly the admissions"
    );
    println!(
        "fleet {what}: {PROCESSES} processes, {CLIENTS} clients, {total_requests} requests, \
         {total_admitted} admitted, 0 over-admissions"
    );
}

#[test]
fn asynchronous_fleet_of_http_processes_never_over_admits() {
    if std::env::var(CHILD_OUT).is_ok() {
        return;
    }
    let server = Server::start();
    check_fleet("over one server", &run_fleet(&server.url(), true));

    // The broken control: front-ends that do not share their limit (a prefix each) admit up
    // to three times the limit, and the same check must see it.
    let alone = run_fleet(&server.url(), false);
    let (log, ok, _) = alone.keys[KEYS[0]].clone();
    let over = over_admissions(log, MAX, WINDOW);
    println!(
        "fleet, limits not shared: {}: {ok} admitted, {over} windows over",
        KEYS[0]
    );
    assert!(
        over > 0,
        "the check catches front-ends that do not share the limit"
    );
}

/// The same fleet over a Redis Cluster (feature `cluster`, run by the cluster tests' filter).
#[cfg(feature = "cluster")]
#[test]
fn cluster_fleet_of_http_processes_never_over_admits() {
    if std::env::var(CHILD_OUT).is_ok() {
        return;
    }
    let cluster = crate::cluster::Cluster::start();
    check_fleet(
        "over a cluster",
        &run_fleet(&cluster.urls().join(","), true),
    );
}
