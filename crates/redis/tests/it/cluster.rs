//! The async limiter over a real Redis Cluster (feature `cluster`): six `redis-server` nodes
//! on loopback ports (three primaries with a replica each, joined by `redis-cli --cluster
//! create`); load through it with every admission recorded, a busy key's slot migrated while
//! calls go on, and a primary killed so that its replica takes over.

use std::collections::HashMap;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
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

    /// A node that runs.
    fn live(&self) -> &Server {
        self.nodes
            .iter()
            .find(|node| node.is_running())
            .expect("a live node")
    }

    /// The limiter key `key`'s slot (its hash tag is `#key`, see the crate's key naming).
    fn slot_of(&self, key: &str) -> u16 {
        redis::cmd("CLUSTER")
            .arg("KEYSLOT")
            .arg(format!("#{key}"))
            .query(&mut self.live().connection())
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
/// How far past its timeout a call may end: the timer's and the scheduler's delay on a
/// loaded machine.
const SLACK: Duration = Duration::from_millis(50);

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
    // A call may wait for redirections and retries, never past its timeout.
    assert!(
        seen.slowest <= timeout + SLACK,
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

    // A shard's failure should cost only its own slots, but with the default
    // `cluster-require-full-coverage yes` every node refuses every command (CLUSTERDOWN)
    // from the moment a primary is marked failed until its replica is promoted: no client
    // can keep the healthy shards answering then. A limiter's cluster should say no (see
    // docs/fleet.md, "Redis Cluster"), and the failovers below hold the client to that. To measure the default
    // instead: SLIDELIMIT_FULL_COVERAGE=yes (the healthy shards' calls are then reported,
    // not checked).
    let coverage = std::env::var("SLIDELIMIT_FULL_COVERAGE").unwrap_or_else(|_| "no".into());
    for node in &cluster.nodes {
        let _: () = redis::cmd("CONFIG")
            .arg("SET")
            .arg("cluster-require-full-coverage")
            .arg(&coverage)
            .query(&mut node.connection())
            .expect("CONFIG SET");
    }
    let spared = coverage == "no";
    // Measured on the 2-core CI VM (results/cluster-failover.md), healthy shards during the
    // failover, before (redis's `cluster_async` client, b35809e) and after (this crate's
    // routing, 62a2797):
    // - killed: 0 of 3319 calls failed, p99 7.0 ms, before; 0 of 3288, p99 3.5 ms, after.
    //   The failed shard: 20 of 21 calls waited the 1 s timeout, recovery 826 ms after the
    //   promotion, before; 1644 calls all failed at once (p50 5 µs), recovery 56 ms, after.
    // - hung: 24 of 828 failed, and every healthy call after the first timeout on the hung
    //   node (24 of 24 after the promotion too), before; 0 of 2372, p99 1.8 ms, after. The
    //   failed shard never recovered before; 4 calls waited the timeout, recovery 88 ms,
    //   after.
    // With coverage `yes` the killed run failed 8 of 2652 healthy calls (all at the timeout)
    // before, 8 of 2635 (CLUSTERDOWN, before the deadline) after; the hung run 32 of 840
    // before, 0 of 1800 (slowest 801 ms) after: the servers refused them for a while.
    // The hot key's primary dies (SIGKILL): its connections close, new ones are refused.
    let (victim, _) = cluster.owner(slot);
    let killed = failover(&mut cluster, "cluster-kill", victim, Failure::Kill);
    killed.check("primary killed", spared);
    // Another primary hangs (SIGSTOP), as a host that stops answering does: its
    // connections stay open and new ones are accepted, but nothing answers.
    let victim = cluster
        .primaries_with_replica()
        .into_iter()
        .find(|primary| *primary != cluster.owner(slot).0)
        .expect("a primary that still has a replica");
    let hung = failover(&mut cluster, "cluster-hang", victim, Failure::Hang);
    hung.check("primary hung", spared);
}

/// How the failover's primary fails.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Failure {
    /// SIGKILL: the process is gone.
    Kill,
    /// SIGSTOP until the measurement ends, then SIGKILL.
    Hang,
}

/// One call of a failover run: its key (index) and that key's shard (the primary's node
/// index before the failure), when it started and how long it took (from the run's start),
/// and what it answered (the deciding tick of an admission).
struct Call {
    shard: usize,
    key: usize,
    started: Duration,
    latency: Duration,
    outcome: Result<Option<u64>, String>,
}

impl Call {
    fn ended(&self) -> Duration {
        self.started + self.latency
    }
}

/// What a failover run saw.
struct Failover {
    calls: Vec<Call>,
    victim: usize,
    /// The tasks calling the victim's keys.
    victim_tasks: usize,
    keys: usize,
    timeout: Duration,
    /// When the primary failed and when its replica answered `ROLE` as a primary.
    failed: Duration,
    promoted: Duration,
}

/// The calls' latency percentiles: (count, p50, p99, max).
fn percentiles(calls: &[&Call]) -> (usize, Duration, Duration, Duration) {
    let mut latencies: Vec<Duration> = calls.iter().map(|call| call.latency).collect();
    latencies.sort_unstable();
    let at = |quantile: f64| {
        let last = latencies.len().saturating_sub(1);
        // Nearest rank; the counts are small enough to be exact in an f64.
        let index = (last as f64 * quantile).round() as usize;
        latencies.get(index).copied().unwrap_or_default()
    };
    (latencies.len(), at(0.5), at(0.99), at(1.0))
}

impl Failover {
    fn group(&self, healthy: bool, keep: impl Fn(&Call) -> bool) -> Vec<&Call> {
        self.calls
            .iter()
            .filter(|call| (call.shard != self.victim) == healthy && keep(call))
            .collect()
    }

    /// One line per group of calls: count, failures, calls at or past the timeout, latency
    /// percentiles.
    fn describe(&self, what: &str, calls: &[&Call]) {
        let (count, p50, p99, max) = percentiles(calls);
        let failed = calls.iter().filter(|call| call.outcome.is_err()).count();
        let late = calls
            .iter()
            .filter(|call| call.latency >= self.timeout)
            .count();
        println!(
            "cluster failover, {what}: {count} calls, {failed} failed, {late} at or past the \
             timeout, latency p50 {p50:.1?} p99 {p99:.1?} max {max:.1?}"
        );
    }

    /// Reports the run by group and phase, then asserts: no window over the limit, every
    /// call within the timeout and `SLACK`, no failed or slow call on a healthy shard (if
    /// `spared`), only the calls in flight when it failed waiting for the failed primary,
    /// and its shard answering again soon after the promotion.
    fn check(&self, what: &str, spared: bool) {
        let (failed, promoted) = (self.failed, self.promoted);
        println!(
            "cluster failover, {what}: node {} failed at {failed:.2?}, its replica a primary \
             at {promoted:.2?} ({:.2?} later)",
            self.victim,
            promoted - failed
        );
        let during = |call: &Call| call.ended() > failed && call.started < promoted;
        let after = |call: &Call| call.started >= promoted;
        self.describe(
            "before the failure, every shard",
            &self
                .calls
                .iter()
                .filter(|call| call.ended() <= failed)
                .collect::<Vec<_>>(),
        );
        let healthy_during = self.group(true, during);
        self.describe("healthy shards during the failover", &healthy_during);
        self.describe(
            "healthy shards after the promotion",
            &self.group(true, after),
        );
        self.describe(
            "failed shard during the failover",
            &self.group(false, during),
        );
        let failed_after = self.group(false, after);
        self.describe("failed shard after the promotion", &failed_after);
        let first_success = failed_after
            .iter()
            .filter(|call| call.outcome.is_ok())
            .map(|call| call.started)
            .min();
        let last_failure = self
            .group(false, |call| call.outcome.is_err())
            .iter()
            .map(|call| call.ended())
            .max();
        println!(
            "cluster failover, {what}: the failed shard's first success {:.2?} after the \
             promotion, its last failure ended {:.2?} after it",
            first_success.map(|at| at - promoted),
            last_failure.map(|at| at.checked_sub(promoted)),
        );

        // The window audit per key. Writes the dead primary had not replicated are lost
        // (the documented caveat), but its replica takes over seconds after the failure,
        // far beyond one window (200 ms): no admission it forgot shares a window with one
        // it makes.
        for key in 0..self.keys {
            let admitted: Vec<(u64, u64)> = self
                .calls
                .iter()
                .filter(|call| call.key == key)
                .filter_map(|call| call.outcome.as_ref().ok().copied().flatten())
                .map(|tick| (tick, 1))
                .collect();
            assert!(
                admitted.len() as u64 > MAX,
                "{what}: key {key} was admitted"
            );
            assert_eq!(
                over_admissions(admitted, MAX, WINDOW),
                0,
                "{what}: key {key}'s windows over the limit"
            );
        }
        // Every call ends within its timeout and a small slack, the failed shard's too.
        let slowest = self.calls.iter().map(|call| call.latency).max();
        assert!(
            slowest.is_some_and(|slowest| slowest <= self.timeout + SLACK),
            "{what}: a call took {slowest:?} (timeout {:?})",
            self.timeout
        );
        // The failed shard's calls failed, typed, while no primary served it, and answer
        // again soon after the promotion: a slot map refreshed on errors finds the new
        // primary once the others know it (gossip, well under a second here).
        assert!(
            !self.group(false, |call| call.outcome.is_err()).is_empty(),
            "{what}: calls to the dead primary failed"
        );
        let settled = promoted + Duration::from_secs(2);
        let late = self.group(false, |call| call.started >= settled);
        assert!(
            late.len() > 50,
            "{what}: the failed shard was called after the promotion"
        );
        assert!(
            late.iter().all(|call| call.outcome.is_ok()),
            "{what}: the failed shard's keys answer 2 s after the promotion"
        );
        // With `cluster-require-full-coverage yes` the healthy shards refuse too, and the
        // failed one for a while after the promotion: reported above, not checked.
        if spared {
            // The failed primary's calls fail at once once it has failed one: only those in
            // flight then (one per task on its keys), and a few more if a reconnection to a
            // hung node looked successful, wait for their timeout.
            let waited = self.group(false, |call| call.latency >= self.timeout).len();
            assert!(
                waited <= 2 * self.victim_tasks,
                "{what}: {waited} calls on the failed shard waited for the timeout"
            );
            // A healthy shard's calls never fail and never wait for the timeout.
            let healthy = self.group(true, |_| true);
            let bad: Vec<String> = healthy
                .iter()
                .filter(|call| call.outcome.is_err() || call.latency >= self.timeout)
                .map(|call| {
                    format!(
                        "{:.3?} +{:.3?} {:?}",
                        call.started, call.latency, call.outcome
                    )
                })
                .collect();
            assert!(
                bad.is_empty(),
                "{what}: {} of {} calls on healthy shards failed or timed out, first {:?}",
                bad.len(),
                healthy.len(),
                &bad[..bad.len().min(5)]
            );
            assert!(
                healthy_during.len() > 100,
                "{what}: the healthy shards were called during the failover"
            );
        }
    }
}

impl Cluster {
    /// The primaries (node indexes) that have a live replica.
    fn primaries_with_replica(&self) -> Vec<usize> {
        let mut primaries = Vec::new();
        for (index, node) in self.nodes.iter().enumerate() {
            if !node.is_running() || !is_primary(node) {
                continue;
            }
            let id: String = redis::cmd("CLUSTER")
                .arg("MYID")
                .query(&mut node.connection())
                .expect("MYID");
            if self.replica_of(&id).is_some() {
                primaries.push(index);
            }
        }
        primaries
    }

    /// The live replica (node index) of the primary `primary_id`.
    fn replica_of(&self, primary_id: &str) -> Option<usize> {
        let nodes: String = redis::cmd("CLUSTER")
            .arg("NODES")
            .query(&mut self.live().connection())
            .expect("NODES");
        // `<id> <ip:port@bus> <flags> <primary id> …`, one line per node.
        nodes.lines().find_map(|line| {
            let fields: Vec<&str> = line.split(' ').collect();
            if fields.get(3) != Some(&primary_id) || fields.get(2)?.contains("fail") {
                return None;
            }
            let address = fields.get(1)?.split('@').next()?;
            let port: u16 = address.rsplit(':').next()?.parse().ok()?;
            self.nodes
                .iter()
                .position(|node| node.is_running() && node.port() == port)
        })
    }

    /// `per_shard` limiter keys (named `f0`, `f1`, …) on each primary, by slot: the
    /// keys and their owners.
    fn keys_per_shard(&self, per_shard: usize) -> Vec<(String, usize)> {
        let mut keys = Vec::new();
        let mut counts: HashMap<usize, usize> = HashMap::new();
        for candidate in (0..500).map(|i| format!("f{i}")) {
            let owner = self.owner(self.slot_of(&candidate)).0;
            let count = counts.entry(owner).or_default();
            if *count < per_shard {
                *count += 1;
                keys.push((candidate, owner));
            }
            if keys.len() == 3 * per_shard {
                return keys;
            }
        }
        panic!("no {per_shard} keys on each of three primaries");
    }
}

fn is_primary(node: &Server) -> bool {
    let role: Vec<redis::Value> = redis::cmd("ROLE")
        .query(&mut node.connection())
        .unwrap_or_default();
    matches!(role.first(), Some(redis::Value::BulkString(r)) if r == b"master")
}

/// A steady load on two keys of each shard (two tasks per key, one call each 10 ms: about
/// twice the limit per key, so some calls are refused) while the primary `victim` fails
/// after 1 s; runs until 3 s after its replica is promoted, recording every call.
fn failover(cluster: &mut Cluster, prefix: &str, victim: usize, failure: Failure) -> Failover {
    const TASKS_PER_KEY: usize = 2;
    const PERIOD: Duration = Duration::from_millis(10);
    let timeout = Duration::from_secs(1);
    let victim_id: String = redis::cmd("CLUSTER")
        .arg("MYID")
        .query(&mut cluster.nodes[victim].connection())
        .expect("MYID");
    let replica = cluster
        .replica_of(&victim_id)
        .expect("the victim's replica");
    let keys = cluster.keys_per_shard(2);
    assert!(keys.iter().any(|(_, owner)| *owner == victim));

    let urls = cluster.urls();
    let nodes: Vec<&str> = urls.iter().map(String::as_str).collect();
    let options = Options::new().prefix(prefix).timeout(timeout);
    let limiter =
        Arc::new(AsyncRedisLimiter::cluster(&nodes, limit(MAX, WINDOW), options).expect("limiter"));
    let stop = Arc::new(AtomicBool::new(false));
    let runtime = runtime();
    let start = Instant::now();
    let tasks: Vec<_> = (0..keys.len() * TASKS_PER_KEY)
        .map(|task| {
            let (limiter, stop) = (Arc::clone(&limiter), Arc::clone(&stop));
            let key = task % keys.len();
            let (name, shard) = keys[key].clone();
            runtime.spawn(async move {
                let mut calls = Vec::new();
                let mut ticks = tokio::time::interval(PERIOD);
                ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                // Relaxed: a flag polled between calls; nothing is published through it.
                while !stop.load(Ordering::Relaxed) {
                    ticks.tick().await;
                    let started = start.elapsed();
                    let outcome = limiter.check_and_hit(&name).await;
                    let latency = start.elapsed() - started;
                    let outcome = match outcome {
                        Ok(decision) => Ok(decision.admitted.then_some(decision.now)),
                        Err(err) => {
                            assert!(err.is_backend_failure(), "a typed backend error: {err}");
                            Err(err.to_string())
                        }
                    };
                    calls.push(Call {
                        shard,
                        key,
                        started,
                        latency,
                        outcome,
                    });
                }
                calls
            })
        })
        .collect();

    std::thread::sleep(Duration::from_secs(1));
    let failed = start.elapsed();
    match failure {
        Failure::Kill => cluster.nodes[victim].kill(),
        Failure::Hang => cluster.nodes[victim].signal("-STOP"),
    }
    let promoted = loop {
        if is_primary(&cluster.nodes[replica]) {
            break start.elapsed();
        }
        assert!(
            start.elapsed() < failed + Duration::from_secs(30),
            "the replica was not promoted"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    std::thread::sleep(Duration::from_secs(3));
    // Relaxed: see the tasks' loop.
    stop.store(true, Ordering::Relaxed);
    let calls: Vec<Call> = runtime.block_on(async {
        let mut calls = Vec::new();
        for task in tasks {
            calls.extend(task.await.expect("task"));
        }
        calls
    });
    if failure == Failure::Hang {
        cluster.nodes[victim].kill();
    }
    cluster.wait_until_ok(Duration::from_secs(30));
    Failover {
        calls,
        victim,
        victim_tasks: TASKS_PER_KEY * keys.iter().filter(|(_, owner)| *owner == victim).count(),
        keys: keys.len(),
        timeout,
        failed,
        promoted,
    }
}
