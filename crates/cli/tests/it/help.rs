//! `--help` on every command, and the usage errors scripts rely on (exit code 2).

use predicates::prelude::*;

use crate::slidelimit;

#[test]
fn every_command_has_help_with_the_exit_codes() {
    for command in [&[][..], &["replay"][..], &["simulate"][..]] {
        slidelimit()
            .args(command)
            .arg("--help")
            .assert()
            .success()
            .stdout(predicate::str::contains("Usage: slidelimit"))
            .stdout(predicate::str::contains("Exit codes:"))
            .stdout(predicate::str::contains("3  finished with --keep-going"));
    }
    slidelimit()
        .args(["replay", "--help"])
        .assert()
        .stdout(predicate::str::contains("--keep-going"))
        .stdout(predicate::str::contains("timestamp,key[,weight]"))
        .stdout(predicate::str::contains("N/DURATION"));
    slidelimit()
        .args(["simulate", "--help"])
        .assert()
        .stdout(predicate::str::contains("--zipf <S>"))
        .stdout(predicate::str::contains("Poisson"));
}

#[cfg(feature = "bench")]
#[test]
fn bench_forwards_its_arguments_to_the_comparison_runner() {
    slidelimit()
        .args(["bench", "--help"])
        .assert()
        .success()
        .stdout(predicate::str::contains("Usage: slidelimit bench"))
        .stdout(predicate::str::contains("--skip-memory"));
    slidelimit()
        .args(["bench", "--list"])
        .assert()
        .success()
        .stdout(predicate::str::contains("per-key-lock"))
        .stdout(predicate::str::contains("hot-allowed"));
    slidelimit()
        .args(["bench", "--threads", "0"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--threads"));
}

#[cfg(not(feature = "bench"))]
#[test]
fn bench_without_its_feature_says_how_to_get_it() {
    let install = "cargo install --path crates/cli --features bench";
    slidelimit()
        .arg("--help")
        .assert()
        .success()
        .stdout(predicate::str::contains("Not in this build"))
        .stdout(predicate::str::contains(install));
    for args in [
        &["bench"][..],
        &["bench", "--help"][..],
        &["bench", "--list"][..],
    ] {
        slidelimit()
            .args(args)
            .assert()
            .code(2)
            .stderr(predicate::str::contains("is not in this build"))
            .stderr(predicate::str::contains(install));
    }
}

#[test]
fn usage_errors_exit_2() {
    let cases: &[(&[&str], &str)] = &[
        (&["replay", "t.csv", "--limit", "100"], "has no `/`"),
        (
            &["replay", "t.csv", "--limit", "100/1.5s"],
            "is not a whole number",
        ),
        (
            &["replay", "t.csv", "--limit", "3/s", "--window", "bucket:3"],
            "unknown window",
        ),
        (
            &["replay", "t.csv", "--limit", "3/s", "--variant", "spinlock"],
            "invalid value 'spinlock'",
        ),
        (&["replay", "t.csv"], "--limit <LIMIT>"),
        (
            &["replay", "t.csv", "--limit", "0/1s"],
            "max_requests must be at least 1",
        ),
        (
            &["replay", "t.csv", "--limit", "3/10ms++7/100ms"],
            "has an empty window between two `+`s",
        ),
        (
            &["replay", "t.csv", "--limit", "1s/100"],
            "has the period before the count: write N/DURATION, such as 100/1s",
        ),
        (
            &["simulate", "--rate", "1s/100", "--limit", "1/s"],
            "has the period before the count",
        ),
        (
            &["replay", "t.csv", "--limit", "100/100"],
            "the period `100` of `100/100` has no unit",
        ),
        (
            &["simulate", "--rate", "5/s", "--limit", "10/1s+20/1s"],
            "two windows of 1s in one limit",
        ),
        (
            &[
                "replay",
                "t.csv",
                "--limit",
                "3/10ms",
                "--window",
                "buckets:11",
            ],
            "narrower than a tick",
        ),
        (
            &["simulate", "--rate", "0/s", "--limit", "1/s"],
            "must be a positive, finite number",
        ),
        (
            &[
                "simulate", "--rate", "5/s", "--limit", "1/s", "--zipf", "-1",
            ],
            "the exponent must be 0",
        ),
        (
            &[
                "simulate", "--rate", "5/s", "--limit", "1/s", "--burst", "0",
            ],
            "--burst",
        ),
        (&["frobnicate"], "unrecognized subcommand"),
    ];
    for (args, message) in cases {
        slidelimit()
            .args(*args)
            .assert()
            .code(2)
            .stdout("")
            .stderr(predicate::str::contains(*message));
    }
}

/// A limit no tick can make valid is a bad value of the command's `--limit`, reported as clap
/// reports one (the command's own error), not with the top-level usage.
#[test]
fn an_invalid_limit_is_the_commands_own_error() {
    for args in [
        &["replay", "t.csv", "--limit", "0/1s"][..],
        &[
            "simulate", "--rate", "5/s", "--limit", "1/s", "--limit", "0/1s",
        ][..],
    ] {
        slidelimit()
            .args(args)
            .assert()
            .code(2)
            .stdout("")
            .stderr(predicate::str::contains(
                "invalid value '0/1s' for '--limit <LIMIT>': `0/1s`: max_requests must be at least 1",
            ))
            .stderr(predicate::str::contains("Usage: slidelimit [OPTIONS] <COMMAND>").not());
    }
}
