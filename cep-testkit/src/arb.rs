//! Random queries and streams for property tests against the reference
//! matcher ([`cep_nfa::reference`]).
//!
//! [`arb_case`] draws a small stream (0–14 events of types A, B, C and rarely
//! D, fields `k`, `x`, `y`) and a query for one strategy, built from a small
//! grammar that stays valid under LANGUAGE.md §2 and docs/semantics.md:
//! 1–4 positive elements with random quantifiers and type alternatives, at
//! most one middle `NOT`, sometimes a trailing `NOT … WITHIN d`, random
//! conjuncts (iteration conjuncts, completion conditions, aggregates, `PREV`,
//! negation conjuncts, NULL-producing arithmetic), statement and element
//! windows, partitioning, `SELECT` and `AFTER MATCH SKIP`.
//!
//! [`config`] is the property-test configuration every suite uses
//! (`CEP_PROPTEST_CASES`).
//!
//! # Examples
//! ```
//! use cep_testkit::arb::{arb_case, config};
//! use proptest::prelude::*;
//! use proptest::test_runner::TestRunner;
//! let mut runner = TestRunner::new(ProptestConfig { cases: 8, ..config() });
//! runner.run(&arb_case("skip-till-next-match"), |case| {
//!     prop_assert!(case.query.starts_with("PATTERN "));
//!     prop_assert!(case.events.windows(2).all(|w| w[0].ts <= w[1].ts));
//!     Ok(())
//! }).unwrap();
//! ```

use cep_core::{Event, Schema, Sym, Value};
use proptest::prelude::*;
use proptest::strategy::{BoxedStrategy, Union};

/// A query and a stream to run it on.
#[derive(Clone, Debug)]
pub struct Case {
    /// One statement, parseable and semantically valid.
    pub query: String,
    /// Events in processing order (`ts` non-decreasing), `row` = index.
    pub events: Vec<Event>,
    /// Fields `k`, `x`, `y` (ids 0, 1, 2); the events' types observed.
    pub schema: Schema,
}

/// A random case for `strategy`: `"skip-till-any-match"`,
/// `"skip-till-next-match"` or `"strict-contiguity"`.
pub fn arb_case(strategy: &'static str) -> impl Strategy<Value = Case> {
    (arb_query(strategy), arb_events()).prop_map(|(query, (events, schema))| Case { query, events, schema })
}

// ---------------------------------------------------------------------------
// Streams

/// One event before timestamps are summed: type, gap, k, x, y.
pub type EventSpec = (&'static str, i64, Option<i64>, Option<i64>, i64);

fn arb_type() -> impl Strategy<Value = &'static str> {
    prop_oneof![4 => Just("A"), 4 => Just("B"), 4 => Just("C"), 1 => Just("D")]
}

/// A stream of 0–14 events and its schema.
pub fn arb_events() -> impl Strategy<Value = (Vec<Event>, Schema)> {
    (1i64..=2)
        .prop_flat_map(|keys| {
            let k = prop_oneof![9 => (1..=keys).prop_map(Some), 1 => Just(None)];
            let x = prop_oneof![9 => (0i64..=5).prop_map(Some), 1 => Just(None)];
            let len = prop_oneof![1 => 0usize..=3, 4 => 4usize..=14];
            let event = (arb_type(), 0i64..=3, k, x, 0i64..=3).boxed();
            len.prop_flat_map(move |n| prop::collection::vec(event.clone(), n))
        })
        .prop_map(|specs: Vec<EventSpec>| build_events(&specs))
}

/// Builds the events and schema from specs (timestamps are running sums of
/// the gaps, starting at the first gap).
pub fn build_events(specs: &[EventSpec]) -> (Vec<Event>, Schema) {
    let mut schema = Schema::new();
    let fk = schema.field("k");
    let fx = schema.field("x");
    let fy = schema.field("y");
    assert_eq!((fk, fx, fy), (0, 1, 2));
    let mut ts = 0;
    let mut events = Vec::with_capacity(specs.len());
    for (row, &(ty, gap, k, x, y)) in specs.iter().enumerate() {
        ts += gap;
        let fields = vec![k.map_or(Value::Null, Value::Int), x.map_or(Value::Null, Value::Int), Value::Int(y)];
        schema.observe(Sym::new(ty), &fields);
        events.push(Event::new(Sym::new(ty), ts, row as u64, fields));
    }
    (events, schema)
}

// ---------------------------------------------------------------------------
// Queries

/// A pattern element before rendering.
#[derive(Clone, Debug)]
struct Elem {
    negated: bool,
    types: Vec<&'static str>,
    quant: &'static str,
    var: String,
    within: Option<String>,
}

impl Elem {
    fn kleene(&self) -> bool {
        self.quant == "+" || self.quant == "*"
    }

    fn render(&self, brackets: bool) -> String {
        let types =
            if self.types.len() == 1 { self.types[0].to_owned() } else { format!("({})", self.types.join("|")) };
        let mut s = String::new();
        if self.negated {
            s.push_str("NOT ");
        }
        s.push_str(&types);
        s.push_str(self.quant);
        s.push(' ');
        s.push_str(&self.var);
        if brackets && self.kleene() {
            s.push_str("[]");
        }
        if let Some(w) = &self.within {
            s.push_str(" WITHIN ");
            s.push_str(w);
        }
        s
    }
}

/// The shape of a pattern: elements in order, and whether it is written
/// without `SEQ` (a single positive element).
#[derive(Clone, Debug)]
struct Shape {
    elems: Vec<Elem>,
    bare: bool,
    brackets: bool,
}

fn arb_types() -> impl Strategy<Value = Vec<&'static str>> {
    prop_oneof![
        16 => arb_type().prop_map(|t| vec![t]),
        1 => Just(vec!["A", "B"]),
        1 => Just(vec!["B", "C"]),
        1 => Just(vec!["C", "A"]),
        1 => Just(vec!["A", "D"]),
    ]
}

fn arb_quant() -> impl Strategy<Value = &'static str> {
    prop_oneof![4 => Just(""), 2 => Just("+"), 2 => Just("*"), 2 => Just("?")]
}

/// A positive element's own window.
fn arb_elem_window() -> impl Strategy<Value = Option<String>> {
    prop_oneof![
        6 => Just(None),
        1 => (0i64..=8).prop_map(|n| Some(n.to_string())),
        1 => (0u64..=5).prop_map(|n| Some(format!("{n} EVENTS"))),
    ]
}

fn arb_shape() -> impl Strategy<Value = Shape> {
    (
        prop_oneof![2 => Just(1usize), 3 => Just(2), 3 => Just(3), 2 => Just(4)]
            .prop_flat_map(|n| prop::collection::vec((arb_types(), arb_quant(), arb_elem_window()), n)),
        prop::option::weighted(0.3, (arb_types(), any::<prop::sample::Index>())),
        prop::option::weighted(0.25, (arb_types(), 0i64..=6)),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(pos, middle, trailing, bare, brackets)| {
            let names = ["a", "b", "c", "d"];
            let mut elems: Vec<Elem> = pos
                .into_iter()
                .enumerate()
                .map(|(i, (types, quant, within))| Elem {
                    negated: false,
                    types,
                    quant,
                    var: names[i].to_owned(),
                    within,
                })
                .collect();
            let positives = elems.len();
            if let Some((types, at)) = middle
                && (2..4).contains(&positives)
            {
                // Between positive elements `at` and `at + 1` (1-based slot).
                let slot = 1 + at.index(positives - 1);
                elems.insert(slot, Elem { negated: true, types, quant: "", var: "n".to_owned(), within: None });
            }
            if let Some((types, d)) = trailing
                && elems.len() < 4
            {
                elems.push(Elem { negated: true, types, quant: "", var: "m".to_owned(), within: Some(d.to_string()) });
            }
            let bare = bare && elems.len() == 1;
            if bare {
                elems[0].within = None;
            }
            Shape { elems, bare, brackets }
        })
}

fn arb_cmp() -> impl Strategy<Value = &'static str> {
    prop_oneof![Just(">"), Just(">="), Just("<"), Just("<="), Just("="), Just("!=")]
}

/// `lhs OP c` with a random comparison and a constant 0–5.
fn cmp_const(lhs: String) -> BoxedStrategy<String> {
    (arb_cmp(), 0i64..=5).prop_map(move |(op, c)| format!("{lhs} {op} {c}")).boxed()
}

fn fixed(s: String) -> BoxedStrategy<String> {
    Just(s).boxed()
}

/// Every conjunct template that is valid for the shape.
fn arb_conjunct(shape: &Shape) -> BoxedStrategy<String> {
    let pos: Vec<(String, bool)> =
        shape.elems.iter().filter(|e| !e.negated).map(|e| (e.var.clone(), e.kleene())).collect();
    let nots: Vec<String> = shape.elems.iter().filter(|e| e.negated).map(|e| e.var.clone()).collect();
    let mut t: Vec<BoxedStrategy<String>> = Vec::new();
    for (i, (v, kleene)) in pos.iter().enumerate() {
        let v = v.clone();
        // Iteration conjuncts on the candidate.
        t.push(cmp_const(format!("{v}.x")));
        t.push(cmp_const(format!("{v}.y")));
        t.push(fixed(format!("{v}.x % 2 = 0")));
        t.push(fixed(format!("PREV({v}.x) <= {v}.x")));
        t.push(fixed(format!("PREV({v}.y, 2) = {v}.y")));
        t.push(fixed(format!("{v}.x * 9223372036854775807 > 0")));
        // Completion conditions (LEN and count are allowed on every variable).
        let w = v.clone();
        t.push((0i64..=3).prop_map(move |c| format!("{w}.LEN >= {c}")).boxed());
        let w = v.clone();
        t.push((0i64..=3).prop_map(move |c| format!("count({w}) <= {c}")).boxed());
        if *kleene {
            t.push(fixed(format!("{v}[i].x > {v}[i-1].x")));
            t.push(fixed(format!("{v}[i].y >= {v}[{v}.LEN].y")));
            t.push(fixed(format!("{v}.x > avg({v}.x)")));
            t.push(fixed(format!("{v}[1].x <= {v}.x")));
            let w = v.clone();
            t.push((0i64..=4).prop_map(move |c| format!("{w}.x + count({w}) > {c}")).boxed());
            let w = v.clone();
            t.push((0i64..=9).prop_map(move |c| format!("sum({w}.x) < {c}")).boxed());
            t.push(cmp_const(format!("min({v}.x)")));
            t.push(cmp_const(format!("max({v}.y)")));
            t.push(cmp_const(format!("{v}[2].y")));
            t.push(fixed(format!("last({v}.y) != first({v}.y)")));
            // Read only through the first event: decided when it binds.
            t.push(cmp_const(format!("{v}[1].x % 2")));
            t.push(cmp_const(format!("first({v}.y)")));
            let w = v.clone();
            t.push((2i64..=3).prop_map(move |c| format!("{w}.LEN >= {c}")).boxed());
        }
        for (u, ukleene) in &pos[..i] {
            t.push(fixed(format!("{v}.x >= {u}.x")));
            t.push(fixed(format!("{v}.y != {u}.y")));
            t.push(fixed(format!("NOT {v}.x = {u}.y")));
            t.push(fixed(format!("({u}.x = 1 OR {v}.y = 2)")));
            t.push(fixed(format!("{u}.x * 2 - 1 > {v}.y / 0")));
            t.push(fixed(format!("({v}.y / 0 > 1 OR {v}.x > {u}.x)")));
            let (uu, vv) = (u.clone(), v.clone());
            t.push((0i64..=3).prop_map(move |c| format!("abs({vv}.x - {uu}.x) <= {c}")).boxed());
            if *ukleene {
                t.push(fixed(format!("{v}.x < {u}[1].x")));
                t.push(fixed(format!("{v}.y >= {u}[{u}.LEN].y")));
                t.push(fixed(format!("sum({u}.x) > {v}.x")));
                t.push(fixed(format!("max({u}.x) >= {v}.x")));
                t.push(fixed(format!("{u}.LEN <= {v}.x")));
                t.push(fixed(format!("avg({u}.y) < {v}.y")));
                if *kleene {
                    t.push(fixed(format!("{v}[i].x >= {u}.x")));
                }
            }
        }
    }
    for n in &nots {
        t.push(cmp_const(format!("{n}.x")));
        t.push(fixed(format!("PREV({n}.x) = {n}.x")));
        for (u, ukleene) in &pos {
            t.push(fixed(format!("{n}.x = {u}.x")));
            t.push(fixed(format!("{n}.y > {u}.y")));
            if *ukleene {
                t.push(fixed(format!("{n}.x < sum({u}.x)")));
                t.push(fixed(format!("{n}.x = {u}[1].x")));
                t.push(fixed(format!("{n}.y = {u}.LEN")));
            }
        }
    }
    Union::new(t).boxed()
}

/// The statement's window.
fn arb_window(strategy: &'static str) -> impl Strategy<Value = Option<String>> {
    // Under skip-till-any-match an unbounded Kleene pattern has many matches:
    // give it a window more often.
    let p = if strategy == "skip-till-any-match" { 0.75 } else { 0.5 };
    prop::option::weighted(
        p,
        prop_oneof![
            3 => (0i64..=8).prop_map(|n| n.to_string()),
            1 => (0u64..=8).prop_map(|n| format!("{n} EVENTS")),
        ],
    )
}

/// How the strategy is written.
fn arb_strategy_text(strategy: &'static str) -> BoxedStrategy<Option<&'static str>> {
    match strategy {
        "skip-till-next-match" => prop_oneof![Just(Some(strategy)), Just(None)].boxed(),
        "strict-contiguity" => prop_oneof![Just(Some(strategy)), Just(Some("partition-contiguity"))].boxed(),
        _ => Just(Some(strategy)).boxed(),
    }
}

/// `SELECT` and `AFTER MATCH SKIP` (a skip other than NONE only with ALL).
fn arb_tail(vars: Vec<String>) -> BoxedStrategy<String> {
    let var = prop::sample::select(vars);
    prop_oneof![
        6 => Just(String::new()),
        1 => Just(" SELECT ALL".to_owned()),
        2 => Just(" SELECT EARLIEST".to_owned()),
        2 => Just(" SELECT LATEST".to_owned()),
        1 => Just(" SELECT EARLIEST AFTER MATCH SKIP NONE".to_owned()),
        1 => Just(" AFTER MATCH SKIP NONE".to_owned()),
        2 => Just(" AFTER MATCH SKIP TO NEXT EVENT".to_owned()),
        2 => Just(" SELECT ALL AFTER MATCH SKIP PAST LAST EVENT".to_owned()),
        2 => var.clone().prop_map(|v| format!(" AFTER MATCH SKIP TO FIRST {v}")),
        2 => var.prop_map(|v| format!(" AFTER MATCH SKIP TO LAST {v}")),
    ]
    .boxed()
}

/// A random, valid query for `strategy`.
pub fn arb_query(strategy: &'static str) -> impl Strategy<Value = String> {
    arb_shape().prop_flat_map(move |shape| {
        let vars: Vec<String> = shape.elems.iter().filter(|e| !e.negated).map(|e| e.var.clone()).collect();
        let conjunct = arb_conjunct(&shape);
        (
            Just(shape),
            prop_oneof![2 => Just(0usize), 3 => Just(1), 2 => Just(2), 1 => Just(3)]
                .prop_flat_map(move |n| prop::collection::vec(conjunct.clone(), n)),
            arb_strategy_text(strategy),
            arb_window(strategy),
            0u8..5,
            arb_tail(vars),
        )
            .prop_map(|(shape, conjuncts, strat, window, partition, tail)| {
                render(&shape, &conjuncts, strat, window, partition, &tail)
            })
    })
}

fn render(
    shape: &Shape,
    conjuncts: &[String],
    strategy: Option<&str>,
    window: Option<String>,
    partition: u8,
    tail: &str,
) -> String {
    let mut q = String::from("PATTERN ");
    if shape.bare {
        q.push_str(&shape.elems[0].render(shape.brackets));
    } else {
        let elems: Vec<String> = shape.elems.iter().map(|e| e.render(shape.brackets)).collect();
        q.push_str(&format!("SEQ({})", elems.join(", ")));
    }
    // partition: 0, 1 none; 2 `[k]`; 3 PARTITION BY k; 4 both.
    let mut wh: Vec<String> = Vec::new();
    if let Some(s) = strategy {
        wh.push(s.to_owned());
    }
    if partition == 2 || partition == 4 {
        wh.push("[k]".to_owned());
    }
    wh.extend(conjuncts.iter().cloned());
    if !wh.is_empty() {
        q.push_str(" WHERE ");
        q.push_str(&wh.join(" AND "));
    }
    if let Some(w) = window {
        q.push_str(" WITHIN ");
        q.push_str(&w);
    }
    if partition >= 3 {
        q.push_str(" PARTITION BY k");
    }
    q.push_str(tail);
    q
}

// ---------------------------------------------------------------------------
// EMIT

/// A random case for `strategy` whose query ends in `EMIT` items
/// (LANGUAGE.md §5): expressions over the positive variables read as in a
/// later element (fields, `ts`, `LEN`, `count`, aggregates, indexes,
/// arithmetic that may give NULL, comparisons), and `x.*` objects. Items
/// are named by `AS` or by their text, never two alike.
///
/// # Examples
/// ```
/// use cep_testkit::arb::{arb_emit_case, config};
/// use proptest::prelude::*;
/// use proptest::test_runner::TestRunner;
/// let mut runner = TestRunner::new(ProptestConfig { cases: 8, ..config() });
/// runner.run(&arb_emit_case("skip-till-any-match"), |case| {
///     prop_assert!(case.query.contains(" EMIT "));
///     Ok(())
/// }).unwrap();
/// ```
pub fn arb_emit_case(strategy: &'static str) -> impl Strategy<Value = Case> {
    (arb_emit_query(strategy), arb_events()).prop_map(|(query, (events, schema))| Case { query, events, schema })
}

/// A random, valid query for `strategy` with an `EMIT` clause.
pub fn arb_emit_query(strategy: &'static str) -> impl Strategy<Value = String> {
    arb_shape().prop_flat_map(move |shape| {
        let vars: Vec<String> = shape.elems.iter().filter(|e| !e.negated).map(|e| e.var.clone()).collect();
        let conjunct = arb_conjunct(&shape);
        let item = arb_emit_item(&shape);
        (
            Just(shape),
            prop_oneof![2 => Just(0usize), 3 => Just(1), 2 => Just(2)]
                .prop_flat_map(move |n| prop::collection::vec(conjunct.clone(), n)),
            arb_strategy_text(strategy),
            arb_window(strategy),
            0u8..5,
            arb_tail(vars),
            prop::collection::vec((item, any::<bool>()), 1..=5),
        )
            .prop_map(|(shape, conjuncts, strat, window, partition, tail, items)| {
                let mut q = render(&shape, &conjuncts, strat, window, partition, &tail);
                let mut names: Vec<String> = Vec::new();
                let mut rendered: Vec<String> = Vec::new();
                for (i, (text, alias)) in items.into_iter().enumerate() {
                    let name = match text.strip_suffix(".*") {
                        Some(v) => v.to_owned(),
                        None if alias => format!("e{i}"),
                        None => text.clone(),
                    };
                    if names.contains(&name) {
                        continue;
                    }
                    rendered.push(if alias && !text.ends_with(".*") { format!("{text} AS {name}") } else { text });
                    names.push(name);
                }
                q.push_str(" EMIT ");
                q.push_str(&rendered.join(", "));
                q
            })
    })
}

/// One item's text (without `AS`), valid for the shape.
fn arb_emit_item(shape: &Shape) -> BoxedStrategy<String> {
    let pos: Vec<(String, bool)> =
        shape.elems.iter().filter(|e| !e.negated).map(|e| (e.var.clone(), e.kleene())).collect();
    let mut t: Vec<BoxedStrategy<String>> = vec![fixed("1 + 2".to_owned())];
    for (i, (v, kleene)) in pos.iter().enumerate() {
        for item in [
            format!("{v}.*"),
            format!("{v}.x"),
            format!("{v}.y"),
            format!("{v}.ts"),
            format!("{v}.LEN"),
            format!("count({v})"),
            format!("{v}.x + {v}.y"),
            format!("{v}.x / 0"),
            format!("{v}.x * 9223372036854775807"),
            format!("{v}.x > 2"),
            format!("PREV({v}.x)"),
        ] {
            t.push(fixed(item));
        }
        if *kleene {
            for item in [
                format!("sum({v}.x)"),
                format!("avg({v}.y)"),
                format!("avg({v}.x)"),
                format!("min({v}.x)"),
                format!("max({v}.y)"),
                format!("first({v}.x)"),
                format!("last({v}.y)"),
                format!("{v}[1].x"),
                format!("{v}[2].y"),
                format!("{v}[{v}.LEN].x"),
                format!("sum({v}.y) - count({v})"),
            ] {
                t.push(fixed(item));
            }
        }
        for (u, _) in &pos[..i] {
            t.push(fixed(format!("{v}.x - {u}.x")));
            t.push(fixed(format!("{u}.y >= {v}.y")));
            t.push(fixed(format!("{v}.ts - {u}.ts")));
        }
    }
    Union::new(t).boxed()
}

/// The property-test configuration: `CEP_PROPTEST_CASES` cases (1,000 by
/// default), with room to shrink.
pub fn config() -> ProptestConfig {
    let cases = std::env::var("CEP_PROPTEST_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(1000);
    ProptestConfig { cases, max_shrink_iters: 2000, ..ProptestConfig::default() }
}
