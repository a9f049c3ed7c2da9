//! Which concurrent map should hold slidelimit's per-key state? For `keys` keys (the first
//! argument), 5 million calls over a scrambled key stream, three rounds, each map holding a
//! 32-slot exact-log entry per key the way the limiter would:
//! - papaya: `HashMap<u64, Entry>` (the entry in papaya's node, slots boxed beside it);
//! - `scc::HashIndex<u64, Arc<[AtomicU64]>>` (lock-free reads; it clones values when it
//!   resizes, so a key's atomic state must sit behind an `Arc`: header and slots in one block);
//! - dashmap: `DashMap<u64, Entry>` (the entry inline in a shard; reads take the shard's
//!   read lock).
//!
//! Per map: create-or-get (the first pass, which inserts every key), get (a second pass over
//! existing keys), both as lookup + one slot load + one CAS; and a sweep removing every key,
//! per key removed.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

fn mix(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51afd7ed558ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ceb9fe1a85ec53);
    x ^ (x >> 33)
}

type H = foldhash::fast::RandomState;
const N: usize = 32;

struct Entry {
    header: [AtomicU64; 3],
    slots: Box<[AtomicU64]>,
}
fn entry() -> Entry {
    Entry {
        header: Default::default(),
        slots: (0..N).map(|_| AtomicU64::new(0)).collect(),
    }
}
/// What a decision does once the map has found the key's state: read the cursor, load the
/// slot it names and CAS it, as the limiter's admission does.
#[inline]
fn decide(cursor: &AtomicU64, slots: &[AtomicU64]) {
    // The limiter's orderings: a Relaxed cursor hint, an Acquire slot load, an AcqRel CAS.
    let c = cursor.load(Ordering::Relaxed) as usize % N;
    // Acquire: as the limiter's slot load (pairs with the CAS below on other keys' calls).
    let v = slots[c].load(Ordering::Acquire);
    // AcqRel / Acquire: as the limiter's admission CAS; the result is not used.
    let _ = slots[c].compare_exchange(v, v + 1, Ordering::AcqRel, Ordering::Acquire);
}

fn arc_slots() -> Arc<[AtomicU64]> {
    (0..N + 3).map(|_| AtomicU64::new(0)).collect()
}

fn main() {
    let keys: usize = std::env::args().nth(1).unwrap().parse().unwrap();
    let ops = 5_000_000usize;
    let stream: Vec<u64> = (0..ops as u64).map(|i| mix(mix(i) % keys as u64)).collect();
    for round in 0..3 {
        // papaya, value inline entry (node + slots box)
        let p: papaya::HashMap<u64, Entry, H> = papaya::HashMap::builder()
            .hasher(H::default())
            .resize_mode(papaya::ResizeMode::Blocking)
            .build();
        let t = Instant::now();
        for &k in &stream {
            let g = p.guard();
            let e = match p.get(&k, &g) {
                Some(e) => e,
                None => match p.try_insert_with(k, entry, &g) {
                    Ok(e) | Err(e) => e,
                },
            };
            decide(&e.header[0], &e.slots);
        }
        let fill = t.elapsed().as_nanos() as f64 / ops as f64;
        let t = Instant::now();
        for &k in &stream {
            let g = p.guard();
            let e = p.get(&k, &g).unwrap();
            decide(&e.header[0], &e.slots);
        }
        let hit = t.elapsed().as_nanos() as f64 / ops as f64;
        let n0 = p.len();
        let t = Instant::now();
        let g = p.guard();
        let mut removed = 0;
        // Relaxed: one thread; the flag is never written, so every key is removed.
        for (k, e) in p.iter(&g) {
            if e.header[1].load(Ordering::Relaxed) == 0 {
                if matches!(
                    p.remove_if(k, |_, cur| std::ptr::eq(cur, e), &g),
                    Ok(Some(_))
                ) {
                    removed += 1;
                }
            }
        }
        drop(g);
        let sweep = t.elapsed().as_nanos() as f64 / n0.max(1) as f64;
        println!("round {round} keys {keys}: papaya     create-or-get {fill:6.1} ns  get {hit:6.1} ns  sweep/key {sweep:6.1} ns (removed {removed})");

        // scc HashIndex, value Arc<[AtomicU64]> (inline key + fat ptr in the bucket)
        let s: scc::HashIndex<u64, Arc<[AtomicU64]>, H> = scc::HashIndex::with_hasher(H::default());
        let t = Instant::now();
        for &k in &stream {
            let g = scc::ebr::Guard::new();
            let e = match s.peek(&k, &g) {
                Some(e) => e,
                None => {
                    let _ = s.insert(k, arc_slots());
                    s.peek(&k, &g).unwrap()
                }
            };
            decide(&e[0], &e[3..]);
        }
        let fill = t.elapsed().as_nanos() as f64 / ops as f64;
        let t = Instant::now();
        for &k in &stream {
            let g = scc::ebr::Guard::new();
            let e = s.peek(&k, &g).unwrap();
            decide(&e[0], &e[3..]);
        }
        let hit = t.elapsed().as_nanos() as f64 / ops as f64;
        let n0 = s.len();
        let t = Instant::now();
        // Relaxed: one thread; the flag is never written, so every key is removed.
        s.retain(|_, e| e[1].load(Ordering::Relaxed) != 0);
        let sweep = t.elapsed().as_nanos() as f64 / n0.max(1) as f64;
        println!("round {round} keys {keys}: scc index  create-or-get {fill:6.1} ns  get {hit:6.1} ns  sweep/key {sweep:6.1} ns (left {})", s.len());
        let d: dashmap::DashMap<u64, Entry, H> = dashmap::DashMap::with_hasher(H::default());
        let t = Instant::now();
        for &k in &stream {
            let e = match d.get(&k) {
                Some(e) => e,
                None => d.entry(k).or_insert_with(entry).downgrade(),
            };
            decide(&e.header[0], &e.slots);
        }
        let fill = t.elapsed().as_nanos() as f64 / ops as f64;
        let t = Instant::now();
        for &k in &stream {
            let e = d.get(&k).unwrap();
            decide(&e.header[0], &e.slots);
        }
        let hit = t.elapsed().as_nanos() as f64 / ops as f64;
        let n0 = d.len();
        let t = Instant::now();
        // Relaxed: one thread; the flag is never written, so every key is removed.
        d.retain(|_, e| e.header[1].load(Ordering::Relaxed) != 0);
        let sweep = t.elapsed().as_nanos() as f64 / n0.max(1) as f64;
        println!("round {round} keys {keys}: dashmap    create-or-get {fill:6.1} ns  get {hit:6.1} ns  sweep/key {sweep:6.1} ns");
    }
}
