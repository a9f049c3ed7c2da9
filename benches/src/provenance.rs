//! Where a results file came from: the CPU model and the git commit, recorded alike by the
//! comparison runner and the accuracy tool.

use std::path::Path;
use std::process::Command;

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
#[must_use]
pub fn git_commit(root: &Path, pathspec: &[&str]) -> String {
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
