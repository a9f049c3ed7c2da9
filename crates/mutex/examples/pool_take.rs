//! temp
use slidelimit::pool::{AtomicLedger, PoolGeometry, PoolMode, UseLedger};
use slidelimit_mutex::MutexKeyPool;
fn main() {
    let atomic = std::env::args().nth(1).as_deref() == Some("atomic");
    let n: u64 = 2_000_000;
    let g = PoolGeometry::new(50, 500, 500, PoolMode::Exact).unwrap();
    let l = AtomicLedger::new(g);
    let m: MutexKeyPool<u32> = MutexKeyPool::new(0..50u32, 500, 500, PoolMode::Exact).unwrap();
    let mut ok = 0u64;
    for i in 0..n {
        let now = i / 64;
        if atomic { ok += u64::from(l.take(now).is_ok()); } else { ok += u64::from(m.take(now).is_ok()); }
    }
    println!("{ok}");
}
