//! `slidelimit simulate`: determinism by seed, and reports that a wrong limiter would fail.

use serde_json::Value;

use crate::{json_of, slidelimit, stdout_of};

fn simulate(args: &[&str]) -> Value {
    json_of(slidelimit().arg("simulate").args(args).arg("--json"))
}

#[test]
fn the_same_seed_gives_the_same_report_and_another_seed_another() {
    let args = [
        "simulate",
        "--rate",
        "800/s",
        "--keys",
        "2k",
        "--zipf",
        "1.1",
        "--burst",
        "2",
        "--duration",
        "20s",
        "--limit",
        "10/1s",
        "--window",
        "buckets:4",
    ];
    let first = stdout_of(slidelimit().args(args).args(["--seed", "7"]));
    let second = stdout_of(slidelimit().args(args).args(["--seed", "7"]));
    let other = stdout_of(slidelimit().args(args).args(["--seed", "8"]));
    assert_eq!(first, second);
    assert_ne!(first, other);
    assert!(first.starts_with("simulate: "), "{first}");
    assert!(first.contains("seed 7"), "{first}");
}

#[test]
fn a_limit_far_above_the_load_refuses_nothing() {
    let json = simulate(&[
        "--rate",
        "50/s",
        "--keys",
        "10",
        "--duration",
        "10s",
        "--limit",
        "1000/1s",
    ]);
    let row = &json["rows"][0];
    assert!(json["requests"].as_u64().unwrap() > 300);
    assert_eq!(row["refused"].as_u64(), Some(0));
    assert_eq!(row["admitted"], json["requests"]);
    assert_eq!(row["worst_key"], Value::Null);
}

/// Bursts of 5 requests of one key at one tick against 2 per second: each burst can have at
/// most 2 admitted, so at least 3/5 of all requests are refused, and no key's window ever
/// holds more than 2.
#[test]
fn bursts_above_the_limit_are_refused_and_the_peak_stays_at_n() {
    let json = simulate(&[
        "--rate",
        "500/s",
        "--burst",
        "5",
        "--keys",
        "100",
        "--duration",
        "10s",
        "--limit",
        "2/1s",
        "--window",
        "buckets:10",
        "--window",
        "buckets:2",
    ]);
    let requests = json["requests"].as_u64().unwrap();
    assert_eq!(requests % 5, 0);
    let rows = json["rows"].as_array().unwrap();
    let windows: Vec<_> = rows.iter().map(|r| r["window"].as_str().unwrap()).collect();
    assert_eq!(windows, ["exact", "buckets:10", "buckets:2"]);
    for row in rows {
        assert!(
            row["refused"].as_u64().unwrap() * 5 >= requests * 3,
            "{row}"
        );
        assert_eq!(row["peak_window"].as_u64(), Some(2), "{row}");
        assert!(row["offered_peak_window"].as_u64().unwrap() >= 5);
    }
    assert_eq!(rows[0]["false_negatives"], Value::Null);
    // Buckets are conservative: coarser buckets refuse at least as much in total here.
    let refused = |i: usize| rows[i]["refused"].as_u64().unwrap();
    assert!(refused(2) >= refused(0), "{rows:#?}");
    // Every difference from the exact log is a false negative or a false positive.
    for row in &rows[1..] {
        let fneg = row["false_negatives"].as_u64().unwrap();
        let fpos = row["false_positives"].as_u64().unwrap();
        assert_eq!(
            refused(0) + fneg - fpos,
            row["refused"].as_u64().unwrap(),
            "{row}"
        );
    }
}

#[test]
fn several_limits_each_get_their_rows() {
    let json = simulate(&[
        "--rate",
        "200/s",
        "--keys",
        "50",
        "--duration",
        "5s",
        "--limit",
        "5/1s",
        "--limit",
        "0.5/s",
        "--window",
        "buckets:5",
    ]);
    let rows = json["rows"].as_array().unwrap();
    let got: Vec<_> = rows
        .iter()
        .map(|r| {
            (
                r["limit"].as_str().unwrap(),
                r["max_requests"].as_u64().unwrap(),
                r["window_ticks"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("5/1s", 5, 1000),
            ("5/1s", 5, 1000),
            ("0.5/s", 1, 2000),
            ("0.5/s", 1, 2000)
        ]
    );
    // Half a request per second admits less than five per second.
    assert!(rows[2]["admitted"].as_u64() < rows[0]["admitted"].as_u64());
}

/// A limit of two windows with buckets beside the exact log: every window is audited (a
/// run that broke one would exit with a bug), and the narrow window refuses more than the
/// wide one alone would.
#[test]
fn a_limit_of_two_windows_is_simulated_and_audited() {
    let layered = simulate(&[
        "--rate",
        "400/s",
        "--keys",
        "20",
        "--burst",
        "3",
        "--duration",
        "20s",
        "--limit",
        "2/100ms+15/1s",
        "--window",
        "buckets:10",
    ]);
    let wide_only = simulate(&[
        "--rate",
        "400/s",
        "--keys",
        "20",
        "--burst",
        "3",
        "--duration",
        "20s",
        "--limit",
        "15/1s",
        "--window",
        "buckets:10",
    ]);
    let row = &layered["rows"][0];
    assert_eq!(row["limit"], "2/100ms+15/1s");
    assert!(row["peak_window"].as_u64().unwrap() <= 15);
    assert!(
        row["refused"].as_u64().unwrap() > wide_only["rows"][0]["refused"].as_u64().unwrap(),
        "{layered} {wide_only}"
    );
}
