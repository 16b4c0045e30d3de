//! Hand-computed cases for the reference matcher (`cep_nfa::reference`),
//! straight from LANGUAGE.md §3 and docs/semantics.md, and a smoke test of
//! the random case generator in `cep_testkit::arb`.
//!
//! A case that fits the corpus format (one stream, its statements' lines
//! in emission order) belongs in `testdata/` instead, where it runs on every
//! engine: `next_match_relevance`, `event_window_partition`,
//! `element_window_relevance` and `skip_per_partition` came from here.
//!
//! Expected matches are written as `var[rows] …` (plus `key start..end` where
//! it matters), in emission order. Streams are mostly written with
//! [`letters`]: `"A.1@5#2"` is an `A` with x = 1 at ts 5 with key k = 2; by
//! default the event of row `i` has `ts = i` and no x or k.

use cep_core::{TimeUnit, Value};
use cep_nfa::reference::{self, RefMatch};
use cep_nfa::syntax::parse;
use proptest::test_runner::{Config, TestRunner};

// ---------------------------------------------------------------------------
// Helpers

use cep_testkit::Stream;

/// A stream over fields `k`, `x` from tokens `TYPE[.x][@ts][#k]` (`.-` for
/// a missing x); ts defaults to the row number; k is missing unless given.
fn letters(spec: &str) -> Stream {
    let mut s = Stream::new(&["k", "x"]);
    for (row, tok) in spec.split_whitespace().enumerate() {
        let (tok, k) = match tok.split_once('#') {
            Some((t, k)) => (t, Value::Int(k.parse().unwrap())),
            None => (tok, Value::Null),
        };
        let (left, ts) = match tok.split_once('@') {
            Some((l, t)) => (l, t.parse().unwrap()),
            None => (tok, row as i64),
        };
        let (ty, x) = match left.split_once('.') {
            Some((t, "-")) => (t, Value::Null),
            Some((t, x)) => (t, Value::Int(x.parse().unwrap())),
            None => (left, Value::Null),
        };
        s = s.ev(ty, ts, &[k, x]);
    }
    s
}

fn int(i: i64) -> Value {
    Value::Int(i)
}

fn matches(query: &str, s: &Stream) -> (Vec<String>, Vec<RefMatch>) {
    let file = parse(query).unwrap_or_else(|e| panic!("{query}: {}", e.message));
    let stmt = &file.statements[0];
    let found = reference::run(stmt, &s.events, &s.schema, TimeUnit::Millis);
    let names = reference::positive_vars(stmt);
    let shown = found
        .iter()
        .map(|m| {
            let vars: Vec<String> = names
                .iter()
                .zip(&m.vars)
                .map(|(n, rows)| {
                    let rows: Vec<String> = rows.iter().map(u64::to_string).collect();
                    format!("{n}[{}]", rows.join(","))
                })
                .collect();
            vars.join(" ")
        })
        .collect();
    (shown, found)
}

/// Matches as `var[rows] …`, in emission order.
fn rows(query: &str, s: &Stream) -> Vec<String> {
    matches(query, s).0
}

/// Matches as `key start..end var[rows] …`, in emission order.
fn full(query: &str, s: &Stream) -> Vec<String> {
    let (shown, found) = matches(query, s);
    shown.into_iter().zip(found).map(|(v, m)| format!("{} {}..{} {v}", m.key, m.start, m.end)).collect()
}

// ---------------------------------------------------------------------------
// LANGUAGE.md §7: rise / spike / quiet

use cep_testkit::corpus::RISE_SPIKE;

fn ticks(t: &[(i64, i64, i64)]) -> Stream {
    let mut s = Stream::new(&["key", "price", "vol"]);
    for &(ts, price, vol) in t {
        s = s.ev("Tick", ts, &[int(1), int(price), int(vol)]);
    }
    s
}

#[test]
fn rise_spike_one_match() {
    // r: row 1 only (1025000 >= 10000*102; rows 2, 3 rise < 2 %; row 0 has
    // no PREV). s: row 2 only (vol 5000), 20 s after r. No tick between
    // 21000 and 31000, so the quiet period holds: end = 21000 + 10000.
    let s = ticks(&[(0, 10000, 10), (1000, 10250, 10), (21000, 10260, 5000), (40000, 10270, 10)]);
    assert_eq!(full(RISE_SPIKE, &s), ["1 1000..31000 r[1] s[2]"]);
}

#[test]
fn rise_spike_reversal_cancels() {
    // The tick at 25000 (<= 31000) priced 10100: 1010000 <= 10260*99 =
    // 1015740, a 1 % reversal: the only candidate is negated. No other rise:
    // row 3 vs 10260 and row 4 vs 10100 are below 2 %.
    let s = ticks(&[(0, 10000, 10), (1000, 10250, 10), (21000, 10260, 5000), (25000, 10100, 10), (40000, 10270, 10)]);
    assert_eq!(full(RISE_SPIKE, &s), Vec::<String>::new());
}

#[test]
fn rise_spike_late_spike() {
    // The spike at 70000 is 69 s after the rise at 1000: outside `s`'s
    // 60 s window. No other rise qualifies.
    let s = ticks(&[(0, 10000, 10), (1000, 10250, 10), (40000, 10270, 10), (70000, 10260, 5000)]);
    assert_eq!(full(RISE_SPIKE, &s), Vec::<String>::new());
}

#[test]
fn rise_spike_selection() {
    // Two rises (rows 1 and 2: 10250 vs 10000, 10500 vs 10250) wait for the
    // spike at row 3 (row 2 is not relevant to the partial match r=[1]: it
    // cannot be `s`, vol 10). Both end at 21000 + 10000.
    let s = ticks(&[(0, 10000, 10), (1000, 10250, 10), (2000, 10500, 10), (21000, 10510, 5000)]);
    assert_eq!(full(RISE_SPIKE, &s), ["1 1000..31000 r[1] s[3]"]);
    let all = RISE_SPIKE.replace("SELECT EARLIEST", "SELECT ALL");
    assert_eq!(full(&all, &s), ["1 1000..31000 r[1] s[3]", "1 2000..31000 r[2] s[3]"]);
    let latest = RISE_SPIKE.replace("SELECT EARLIEST", "SELECT LATEST");
    assert_eq!(full(&latest, &s), ["1 2000..31000 r[2] s[3]"]);
}

// ---------------------------------------------------------------------------
// DESIGN.md §2.3: SEQ(A, B, D), skip-till-any-match, window 9

#[test]
fn aggregated_link_example() {
    // a1 b3 a4 d5 b6 d7 d9 = rows 0..6. Prefixes (a1,b3), (a1,b6), (a4,b6);
    // d5 completes (a1,b3) only (b6 is after it); d7 and d9 complete all
    // three: 1 + 3 + 3 = 7. d9 - a1 = 8 <= 9. At one moment: by start, then
    // rows.
    let s = letters("A@1 B@3 A@4 D@5 B@6 D@7 D@9");
    let q = "PATTERN SEQ(A a, B b, D d) WHERE skip-till-any-match WITHIN 9";
    assert_eq!(
        rows(q, &s),
        [
            "a[0] b[1] d[3]",
            "a[0] b[1] d[5]",
            "a[0] b[4] d[5]",
            "a[2] b[4] d[5]",
            "a[0] b[1] d[6]",
            "a[0] b[4] d[6]",
            "a[2] b[4] d[6]",
        ]
    );
    // WITHIN 7: d9 - a1 = 8 drops the two matches of a1 with d9.
    let q7 = "PATTERN SEQ(A a, B b, D d) WHERE skip-till-any-match WITHIN 7";
    assert_eq!(rows(q7, &s).len(), 5);
}

#[test]
fn select_earliest_latest_group_by_last_event() {
    // Same stream; groups by d: d5 {(a1,b3)}; d7, d9 {(a1,b3), (a1,b6),
    // (a4,b6)}. EARLIEST: start 1, tie (a1,b3) < (a1,b6) by rows. LATEST:
    // start 4.
    let s = letters("A@1 B@3 A@4 D@5 B@6 D@7 D@9");
    let q = "PATTERN SEQ(A a, B b, D d) WHERE skip-till-any-match WITHIN 9 SELECT EARLIEST";
    assert_eq!(rows(q, &s), ["a[0] b[1] d[3]", "a[0] b[1] d[5]", "a[0] b[1] d[6]"]);
    let q = q.replace("EARLIEST", "LATEST");
    assert_eq!(rows(&q, &s), ["a[0] b[1] d[3]", "a[2] b[4] d[5]", "a[2] b[4] d[6]"]);
}

// ---------------------------------------------------------------------------
// LANGUAGE.md §7: SASE+ Kleene

#[test]
fn sase_kleene_rising_run() {
    // IBM at rows 0,2,3,5,6 priced 10,12,11,13,9; SUN at rows 1,4 priced 5,4.
    // `a[i].price > a[i-1].price` needs an earlier event: any Stock starts
    // `a`. `b.price < a[a.LEN].price` is b's iteration conjunct.
    // IBM from 10: 12 rises (more a; not b); 11 does not rise but is a b
    //   (11 < 12): a[0,2] b[3].
    // IBM from 12: 11 is a b: a[2] b[3].
    // IBM from 11: 13 rises; 9 < 13: a[3,5] b[6]. From 13: a[5] b[6].
    // IBM from 9: nothing follows.
    // SUN from 5: 4 < 5 is a b: a[1] b[4]. From 4: nothing.
    let mut s = Stream::new(&["symbol", "price"]);
    for (ts, sym, price) in
        [(0, "IBM", 10), (1, "SUN", 5), (2, "IBM", 12), (3, "IBM", 11), (4, "SUN", 4), (5, "IBM", 13), (6, "IBM", 9)]
    {
        s = s.ev("Stock", ts, &[Value::str(sym), int(price)]);
    }
    let q = "PATTERN SEQ(Stock+ a[], Stock b)
        WHERE skip-till-next-match AND [symbol]
          AND a[i].price > a[i-1].price
          AND b.price < a[a.LEN].price
        WITHIN 1 hour";
    assert_eq!(
        full(q, &s),
        [
            r#""IBM" 0..3 a[0,2] b[3]"#,
            r#""IBM" 2..3 a[2] b[3]"#,
            r#""SUN" 1..4 a[1] b[4]"#,
            r#""IBM" 3..6 a[3,5] b[6]"#,
            r#""IBM" 5..6 a[5] b[6]"#,
        ]
    );
}

// ---------------------------------------------------------------------------
// Strategies (Flink CEP's contiguity examples, under our definitions)

#[test]
fn a_bplus_c_strategies_contiguous_stream() {
    // a1 b1 b2 c1. strict: only the fully contiguous binding. next: from a,
    // b1 is relevant (b), then b2 (more b), then c. any: every non-empty
    // subset of {b1, b2}, ordered by rows ([1] < [1,2] < [2]).
    let s = letters("A B B C");
    let q = |strategy: &str| format!("PATTERN SEQ(A a, B+ b, C c) WHERE {strategy}");
    assert_eq!(rows(&q("strict-contiguity"), &s), ["a[0] b[1,2] c[3]"]);
    assert_eq!(rows(&q("partition-contiguity"), &s), ["a[0] b[1,2] c[3]"]);
    assert_eq!(rows(&q("skip-till-next-match"), &s), ["a[0] b[1,2] c[3]"]);
    assert_eq!(rows(&q("skip-till-any-match"), &s), ["a[0] b[1] c[3]", "a[0] b[1,2] c[3]", "a[0] b[2] c[3]"]);
}

#[test]
fn a_bplus_c_strategies_with_noise() {
    // a b1 d1 b2 d2 b3 c: strict: d1 breaks every run. next: the d's are
    // never relevant, every b is: one match. any: the 7 non-empty subsets
    // of {b1, b2, b3}.
    let s = letters("A B D B D B C");
    let q = |strategy: &str| format!("PATTERN SEQ(A a, B+ b, C c) WHERE {strategy}");
    assert_eq!(rows(&q("strict-contiguity"), &s), Vec::<String>::new());
    assert_eq!(rows(&q("skip-till-next-match"), &s), ["a[0] b[1,3,5] c[6]"]);
    assert_eq!(
        rows(&q("skip-till-any-match"), &s),
        [
            "a[0] b[1] c[6]",
            "a[0] b[1,3] c[6]",
            "a[0] b[1,3,5] c[6]",
            "a[0] b[1,5] c[6]",
            "a[0] b[3] c[6]",
            "a[0] b[3,5] c[6]",
            "a[0] b[5] c[6]",
        ]
    );
}

#[test]
fn kleene_tail_emits_every_prefix() {
    // SEQ(A a, B+ b) over a b1 b2 b3: a match ends at each b; b2 is
    // relevant to a[0] b[1], so a[0] b[2] is not a next-match match.
    let s = letters("A B B B");
    let q = "PATTERN SEQ(A a, B+ b)";
    assert_eq!(rows(q, &s), ["a[0] b[1]", "a[0] b[1,2]", "a[0] b[1,2,3]"]);
}

// ---------------------------------------------------------------------------
// AFTER MATCH SKIP (Flink's examples, under our definitions)

#[test]
fn skip_strategies_bplus_c() {
    // b+ c over b1 b2 b3 c: three matches, all final when c is processed,
    // in start order: b[0,1,2], b[1,2], b[2].
    let s = letters("B B B C");
    let q = |skip: &str| format!("PATTERN SEQ(B+ b, C c) AFTER MATCH SKIP {skip}");
    let all = ["b[0,1,2] c[3]", "b[1,2] c[3]", "b[2] c[3]"];
    assert_eq!(rows(&q("NONE"), &s), all);
    // Only the first match started at row 0.
    assert_eq!(rows(&q("TO NEXT EVENT"), &s), all);
    // Starts in [0, 3] are discarded.
    assert_eq!(rows(&q("PAST LAST EVENT"), &s), ["b[0,1,2] c[3]"]);
    assert_eq!(rows(&q("PAST LAST ROW"), &s), ["b[0,1,2] c[3]"]);
    // Before the first b (row 0): nothing.
    assert_eq!(rows(&q("TO FIRST b"), &s), all);
    // Before the last b (row 2): the match starting at row 1.
    assert_eq!(rows(&q("TO LAST b"), &s), ["b[0,1,2] c[3]", "b[2] c[3]"]);
}

#[test]
fn skip_to_next_event_bplus() {
    // a b+ over a b1 b2 b3: a[0] b[1] is emitted at b1 and discards the
    // partial matches that started at a: the longer ones.
    let s = letters("A B B B");
    assert_eq!(rows("PATTERN SEQ(A a, B+ b) AFTER MATCH SKIP NONE", &s).len(), 3);
    assert_eq!(rows("PATTERN SEQ(A a, B+ b) AFTER MATCH SKIP TO NEXT EVENT", &s), ["a[0] b[1]"]);
}

#[test]
fn skip_strategies_flink_greedy_example() {
    // (a|b|c) (b|c) c+ d over a b c1 c2 c3 d (rows 0..5):
    // from a: y=b, z=[c1,c2,c3], d; from b: y=c1, z=[c2,c3]; from c1: y=c2,
    // z=[c3]; from c2: y=c3, but d cannot follow without a z. From c3: none.
    let s = letters("A B C C C D");
    let q = |skip: &str| format!("PATTERN SEQ((A|B|C) x, (B|C) y, C+ z, D d) AFTER MATCH SKIP {skip}");
    let m1 = "x[0] y[1] z[2,3,4] d[5]";
    let m2 = "x[1] y[2] z[3,4] d[5]";
    let m3 = "x[2] y[3] z[4] d[5]";
    assert_eq!(rows(&q("NONE"), &s), [m1, m2, m3]);
    assert_eq!(rows(&q("TO NEXT EVENT"), &s), [m1, m2, m3]);
    assert_eq!(rows(&q("PAST LAST EVENT"), &s), [m1]);
    // First z of m1 at row 2: starts in [0, 2) go.
    assert_eq!(rows(&q("TO FIRST z"), &s), [m1, m3]);
    // Last z of m1 at row 4: starts in [0, 4) go.
    assert_eq!(rows(&q("TO LAST z"), &s), [m1]);
    // x starts the match: [0, 0) is empty.
    assert_eq!(rows(&q("TO FIRST x"), &s), [m1, m2, m3]);
}

#[test]
fn skip_to_absent_variable_discards_nothing() {
    // SEQ(A a, B? b, C c) any-match over a c1 c2: b never binds; TO FIRST b
    // discards nothing, PAST LAST EVENT keeps a[0] c[1] only.
    let s = letters("A C C");
    let q = |skip: &str| format!("PATTERN SEQ(A a, B? b, C c) WHERE skip-till-any-match AFTER MATCH SKIP {skip}");
    assert_eq!(rows(&q("TO FIRST b"), &s), ["a[0] b[] c[1]", "a[0] b[] c[2]"]);
    assert_eq!(rows(&q("PAST LAST EVENT"), &s), ["a[0] b[] c[1]"]);
}

// ---------------------------------------------------------------------------
// Optional and star elements, type alternatives

#[test]
fn optional_elements() {
    // SEQ(A a, B? b, C c) over a0 b1 c2 a3 c4.
    // next: from a0, b1 is relevant (as b) and must be taken: a0 b1 c2;
    // from a3, c4 binds c skipping b. any: also the bindings that skip b1 or
    // reach c4 from a0.
    let s = letters("A B C A C");
    assert_eq!(rows("PATTERN SEQ(A a, B? b, C c)", &s), ["a[0] b[1] c[2]", "a[3] b[] c[4]"]);
    assert_eq!(
        rows("PATTERN SEQ(A a, B? b, C c) WHERE skip-till-any-match", &s),
        ["a[0] b[] c[2]", "a[0] b[1] c[2]", "a[0] b[] c[4]", "a[0] b[1] c[4]", "a[3] b[] c[4]"]
    );
    // A trailing optional: a match ends at a0 (b absent) and another at b1.
    assert_eq!(rows("PATTERN SEQ(A a, B? b)", &letters("A B")), ["a[0] b[]", "a[0] b[1]"]);
    // A leading optional: b can start a match. At row 2, a[1] b[2] starts at
    // ts 1, before b[2] alone (ts 2).
    assert_eq!(rows("PATTERN SEQ(A? a, B b)", &letters("B A B")), ["a[] b[0]", "a[1] b[2]", "a[] b[2]"]);
    // A completion condition on an absent `?` is checked with LEN 0.
    assert_eq!(rows("PATTERN SEQ(A a, B? b) WHERE b.LEN = 1", &letters("A B")), ["a[0] b[1]"]);
}

#[test]
fn star_elements() {
    // next: from a0, b1 is relevant, then b2, then c3: one match.
    let s = letters("A B B C");
    assert_eq!(rows("PATTERN SEQ(A a, B* b, C c)", &s), ["a[0] b[1,2] c[3]"]);
    // An empty star: a c.
    assert_eq!(rows("PATTERN SEQ(A a, B* b, C c)", &letters("A C")), ["a[0] b[] c[1]"]);
    // A completion condition `b.LEN >= 1` rejects the empty star.
    assert_eq!(rows("PATTERN SEQ(A a, B* b, C c) WHERE b.LEN >= 1", &letters("A C")), Vec::<String>::new());
    // A trailing star: the match ends at a0 and at each c.
    assert_eq!(rows("PATTERN SEQ(A a, C* c)", &letters("A C C")), ["a[0] c[]", "a[0] c[1]", "a[0] c[1,2]"]);
    // A star alone needs at least one event.
    assert_eq!(rows("PATTERN SEQ(A* a)", &letters("B A")), ["a[1]"]);
}

#[test]
fn type_alternatives() {
    // (A|B) x, C c: both a0 and b1 start a match; under strict-contiguity
    // only b1 is adjacent to c2. D is never an x.
    let s = letters("A B C D C");
    assert_eq!(rows("PATTERN SEQ((A|B) x, C c)", &s), ["x[0] c[2]", "x[1] c[2]"]);
    assert_eq!(rows("PATTERN SEQ((A|B) x, C c) WHERE strict-contiguity", &s), ["x[1] c[2]"]);
    assert_eq!(
        rows("PATTERN SEQ((A|B) x, (C|D) y) WHERE skip-till-any-match", &s),
        ["x[0] y[2]", "x[1] y[2]", "x[0] y[3]", "x[1] y[3]", "x[0] y[4]", "x[1] y[4]"]
    );
}

// ---------------------------------------------------------------------------
// Negation

#[test]
fn middle_not_with_an_early_conjunct() {
    // n.x = a.x names a (before the NOT).
    let s = letters("A.1 B.2 C A.2 B.1 C");
    // rows: 0 A.1, 1 B.2, 2 C, 3 A.2, 4 B.1, 5 C.
    // a0 c2: region {1}: 2 != 1, ok. a0 c5: region {1..4}: row 4 x 1 = 1,
    // negated. a3 c5: region {4}: 1 != 2, ok.
    let q = "PATTERN SEQ(A a, NOT B n, C c) WHERE skip-till-any-match AND n.x = a.x";
    assert_eq!(rows(q, &s), ["a[0] c[2]", "a[3] c[5]"]);
    // Without the conjunct any B in between negates.
    let q = "PATTERN SEQ(A a, NOT B n, C c) WHERE skip-till-any-match";
    assert_eq!(rows(q, &s), Vec::<String>::new());
}

#[test]
fn middle_not_with_a_later_conjunct() {
    // n.x = c.x names c (after the NOT): checked against the complete match.
    // rows 0 A, 1 B.1, 2 C.2, 3 C.1. a0 c2: region {1}: 1 != 2, ok.
    // a0 c3: region {1, 2}: row 1 x 1 = c.x 1, negated.
    let s = letters("A B.1 C.2 C.1");
    let q = "PATTERN SEQ(A a, NOT B n, C c) WHERE skip-till-any-match AND n.x = c.x";
    assert_eq!(rows(q, &s), ["a[0] c[2]"]);
}

#[test]
fn middle_not_sees_all_of_a_later_kleene() {
    // n.x > max(c.x): with c = [2] (max 1) B.3 negates; with c = [2, 3]
    // (max 5) it does not. next-match: C3 is relevant to a[0] c[2].
    let s = letters("A B.3 C.1 C.5");
    let q = "PATTERN SEQ(A a, NOT B n, C+ c) WHERE n.x > max(c.x)";
    assert_eq!(rows(q, &s), ["a[0] c[2,3]"]);
}

#[test]
fn middle_not_without_a_bound_side() {
    // SEQ(A? a, NOT B n, C c): when a is absent, nothing is bound before the
    // NOT: no effect. a[] c[2] stands; a0 c2 is negated by B1.
    let s = letters("A B C");
    let q = "PATTERN SEQ(A? a, NOT B n, C c) WHERE skip-till-any-match";
    assert_eq!(rows(q, &s), ["a[] c[2]"]);
}

#[test]
fn trailing_not_quiet_period() {
    // SEQ(A a, NOT B n WITHIN 5) [k]: k1 a@0: C@2 is no B: final at 5.
    // k2 a@1: B@3 <= 6 negates. k1 a@10: nothing until 15: final at 15.
    let s = letters("A@0#1 A@1#2 C@2#1 B@3#2 A@10#1");
    let q = "PATTERN SEQ(A a, NOT B n WITHIN 5) WHERE [k]";
    assert_eq!(full(q, &s), ["1 0..5 a[0]", "1 10..15 a[4]"]);
    // An event with the same ts that comes after the last one counts.
    let s = letters("A@0 B@0 A@1");
    assert_eq!(full("PATTERN SEQ(A a, NOT B n WITHIN 0)", &s), ["null 1..1 a[2]"]);
    // The NOT's conjunct names a positive variable.
    let s = letters("A.1 B.2 A.2 C@9");
    let q = "PATTERN SEQ(A a, NOT B n WITHIN 2) WHERE n.x = a.x";
    // a0 (x 1): B.2 differs: final at 2. a2 (x 2): no B after: final at 4.
    assert_eq!(full(q, &s), ["null 0..2 a[0]", "null 2..4 a[2]"]);
}

#[test]
fn trailing_not_deadlines_order_across_partitions() {
    // Matches with a trailing NOT are final at their deadline (end): k1 a@0
    // at 3; k2 a@2 (row 1) and k1 a@2 (row 2) both at 5: same deadline and
    // start, so by rows across partitions: row 1 before row 2.
    let s = letters("A@0#1 A@2#2 A@2#1");
    let q = "PATTERN SEQ(A a, NOT B n WITHIN 3) WHERE skip-till-any-match AND [k]";
    assert_eq!(full(q, &s), ["1 0..3 a[0]", "2 2..5 a[1]", "1 2..5 a[2]"]);
}

// ---------------------------------------------------------------------------
// Windows

#[test]
fn windows() {
    // WITHIN 2 EVENTS: positions differ by at most 2. a0 b3: 3; a4 b5: 1.
    let s = letters("A C C B A B");
    assert_eq!(rows("PATTERN SEQ(A a, B b) WHERE skip-till-any-match WITHIN 2 EVENTS", &s), ["a[4] b[5]"]);
    // (Positions count within the partition: testdata/event_window_partition.case.)
    // WITHIN 3 (time): b@3 fits, b@4 does not.
    let s = letters("A@0 B@3 B@4");
    assert_eq!(rows("PATTERN SEQ(A a, B b) WHERE skip-till-any-match WITHIN 3", &s), ["a[0] b[1]"]);
    // WITHIN 3 ms with a unit is the same.
    assert_eq!(rows("PATTERN SEQ(A a, B b) WHERE skip-till-any-match WITHIN 3 ms", &s), ["a[0] b[1]"]);
    // An element window: c within 1 of b. c@2 fits, c@3 does not.
    let s = letters("A@0 B@1 C@2 C@3");
    assert_eq!(rows("PATTERN SEQ(A a, B b, C c WITHIN 1) WHERE skip-till-any-match", &s), ["a[0] b[1] c[2]"]);
    // An element window in events on the first element has no effect.
    assert_eq!(
        rows("PATTERN SEQ(A a WITHIN 0 EVENTS, B b, C c WITHIN 1 EVENTS) WHERE skip-till-any-match", &s),
        ["a[0] b[1] c[2]"]
    );
    // A Kleene statement window: b's run is cut at ts 0 + 2.
    let s = letters("B B B B");
    assert_eq!(
        rows("PATTERN B+ b WITHIN 2", &s),
        ["b[0]", "b[0,1]", "b[1]", "b[0,1,2]", "b[1,2]", "b[2]", "b[1,2,3]", "b[2,3]", "b[3]"]
    );
}

// ---------------------------------------------------------------------------
// Expressions

#[test]
fn prev_reads_the_partition_whatever_the_type() {
    // a.x > PREV(a.x, 2): row 2 (x 3) vs row 0 (x 1): yes; row 3 (x 2) vs
    // row 1 (a C, x 5): no; row 0: no PREV (NULL, false).
    let s = letters("A.1 C.5 A.3 A.2");
    assert_eq!(rows("PATTERN A a WHERE a.x > PREV(a.x, 2)", &s), ["a[2]"]);
    // With [k], PREV stays in the partition.
    let s = letters("A.1#1 A.9#2 A.2#1");
    assert_eq!(full("PATTERN A a WHERE [k] AND a.x > PREV(a.x)", &s), ["1 2..2 a[2]"]);
}

#[test]
fn two_valued_logic_and_null_arithmetic() {
    // x: 1, 5, missing. `a.x > 2`: row 1. `NOT a.x > 2`: rows 0 and 2 (NULL
    // comparison false, its NOT true).
    let s = letters("A.1 A.5 A.-");
    assert_eq!(rows("PATTERN A a WHERE a.x > 2", &s), ["a[1]"]);
    assert_eq!(rows("PATTERN A a WHERE NOT a.x > 2", &s), ["a[0]", "a[2]"]);
    // Division by zero is NULL: never equal, even to itself.
    assert_eq!(rows("PATTERN A a WHERE a.x / 0 = a.x / 0", &s), Vec::<String>::new());
    assert_eq!(rows("PATTERN A a WHERE a.x / 0 = 1 OR a.x = 5", &s), ["a[1]"]);
    // Int division truncates; with a float it is a float.
    let s = letters("A.3 A.-3 A.4");
    assert_eq!(rows("PATTERN A a WHERE a.x / 2 = 1", &s), ["a[0]"]);
    assert_eq!(rows("PATTERN A a WHERE a.x / 2 = -1", &s), ["a[1]"]);
    assert_eq!(rows("PATTERN A a WHERE a.x / 2.0 = 1.5", &s), ["a[0]"]);
    assert_eq!(rows("PATTERN A a WHERE a.x % 2 = -1", &s), ["a[1]"]);
    assert_eq!(rows("PATTERN A a WHERE abs(a.x) = 3", &s), ["a[0]", "a[1]"]);
    assert_eq!(rows("PATTERN A a WHERE -a.x < 0", &s), ["a[0]", "a[2]"]);
    // Overflow is NULL.
    assert_eq!(rows("PATTERN A a WHERE a.x * 9223372036854775807 > 0", &s), Vec::<String>::new());
    assert_eq!(rows("PATTERN A a WHERE NOT a.x * 9223372036854775807 > 0", &s).len(), 3);
    // A string never compares with a number.
    let s = Stream::new(&["name"]).ev("A", 0, &[Value::str("7")]);
    assert_eq!(rows("PATTERN A a WHERE a.name = 7", &s), Vec::<String>::new());
    assert_eq!(rows("PATTERN A a WHERE a.name = '7'", &s), ["a[0]"]);
}

#[test]
fn completion_condition_len() {
    // b.LEN >= 3 is a condition on the complete b: c3 is not relevant while
    // b has 2 events, so b continues with b5 after skipping c3 and a4.
    // From a0: b[1,2,5,6,7] c8. From a4: b[5,6,7] c8.
    let s = letters("A B B C A B B B C");
    let q = "PATTERN SEQ(A a, B+ b, C c) WHERE b.LEN >= 3";
    assert_eq!(rows(q, &s), ["a[0] b[1,2,5,6,7] c[8]", "a[4] b[5,6,7] c[8]"]);
}

#[test]
fn iteration_aggregates() {
    // b.x > avg(b.x) needs an earlier event: not checked for b's first.
    // rows 0 A, 1 B.1, 2 B.3, 3 B.2, 4 B.4, 5 C. From a0: b1; B2: 3 > 1
    // yes; B3: 2 > avg(1,3) = 2 no (not relevant); B4: 4 > 2 yes; C5:
    // sum(1,3,4) = 8 >= 6 holds, c.
    let s = letters("A B.1 B.3 B.2 B.4 C");
    let q = "PATTERN SEQ(A a, B+ b, C c) WHERE b.x > avg(b.x) AND sum(b.x) >= 6";
    assert_eq!(rows(q, &s), ["a[0] b[1,2,4] c[5]"]);
    // sum >= 9 fails when leaving b: no match.
    let q = "PATTERN SEQ(A a, B+ b, C c) WHERE b.x > avg(b.x) AND sum(b.x) >= 9";
    assert_eq!(rows(q, &s), Vec::<String>::new());
    // b[i].x > b[i-1].x with count: `b.x + count(b) > 2` is checked for the
    // first event with count 0: B.1 (1 + 0) cannot start b.
    let s = letters("B.1 B.3 B.4");
    assert_eq!(rows("PATTERN B+ b WHERE b.x + count(b) > 2", &s), ["b[1]", "b[1,2]", "b[2]"]);
}

#[test]
fn aggregates_in_later_elements() {
    // c.x = max(b.x) - min(b.x) over B.1 B.4 B.2 C.3 (any-match): {1,4} in
    // b[0,1] and b[0,1,2].
    let s = letters("B.1 B.4 B.2 C.3");
    let q = "PATTERN SEQ(B+ b, C c) WHERE skip-till-any-match AND c.x = max(b.x) - min(b.x)";
    assert_eq!(rows(q, &s), ["b[0,1] c[3]", "b[0,1,2] c[3]"]);
    // first + last = 3: b[0,2] and b[0,1,2].
    let q = "PATTERN SEQ(B+ b, C c) WHERE skip-till-any-match AND c.x = first(b.x) + last(b.x)";
    assert_eq!(rows(q, &s), ["b[0,1,2] c[3]", "b[0,2] c[3]"]);
    // sum skips NULLs; b[1] alone sums nothing (NULL).
    let s = letters("B.1 B.- B.2 C.3");
    let q = "PATTERN SEQ(B+ b, C c) WHERE skip-till-any-match AND c.x = sum(b.x)";
    assert_eq!(rows(q, &s), ["b[0,1,2] c[3]", "b[0,2] c[3]"]);
    // b.x in a later element is b's last event; b[1] its first; b.LEN.
    let s = letters("B.1 B.2 C.2 C.1 C.3");
    // From b0: B1 is more b, then C2 is a c (2 = 2). From b1: C2 too.
    assert_eq!(rows("PATTERN SEQ(B+ b, C c) WHERE c.x = b.x", &s), ["b[0,1] c[2]", "b[1] c[2]"]);
    // From b0: c.x must be 1 (b[1] = row 0): C2 is not relevant, C3 is.
    // From b1: c.x must be 2: C2.
    assert_eq!(rows("PATTERN SEQ(B+ b, C c) WHERE c.x = b[1].x", &s), ["b[1] c[2]", "b[0,1] c[3]"]);
    // From b0: LEN 2, c.x = 3: C4. From b1: LEN 1, c.x = 2: C2.
    assert_eq!(rows("PATTERN SEQ(B+ b, C c) WHERE c.x = b.LEN + 1", &s), ["b[1] c[2]", "b[0,1] c[4]"]);
}

#[test]
fn indexes_inside_own_conjuncts() {
    // b[i].x > b[i-1].x: increasing runs; any B starts one.
    let s = letters("B.1 B.2 B.1 B.3");
    let q = "PATTERN B+ b WHERE b[i].x > b[i-1].x";
    // next-match: from 0: B1 (2 > 1) taken; B2 (1 > 2 no, not relevant); B3
    // (3 > 2) taken. From 1: b2 is not relevant; b3 taken. From 2: b3.
    assert_eq!(rows(q, &s), ["b[0]", "b[0,1]", "b[1]", "b[2]", "b[0,1,3]", "b[1,3]", "b[2,3]", "b[3]"]);
    // `b[2].x = 2` reads no candidate field: a completion condition over the
    // complete b: at least 2 events, the second with x = 2. WITHIN 1 keeps
    // runs of at most 2 events: only b[0,1].
    let q = "PATTERN B+ b WHERE skip-till-any-match AND b[2].x = 2 WITHIN 1";
    assert_eq!(rows(q, &s), ["b[0,1]"]);
}

// ---------------------------------------------------------------------------
// Partitions

#[test]
fn several_keys_and_the_null_key() {
    // [k]: k1 a0 b2, k2 a1 b4, no k (NULL key) a3 b5. Adjacency is within
    // the partition, so strict-contiguity finds the same matches.
    let s = letters("A#1 A#2 B#1 A B#2 B");
    let want = ["1 0..2 a[0] b[2]", "2 1..4 a[1] b[4]", "null 3..5 a[3] b[5]"];
    assert_eq!(full("PATTERN SEQ(A a, B b) WHERE [k]", &s), want);
    assert_eq!(full("PATTERN SEQ(A a, B b) PARTITION BY k", &s), want);
    assert_eq!(full("PATTERN SEQ(A a, B b) WHERE strict-contiguity AND [k]", &s), want);
    // Without a partition: next-match from a0 takes b2 (a1 is no b).
    assert_eq!(
        full("PATTERN SEQ(A a, B b)", &s),
        ["null 0..2 a[0] b[2]", "null 1..2 a[1] b[2]", "null 3..4 a[3] b[4]"]
    );
}

// ---------------------------------------------------------------------------
// The generator

fn generated_cases_run(strategy: &'static str) {
    let mut runner = TestRunner::new(Config { cases: 200, failure_persistence: None, ..Config::default() });
    runner
        .run(&cep_testkit::arb::arb_case(strategy), |case| {
            let file = parse(&case.query)
                .map_err(|e| proptest::test_runner::TestCaseError::fail(format!("{}: {}", case.query, e.message)))?;
            assert_eq!(file.statements.len(), 1);
            let stmt = &file.statements[0];
            let found = reference::run(stmt, &case.events, &case.schema, TimeUnit::Millis);
            let positives = reference::positive_vars(stmt).len();
            for m in &found {
                assert_eq!(m.vars.len(), positives);
                assert!(m.vars.iter().any(|v| !v.is_empty()), "{}", case.query);
                assert!(m.start <= m.end);
            }
            // Deterministic.
            assert_eq!(found, reference::run(stmt, &case.events, &case.schema, TimeUnit::Millis));
            Ok(())
        })
        .unwrap();
}

#[test]
fn generated_cases_any_match() {
    generated_cases_run("skip-till-any-match");
}

#[test]
fn generated_cases_next_match() {
    generated_cases_run("skip-till-next-match");
}

#[test]
fn generated_cases_strict() {
    generated_cases_run("strict-contiguity");
}
