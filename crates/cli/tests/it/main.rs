//! End-to-end tests of the `slidelimit` binary: real runs on small trace files in a temporary
//! directory, checked against counts worked out by hand.

mod compare;
mod help;
mod replay;
mod simulate;

use std::path::PathBuf;

use assert_cmd::Command;
use tempfile::TempDir;

/// The binary under test, with a clean environment for colours.
fn slidelimit() -> Command {
    let mut command = assert_cmd::cargo::cargo_bin_cmd!("slidelimit");
    command.env("NO_COLOR", "1");
    command
}

/// A temporary directory holding trace files.
struct Traces {
    dir: TempDir,
}

impl Traces {
    fn new() -> Self {
        Self {
            dir: tempfile::tempdir().expect("a temporary directory"),
        }
    }

    /// Writes `text` to `name` and returns its path.
    fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        std::fs::write(&path, text).expect("the trace is written");
        path
    }
}

/// The output of a successful run as text.
fn stdout_of(command: &mut Command) -> String {
    let output = command.output().expect("the binary runs");
    assert!(
        output.status.success(),
        "exit {:?}, stderr: {}",
        output.status.code(),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("UTF-8 output")
}

/// The output of a successful `--json` run, parsed.
fn json_of(command: &mut Command) -> serde_json::Value {
    serde_json::from_str(&stdout_of(command)).expect("one JSON object")
}

/// The cells of the report line that starts with `first` (a key, or `total`).
fn row<'a>(out: &'a str, first: &str) -> Vec<&'a str> {
    out.lines()
        .map(|line| line.split_whitespace().collect::<Vec<_>>())
        .find(|cells| cells.first() == Some(&first))
        .unwrap_or_else(|| panic!("no `{first}` row in:\n{out}"))
}

/// Alice and Bob against 3 per 10 ticks (W = 10 ms, ticks of 1 ms), worked out by hand:
/// alice at 0, 1, 2 admitted (3 in the window), 3 and 9 refused (0, 1, 2 are still in
/// (-7, 3] and (-1, 9]), 10 admitted ((0, 10] holds 1 and 2): 4 admitted, 2 refused, peak 3.
/// bob at 4 and 12, both admitted ((2, 12] holds only 4): peak 2.
const ALICE_BOB_CSV: &str =
    "timestamp,key\n0,alice\n1,alice\n2,alice\n3,alice\n9,alice\n10,alice\n4,bob\n12,bob\n";

/// The same requests as JSON lines, keys as strings, the weight spelled out on one.
const ALICE_BOB_JSONL: &str = r#"{"timestamp": 0, "key": "alice"}
{"timestamp": 1, "key": "alice", "weight": 1}
{"timestamp": 2, "key": "alice"}
{"timestamp": 3, "key": "alice"}
{"timestamp": 9, "key": "alice", "path": "/ignored"}
{"timestamp": 10, "key": "alice"}
{"timestamp": 4, "key": "bob"}
{"timestamp": 12, "key": "bob"}
"#;
