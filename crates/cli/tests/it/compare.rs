//! `slidelimit replay --compare`: the exact log, rolling buckets and governor side by side.

use predicates::prelude::*;

use crate::{json_of, slidelimit, stdout_of, Traces, ALICE_BOB_CSV};

/// On the alice/bob trace (3 per 10 ms), worked out by hand:
/// - the exact log: 6 admitted, 2 refused (alice at 3 and 9);
/// - buckets, B = 5 (2 ticks each, 7 physical buckets, a bucket counts for 14 ticks): alice at
///   10 is refused too (epoch 0, holding 0 and 1, still counts at epoch 5): 5 admitted;
/// - governor, a burst of 3 and one cell back every 10/3 ms: alice 0, 1, 2 admitted, 3 refused
///   (the theoretical arrival time would be 13.3 ms, more than 10 ms ahead), 9 admitted
///   (13.3 - 9 = 4.3 ms ahead), 10 admitted (16.7 - 10 = 6.7): 7 admitted, peak 4 (1, 2, 9, 10).
#[test]
fn the_three_deciders_and_their_differences_as_worked_out_by_hand() {
    let traces = Traces::new();
    let trace = traces.write("t.csv", ALICE_BOB_CSV);
    let out = stdout_of(slidelimit().arg("replay").arg(&trace).args([
        "-l",
        "3/10ms",
        "--compare",
        "--window",
        "buckets:5",
    ]));
    let expected = "\
decider          admitted  refused  refused %  peak window
exact log               6        2      25.0%            3
buckets (B=5)           5        3      37.5%            3
governor (GCRA)         7        1      12.5%            4
";
    assert!(out.contains(expected), "{out}");
    assert!(out.contains(
        "buckets (B=5): 1 (admitted only by it: 0; refused only by it: 1)\n  line 7: t=10 key=alice: exact log admits, buckets (B=5) refuses\n"
    ), "{out}");
    assert!(out.contains(
        "governor (GCRA): 1 (admitted only by it: 1; refused only by it: 0)\n  line 6: t=9 key=alice: exact log refuses, governor (GCRA) admits\n"
    ), "{out}");
}

#[test]
fn compare_in_json_counts_every_difference_and_caps_the_examples() {
    // One key, 2 per 10 ms, a request every 3 ms for 30 ms.
    let text: String = (0..10).map(|i| format!("{},k\n", i * 3)).collect();
    let traces = Traces::new();
    let trace = traces.write("k.csv", &text);
    let json = json_of(slidelimit().arg("replay").arg(&trace).args([
        "-l",
        "2/10ms",
        "--compare",
        "--examples",
        "1",
        "--json",
    ]));
    let deciders = json["deciders"].as_array().unwrap();
    let names: Vec<_> = deciders
        .iter()
        .map(|d| d["decider"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["exact log", "buckets (B=10)", "governor (GCRA)"]);
    // Exact: 0, 3 admitted; 6, 9 refused; 12 ((2, 12] holds 3) ... every window (t-10, t]
    // holds at most 2: admitted at 0, 3, 12, 15, 24, 27.
    assert_eq!(deciders[0]["admitted"].as_u64(), Some(6));
    for (decider, difference) in deciders[1..]
        .iter()
        .zip(json["differences"].as_array().unwrap())
    {
        let admitted = decider["admitted"].as_u64().unwrap();
        let only_here = difference["admitted_only_here"].as_u64().unwrap();
        let refused_only_here = difference["refused_only_here"].as_u64().unwrap();
        // Every difference is one request moved between admitted and refused.
        assert_eq!(admitted, 6 + only_here - refused_only_here);
        assert!(difference["examples"].as_array().unwrap().len() <= 1);
    }
    assert!(deciders[2]["sliding_window"] == false && deciders[0]["sliding_window"] == true);
}

#[test]
fn compare_takes_single_requests_only() {
    let traces = Traces::new();
    let trace = traces.write("w.csv", "0,a\n1,a,2\n2,a\n");
    slidelimit()
        .arg("replay")
        .arg(&trace)
        .args(["-l", "3/10ms", "--compare"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "error: line 2: weight 2: --compare decides single requests only",
        ));
    let assert = slidelimit()
        .arg("replay")
        .arg(&trace)
        .args(["-l", "3/10ms", "--compare", "--keep-going"])
        .assert()
        .code(3);
    let out = String::from_utf8(assert.get_output().stdout.clone()).unwrap();
    assert!(out.starts_with("compare: 2 requests"), "{out}");
}

#[test]
fn governor_is_left_out_where_gcra_cannot_express_the_limit() {
    let traces = Traces::new();
    let trace = traces.write("t.csv", ALICE_BOB_CSV);
    // 20 requests per 10 ns: less than a nanosecond per request.
    let out = stdout_of(slidelimit().arg("replay").arg(&trace).args([
        "-l",
        "20/10ns",
        "--tick",
        "1ns",
        "--compare",
        "--window",
        "buckets:2",
    ]));
    assert!(
        out.contains("note: governor left out: governor cannot express 20 requests per 10 ns"),
        "{out}"
    );
    assert!(!out.contains("governor (GCRA)  "), "{out}");
}
