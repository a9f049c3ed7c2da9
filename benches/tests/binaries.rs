//! The comparison's two binaries: the runner times its cells without the counting allocator,
//! and the memory children's binary counts.

use std::process::Command;

const RUNNER: &str = env!("CARGO_BIN_EXE_slidelimit-bench");
const MEMORY: &str = env!("CARGO_BIN_EXE_slidelimit-bench-memory");

/// A per-key measurement of 1,000 keys at limit 32 in the memory binary: one JSON line with
/// the heap it counted.
#[test]
fn the_memory_binary_counts_the_heap() {
    let out = Command::new(MEMORY)
        .args(["--memory-child", "per-key", "mutex", "32", "1000"])
        .output()
        .expect("the memory binary starts");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = String::from_utf8_lossy(&out.stdout);
    let json: serde_json::Value = serde_json::from_str(line.trim()).expect("one JSON line");
    let heap_full = json["heap_full"].as_i64().expect("heap_full");
    // 1,000 keys with a full window of 32 hits each hold at least their 32 stamps.
    assert!(heap_full >= 1_000 * 32 * 8, "heap_full = {heap_full}");
}

/// The runner installs no counting allocator (its timed cells must not pay it): asked to be
/// a memory child, it refuses.
#[test]
fn the_runner_does_not_count() {
    let out = Command::new(RUNNER)
        .args(["--memory-child", "per-key", "mutex", "32", "10"])
        .output()
        .expect("the runner starts");
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("counting global allocator"));
}

/// Started by hand without the child flag, the memory binary says what it is for.
#[test]
fn the_memory_binary_alone_prints_its_usage() {
    let out = Command::new(MEMORY)
        .output()
        .expect("the memory binary starts");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("usage"));
}

/// The lifecycle binary counts the comparison's Zipf workload as it counts the churn, and
/// the hot-path binary knows the rolling buckets under a mutex: both run and say so.
#[test]
fn the_profiles_newest_modes_run() {
    for (binary, args, says) in [
        (
            env!("CARGO_BIN_EXE_lifecycle"),
            &["count-zipf", "mutex-buckets", "1000"][..],
            "mutex-buckets (zipf): 1000 calls",
        ),
        (
            env!("CARGO_BIN_EXE_hotpath"),
            &["mutex-buckets", "admit", "1000"][..],
            "mutex-buckets admit: 1000 calls, 1000 admitted",
        ),
    ] {
        let out = Command::new(binary)
            .args(args)
            .output()
            .expect("the binary starts");
        assert!(
            out.status.success(),
            "{binary} {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            String::from_utf8_lossy(&out.stdout).contains(says),
            "{binary} {args:?}: {}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
}
