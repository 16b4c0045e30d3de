//! `docs/tutorial.md` stays true: each command the tutorial shows runs here
//! on its files in `docs/tutorial/`, from the repository's root as the
//! tutorial says, and what it prints is checked twice: against the lines
//! written below (match lines without their id, summary lines, exit codes,
//! the first lines of error messages) and against the tutorial's text,
//! which must show each of these lines.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

mod common;
use common::{CEP, Output, Scratch};

/// The repository's root: the tutorial's commands run from there.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace root").to_path_buf()
}

/// The tutorial's text.
fn tutorial() -> String {
    std::fs::read_to_string(root().join("docs/tutorial.md")).expect("docs/tutorial.md")
}

/// `cep ARGS`, run from the root.
fn cep(args: &[&str]) -> Output {
    Output::of(Command::new(CEP).args(args).current_dir(root()).output().expect("cannot start cep"), args)
}

/// `cat FILE | cep ARGS`, run from the root.
fn cep_on_stdin(file: &str, args: &[&str]) -> Output {
    let input = std::fs::read(root().join(file)).expect("a tutorial file");
    common::with_stdin(Command::new(CEP).args(args).current_dir(root()), &input, args)
}

/// A match line without its id: `…"vars":{…},"id":"…"}` loses `,"id":"…"`.
fn without_id(line: &str) -> &str {
    line.rfind(r#","id":""#).map_or(line, |at| &line[..at])
}

/// Asserts that `o` exited with `code`, printed exactly `matches` (as
/// the tutorial shows them, compared without ids) and that its stderr
/// holds each of `stderr` as a line; and that the tutorial shows each of
/// these lines.
fn assert_shown(o: &Output, code: i32, matches: &[&str], stderr: &[&str]) {
    assert_eq!(o.code, Some(code), "{o:#?}");
    let got: Vec<&str> = o.stdout.lines().map(without_id).collect();
    let want: Vec<&str> = matches.iter().map(|m| without_id(m)).collect();
    assert_eq!(got, want, "{o:#?}");
    for line in stderr {
        assert!(o.stderr.lines().any(|l| l == *line), "no `{line}` on stderr: {o:#?}");
    }
    let text = tutorial();
    for line in matches.iter().chain(stderr) {
        assert!(text.contains(line), "docs/tutorial.md does not show `{line}`");
    }
}

const SPIKE: [&str; 4] = [
    r#"{"query":"spike","key":null,"start":1000,"end":4000,"vars":{"a":[0],"b":[3]},"id":"f06ae2b39f3056e1b2c4876e6cf09fb3"}"#,
    r#"{"query":"spike","key":null,"start":2000,"end":4000,"vars":{"a":[1],"b":[3]},"id":"23f7e1943862ecacbc434cf0ee0e9c78"}"#,
    r#"{"query":"spike","key":null,"start":3000,"end":4000,"vars":{"a":[2],"b":[3]},"id":"8b6894526665192d31d8d831a5bb61c7"}"#,
    r#"{"query":"spike","key":null,"start":12000,"end":13000,"vars":{"a":[6],"b":[7]},"id":"0843156b137a74827e8aa31a71e300b2"}"#,
];
const SPIKE_SUMMARY: &str = "summary: 8 rows read, 0 skipped, 0 late, 4 matches (spike 4)";

const BY_SYM: [&str; 4] = [
    r#"{"query":"spike","key":"ACME","start":1000,"end":4000,"vars":{"a":[0],"b":[3]},"id":"975714ffb51f8046660ae452204d4ead"}"#,
    r#"{"query":"spike","key":"ACME","start":3000,"end":4000,"vars":{"a":[2],"b":[3]},"id":"ff8640186970ad6886cb05ea9bf5bb10"}"#,
    r#"{"query":"spike","key":"BOLT","start":2000,"end":5000,"vars":{"a":[1],"b":[4]},"id":"f9401838f8c6864c4fe390326244fa4c"}"#,
    r#"{"query":"spike","key":"BOLT","start":12000,"end":13000,"vars":{"a":[6],"b":[7]},"id":"aacfc40755b2d8ec0db328bc20b05137"}"#,
];

const HELD: [&str; 3] = [
    r#"{"query":"held","key":"ACME","start":4000,"end":5000,"vars":{"s":[3]},"id":"3e1740acbbd6a75f6e0fd85cd43e8083"}"#,
    r#"{"query":"held","key":"BOLT","start":5000,"end":6000,"vars":{"s":[4]},"id":"8a46d81e24fbd06b89ea765701bb2670"}"#,
    r#"{"query":"held","key":"BOLT","start":13000,"end":14000,"vars":{"s":[7]},"id":"5b059815d187fa58180792ce89251cff"}"#,
];
const HELD_SUMMARY: &str = "summary: 8 rows read, 0 skipped, 0 late, 3 matches (held 3)";

/// Out of order, with `--max-delay 1s`: the four matches of `BY_SYM`.
const OOO: [&str; 4] = [
    r#"{"query":"spike","key":"ACME","start":1000,"end":4000,"vars":{"a":[0],"b":[3]},"id":"975714ffb51f8046660ae452204d4ead"}"#,
    r#"{"query":"spike","key":"ACME","start":3000,"end":4000,"vars":{"a":[1],"b":[3]},"id":"19801f58f6cd23d4b99a7bc5e0bd4f1d"}"#,
    r#"{"query":"spike","key":"BOLT","start":2000,"end":5000,"vars":{"a":[2],"b":[4]},"id":"0e2db25cc8a47a687993eda1fb2f9821"}"#,
    r#"{"query":"spike","key":"BOLT","start":12000,"end":13000,"vars":{"a":[7],"b":[6]},"id":"d76685df8d7616c229519c79cb455912"}"#,
];
const OOO_SUMMARY: &str = "summary: 9 rows read, 0 skipped, 1 late, 4 matches (spike 4)";

/// Section 2: the CSV file the tutorial shows is the one in the repository.
#[test]
fn the_files_shown_are_the_files() {
    let text = tutorial();
    for file in ["ticks.csv", "spike.cep", "spike_by_sym.cep", "rises.cep", "quiet.cep", "ticks_ooo.csv", "bad_row.csv"]
    {
        let content = std::fs::read_to_string(root().join("docs/tutorial").join(file)).expect(file);
        assert!(text.contains(&content), "docs/tutorial.md does not show docs/tutorial/{file} as it is");
    }
    let jsonl = std::fs::read_to_string(root().join("docs/tutorial/ticks.jsonl")).unwrap();
    let csv = std::fs::read_to_string(root().join("docs/tutorial/ticks.csv")).unwrap();
    assert_eq!(jsonl.lines().count() + 1, csv.lines().count(), "ticks.jsonl holds the ticks of ticks.csv");
    for line in jsonl.lines().take(2) {
        assert!(text.contains(line), "docs/tutorial.md does not show `{line}`");
    }
}

/// Section 4: `cep check` prints the plan the tutorial shows.
#[test]
fn check_prints_the_plan() {
    let o = cep(&["check", "--query", "docs/tutorial/spike.cep"]);
    assert_eq!(o.code, Some(0), "{o:#?}");
    let text = tutorial();
    for line in o.stdout.lines() {
        assert!(text.contains(line), "docs/tutorial.md does not show `{line}` of the plan");
    }
    assert!(o.stdout.contains("partition: none (one partition)"), "{o:#?}");
}

/// Sections 5 to 7: CSV, JSON lines and stdin give the same matches.
#[test]
fn csv_jsonl_and_stdin() {
    for events in ["docs/tutorial/ticks.csv", "docs/tutorial/ticks.jsonl"] {
        let o = cep(&["run", "--query", "docs/tutorial/spike.cep", "--events", events]);
        assert_shown(&o, 0, &SPIKE, &[SPIKE_SUMMARY]);
    }
    let o = cep_on_stdin("docs/tutorial/ticks.csv", &["run", "--query", "docs/tutorial/spike.cep", "--events", "-"]);
    assert_shown(&o, 0, &SPIKE, &[SPIKE_SUMMARY]);
}

/// Section 8: `PARTITION BY sym`.
#[test]
fn partitions() {
    let o = cep(&["run", "--query", "docs/tutorial/spike_by_sym.cep", "--events", "docs/tutorial/ticks.csv"]);
    assert_shown(&o, 0, &BY_SYM, &[SPIKE_SUMMARY]);
}

/// Sections 9 and 10: Kleene `+`, `SELECT EARLIEST`, and `AFTER MATCH SKIP
/// PAST LAST EVENT` in its place.
#[test]
fn kleene_select_and_skip() {
    let all = [
        r#"{"query":"rises","key":"ACME","start":1000,"end":9000,"vars":{"up":[0,2,3],"down":[5]},"id":"e5d47c59215942c978c8c351f909c919"}"#,
        r#"{"query":"rises","key":"ACME","start":3000,"end":9000,"vars":{"up":[2,3],"down":[5]},"id":"2b489f4498ed5f4e6aac3fc0d50e3346"}"#,
        r#"{"query":"rises","key":"ACME","start":4000,"end":9000,"vars":{"up":[3],"down":[5]},"id":"e4c6b5d9a9c5dddaeb44c5aaf234b9f0"}"#,
    ];
    let o = cep(&["run", "--query", "docs/tutorial/rises.cep", "--events", "docs/tutorial/ticks.csv"]);
    assert_shown(&o, 0, &all, &["summary: 8 rows read, 0 skipped, 0 late, 3 matches (rises 3)"]);

    let one = "summary: 8 rows read, 0 skipped, 0 late, 1 match (rises 1)";
    let o = cep(&["run", "--query", "docs/tutorial/rises_earliest.cep", "--events", "docs/tutorial/ticks.csv"]);
    assert_shown(&o, 0, &all[..1], &[one]);
    let rises = std::fs::read_to_string(root().join("docs/tutorial/rises.cep")).unwrap();
    let earliest = std::fs::read_to_string(root().join("docs/tutorial/rises_earliest.cep")).unwrap();
    let body = |q: &str| q.lines().filter(|l| !l.starts_with("--")).collect::<Vec<_>>().join("\n");
    assert_eq!(body(&earliest), body(&rises).replace("PARTITION BY sym;", "PARTITION BY sym\nSELECT EARLIEST;"));

    let dir = Scratch::new("tutorial", "skip");
    let skip = dir.write("skip.cep", earliest.replace("SELECT EARLIEST", "AFTER MATCH SKIP PAST LAST EVENT"));
    let o = cep(&["run", "--query", &skip, "--events", "docs/tutorial/ticks.csv"]);
    assert_shown(&o, 0, &all[..1], &[one]);
}

/// Section 11: a trailing `NOT … WITHIN`, and the claim about `WITHIN 6 s`.
#[test]
fn trailing_not() {
    let o = cep(&["run", "--query", "docs/tutorial/quiet.cep", "--events", "docs/tutorial/ticks.csv"]);
    assert_shown(&o, 0, &HELD, &[HELD_SUMMARY]);

    let dir = Scratch::new("tutorial", "six");
    let quiet = std::fs::read_to_string(root().join("docs/tutorial/quiet.cep")).unwrap();
    let six = dir.write("six.cep", quiet.replace("WITHIN 1 s", "WITHIN 6 s"));
    let o = cep(&["run", "--query", &six, "--events", "docs/tutorial/ticks.csv"]);
    assert_eq!(o.code, Some(0), "{o:#?}");
    let keys: Vec<&str> =
        o.stdout.lines().map(|l| if l.contains(r#""key":"ACME""#) { "ACME" } else { "BOLT" }).collect();
    assert_eq!(keys, ["BOLT", "BOLT"], "{o:#?}");
}

/// Section 12: with `--idle-timeout`, the last match comes out about one
/// second after the last tick, while stdin stays open.
#[test]
fn idle_timeout_on_a_paused_producer() {
    let mut child = Command::new(CEP)
        .args(["run", "--query", "docs/tutorial/quiet.cep", "--events", "-", "--idle-timeout", "200ms"])
        .current_dir(root())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("cannot start cep");
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            if tx.send(line.unwrap()).is_err() {
                return;
            }
        }
    });
    stdin.write_all(&std::fs::read(root().join("docs/tutorial/ticks.jsonl")).unwrap()).unwrap();
    stdin.flush().unwrap();
    let sent = Instant::now();
    let mut got = Vec::new();
    for _ in 0..HELD.len() {
        got.push(rx.recv_timeout(Duration::from_secs(10)).expect("a match while stdin stays open"));
    }
    assert!(sent.elapsed() >= Duration::from_millis(700), "the quiet period is one second of wall time");
    drop(stdin);
    let o = Output::of(child.wait_with_output().unwrap(), "idle");
    let got: Vec<&str> = got.iter().map(|l| without_id(l)).collect();
    let want: Vec<&str> = HELD.iter().map(|l| without_id(l)).collect();
    assert_eq!(got, want);
    assert_eq!(o.code, Some(0), "{o:#?}");
    assert!(o.stderr.lines().any(|l| l == HELD_SUMMARY), "{o:#?}");
    assert!(tutorial().contains(
        "(cat docs/tutorial/ticks.jsonl; sleep 3) | cep run --query docs/tutorial/quiet.cep --events - --idle-timeout 200ms"
    ));
}

/// Section 13: late events dropped, held with `--max-delay`, written aside,
/// or an error.
#[test]
fn out_of_order() {
    let base = ["run", "--query", "docs/tutorial/spike_by_sym.cep", "--events", "docs/tutorial/ticks_ooo.csv"];
    let o = cep(&base);
    assert_shown(
        &o,
        0,
        &OOO[..2],
        &[
            "warning: 3 late events dropped: behind the watermark (the largest ts seen); --max-delay allows more \
             disorder, --late side:FILE keeps them",
            "summary: 9 rows read, 0 skipped, 3 late, 2 matches (spike 2)",
        ],
    );

    let delayed = [&base[..], &["--max-delay", "1s"]].concat();
    assert_shown(
        &cep(&delayed),
        0,
        &OOO,
        &[
            "warning: 1 late event dropped: behind the watermark (the largest ts seen minus --max-delay); \
             --max-delay allows more disorder, --late side:FILE keeps them",
            OOO_SUMMARY,
        ],
    );

    let dir = Scratch::new("tutorial", "late");
    let side = format!("side:{}", dir.join("late.jsonl").display());
    let o = cep(&[&delayed[..], &["--late", &side]].concat());
    assert_shown(&o, 0, &OOO, &[OOO_SUMMARY]);
    let late = std::fs::read_to_string(dir.join("late.jsonl")).unwrap();
    assert_eq!(late, "{\"row\":8,\"ts\":6000,\"type\":\"Tick\",\"sym\":\"ACME\",\"price\":101,\"vol\":5}\n");
    assert!(tutorial().contains(late.trim_end()));

    let o = cep(&[&delayed[..], &["--late", "fail"]].concat());
    assert_shown(
        &o,
        2,
        &OOO[..3],
        &[
            "summary: 9 rows read, 0 skipped, 1 late, 3 matches (spike 3)",
            "error: docs/tutorial/ticks_ooo.csv:10: row 8: late event: ts 6000 is behind the watermark 12000",
        ],
    );
}

/// Section 14: a syntax error and an unknown field, with the caret.
#[test]
fn query_errors() {
    let typo = [
        "error: docs/tutorial/typo.cep:3:20: expected `,` or `)`, found `Tick`",
        " 3 | PATTERN SEQ(Tick a Tick b)",
        "   |                    ^^^^",
    ];
    let o = cep(&["check", "--query", "docs/tutorial/typo.cep"]);
    assert_shown(&o, 2, &[], &typo);
    let o = cep(&["run", "--query", "docs/tutorial/typo.cep", "--events", "docs/tutorial/ticks.csv"]);
    assert_shown(&o, 2, &[], &typo[..1]);

    let unknown = [
        "error: docs/tutorial/unknown_field.cep:4:9: unknown field `volume`",
        " 4 | WHERE b.volume >= 500 AND b.price > a.price",
        "   |         ^^^^^^",
        "   = the input's fields are: ts, sym, price, vol",
    ];
    let o = cep(&["check", "--query", "docs/tutorial/unknown_field.cep"]);
    assert_eq!(o.code, Some(0), "without events, check accepts the field: {o:#?}");
    let o = cep(&["check", "--query", "docs/tutorial/unknown_field.cep", "--events", "docs/tutorial/ticks.csv"]);
    assert_shown(&o, 2, &[], &unknown);
    let o = cep(&["run", "--query", "docs/tutorial/unknown_field.cep", "--events", "docs/tutorial/ticks.csv"]);
    assert_shown(&o, 2, &[], &unknown[..1]);
}

/// Section 14: a bad row stops the run (exit 2) or is skipped and counted.
#[test]
fn a_bad_row() {
    let o = cep(&["run", "--query", "docs/tutorial/spike.cep", "--events", "docs/tutorial/bad_row.csv"]);
    assert_shown(
        &o,
        2,
        &[],
        &[
            "summary: 3 rows read, 0 skipped, 0 late, 0 matches (spike 0)",
            "error: docs/tutorial/bad_row.csv:4: expected 5 cells, found 4",
        ],
    );
    let o = cep(&[
        "run",
        "--query",
        "docs/tutorial/spike.cep",
        "--events",
        "docs/tutorial/bad_row.csv",
        "--on-bad-row",
        "skip",
    ]);
    assert_shown(
        &o,
        0,
        &SPIKE[..2],
        &[
            "warning: skipped: docs/tutorial/bad_row.csv:4: expected 5 cells, found 4",
            "summary: 5 rows read, 1 skipped, 0 late, 2 matches (spike 2)",
        ],
    );
}
