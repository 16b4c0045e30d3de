//! `avg` over ints whose sum overflows i64 (LANGUAGE.md §2: `avg` is a
//! float, so it is the average, not NULL), while `sum` stays NULL on
//! overflow, in every place an aggregate is read: a later element, a Kleene
//! variable's own iteration conjuncts (the events taken before the
//! candidate), a completion condition, and early and late negation
//! conditions. Each hand case is checked against the run engine and the
//! reference matcher; a property test runs random queries on streams of
//! huge values against the reference. Aggregates need a Kleene variable and
//! the stack engine takes single-event elements only, so the run engine is
//! the only one that evaluates them (checked here, so that a stack engine
//! that learns Kleene elements must also be checked here).

use cep_core::{Event, Schema, Sym, TimeUnit, Value};
use cep_nfa::compile::{Options, compile_file};
use cep_nfa::reference;
use cep_nfa::syntax::parse;
use cep_testkit::arb::{self, Case, arb_query};
use cep_testkit::drive;
use proptest::prelude::*;

const BIG: i64 = 5_000_000_000_000_000_000;

/// Events `(type, x)` with field `x`, ts = row.
fn stream(spec: &[(&str, i64)]) -> (Vec<Event>, Schema) {
    let mut schema = Schema::new();
    schema.field("x");
    let events = spec
        .iter()
        .enumerate()
        .map(|(row, &(ty, x))| {
            schema.observe(Sym::new(ty), &[Value::Int(x)]);
            Event::new(Sym::new(ty), row as i64, row as u64, vec![Value::Int(x)])
        })
        .collect();
    (events, schema)
}

/// The matches of `query` as `var[rows] …`, in emission order, from the run
/// engine; asserts that the reference matcher finds the same, in the same
/// order, and that the stack engine does not take the query.
fn rows(query: &str, (events, schema): &(Vec<Event>, Schema)) -> Vec<String> {
    let file = parse(query).unwrap_or_else(|d| panic!("{}", d.render(query, "q")));
    let mut schema = schema.clone();
    let prog = compile_file(&file, &mut schema, &Options::default())
        .unwrap_or_else(|d| panic!("{}", d.render(query, "q")))
        .programs
        .remove(0);
    assert!(cep_nfa::stack::qualifies(&prog).is_err(), "{query}: the stack engine takes it: check it here too");
    let names: Vec<String> = prog.elements.iter().map(|e| e.var.clone()).collect();
    let got = drive::run_engine(prog, events).unwrap();
    let want = reference::run(&file.statements[0], events, &schema, TimeUnit::Millis);
    assert_eq!(got, want, "{query}: run engine vs reference");
    got.iter()
        .map(|m| {
            let vars: Vec<String> = names.iter().zip(&m.vars).map(|(n, r)| format!("{n}{r:?}")).collect();
            vars.join(" ")
        })
        .collect()
}

#[test]
fn later_element_reads_avg_past_an_overflowing_sum() {
    // The README's repro. From a0, A1 is relevant (more a), so a = [0, 1]:
    // avg 5e18 > 1, b2 binds. From a1: a = [1], avg 5e18. Both end at row 2,
    // in order of start. With avg NULL on overflow only a[1] b[2] came out.
    let s = stream(&[("A", BIG), ("A", BIG), ("B", 1)]);
    let q = "PATTERN SEQ(A+ a[], B b) WHERE b.x < avg(a.x)";
    assert_eq!(rows(q, &s), ["a[0, 1] b[2]", "a[1] b[2]"]);
    let q = "PATTERN SEQ(A+ a[], B b) WHERE skip-till-any-match AND b.x < avg(a.x)";
    assert_eq!(rows(q, &s), ["a[0] b[2]", "a[0, 1] b[2]", "a[1] b[2]"]);
    // Negative: avg(i64::MIN, i64::MIN) is -2^63 exactly.
    let s = stream(&[("A", i64::MIN), ("A", i64::MIN), ("B", 0)]);
    let q = "PATTERN SEQ(A+ a[], B b) WHERE avg(a.x) = -9223372036854775808.0 AND b.x > avg(a.x)";
    assert_eq!(rows(q, &s), ["a[0, 1] b[2]", "a[1] b[2]"]);
}

#[test]
fn iteration_condition_reads_avg_of_the_events_before_the_candidate() {
    // a[i].x > avg(a.x): avg over the events taken before the candidate (not
    // checked for a's first event, so every A starts a). From a0: A1 6e18 >
    // 5e18; A2 7e18 > avg(5e18, 6e18) = 5.5e18 although 11e18 overflows
    // i64: a = [0, 1, 2]. From a1: a = [1, 2]; from a2: a = [2].
    // In the same query sum stays NULL on overflow: `NOT sum(a.x) > 0` (a
    // condition on the complete a) holds exactly when the sum overflowed (a
    // comparison with NULL is false), so a[2] alone (sum 7e18) cannot end.
    let s = stream(&[("A", BIG), ("A", BIG + BIG / 5), ("A", BIG + 2 * (BIG / 5)), ("B", 0)]);
    let q = "PATTERN SEQ(A+ a[], B b) WHERE a[i].x > avg(a.x) AND b.x < avg(a.x) AND NOT sum(a.x) > 0";
    assert_eq!(rows(q, &s), ["a[0, 1, 2] b[3]", "a[1, 2] b[3]"]);
    // Without the sum conjunct a[2] b[3] matches too.
    let q = "PATTERN SEQ(A+ a[], B b) WHERE a[i].x > avg(a.x)";
    assert_eq!(rows(q, &s), ["a[0, 1, 2] b[3]", "a[1, 2] b[3]", "a[2] b[3]"]);
    // sum and avg of the same field, both in a's iteration conjuncts (the
    // events before the candidate): from a0, A2 sees avg 5.5e18 but sum
    // NULL, so it is not taken (nor relevant): a = [0, 1], and B3 ends it.
    // From a1, A2 sees sum 6e18 < 7e18 + 1.
    let q = "PATTERN SEQ(A+ a[], B b) WHERE a[i].x > avg(a.x) AND sum(a.x) < a[i].x + 1";
    assert_eq!(rows(q, &s), ["a[0, 1] b[3]", "a[1, 2] b[3]", "a[2] b[3]"]);
}

#[test]
fn completion_condition_reads_avg_of_the_whole_variable() {
    // avg(a.x) >= 5.5e18 reads no candidate field: a condition on the
    // complete a, checked when b binds. a = [0, 1, 2] (avg 6e18) and [1, 2]
    // (6.5e18) pass, [2] (7e18) too.
    let s = stream(&[("A", BIG), ("A", BIG + BIG / 5), ("A", BIG + 2 * (BIG / 5)), ("B", 0)]);
    let q = "PATTERN SEQ(A+ a[], B b) WHERE avg(a.x) >= 5500000000000000000.0";
    assert_eq!(rows(q, &s), ["a[0, 1, 2] b[3]", "a[1, 2] b[3]", "a[2] b[3]"]);
    // sum(a.x) is NULL for the first two: only a[2] b[3].
    let q = "PATTERN SEQ(A+ a[], B b) WHERE avg(a.x) >= 5500000000000000000.0 AND sum(a.x) > 0";
    assert_eq!(rows(q, &s), ["a[2] b[3]"]);
}

#[test]
fn negations_read_avg_past_an_overflowing_sum() {
    // Early: n names a, bound before the NOT. C2 (x 1) lies between a's last
    // event and b and 1 < avg 5e18: every match is cut. With C2 at 6e18 (not
    // below the average) both come out.
    let q = "PATTERN SEQ(A+ a[], NOT C n, B b) WHERE n.x < avg(a.x)";
    let s = stream(&[("A", BIG), ("A", BIG), ("C", 1), ("B", 0)]);
    assert_eq!(rows(q, &s), Vec::<String>::new());
    let s = stream(&[("A", BIG), ("A", BIG), ("C", BIG + BIG / 5), ("B", 0)]);
    assert_eq!(rows(q, &s), ["a[0, 1] b[3]", "a[1] b[3]"]);
    // Late: b is bound after the NOT, so the condition sees all of b.
    let q = "PATTERN SEQ(A a, NOT C n, B+ b[], D d) WHERE n.x < avg(b.x)";
    let s = stream(&[("A", 0), ("C", 1), ("B", BIG), ("B", BIG), ("D", 0)]);
    assert_eq!(rows(q, &s), Vec::<String>::new());
    let s = stream(&[("A", 0), ("C", BIG + BIG / 5), ("B", BIG), ("B", BIG), ("D", 0)]);
    assert_eq!(rows(q, &s), ["a[0] b[2, 3] d[4]"]);
    // The same with sum: NULL on overflow, so the negation never holds.
    let q = "PATTERN SEQ(A a, NOT C n, B+ b[], D d) WHERE n.x < sum(b.x)";
    let s = stream(&[("A", 0), ("C", 1), ("B", BIG), ("B", BIG), ("D", 0)]);
    assert_eq!(rows(q, &s), ["a[0] b[2, 3] d[4]"]);
}

/// Streams like `arb::arb_events` but with x and y drawn from huge
/// values (and small ones), so that sums overflow often.
fn arb_big_events() -> impl Strategy<Value = (Vec<Event>, Schema)> {
    let big = prop_oneof![
        Just(i64::MAX),
        Just(i64::MIN),
        Just(i64::MAX - 1),
        Just(BIG),
        Just(-BIG),
        Just(3 * (i64::MAX / 4)),
        0i64..=5,
    ];
    let x = prop_oneof![9 => big.clone().prop_map(Some), 1 => Just(None)];
    let k = prop_oneof![9 => (1i64..=2).prop_map(Some), 1 => Just(None)];
    let ty = prop_oneof![4 => Just("A"), 4 => Just("B"), 4 => Just("C"), 1 => Just("D")];
    prop::collection::vec((ty, 0i64..=3, k, x, big), 0..=12).prop_map(|specs| arb::build_events(&specs))
}

fn check(case: &Case) -> Result<(), TestCaseError> {
    let file = parse(&case.query).map_err(|d| TestCaseError::fail(d.render(&case.query, "q")))?;
    let mut schema = case.schema.clone();
    let prog = compile_file(&file, &mut schema, &Options::default())
        .map_err(|d| TestCaseError::fail(d.render(&case.query, "q")))?
        .programs
        .remove(0);
    let got = drive::run_engine(prog, &case.events).map_err(TestCaseError::fail)?;
    let want = reference::run(&file.statements[0], &case.events, &case.schema, TimeUnit::Millis);
    prop_assert_eq!(got, want, "query: {}\nevents: {:?}", case.query, case.events);
    Ok(())
}

fn arb_big_case(strategy: &'static str) -> impl Strategy<Value = Case> {
    (arb_query(strategy), arb_big_events()).prop_map(|(query, (events, schema))| Case { query, events, schema })
}

proptest! {
    #![proptest_config(arb::config())]

    #[test]
    fn huge_values_any_match(case in arb_big_case("skip-till-any-match")) {
        check(&case)?;
    }

    #[test]
    fn huge_values_next_match(case in arb_big_case("skip-till-next-match")) {
        check(&case)?;
    }
}
