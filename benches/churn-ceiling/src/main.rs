//! Key churn on a map shared by every thread, with no limiter around it: each call inserts a
//! never-seen key, and each thread removes its own oldest key once it holds its share of
//! `live` keys, so the map holds about `live` keys while every call creates one and removes
//! one, as the limiters' `churn` workload does. Four layouts:
//! - `papaya`: the lock-free limiter's map (512 papaya shards sharing one seize collector,
//!   reclamation batches of 31, blocking resizes, no `fast-barrier`), a 32-byte value of
//!   atomics per key (a key's inline state);
//! - `papaya-incremental`: the same with papaya's incremental resizes (a table is copied a
//!   chunk at a time by the calls that meet the copy, instead of whole by the call that starts
//!   it), to tell the resizes' share of the tail;
//! - `mutex-map`: 512 `Mutex<HashMap>` shards, the value boxed (one allocation per key, as
//!   papaya's node);
//! - `private`: each thread its own `HashMap` of its own keys, boxed values, nothing shared:
//!   what the machine gives two threads when no cache line moves between them.
//!
//! Prints `<mode> <threads> <live> <million calls per second> <p99.9 ns> <p99.99 ns>` after
//! `--duration-ms` (default 1500 ms) of calls, one call in 16 timed alone (as the comparison's
//! runner samples its cells). `--count N` instead runs `2 × live` calls of warm-up and then `N`
//! untimed calls in `measured` on one thread, for callgrind
//! (`--toggle-collect='slidelimit_churn_ceiling::measured*'`): instructions per churn call.

use std::collections::{HashMap, VecDeque};
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use slidelimit_trace::rng::mix64;

type Hasher = foldhash::fast::FixedState;

const SHARDS: usize = 512;

/// A key's state: four atomic words (the limiter's inline exact log at its smallest).
#[derive(Default)]
struct Value {
    _words: [AtomicU64; 4],
}

/// One layout: `create` inserts a key, `remove` forgets one this thread created.
trait Layout: Send + Sync {
    fn create(&self, thread: usize, key: u64);
    fn remove(&self, thread: usize, key: u64);
}

struct Papaya {
    shards: Vec<papaya::HashMap<u64, Value, Hasher>>,
    shard_hasher: Hasher,
}

impl Papaya {
    /// Blocking resizes, or incremental ones copying `incremental_chunk` entries at a time.
    fn new(incremental_chunk: Option<usize>) -> Self {
        let collector = Arc::new(seize::Collector::new().batch_size(31));
        let shards = (0..SHARDS)
            .map(|_| {
                papaya::HashMap::builder()
                    .hasher(Hasher::with_seed(7))
                    .shared_collector(Arc::clone(&collector))
                    .resize_mode(match incremental_chunk {
                        Some(chunk) => papaya::ResizeMode::Incremental(chunk),
                        None => papaya::ResizeMode::Blocking,
                    })
                    .build()
            })
            .collect();
        Self {
            shards,
            shard_hasher: Hasher::with_seed(9),
        }
    }

    fn shard(&self, key: u64) -> &papaya::HashMap<u64, Value, Hasher> {
        &self.shards[self.shard_hasher.hash_one(key) as usize % SHARDS]
    }
}

impl Layout for Papaya {
    fn create(&self, _: usize, key: u64) {
        let shard = self.shard(key);
        let guard = shard.guard();
        let _ = shard.try_insert_with(key, Value::default, &guard);
    }

    fn remove(&self, _: usize, key: u64) {
        let shard = self.shard(key);
        let guard = shard.guard();
        shard.remove(&key, &guard);
    }
}

/// A plain map of boxed values, one allocation per key as papaya's node.
type BoxedMap = HashMap<u64, Box<Value>, Hasher>;

struct MutexMap {
    shards: Vec<Mutex<BoxedMap>>,
    shard_hasher: Hasher,
}

impl MutexMap {
    fn new() -> Self {
        Self {
            shards: (0..SHARDS)
                .map(|_| Mutex::new(HashMap::with_hasher(Hasher::with_seed(7))))
                .collect(),
            shard_hasher: Hasher::with_seed(9),
        }
    }

    fn shard(&self, key: u64) -> std::sync::MutexGuard<'_, BoxedMap> {
        self.shards[self.shard_hasher.hash_one(key) as usize % SHARDS]
            .lock()
            .unwrap()
    }
}

impl Layout for MutexMap {
    fn create(&self, _: usize, key: u64) {
        self.shard(key).insert(key, Box::default());
    }

    fn remove(&self, _: usize, key: u64) {
        self.shard(key).remove(&key);
    }
}

/// One map per thread, each padded to its own cache lines; a thread only locks its own
/// (uncontended, the lock word stays in its core's cache).
struct Private {
    maps: Vec<Padded<Mutex<BoxedMap>>>,
}

#[repr(align(128))]
struct Padded<T>(T);

impl Layout for Private {
    fn create(&self, thread: usize, key: u64) {
        self.maps[thread]
            .0
            .lock()
            .unwrap()
            .insert(key, Box::default());
    }

    fn remove(&self, thread: usize, key: u64) {
        self.maps[thread].0.lock().unwrap().remove(&key);
    }
}

/// One thread's churn: the keys it created and still holds, oldest first, and the counter
/// its next key is mixed from.
struct Churner {
    thread: usize,
    share: usize,
    held: VecDeque<u64>,
    next: u64,
}

impl Churner {
    fn new(thread: usize, share: usize) -> Self {
        Self {
            thread,
            share,
            held: VecDeque::with_capacity(share + 1),
            next: (thread as u64) << 48,
        }
    }

    /// `calls` calls, each creating a never-seen key and, once `share` keys are held,
    /// removing the oldest; one call in 16 timed into `samples`, if given.
    #[inline(never)]
    fn run(&mut self, layout: &dyn Layout, calls: u64, mut samples: Option<&mut Vec<u32>>) {
        for call in 0..calls {
            let timed = (samples.is_some() && call & 15 == 0).then(Instant::now);
            self.next += 1;
            let key = mix64(self.next);
            layout.create(self.thread, key);
            self.held.push_back(key);
            if self.held.len() > self.share {
                let oldest = self.held.pop_front().expect("held is not empty");
                layout.remove(self.thread, oldest);
            }
            if let (Some(started), Some(samples)) = (timed, samples.as_deref_mut()) {
                samples.push(u32::try_from(started.elapsed().as_nanos()).unwrap_or(u32::MAX));
            }
        }
    }
}

/// [`Churner::run`] untimed under its own name, for callgrind's `--toggle-collect`.
#[inline(never)]
fn measured(layout: &dyn Layout, churner: &mut Churner, calls: u64) {
    churner.run(layout, calls, None);
}

/// The `q`-quantile of sorted samples.
fn quantile(sorted: &[u32], q: f64) -> u32 {
    sorted[((sorted.len() as f64 * q) as usize).min(sorted.len() - 1)]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: slidelimit-churn-ceiling <papaya|papaya-incremental|mutex-map|private> <threads> <live keys> [--duration-ms N | --count N]";
    let (Some(mode), Some(threads), Some(live)) = (
        args.get(1),
        args.get(2).and_then(|t| t.parse::<usize>().ok()),
        args.get(3).and_then(|l| l.parse::<usize>().ok()),
    ) else {
        eprintln!("{usage}");
        std::process::exit(2);
    };
    let flag = |name: &str| {
        (args.get(4).map(String::as_str) == Some(name))
            .then(|| args.get(5).and_then(|d| d.parse::<u64>().ok()))
            .flatten()
    };
    let duration_ms = flag("--duration-ms").unwrap_or(1500);
    let count = flag("--count");
    let threads = if count.is_some() { 1 } else { threads.max(1) };
    let layout: Arc<dyn Layout> = match mode.as_str() {
        "papaya" => Arc::new(Papaya::new(None)),
        // papaya's default: copy 64 entries at a time.
        "papaya-incremental" => Arc::new(Papaya::new(Some(64))),
        "mutex-map" => Arc::new(MutexMap::new()),
        "private" => Arc::new(Private {
            maps: (0..threads)
                .map(|_| Padded(Mutex::new(HashMap::with_hasher(Hasher::with_seed(7)))))
                .collect(),
        }),
        _ => {
            eprintln!("{usage}");
            std::process::exit(2);
        }
    };
    let share = (live / threads).max(1);
    if let Some(calls) = count {
        let mut churner = Churner::new(0, share);
        churner.run(&*layout, 2 * share as u64, None);
        measured(&*layout, &mut churner, calls);
        println!("{mode} 1 {live} counted {calls}");
        return;
    }
    let stop = Arc::new(AtomicBool::new(false));
    let calls = Arc::new(AtomicU64::new(0));
    let workers: Vec<_> = (0..threads)
        .map(|thread| {
            let (layout, stop, calls) =
                (Arc::clone(&layout), Arc::clone(&stop), Arc::clone(&calls));
            std::thread::spawn(move || {
                let mut churner = Churner::new(thread, share);
                let mut done = 0_u64;
                let mut samples = Vec::with_capacity(1 << 20);
                // Relaxed: a stop flag; the joins below order the counts.
                while !stop.load(Ordering::Relaxed) {
                    churner.run(&*layout, 256, Some(&mut samples));
                    done += 256;
                }
                // Relaxed: read after every worker is joined.
                calls.fetch_add(done, Ordering::Relaxed);
                samples
            })
        })
        .collect();
    let started = Instant::now();
    std::thread::sleep(Duration::from_millis(duration_ms));
    // Relaxed: see the workers' loop.
    stop.store(true, Ordering::Relaxed);
    let mut samples = Vec::new();
    for worker in workers {
        samples.extend(worker.join().expect("a worker panicked"));
    }
    let seconds = started.elapsed().as_secs_f64();
    samples.sort_unstable();
    // Relaxed: every worker is joined.
    let total = calls.load(Ordering::Relaxed) as f64;
    println!(
        "{mode} {threads} {live} {:.3} {} {}",
        total / seconds / 1e6,
        quantile(&samples, 0.999),
        quantile(&samples, 0.9999)
    );
}
