//! The async limiter over a real Redis Cluster (feature `cluster`): six `redis-server` nodes
//! on loopback ports (three primaries with a replica each, joined by `redis-cli --cluster
//! create`); load through it with every admission recorded, a busy key's slot migrated while
//! calls go on, and a primary killed so that its replica takes over.

use std::collections::HashMap;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use slidelimit_redis::{AsyncRedisLimiter, Options};

use crate::over_admissions;
use crate::{limit, Server};
use slidelimit_trace::rng::SplitMix64;

/// A cluster of six nodes, stopped (killed) on drop.
pub(crate) struct Cluster {
    nodes: Vec<Server>,
}

impl Cluster {
    pub(crate) fn start() -> Self {
        let nodes: Vec<Server> = (0..6).map(|_| Server::start_cluster_node()).collect();
        let addresses: Vec<String> = nodes
            .iter()
            .map(|node| format!("127.0.0.1:{}", node.port()))
            .collect();
        let status = Command::new("redis-cli")
            .args(["--cluster", "create"])
            .args(&addresses)
            .args(["--cluster-replicas", "1", "--cluster-yes"])
            .stdout(std::process::Stdio::null())
            .status()
            .expect("redis-cli on PATH (bash ci/redis.sh installs it with redis-server)");
        assert!(status.success(), "redis-cli --cluster create failed");
        let cluster = Self { nodes };
        cluster.wait_until_ok(Duration::from_secs(30));
        cluster
    }

    pub(crate) fn urls(&self) -> Vec<String> {
        self.nodes.iter().map(Server::url).collect()
    }

    /// Waits until every live node reports the cluster healthy with all slots served.
    fn wait_until_ok(&self, limit: Duration) {
        let start = Instant::now();
        loop {
            let healthy = self
                .nodes
                .iter()
                .filter(|node| node.is_running())
                .all(|node| {
                    let info: String = redis::cmd("CLUSTER")
                        .arg("INFO")
                        .query(&mut node.connection())
                        .unwrap_or_default();
                    info.contains("cluster_state:ok") && info.contains("cluster_slots_ok:16384")
                });
            if healthy {
                return;
            }
            if start.elapsed() > limit {
                for node in self.nodes.iter().filter(|node| node.is_running()) {
                    let nodes: String = redis::cmd("CLUSTER")
                        .arg("NODES")
                        .query(&mut node.connection())
                        .unwrap_or_default();
                    let info: String = redis::cmd("CLUSTER")
                        .arg("INFO")
                        .query(&mut node.connection())
                        .unwrap_or_default();
                    eprintln!("node {}:\n{info}\n{nodes}", node.port());
                }
                panic!("the cluster did not become healthy");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The node (index) serving `slot` as primary, and its id.
    fn owner(&self, slot: u16) -> (usize, String) {
        for (index, node) in self.nodes.iter().enumerate() {
            if !node.is_running() {
                continue;
            }
            let role: Vec<redis::Value> = redis::cmd("ROLE")
                .query(&mut node.connection())
                .expect("ROLE");
            if !matches!(role.first(), Some(redis::Value::BulkString(r)) if r == b"master") {
                continue;
            }
            let id: String = redis::cmd("CLUSTER")
                .arg("MYID")
                .query(&mut node.connection())
                .expect("MYID");
            // The node's slot map: the primary listed first for each range owns it.
            let slots: Vec<Vec<redis::Value>> = redis::cmd("CLUSTER")
                .arg("SLOTS")
                .query(&mut node.connection())
                .expect("SLOTS");
            for range in slots {
                let (Some(redis::Value::Int(from)), Some(redis::Value::Int(to))) =
                    (range.first(), range.get(1))
                else {
                    continue;
                };
                if (*from..=*to).contains(&i64::from(slot)) {
                    if let Some(redis::Value::Array(primary)) = range.get(2) {
                        if let Some(redis::Value::BulkString(owner)) = primary.get(2) {
                            if *owner == id.as_bytes() {
                                return (index, id);
                            }
                        }
                    }
                }
            }
        }
        panic!("no live primary owns slot {slot}");
    }

    /// The limiter key `key`'s slot (its hash tag is `#key`, see the crate's key naming).
    fn slot_of(&self, key: &str) -> u16 {
        redis::cmd("CLUSTER")
            .arg("KEYSLOT")
            .arg(format!("#{key}"))
            .query(&mut self.nodes[0].connection())
            .expect("KEYSLOT")
    }

    /// Moves `slot` from its primary to another primary, key by key, as `redis-cli
    /// --cluster reshard` does (IMPORTING, MIGRATING, MIGRATE, then the new owner everywhere).
    fn migrate(&self, slot: u16) -> usize {
        let (from, from_id) = self.owner(slot);
        let (to, to_id) = (0..self.nodes.len())
            .filter(|index| *index != from)
            .find_map(|index| {
                let node = &self.nodes[index];
                let role: Vec<redis::Value> =
                    redis::cmd("ROLE").query(&mut node.connection()).ok()?;
                matches!(role.first(), Some(redis::Value::BulkString(r)) if r == b"master").then(
                    || {
                        let id: String = redis::cmd("CLUSTER")
                            .arg("MYID")
                            .query(&mut node.connection())
                            .expect("MYID");
                        (index, id)
                    },
                )
            })
            .expect("another primary");
        let (mut source, mut target) = (self.nodes[from].connection(), self.nodes[to].connection());
        let set = |con: &mut redis::Connection, state: &str, id: &str| {
            let _: () = redis::cmd("CLUSTER")
                .arg("SETSLOT")
                .arg(slot)
                .arg(state)
                .arg(id)
                .query(con)
                .expect("SETSLOT");
        };
        set(&mut target, "IMPORTING", &from_id);
        set(&mut source, "MIGRATING", &to_id);
        let mut moved = 0;
        loop {
            let keys: Vec<String> = redis::cmd("CLUSTER")
                .arg("GETKEYSINSLOT")
                .arg(slot)
                .arg(100)
                .query(&mut source)
                .expect("GETKEYSINSLOT");
            if keys.is_empty() {
                break;
            }
            moved += keys.len();
            let _: redis::Value = redis::cmd("MIGRATE")
                .arg("127.0.0.1")
                .arg(self.nodes[to].port())
                .arg("")
                .arg(0)
                .arg(5_000)
                .arg("KEYS")
                .arg(&keys)
                .query(&mut source)
                .expect("MIGRATE");
        }
        set(&mut target, "NODE", &to_id);
        set(&mut source, "NODE", &to_id);
        for (index, node) in self.nodes.iter().enumerate() {
            if index != from && index != to && node.is_running() {
                let _: Result<(), _> = redis::cmd("CLUSTER")
                    .arg("SETSLOT")
                    .arg(slot)
                    .arg("NODE")
                    .arg(&to_id)
                    .query(&mut node.connection());
            }
        }
        moved
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime")
}

const MAX: u64 = 20;
const WINDOW: u64 = 200_000; // 20 per 200 ms, in microseconds
const KEYS: [&str; 6] = ["hot", "a", "b", "c", "d", "e"];

/// What a load run saw: per key, the admissions (Redis's deciding tick) and the errors.
#[derive(Default)]
struct Seen {
    admitted: HashMap<&'static str, Vec<(u64, u64)>>,
    calls: u64,
    errors: u64,
    slowest: Duration,
}

/// `tasks` tasks calling `limiter` on `KEYS` (the first one half of the calls) until `stop`.
async fn load(limiter: Arc<AsyncRedisLimiter>, tasks: u64, stop: Arc<Mutex<bool>>) -> Seen {
    let handles: Vec<_> = (0..tasks)
        .map(|task| {
            let (limiter, stop) = (Arc::clone(&limiter), Arc::clone(&stop));
            tokio::spawn(async move {
                let mut seen = Seen::default();
                let mut rng = SplitMix64::new(task + 1);
                while !*stop.lock().expect("stop") {
                    let roll = rng.below(10) as usize;
                    let key = if roll < 5 { KEYS[0] } else { KEYS[roll - 4] };
                    let asked = Instant::now();
                    let outcome = limiter.check_and_hit(key).await;
                    seen.slowest = seen.slowest.max(asked.elapsed());
                    seen.calls += 1;
                    match outcome {
                        Ok(decision) if decision.admitted => {
                            seen.admitted
                                .entry(key)
                                .or_default()
                                .push((decision.now, 1));
                        }
                        Ok(_) => {}
                        Err(err) => {
                            assert!(err.is_backend_failure(), "a typed backend error: {err}");
                            seen.errors += 1;
                        }
                    }
                }
                seen
            })
        })
        .collect();
    let mut total = Seen::default();
    for handle in handles {
        let seen = handle.await.expect("task");
        total.calls += seen.calls;
        total.errors += seen.errors;
        total.slowest = total.slowest.max(seen.slowest);
        for (key, ticks) in seen.admitted {
            total.admitted.entry(key).or_default().extend(ticks);
        }
    }
    total
}

/// Runs the load for `run`, calling `during` from another thread meanwhile.
fn load_while(urls: &[String], prefix: &str, run: Duration, during: impl FnOnce() + Send) -> Seen {
    let nodes: Vec<&str> = urls.iter().map(String::as_str).collect();
    let timeout = Duration::from_secs(1);
    let options = Options::new().prefix(prefix).timeout(timeout);
    let limiter =
        Arc::new(AsyncRedisLimiter::cluster(&nodes, limit(MAX, WINDOW), options).expect("limiter"));
    let stop = Arc::new(Mutex::new(false));
    let runtime = runtime();
    let running = runtime.spawn(load(limiter, 16, Arc::clone(&stop)));
    std::thread::scope(|scope| {
        scope.spawn(during);
        std::thread::sleep(run);
    });
    *stop.lock().expect("stop") = true;
    let seen = runtime.block_on(running).expect("load");
    // A call may wait for redirections and retries, never much past its timeout.
    assert!(
        seen.slowest < 4 * timeout + Duration::from_secs(2),
        "a call took {:?}",
        seen.slowest
    );
    seen
}

fn report(what: &str, seen: &Seen) -> u64 {
    let mut over = 0;
    let mut admitted = 0;
    for key in KEYS {
        let ticks = seen.admitted.get(key).cloned().unwrap_or_default();
        admitted += ticks.len();
        over += over_admissions(ticks, MAX, WINDOW);
    }
    println!(
        "cluster, {what}: {} calls, {admitted} admitted, {} errors, {over} windows over {MAX} \
         per {} ms, slowest call {:?}",
        seen.calls,
        seen.errors,
        WINDOW / 1_000,
        seen.slowest
    );
    assert!(admitted as u64 > 2 * MAX, "{what}: the load ran");
    over
}

#[test]
fn cluster_load_migration_and_failover() {
    let mut cluster = Cluster::start();
    // The keys spread over the primaries: routing is exercised, not one node.
    let owners: std::collections::HashSet<usize> = KEYS
        .iter()
        .map(|key| cluster.owner(cluster.slot_of(key)).0)
        .collect();
    assert!(owners.len() >= 2, "keys on {} primaries", owners.len());

    let urls = cluster.urls();
    let steady = load_while(&urls, "cluster-steady", Duration::from_millis(1500), || {});
    assert_eq!(report("steady load", &steady), 0);
    assert_eq!(steady.errors, 0, "no errors on a healthy cluster");

    // The hot key's slot moves to another primary while calls go on.
    let slot = cluster.slot_of(KEYS[0]);
    let before = cluster.owner(slot).0;
    let migrating = load_while(
        &urls,
        "cluster-migrate",
        Duration::from_millis(2000),
        || {
            std::thread::sleep(Duration::from_millis(500));
            let moved = cluster.migrate(slot);
            assert!(moved > 0, "the busy slot held keys to move");
        },
    );
    assert_ne!(cluster.owner(slot).0, before, "the slot moved");
    assert_eq!(
        report("slot migrated under load", &migrating),
        0,
        "a migration loses nothing"
    );

    // The hot key's primary dies; its replica takes over (asynchronous replication: writes
    // the replica had not received may be admitted again, the documented failover caveat).
    let (victim, _) = cluster.owner(slot);
    let failing = load_while(
        &urls,
        "cluster-failover",
        Duration::from_millis(6000),
        || {
            std::thread::sleep(Duration::from_millis(500));
            cluster.nodes[victim].kill();
        },
    );
    cluster.wait_until_ok(Duration::from_secs(30));
    assert_ne!(cluster.owner(slot).0, victim, "a replica took over");
    let over = report("primary killed, replica promoted", &failing);
    assert!(
        failing.errors > 0,
        "calls to the dead primary failed, typed"
    );
    println!("cluster, failover: {over} windows over the limit (the caveat allows writes lost in the switch)");
}
