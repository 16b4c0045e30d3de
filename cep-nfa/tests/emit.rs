//! `EMIT` (LANGUAGE.md §5, "What a match carries"): hand-computed cases,
//! each checked on the run engine and on the reference matcher, whose
//! values come from the bound events directly (not from registers), and
//! those that qualify on every construction of the stack engine; and
//! snapshots taken while events named by `x.*` are kept.
//!
//! Expected lines are written by hand from the contract: an expression
//! item reads the final match as a later element does (`b.f` is `b`'s last
//! event, `b[k].f` its k-th, aggregates cover all of `b`), `x.*` is the
//! event object (`type`, `ts`, then the non-NULL fields in schema order),
//! an array for a Kleene variable, null for an absent `?`.

use cep_core::{Event, Match, TimeUnit, Value};
use cep_nfa::compile::{Options, compile};
use cep_nfa::engine::Engine;
use cep_nfa::program::Program;
use cep_nfa::reference;
use cep_nfa::select::{EngineChoice, QueryEngine};
use cep_nfa::stack::{Construction, StackEngine};
use cep_nfa::syntax::parse;

use cep_testkit::Stream;

/// A match's line without its id (`…,"id":"…"}` cut off, `}` put back).
fn line(m: &Match, prog: &Program<Event>) -> String {
    let names: Vec<&str> = prog.emit.iter().map(|i| i.name.as_str()).collect();
    let mut out = Vec::new();
    m.write_json_emit(&mut out, &prog.name, &prog.var_names(), &names);
    let s = String::from_utf8(out).unwrap();
    let cut = s.find(",\"id\":").expect("an id");
    format!("{}}}", &s[..cut])
}

fn program(query: &str, s: &mut Stream) -> Program<Event> {
    compile(query, &mut s.schema, &Options::default()).unwrap().programs.remove(0)
}

/// The run engine's lines.
fn engine_lines(query: &str, s: &mut Stream) -> Vec<String> {
    let prog = program(query, s);
    let view = program(query, s);
    let mut engine = Engine::new(prog);
    let mut out = Vec::new();
    for e in &s.events {
        engine.push(e).unwrap();
        out.extend(engine.drain().map(|m| line(&m, &view)));
    }
    engine.finish();
    out.extend(engine.drain().map(|m| line(&m, &view)));
    out
}

/// The reference matcher's lines.
fn reference_lines(query: &str, s: &mut Stream) -> Vec<String> {
    let view = program(query, s);
    let file = parse(query).unwrap();
    reference::run(&file.statements[0], &s.events, &s.schema, TimeUnit::default())
        .iter()
        .map(|m| line(&cep_testkit::drive::from_ref(m), &view))
        .collect()
}

/// Both the run engine and the reference give exactly `want`.
fn check(query: &str, mut s: Stream, want: &[&str]) {
    let got = engine_lines(query, &mut s);
    assert_eq!(got, want, "run engine, query:\n{query}");
    let got = reference_lines(query, &mut s);
    assert_eq!(got, want, "reference, query:\n{query}");
}

fn int(i: i64) -> Value {
    Value::Int(i)
}

/// LANGUAGE.md §5's example, a single-event variable and `s.*`.
#[test]
fn single_variables_and_an_event_object() {
    let s = Stream::new(&["key", "price", "vol"])
        .ev("Tick", 0, &[int(1), int(10000), int(10)])
        .ev("Tick", 1000, &[int(1), int(10250), int(10)])
        .ev("Tick", 21000, &[int(1), int(10260), int(5000)]);
    check(
        "PATTERN SEQ(Tick a, Tick s) WHERE a.price > 10100 AND s.vol >= 1000 EMIT a.price AS entry, s.*",
        s,
        &[
            r#"{"query":"q1","key":null,"start":1000,"end":21000,"vars":{"a":[1],"s":[2]},"emit":{"entry":10250,"s":{"type":"Tick","ts":21000,"key":1,"price":10260,"vol":5000}}}"#,
        ],
    );
}

/// Every way of reading a Kleene variable after it: aggregates, `LEN`,
/// `b[1]`, `b[2]` (NULL when `b` has one event), `b.f` (the last), and
/// names taken from the text as written.
#[test]
fn kleene_variable_read_as_in_a_later_element() {
    // Prices 10 12 11 15 9 under strict contiguity: a=0 b=[1,2,3] c=4 and
    // a=2 b=[3] c=4, both final at row 4, in order of start.
    let mut s = Stream::new(&["price"]);
    for (i, p) in [10, 12, 11, 15, 9].into_iter().enumerate() {
        s = s.ev("Stock", i as i64 * 10, &[int(p)]);
    }
    let q = "PATTERN SEQ(Stock a, Stock+ b[], Stock c) \
             WHERE strict-contiguity AND b[i].price > a.price AND c.price < a.price \
             EMIT max(b.price), min(b.price) AS lo, sum(b.price) AS s, avg(b.price) AS m, \
                  first(b.price) AS f, last(b.price) AS l, b.LEN AS len, b[1].price AS b1, \
                  b.price AS bl, b[b.LEN].price AS bn, b[2].price AS b2, count(b) AS n, b.LEN *  2 , \
                  c.price - a.price AS drop";
    check(
        q,
        s,
        &[
            r#"{"query":"q1","key":null,"start":0,"end":40,"vars":{"a":[0],"b":[1,2,3],"c":[4]},"emit":{"max(b.price)":15,"lo":11,"s":38,"m":12.666666666666666,"f":12,"l":15,"len":3,"b1":12,"bl":15,"bn":15,"b2":11,"n":3,"b.LEN *  2":6,"drop":-1}}"#,
            r#"{"query":"q1","key":null,"start":20,"end":40,"vars":{"a":[2],"b":[3],"c":[4]},"emit":{"max(b.price)":15,"lo":15,"s":15,"m":15.0,"f":15,"l":15,"len":1,"b1":15,"bl":15,"bn":15,"b2":null,"n":1,"b.LEN *  2":2,"drop":-2}}"#,
        ],
    );
}

/// An absent `?` reads as NULL and its `x.*` is null; an empty `*` has
/// count 0, NULL aggregates and `[]`; a Kleene `x.*` is an array of
/// objects, each with only its non-NULL fields.
#[test]
fn absent_optional_empty_star_and_arrays() {
    let s = Stream::new(&["x", "y"])
        .ev("A", 0, &[int(1)])
        .ev("D", 1, &[int(4)])
        .ev("A", 2, &[int(1)])
        .ev("B", 3, &[int(2), Value::str("u")])
        .ev("C", 4, &[int(3)])
        .ev("C", 5, &[int(5), Value::Bool(true)])
        .ev("D", 6, &[int(6)]);
    let q = "PATTERN SEQ(A a, B? o, C* c[], D d) WHERE strict-contiguity \
             EMIT o.x AS ox, o.*, c.*, count(c) AS nc, sum(c.x) AS sc, c.x AS cx, d.*";
    check(
        q,
        s,
        &[
            r#"{"query":"q1","key":null,"start":0,"end":1,"vars":{"a":[0],"o":[],"c":[],"d":[1]},"emit":{"ox":null,"o":null,"c":[],"nc":0,"sc":null,"cx":null,"d":{"type":"D","ts":1,"x":4}}}"#,
            r#"{"query":"q1","key":null,"start":2,"end":6,"vars":{"a":[2],"o":[3],"c":[4,5],"d":[6]},"emit":{"ox":2,"o":{"type":"B","ts":3,"x":2,"y":"u"},"c":[{"type":"C","ts":4,"x":3},{"type":"C","ts":5,"x":5,"y":true}],"nc":2,"sc":8,"cx":5,"d":{"type":"D","ts":6,"x":6}}}"#,
        ],
    );
}

/// With a trailing `NOT`, the values are those of the match that becomes
/// final when the quiet period ends; a killed match carries none.
#[test]
fn trailing_not_emits_at_final() {
    // a=0 with b=[1] (end 11) and b=[1,2] (end 12) wait out their quiet
    // periods (both end before the C at ts 13, which fires them first);
    // a=3 b=[4] (end 14) is killed by that C.
    let s = Stream::new(&["x"])
        .ev("A", 0, &[int(0)])
        .ev("B", 1, &[int(5)])
        .ev("B", 2, &[int(7)])
        .ev("A", 3, &[int(0)])
        .ev("B", 4, &[int(9)])
        .ev("C", 13, &[]);
    let q = "PATTERN SEQ(A a, B+ b[], NOT C n WITHIN 10) WHERE strict-contiguity \
             EMIT last(b.x) AS lx, b.*, a.ts";
    check(
        q,
        s,
        &[
            r#"{"query":"q1","key":null,"start":0,"end":11,"vars":{"a":[0],"b":[1]},"emit":{"lx":5,"b":[{"type":"B","ts":1,"x":5}],"a.ts":0}}"#,
            r#"{"query":"q1","key":null,"start":0,"end":12,"vars":{"a":[0],"b":[1,2]},"emit":{"lx":7,"b":[{"type":"B","ts":1,"x":5},{"type":"B","ts":2,"x":7}],"a.ts":0}}"#,
        ],
    );
}

/// `SELECT EARLIEST` keeps one match per last event; its values are its
/// own, not those of a match it beat.
#[test]
fn select_earliest_keeps_the_values_of_the_kept_match() {
    let s = Stream::new(&["x"]).ev("A", 0, &[int(1)]).ev("A", 1, &[int(3)]).ev("B", 2, &[int(10)]);
    check(
        "PATTERN SEQ(A a, B b) WHERE skip-till-any-match SELECT EARLIEST EMIT a.x AS ax, b.x - a.x AS d",
        s,
        &[r#"{"query":"q1","key":null,"start":0,"end":2,"vars":{"a":[0],"b":[2]},"emit":{"ax":1,"d":9}}"#],
    );
}

/// Partitions: each match reads its own key's events.
#[test]
fn partitioned_matches_read_their_own_events() {
    let s = Stream::new(&["k", "x"])
        .ev("A", 0, &[int(1), int(10)])
        .ev("A", 1, &[int(2), int(20)])
        .ev("B", 2, &[int(2), int(21)])
        .ev("B", 3, &[int(1), int(11)]);
    check(
        "PATTERN SEQ(A a, B b) PARTITION BY k EMIT b.x - a.x AS d, a.*",
        s,
        &[
            r#"{"query":"q1","key":2,"start":1,"end":2,"vars":{"a":[1],"b":[2]},"emit":{"d":1,"a":{"type":"A","ts":1,"k":2,"x":20}}}"#,
            r#"{"query":"q1","key":1,"start":0,"end":3,"vars":{"a":[0],"b":[3]},"emit":{"d":1,"a":{"type":"A","ts":0,"k":1,"x":10}}}"#,
        ],
    );
}

/// A query without `EMIT` writes the line it always wrote: no `emit` key.
#[test]
fn without_emit_no_key() {
    let mut s = Stream::new(&["x"]).ev("A", 0, &[int(1)]).ev("B", 1, &[int(2)]);
    let got = engine_lines("PATTERN SEQ(A a, B b)", &mut s);
    assert_eq!(got, [r#"{"query":"q1","key":null,"start":0,"end":1,"vars":{"a":[0],"b":[1]}}"#]);
}

/// `EMIT` changes neither which matches there are nor their ids.
#[test]
fn emit_keeps_matches_and_ids() {
    let mut s = Stream::new(&["x"]);
    for (i, ty) in ["A", "B", "A", "B", "B", "C"].into_iter().enumerate() {
        s = s.ev(ty, i as i64, &[int(i as i64)]);
    }
    let ids = |q: &str, s: &mut Stream| {
        let mut engine = Engine::new(program(q, s));
        for e in &s.events {
            engine.push(e).unwrap();
        }
        engine.finish();
        engine.drain().map(|m| (m.rows.clone(), m.id("q1"))).collect::<Vec<_>>()
    };
    let plain = ids("PATTERN SEQ(A a, B+ b[]) WHERE skip-till-any-match", &mut s);
    let with = ids("PATTERN SEQ(A a, B+ b[]) WHERE skip-till-any-match EMIT a.*, b.*, sum(b.x)", &mut s);
    assert!(plain.len() > 3);
    assert_eq!(plain, with);
}

/// The stack engine's lines, built by `how`: in the order it emits them
/// (per event and direct: the run engine's order; batch: sorted).
fn stack_lines(query: &str, s: &mut Stream, how: Construction) -> Vec<String> {
    let view = program(query, s);
    let mut engine = StackEngine::new(program(query, s), how).expect("the query qualifies");
    let mut out = Vec::new();
    for e in &s.events {
        engine.push(e).unwrap();
        out.extend(engine.drain().map(|m| line(&m, &view)));
    }
    engine.finish();
    out.extend(engine.drain().map(|m| line(&m, &view)));
    if how == Construction::Batch {
        out.sort();
    }
    out
}

/// The run engine, the reference and every construction of the stack
/// engine give exactly `want` (sorted for batches, whose matches come out
/// at batch boundaries).
fn check_stack(query: &str, mut s: Stream, want: &[&str]) {
    check(query, s.clone(), want);
    for how in [Construction::PerEvent, Construction::Direct, Construction::Batch] {
        let mut want: Vec<&str> = want.to_vec();
        if how == Construction::Batch {
            want.sort();
        }
        assert_eq!(stack_lines(query, &mut s, how), want, "stack engine, {how:?}, query:\n{query}");
    }
}

/// A query with `EMIT` that otherwise qualifies runs on the stack engine:
/// `Auto` picks it, and `cep check`'s plan still lists the items.
#[test]
fn emit_runs_on_the_stack_engine() {
    let mut s = Stream::new(&["x"]);
    let q = "PATTERN SEQ(A a, B b) WHERE skip-till-any-match WITHIN 9 EMIT a.x";
    let auto = QueryEngine::new(program(q, &mut s), EngineChoice::Auto, Construction::PerEvent).unwrap();
    assert_eq!(auto.kind().name(), "stack");
    let forced = QueryEngine::new(program(q, &mut s), EngineChoice::Stack, Construction::PerEvent).unwrap();
    assert_eq!(forced.kind().name(), "stack");
    let plan = cep_nfa::compile::plan::render(&program(q, &mut s));
    assert!(plan.contains("emit (values each match carries"), "{plan}");
    assert!(plan.contains("a.x: last a.x"), "{plan}");
}

/// On the stack engine: expressions over every variable (fields, `ts`,
/// arithmetic, comparisons, `count`, `LEN`, a NULL field)
/// and `x.*` objects, with conditions between variables (per event and
/// batch check them while building) and without (direct construction,
/// which computes registers only for `EMIT`), partitioned.
#[test]
fn stack_engine_values_and_objects() {
    let s = Stream::new(&["k", "x", "y"])
        .ev("A", 0, &[int(1), int(3), Value::str("p")])
        .ev("A", 1, &[int(2), int(5)])
        .ev("B", 2, &[int(1), int(4)])
        .ev("A", 3, &[int(1), int(1)])
        .ev("C", 4, &[int(1), int(9)])
        .ev("C", 5, &[int(2), int(2)]);
    let items = " EMIT c.x - a.x AS d, b.ts, a.*, c.*, count(b) AS n, a.LEN, a.y AS m, b.x > a.x AS up";
    let plain = format!("PATTERN SEQ(A a, B b, C c) WHERE skip-till-any-match PARTITION BY k{items}");
    let first = r#"{"query":"q1","key":1,"start":0,"end":4,"vars":{"a":[0],"b":[2],"c":[4]},"emit":{"d":6,"b.ts":2,"a":{"type":"A","ts":0,"k":1,"x":3,"y":"p"},"c":{"type":"C","ts":4,"k":1,"x":9},"n":1,"a.LEN":1,"m":"p","up":true}}"#;
    check_stack(&plain, s.clone(), &[first]);
    // Key 2 gets a B between two As and a C: two more matches, each with
    // its own `a`; the condition between `b` and `c` holds for all three.
    let s = s.ev("A", 6, &[int(2), int(0)]).ev("B", 7, &[int(2), int(1)]).ev("C", 8, &[int(2), int(4)]);
    let want = [
        first,
        r#"{"query":"q1","key":2,"start":1,"end":8,"vars":{"a":[1],"b":[7],"c":[8]},"emit":{"d":-1,"b.ts":7,"a":{"type":"A","ts":1,"k":2,"x":5},"c":{"type":"C","ts":8,"k":2,"x":4},"n":1,"a.LEN":1,"m":null,"up":false}}"#,
        r#"{"query":"q1","key":2,"start":6,"end":8,"vars":{"a":[6],"b":[7],"c":[8]},"emit":{"d":4,"b.ts":7,"a":{"type":"A","ts":6,"k":2,"x":0},"c":{"type":"C","ts":8,"k":2,"x":4},"n":1,"a.LEN":1,"m":null,"up":true}}"#,
    ];
    check_stack(&plain, s.clone(), &want);
    let linked = format!("PATTERN SEQ(A a, B b, C c) WHERE skip-till-any-match AND c.x >= b.x PARTITION BY k{items}");
    check_stack(&linked, s, &want);
}

/// A pattern of one element: its match's registers and object.
#[test]
fn stack_engine_single_element() {
    let s = Stream::new(&["x"]).ev("A", 0, &[int(2)]).ev("B", 1, &[int(3)]).ev("A", 2, &[int(4)]);
    check_stack(
        "PATTERN SEQ(A a) WHERE skip-till-any-match EMIT a.x * 10 AS t, a.*",
        s,
        &[
            r#"{"query":"q1","key":null,"start":0,"end":0,"vars":{"a":[0]},"emit":{"t":20,"a":{"type":"A","ts":0,"x":2}}}"#,
            r#"{"query":"q1","key":null,"start":2,"end":2,"vars":{"a":[2]},"emit":{"t":40,"a":{"type":"A","ts":2,"x":4}}}"#,
        ],
    );
}

/// The stack engine's state bound weighs the objects it keeps for `x.*`:
/// the same stream holds more bytes with `a.*` than with `a.x` alone.
#[test]
fn stack_engine_weighs_kept_objects() {
    let mut s = Stream::new(&["x", "y"]);
    for i in 0..50 {
        s = s.ev("A", i, &[int(i), Value::str("a rather long string value")]);
    }
    let bytes = |q: &str, s: &mut Stream| {
        let mut engine = StackEngine::new(program(q, s), Construction::PerEvent).unwrap();
        for e in &s.events {
            engine.push(e).unwrap();
        }
        engine.stats().state_bytes
    };
    let plain = bytes("PATTERN SEQ(A a, B b) WHERE skip-till-any-match EMIT a.x", &mut s);
    let objects = bytes("PATTERN SEQ(A a, B b) WHERE skip-till-any-match EMIT a.x, a.*", &mut s);
    assert!(objects > plain + 50 * 16, "{objects} vs {plain}");
}

/// A snapshot of the stack engine while entries keep their objects for
/// `x.*`, restored into a fresh engine through JSON, gives the lines of an
/// uninterrupted run, at every cut and in every construction.
#[test]
fn stack_snapshot_keeps_event_objects() {
    let s = Stream::new(&["x", "y"])
        .ev("A", 0, &[int(1)])
        .ev("C", 1, &[int(3), Value::str("p")])
        .ev("C", 2, &[int(5)])
        .ev("A", 3, &[int(7)])
        .ev("C", 4, &[int(4)])
        .ev("D", 5, &[int(6)])
        .ev("D", 12, &[int(8)]);
    let q = "PATTERN SEQ(A a, C c, D d) WHERE skip-till-any-match WITHIN 10 EMIT c.*, a.*, d.x - c.x AS g";
    let mut s = s;
    for how in [Construction::PerEvent, Construction::Direct, Construction::Batch] {
        let want = stack_lines(q, &mut s, how);
        assert_eq!(want.len(), 5, "{how:?}: {want:#?}");
        for cut in 1..s.events.len() {
            let view = program(q, &mut s);
            let mut first = StackEngine::new(program(q, &mut s), how).unwrap();
            let mut got = Vec::new();
            for e in &s.events[..cut] {
                first.push(e).unwrap();
                got.extend(first.drain().map(|m| line(&m, &view)));
            }
            let text = serde_json::to_string(&first.snapshot()).unwrap();
            drop(first);
            let mut second = StackEngine::new(program(q, &mut s), how).unwrap();
            second.restore(serde_json::from_str(&text).unwrap()).unwrap();
            for e in &s.events[cut..] {
                second.push(e).unwrap();
                got.extend(second.drain().map(|m| line(&m, &view)));
            }
            second.finish();
            got.extend(second.drain().map(|m| line(&m, &view)));
            if how == Construction::Batch {
                got.sort();
            }
            assert_eq!(got, want, "{how:?}, cut at {cut}");
        }
        // A snapshot of the plain query does not fit the query with `x.*`:
        // its stacks keep no objects.
        let plain = "PATTERN SEQ(A a, C c, D d) WHERE skip-till-any-match WITHIN 10 EMIT d.x - c.x AS g";
        let mut other = StackEngine::new(program(plain, &mut s), how).unwrap();
        for e in &s.events[..4] {
            other.push(e).unwrap();
        }
        let mut fresh = StackEngine::new(program(q, &mut s), how).unwrap();
        assert!(fresh.restore(other.snapshot()).is_err(), "{how:?}");
    }
}

/// A snapshot taken while `c.*`'s events are half bound (their objects
/// beside the buffer's nodes), restored into a fresh engine through JSON,
/// gives the values of an uninterrupted run.
#[test]
fn snapshot_keeps_event_objects() {
    let s = Stream::new(&["x", "y"])
        .ev("A", 0, &[int(1)])
        .ev("C", 1, &[int(3), Value::str("p")])
        .ev("C", 2, &[int(5)])
        .ev("C", 3, &[int(7)])
        .ev("D", 4, &[int(6)]);
    let q = "PATTERN SEQ(A a, C* c[], D d) WHERE skip-till-any-match EMIT c.*, a.*, sum(c.x) AS sc";
    let mut s = s;
    let want = engine_lines(q, &mut s);
    assert_eq!(want.len(), 8, "{want:#?}");
    for cut in 1..s.events.len() {
        let view = program(q, &mut s);
        let mut first = Engine::new(program(q, &mut s));
        let mut got = Vec::new();
        for e in &s.events[..cut] {
            first.push(e).unwrap();
            got.extend(first.drain().map(|m| line(&m, &view)));
        }
        let snap = first.snapshot();
        let text = serde_json::to_string(&snap).unwrap();
        drop(first);
        let mut second = Engine::new(program(q, &mut s));
        second.restore(serde_json::from_str(&text).unwrap()).unwrap();
        for e in &s.events[cut..] {
            second.push(e).unwrap();
            got.extend(second.drain().map(|m| line(&m, &view)));
        }
        second.finish();
        got.extend(second.drain().map(|m| line(&m, &view)));
        assert_eq!(got, want, "cut at {cut}");
    }
}
