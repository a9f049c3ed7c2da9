//! Where a results file came from: the CPU model and the git commit, recorded alike by the
//! comparison runner and the smaller tools, which record them as [`Facts`].

use std::path::Path;
use std::process::Command;

use serde::Serialize;

/// The machine facts a tool's results file records (the comparison runner records more).
#[derive(Clone, Debug, Serialize)]
pub struct Facts {
    /// [`cpu_model`].
    pub cpu_model: String,
    /// Logical CPUs available to this process.
    pub cores: usize,
    /// The compiler that built the tool (`rustc -V`, captured by build.rs).
    pub rustc: &'static str,
    /// The build profile.
    pub profile: &'static str,
    /// [`git_commit`] over the sources the tools are built from.
    pub commit: String,
    /// How to run it again: `cargo run ... --bin BIN -- ARGS`.
    pub command: String,
}

impl Facts {
    /// This machine's facts, for `--bin bin` run with this process's arguments.
    #[must_use]
    pub fn collect(bin: &str) -> Self {
        let args: Vec<String> = std::env::args().skip(1).collect();
        let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
        Self {
            cpu_model: cpu_model(),
            cores: std::thread::available_parallelism().map_or(1, usize::from),
            rustc: env!("SLIDELIMIT_BENCH_RUSTC"),
            profile: env!("SLIDELIMIT_BENCH_PROFILE"),
            // `+dirty` when the sources this binary is built from differ from the commit.
            commit: git_commit(
                manifest.parent().unwrap_or(manifest),
                &["crates", "benches", "Cargo.toml", "Cargo.lock"],
            ),
            command: format!(
                "cargo run --release -p slidelimit-bench --bin {bin}{}{}",
                if args.is_empty() { "" } else { " -- " },
                args.join(" ")
            ),
        }
    }
}

/// The CPU model as `/proc/cpuinfo` names it, or `"unknown"`.
#[must_use]
pub fn cpu_model() -> String {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    cpuinfo
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            (name.trim() == "model name").then(|| value.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown".to_owned())
}

/// The environment variable that names the commit a carried binary was built from, for a run
/// on a machine without the checkout (the 16-core runs in `results/scaling-16/`).
pub const COMMIT_OVERRIDE: &str = "SLIDELIMIT_BENCH_COMMIT";

fn git(root: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(args)
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// `git rev-parse HEAD` of the checkout at `root`, with `+dirty` when a tracked file matched
/// by `pathspec` differs from it (so a results file says whether it came from committed code).
///
/// A binary carried to another machine has no checkout there (its `root` is the path it was
/// built at): [`COMMIT_OVERRIDE`] names the commit it was built from instead.
#[must_use]
pub fn git_commit(root: &Path, pathspec: &[&str]) -> String {
    if let Some(commit) = std::env::var(COMMIT_OVERRIDE)
        .ok()
        .filter(|c| !c.trim().is_empty())
    {
        return format!("{} (from {COMMIT_OVERRIDE})", commit.trim());
    }
    let Some(head) = git(root, &["rev-parse", "HEAD"]) else {
        return "unknown (not a git checkout)".to_owned();
    };
    let status = [
        &["status", "--porcelain", "--untracked-files=no", "--"][..],
        pathspec,
    ]
    .concat();
    if git(root, &status).is_some_and(|s| !s.is_empty()) {
        format!("{head}+dirty")
    } else {
        head
    }
}
