//! CSV cells through the `cep` binary (LANGUAGE.md §1): how a cell is typed
//! when it looks like a number Rust would take but the contract does not
//! (`nan`, `inf`), or a number beyond `i64` or `f64`; and a quote left open
//! at the end of the input, which must be a bad row rather than a cell that
//! silently swallows the rows after it.
//!
//! Each case runs through every reader `cep run` has: a file with
//! `--threads 1`, `--threads 2` and the default thread count (the file
//! parsed on threads past the read-ahead), and stdin (read on the calling
//! thread, no read-ahead). The interesting rows come both within the
//! read-ahead prefix (the first 4096 rows) and after it, where a file is
//! parsed by the parallel reader.

use std::process::Command;

mod common;

use common::{CEP, Output, Scratch};

/// Rows past the read-ahead prefix of `cep run` (`SCHEMA_PREFIX`, 4096).
const FILLER: u64 = 4200;

/// A scratch directory for one test of this suite.
fn scratch(test: &str) -> Scratch {
    Scratch::new("csv-cells", test)
}

/// How the events reach `cep run`.
#[derive(Clone, Copy, Debug)]
enum Via {
    /// `--events FILE --threads N`.
    File(usize),
    /// `--events FILE`, the default thread count.
    FileDefault,
    /// `--events -`, the text on stdin.
    Stdin,
}

const VIAS: [Via; 4] = [Via::File(1), Via::File(2), Via::FileDefault, Via::Stdin];

impl Via {
    /// The file name the messages give.
    fn name(self, path: &str) -> &str {
        match self {
            Via::Stdin => "<stdin>",
            _ => path,
        }
    }
}

/// Runs `cep run --query QUERY` on the CSV file `events` (its text sent on
/// stdin for [`Via::Stdin`]), with `extra` arguments.
fn run(via: Via, query: &str, events: &str, extra: &[&str]) -> Output {
    let mut cmd = Command::new(CEP);
    cmd.args(["run", "--query", query]).args(extra);
    let threads;
    match via {
        Via::File(n) => {
            threads = n.to_string();
            cmd.args(["--events", events, "--threads", &threads]);
        }
        Via::FileDefault => {
            cmd.args(["--events", events]);
        }
        Via::Stdin => {
            cmd.args(["--events", "-", "--format", "csv"]);
        }
    }
    let text = match via {
        Via::Stdin => std::fs::read(events).unwrap_or_else(|e| panic!("{events}: {e}")),
        _ => Vec::new(),
    };
    common::with_stdin(&mut cmd, &text, via)
}

/// Each match as `query var rows` (its `vars` rows, in order), sorted: with
/// several threads the matches come as a multiset.
fn matches(o: &Output) -> Vec<String> {
    let mut got: Vec<String> = o
        .stdout
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("`{l}`: {e}"));
            let vars = v["vars"].as_object().unwrap_or_else(|| panic!("no vars in `{l}`"));
            let vars: Vec<String> = vars.iter().map(|(name, rows)| format!("{name}{rows}")).collect();
            format!("{} {}", v["query"].as_str().expect("a query name"), vars.join(" "))
        })
        .collect();
    got.sort();
    got
}

fn summary(o: &Output) -> &str {
    o.stderr.lines().find(|l| l.starts_with("summary:")).unwrap_or_else(|| panic!("no summary in {o:#?}"))
}

/// `F` rows numbered `from..from + n`, none of which any query here binds.
fn filler(from: u64, n: u64) -> String {
    (from..from + n).map(|i| format!("{i},F,{}\n", i % 10)).collect()
}

/// The cells that look like numbers to Rust but not to the contract, and
/// numbers beyond `i64` or `f64`: none is a bad row. `nan`, `inf` and the
/// like are strings; an integer beyond `i64` is the nearest float; a float
/// (or integer) literal beyond `f64` is a string of its text. `ts` stays
/// an integer.
#[test]
fn nan_inf_and_out_of_range_numbers_are_values() {
    let d = scratch("values");
    let q = d.write(
        "q.cep",
        "QUERY words PATTERN A a WHERE a.x = 'nan' OR a.x = 'NaN' OR a.x = 'NAN' OR a.x = 'inf' OR a.x = 'INF' \
         OR a.x = 'Infinity' OR a.x = '-inf';\n\
         QUERY texts PATTERN A a WHERE a.x = '1e400' OR a.x = '-1e999';\n\
         QUERY beyond_i64 PATTERN A a WHERE a.x > 9223372036854775000;\n\
         QUERY numbers PATTERN A a WHERE a.x < 0 OR a.x > 0;\n",
    );
    let cells =
        ["nan", "NaN", "NAN", "inf", "INF", "Infinity", "-inf", "9223372036854775808", "1e400", "-1e999", "1.5"];
    // The cells at rows 0..11, then past the read-ahead prefix.
    let mut csv = String::from("ts,type,x\n");
    for (i, c) in cells.iter().enumerate() {
        csv.push_str(&format!("{i},A,{c}\n"));
    }
    let late = cells.len() as u64 + FILLER;
    csv.push_str(&filler(cells.len() as u64, FILLER));
    for (i, c) in cells.iter().enumerate() {
        csv.push_str(&format!("{},A,{c}\n", late + i as u64));
    }
    let e = d.write("e.csv", &csv);
    let rows = |kind: &str, at: &[u64]| -> Vec<String> {
        at.iter().flat_map(|&i| [format!("{kind} a[{i}]"), format!("{kind} a[{}]", late + i)]).collect()
    };
    let mut want = [rows("words", &[0, 1, 2, 3, 4, 5, 6]), rows("texts", &[8, 9]), rows("beyond_i64", &[7])].concat();
    want.extend(rows("numbers", &[7, 10]));
    want.sort();
    for via in VIAS {
        let o = run(via, &q, &e, &[]);
        assert_eq!(o.code, Some(0), "{via:?}: {o:#?}");
        assert_eq!(matches(&o), want, "{via:?}: {}", o.stderr);
        let total = 2 * cells.len() as u64 + FILLER;
        assert!(summary(&o).starts_with(&format!("summary: {total} rows read, 0 skipped")), "{via:?}: {o:#?}");
    }

    // In `ts` the same words are bad rows (a non-integer `ts`), and so is
    // an integer beyond `i64`.
    let q = d.write("any.cep", "PATTERN A a\n");
    for (i, ts) in ["nan", "inf", "1e400", "9223372036854775808"].iter().enumerate() {
        let e = d.write(&format!("ts{i}.csv"), format!("ts,type,x\n0,A,1\n{ts},A,2\n2,A,3\n"));
        for via in VIAS {
            let o = run(via, &q, &e, &[]);
            assert_eq!(o.code, Some(2), "{via:?}: {o:#?}");
            let prefix = format!("error: {}:3: `ts` ", via.name(&e));
            assert!(o.stderr.lines().any(|l| l.starts_with(&prefix) && l.contains(ts)), "{via:?}: {o:#?}");
        }
    }
}

/// A quote opened and never closed runs to the end of the input: the
/// record it is in is a bad row on the line the record starts on, naming
/// the column; the rows before it are read (and match); with
/// `--on-bad-row skip` it is skipped and counted. It used to be an event
/// whose cell held every line after the quote, the run exiting 0.
#[test]
fn an_unterminated_quote_is_a_bad_row() {
    let d = scratch("unterminated");
    let q = d.write("q.cep", "PATTERN A a\n");
    // Within the read-ahead prefix (the brief's case), and past it.
    let small = "ts,type,s\n0,A,\"unterminated\n1,B,y\n";
    let big = format!(
        "ts,type,s\n0,A,x\n{}{},A,y\n{},A,\"open\n{},A,z\n",
        filler(1, FILLER),
        FILLER + 1,
        FILLER + 2,
        FILLER + 3
    );
    for (file, text, line, before) in
        [("small.csv", small.to_owned(), 2, vec![]), ("big.csv", big, FILLER + 4, vec![0, FILLER + 1])]
    {
        let e = d.write(file, &text);
        let rows = before.len() as u64 + FILLER * u64::from(file == "big.csv") + 1;
        let want: Vec<String> = {
            let mut w: Vec<String> = before.iter().map(|r| format!("q1 a[{r}]")).collect();
            w.sort();
            w
        };
        for via in VIAS {
            let o = run(via, &q, &e, &[]);
            assert_eq!(o.code, Some(2), "{via:?} {file}: {o:#?}");
            let message = format!("error: {}:{line}: unterminated quoted field in column `s`", via.name(&e));
            assert!(o.stderr.lines().any(|l| l.starts_with(&message)), "no `{message}` ({via:?}): {o:#?}");
            // Matches emitted before the error stay valid; none comes from
            // the open record.
            let got = matches(&o);
            assert!(got.iter().all(|m| want.contains(m)), "{via:?} {file}: {got:?}");
            assert!(summary(&o).starts_with(&format!("summary: {rows} rows read")), "{via:?} {file}: {o:#?}");

            let o = run(via, &q, &e, &["--on-bad-row", "skip"]);
            assert_eq!(o.code, Some(0), "{via:?} {file}: {o:#?}");
            assert_eq!(matches(&o), want, "{via:?} {file}: {o:#?}");
            let counted = format!("summary: {rows} rows read, 1 skipped");
            assert!(summary(&o).starts_with(&counted), "{via:?} {file}: {o:#?}");
        }
    }
}

/// Quoted cells closed normally keep working on every path: commas,
/// embedded newlines and doubled quotes, also in the last record of the
/// input without a newline after it; rows after a multi-line cell keep
/// their row numbers.
#[test]
fn closed_quoted_cells_are_read() {
    let d = scratch("closed");
    let q = d.write(
        "q.cep",
        "QUERY comma PATTERN A a WHERE a.s = 'x,y';\n\
         QUERY quoted PATTERN A a WHERE a.s = 'say \"hi\"';\n\
         QUERY plain PATTERN A a WHERE a.s = 'plain';\n\
         QUERY last PATTERN A a WHERE a.s = 'end\"';\n",
    );
    let cells = "0,A,\"x,y\"\n1,A,\"two\nlines\"\n2,A,\"say \"\"hi\"\"\"\n3,A,plain\n";
    let n = 4 + FILLER;
    let text = format!(
        "ts,type,s\n{cells}{}{n},A,\"x,y\"\n{},A,\"two\nlines\"\n{},A,\"say \"\"hi\"\"\"\n{},A,plain\n{},A,\"end\"\"\"",
        filler(4, FILLER),
        n + 1,
        n + 2,
        n + 3,
        n + 4,
    );
    let e = d.write("e.csv", &text);
    let mut want: Vec<String> = [("comma", 0), ("quoted", 2), ("plain", 3)]
        .iter()
        .flat_map(|&(q, r)| [format!("{q} a[{r}]"), format!("{q} a[{}]", n + r)])
        .collect();
    want.push(format!("last a[{}]", n + 4));
    want.sort();
    for via in VIAS {
        let o = run(via, &q, &e, &[]);
        assert_eq!(o.code, Some(0), "{via:?}: {o:#?}");
        assert_eq!(matches(&o), want, "{via:?}: {}", o.stderr);
        assert!(summary(&o).starts_with(&format!("summary: {} rows read, 0 skipped", n + 5)), "{via:?}: {o:#?}");
    }
}

/// Columns no query reads (here an id that is new on every row) are only
/// checked, never typed or kept (`Reader::keep_fields`): the matches are
/// those of the same rows without them; a cell of invalid UTF-8 in one is
/// still a bad row; and the late-event file, which writes whole events,
/// still gets every column.
#[test]
fn columns_no_query_reads_are_checked_but_not_kept() {
    let d = scratch("unread");
    // A few dozen matches (the output of a stdin run must fit in a pipe:
    // the input is written before the output is read).
    let q = d.write("q.cep", "PATTERN SEQ(A a, A b) WHERE strict-contiguity AND [venue] AND b.x > a.x * 10\n");
    let row = |i: u64, with_id: bool| {
        let (x, venue) = (if i % 97 == 0 { 100 } else { i % 5 }, ["XNYS", "XLON"][(i % 2) as usize]);
        let id = if with_id { format!("ord-{:x},", i.wrapping_mul(2_654_435_761)) } else { String::new() };
        format!("{i},A,{id}{x},{venue}\n")
    };
    let file = |with_id: bool| -> String {
        let header = if with_id { "ts,type,id,x,venue\n" } else { "ts,type,x,venue\n" };
        std::iter::once(header.to_owned()).chain((0..FILLER + 300).map(|i| row(i, with_id))).collect()
    };
    let with_id = d.write("with_id.csv", file(true));
    let without = d.write("without.csv", file(false));
    for via in VIAS {
        let want = run(via, &q, &without, &[]);
        assert_eq!(want.code, Some(0), "{via:?}: {want:#?}");
        assert!(!want.stdout.is_empty(), "{via:?}: no matches to compare");
        let got = run(via, &q, &with_id, &[]);
        assert_eq!(got.code, Some(0), "{via:?}: {got:#?}");
        assert_eq!(matches(&got), matches(&want), "{via:?}");
    }

    // Invalid UTF-8 in the unread column, within the read-ahead and past it.
    for at in [3, FILLER + 100] {
        let mut bytes = file(true).into_bytes();
        let line = format!("\n{at},A,");
        let start = bytes.windows(line.len()).position(|w| w == line.as_bytes()).expect("the row") + line.len();
        bytes[start] = 0xff;
        let e = d.write("bad.csv", &bytes);
        for via in VIAS {
            let o = run(via, &q, &e, &[]);
            assert_eq!(o.code, Some(2), "{via:?} row {at}: {o:#?}");
            let message = format!("error: {}:{}: invalid UTF-8 in column `id`", via.name(&e), at + 2);
            assert!(o.stderr.lines().any(|l| l.starts_with(&message)), "no `{message}` ({via:?}): {o:#?}");
            let o = run(via, &q, &e, &["--on-bad-row", "skip"]);
            assert_eq!(o.code, Some(0), "{via:?} row {at}: {o:#?}");
            assert!(summary(&o).contains(" 1 skipped"), "{via:?} row {at}: {o:#?}");
        }
    }

    // A late event goes to the late file whole.
    let e = d.write("late.csv", "ts,type,id,x,venue\n10,A,first,1,XNYS\n20,A,second,2,XNYS\n5,A,late-one,3,XNYS\n");
    let side = d.0.join("late.jsonl");
    let late = format!("side:{}", side.display());
    for via in VIAS {
        let _ = std::fs::remove_file(&side);
        let o = run(via, &q, &e, &["--max-delay", "0", "--late", &late]);
        assert_eq!(o.code, Some(0), "{via:?}: {o:#?}");
        let text = std::fs::read_to_string(&side).unwrap_or_else(|e| panic!("{via:?}: {e}"));
        assert!(text.contains(r#""id":"late-one""#) && text.contains(r#""x":3"#), "{via:?}: {text}");
    }
}
