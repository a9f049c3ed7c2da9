//! `slidelimit replay`: counts, formats, malformed lines and their exit codes, variants,
//! windows and ordering.

use predicates::prelude::*;
use serde_json::Value;

use crate::{json_of, row, slidelimit, stdout_of, Traces, ALICE_BOB_CSV, ALICE_BOB_JSONL};

#[test]
fn a_known_csv_trace_gives_the_counts_worked_out_by_hand() {
    let traces = Traces::new();
    let trace = traces.write("t.csv", ALICE_BOB_CSV);
    let out = stdout_of(
        slidelimit()
            .arg("replay")
            .arg(&trace)
            .args(["--limit", "3/10ms"]),
    );
    let rows: Vec<Vec<&str>> = out
        .lines()
        .skip(2)
        .map(|line| line.split_whitespace().collect())
        .collect();
    assert_eq!(
        rows,
        [
            ["alice", "6", "4", "2", "33.3%", "3"],
            ["bob", "2", "2", "0", "0.0%", "2"],
            ["total", "8", "6", "2", "25.0%", "3"],
        ],
        "{out}"
    );
    assert!(out.starts_with(
        "replay: 8 requests, 2 keys; limit 3/10ms (3 per 10 ticks of 1ms); lock-free, exact log"
    ));
}

#[test]
fn json_lines_and_csv_give_the_same_report() {
    let traces = Traces::new();
    let csv = traces.write("t.csv", ALICE_BOB_CSV);
    let jsonl = traces.write("t.jsonl", ALICE_BOB_JSONL);
    let from_csv = json_of(
        slidelimit()
            .arg("replay")
            .arg(&csv)
            .args(["-l", "3/10ms", "--json"]),
    );
    let from_jsonl = json_of(
        slidelimit()
            .arg("replay")
            .arg(&jsonl)
            .args(["-l", "3/10ms", "--json"]),
    );
    assert_eq!(from_csv, from_jsonl);
    let total = &from_csv["total"];
    assert_eq!(
        (total["requests"].as_u64(), total["admitted"].as_u64()),
        (Some(8), Some(6))
    );
    assert_eq!(
        (total["refused"].as_u64(), total["peak"].as_u64()),
        (Some(2), Some(3))
    );
    assert_eq!(from_csv["keys"][0]["key"], "alice", "most refusals first");
    assert_eq!(from_csv["keys"][1]["peak"].as_u64(), Some(2));
}

#[test]
fn standard_input_is_read_with_a_dash() {
    let out = stdout_of(
        slidelimit()
            .args(["replay", "-", "-l", "3/10ms", "--format", "csv"])
            .write_stdin(ALICE_BOB_CSV),
    );
    assert_eq!(row(&out, "total"), ["total", "8", "6", "2", "25.0%", "3"]);
}

#[test]
fn a_malformed_line_stops_the_run_with_its_number_and_exit_1() {
    let traces = Traces::new();
    let trace = traces.write("bad.csv", "0,a\n1,a\n2;a\n3,a\n");
    slidelimit()
        .arg("replay")
        .arg(&trace)
        .args(["-l", "3/10ms"])
        .assert()
        .code(1)
        .stdout("")
        .stderr(predicate::str::contains(
            "error: line 3: expected timestamp,key[,weight], found 1 field(s) (use --keep-going to skip malformed lines)",
        ));
}

#[test]
fn keep_going_skips_malformed_lines_reports_the_rest_and_exits_3() {
    let traces = Traces::new();
    let trace = traces.write("bad.csv", "0,a\nx,a\n1,a\n\n# fine\n2,,1\n3,a\n4,a,1,1\n");
    let assert = slidelimit()
        .arg("replay")
        .arg(&trace)
        .args(["-l", "2/10ms", "--keep-going"])
        .assert()
        .code(3)
        .stderr(predicate::str::contains(
            "skipped line 2: timestamp `x` is not a whole number of ticks\nskipped line 6: empty key\nskipped line 8: expected timestamp,key[,weight], found 4 fields",
        ))
        .stderr(predicate::str::contains("warning: 3 lines skipped"));
    let out = String::from_utf8(assert.get_output().stdout.clone()).unwrap();
    // 0 and 1 admitted, 3 refused (2 per 10 ticks).
    assert_eq!(row(&out, "total"), ["total", "3", "2", "1", "33.3%", "2"]);
}

#[test]
fn the_exact_log_refuses_weights_with_a_typed_error_on_the_line() {
    let traces = Traces::new();
    let trace = traces.write("w.csv", "0,a\n1,a,3\n2,a\n");
    slidelimit()
        .arg("replay")
        .arg(&trace)
        .args(["-l", "5/10ms"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "error: line 2: weight 3 is not supported by the exact log (single hits only); use the bucketed window (--window buckets:B)",
        ));
    let json = slidelimit()
        .arg("replay")
        .arg(&trace)
        .args(["-l", "5/10ms", "--keep-going", "--json"])
        .assert()
        .code(3)
        .get_output()
        .stdout
        .clone();
    let json: Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(json["skipped_lines"], serde_json::json!([2]));
    assert_eq!(json["total"]["admitted"].as_u64(), Some(2));
}

/// 3 per 10 ticks in 5 buckets of 2 ticks; 5 + 1 + 1 = 7 physical buckets, so a bucket's
/// weight counts until the head is 7 epochs past it (14 ticks), worked out by hand:
/// t=0 w2 admitted (2); t=5 w2 refused (4 > 3); t=13 w2 refused (epoch 6: epoch 0 still
/// counts, though the exact log would have let it go); t=14 w2 admitted (epoch 7 recycles
/// epoch 0); t=15 w1 admitted (3); t=16 w1 refused. Peak: (5, 15] holds 2 + 1.
#[test]
fn rolling_buckets_take_weights_as_worked_out_by_hand() {
    let traces = Traces::new();
    let trace = traces.write("w.csv", "0,a,2\n5,a,2\n13,a,2\n14,a,2\n15,a,1\n16,a,1\n");
    let json = json_of(slidelimit().arg("replay").arg(&trace).args([
        "-l",
        "3/10ms",
        "--window",
        "buckets:5",
        "--json",
    ]));
    let total = &json["total"];
    let got: Vec<_> = [
        "requests",
        "admitted",
        "refused",
        "admitted_weight",
        "refused_weight",
        "peak",
    ]
    .iter()
    .map(|field| total[field].as_u64().unwrap())
    .collect();
    assert_eq!(got, [6, 3, 3, 5, 5, 3]);
    assert_eq!(json["window"], "buckets:5");
}

/// A trace long enough to exercise refusals on many keys, in time order: two requests per
/// tick, key-0 on every other request, key-1 on every fourth, ...; weights 1 to 3 if
/// `weighted`.
fn busy_trace(weighted: bool) -> String {
    let mut text = String::new();
    for i in 0..600u64 {
        let key = i.trailing_zeros().min(5);
        let weight = if weighted { 1 + i % 3 } else { 1 };
        text.push_str(&format!("{},key-{key},{weight}\n", i / 2));
    }
    text
}

#[test]
fn every_variant_gives_the_same_answers_with_either_window() {
    let traces = Traces::new();
    for window in ["exact", "buckets:4"] {
        // The exact log takes single requests: weights only for the buckets.
        let trace = traces.write("busy.csv", &busy_trace(window != "exact"));
        let mut reports = Vec::new();
        for variant in ["lock-free", "mutex", "per-key-lock", "rwlock"] {
            let output = slidelimit()
                .arg("replay")
                .arg(&trace)
                .args([
                    "-l",
                    "7/20ms",
                    "--window",
                    window,
                    "--variant",
                    variant,
                    "--json",
                ])
                .output()
                .unwrap();
            assert_eq!(output.status.code(), Some(0), "{window}, {variant}");
            let mut json: Value = serde_json::from_slice(&output.stdout).unwrap();
            assert_eq!(json["variant"], variant);
            json["variant"] = Value::Null;
            reports.push(json);
        }
        let total = &reports[0]["total"];
        assert!(total["refused"].as_u64().unwrap() > 50, "{window}: {total}");
        assert!(total["peak"].as_u64().unwrap() <= 7);
        assert!(
            reports.iter().all(|r| *r == reports[0]),
            "{window}: {reports:#?}"
        );
    }
}

/// Limit 1 per 5 ticks, a hit at 10 then one at 0. In file order the late request at 0 is
/// refused (the hit at 10 already counts: 10 + 5 > 0); sorted, 0 then 10 are both admitted.
#[test]
fn sort_decides_in_timestamp_order() {
    let traces = Traces::new();
    let trace = traces.write("late.csv", "10,a\n0,a\n");
    let admitted = |sort: bool| {
        let mut command = slidelimit();
        command
            .arg("replay")
            .arg(&trace)
            .args(["-l", "1/5ms", "--json"]);
        if sort {
            command.arg("--sort");
        }
        json_of(&mut command)["total"]["admitted"].as_u64().unwrap()
    };
    assert_eq!(admitted(false), 1);
    assert_eq!(admitted(true), 2);
}

#[test]
fn ticks_and_top_change_the_report() {
    let traces = Traces::new();
    let trace = traces.write("t.csv", ALICE_BOB_CSV);
    // Ticks of 1 s against 3/10ms: the window is not a whole number of ticks.
    slidelimit()
        .arg("replay")
        .arg(&trace)
        .args(["-l", "3/10ms", "--tick", "1s"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "is not a whole, nonzero number of 1s ticks",
        ))
        // The refusing command's usage, not the top-level one.
        .stderr(predicate::str::contains("Usage: slidelimit replay"))
        .stderr(predicate::str::contains("Usage: slidelimit [OPTIONS] <COMMAND>").not());
    // Ticks of 1 s against 3/10s: the same numbers as 3/10ms with ticks of 1 ms.
    let out = stdout_of(
        slidelimit()
            .arg("replay")
            .arg(&trace)
            .args(["-l", "3/10s", "--tick", "1s", "--top", "1"]),
    );
    assert!(out.contains("\nalice "), "{out}");
    assert!(!out.contains("\nbob "), "{out}");
    assert!(
        out.contains("(1 more keys not shown; --top 0 lists every key)"),
        "{out}"
    );
    assert_eq!(row(&out, "total"), ["total", "8", "6", "2", "25.0%", "3"]);
}

#[test]
fn a_missing_trace_is_an_input_error() {
    let traces = Traces::new();
    slidelimit()
        .arg("replay")
        .arg(traces.dir.path().join("absent.csv"))
        .args(["-l", "3/s"])
        .assert()
        .code(1)
        .stderr(predicate::str::starts_with("error: cannot open "));
}

#[test]
fn piped_runs_draw_no_progress_bar() {
    let traces = Traces::new();
    let trace = traces.write("busy.csv", &busy_trace(true));
    slidelimit()
        .arg("replay")
        .arg(&trace)
        .args(["-l", "7/20ms", "--window", "buckets:4"])
        .assert()
        .success()
        .stderr("");
}

/// A limit of two windows (`2/10ms+3/100ms`) on one key: the calls that the narrow window
/// lets through but the wide one refuses leave nothing behind, as the core's layered limits
/// promise; the header names both windows and `--compare` leaves governor out.
#[test]
fn a_limit_of_two_windows_replays_all_or_nothing() {
    let traces = Traces::new();
    let trace = traces.write(
        "layered.csv",
        "timestamp,key\n20,k\n21,k\n22,k\n50,k\n115,k\n116,k\n121,k\n",
    );
    let json = json_of(slidelimit().arg("replay").arg(&trace).args([
        "--limit",
        "2/10ms+3/100ms",
        "--json",
    ]));
    let total = &json["total"];
    assert_eq!(
        (total["admitted"].as_u64(), total["refused"].as_u64()),
        (Some(4), Some(3)),
        "{json}"
    );
    let out = stdout_of(slidelimit().arg("replay").arg(&trace).args([
        "--limit",
        "2/10ms+3/100ms",
        "--compare",
    ]));
    assert!(
        out.contains("limit 2/10ms (2 per 10 ticks of 1ms) + 3/100ms (3 per 100 ticks of 1ms)"),
        "{out}"
    );
    assert!(out.contains("governor left out"), "{out}");
}

#[test]
fn a_window_that_never_binds_is_a_usage_error() {
    let traces = Traces::new();
    let trace = traces.write("t.csv", ALICE_BOB_CSV);
    slidelimit()
        .arg("replay")
        .arg(&trace)
        .args(["--limit", "3/10ms+40/100ms"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("never bind"));
}
