//! No query text panics the front end, and no compiled query panics the
//! engines ("no panics on user input; clear errors").
//!
//! - **Mutated queries**: the query of every `testdata/*.case` file, the
//!   examples of LANGUAGE.md, and random valid queries of the equivalence
//!   tests (`arb::arb_query`), with 1–6 random edits (a range deleted,
//!   duplicated or repeated up to 400 times, a token of the language or an
//!   awkward one inserted, a number replaced by an extreme one), are parsed
//!   and compiled against an open empty schema, a complete closed one and a
//!   partial one, in random time units. Every diagnostic must point inside
//!   the text, on character boundaries, and render to a one-line message
//!   (no control or invisible characters) with the source line and a caret;
//!   every compiled plan must render.
//! - **Token soup**: 20–60 random tokens of the same vocabulary, and
//!   identifiers, through the same checks.
//! - **Engines**: the same queries, mutated only by the edits that keep them
//!   compiling (each candidate going through the checks above), run
//!   on ~50 random events (types of the query and one more, ints up to
//!   `i64::MIN`/`i64::MAX`, huge and tiny floats, strings, bools, NULL,
//!   missing fields, timestamps from `i64::MIN` to `i64::MAX`, watermarks
//!   moved between events) on every engine that accepts them: the run
//!   engine one event at a time and in batches, the stack engine in its
//!   three constructions and in counting mode. Nothing may panic, and every
//!   engine's buffer is empty after `finish`. On the first ten events, with
//!   no bound on the state, the engines must agree with each other and with
//!   the reference matcher.

use cep_testkit::drive::{sorted, to_ref};
use cep_testkit::{arb, corpus};

use std::ops::ControlFlow;
use std::sync::OnceLock;

use cep_core::{Event, Schema, Sym, TimeUnit, Value};
use cep_nfa::compile::{Options, compile, compile_file, plan};
use cep_nfa::diag::Diagnostic;
use cep_nfa::engine::Engine;
use cep_nfa::program::Program;
use cep_nfa::reference::{self, RefMatch};
use cep_nfa::select::EngineChoice;
use cep_nfa::stack::{Construction, StackEngine, qualifies};
use cep_nfa::syntax::{ast, parse};
use cep_testkit::corpus::Case;
use proptest::prelude::*;
use proptest::sample::Index;

// ---------------------------------------------------------------------------
// Seeds and vocabulary

/// The examples of LANGUAGE.md (§7, and the forms of §2 the corpus lacks).
const LANGUAGE_EXAMPLES: &[&str] = &[
    corpus::RISE_SPIKE,
    "PATTERN SEQ(Stock+ a[], Stock b)
WHERE skip-till-next-match AND [symbol]
  AND a[i].price > a[i-1].price
  AND b.price < a[a.LEN].price
WITHIN 1 hour;",
    "PATTERN SEQ(A a, B b, D d) WHERE skip-till-any-match WITHIN 500;",
    "QUERY q PATTERN SEQ(A+ a[], (B | C)? b WITHIN 2 EVENTS, NOT D n, C* c[] WITHIN 5 min, NOT E m WITHIN 1.5 s)
WHERE partition-contiguity AND [k] AND a[i].x >= a[i-1].x AND count(a) <= 3 AND b.y = PREV(b.y, 2)
  AND n.x = a[1].x AND sum(c.x) > avg(a.x) - abs(-a.LEN) AND (min(c.y) < 0 OR max(c.y) % 2 <> 1)
  AND first(a.x) != last(a.x) AND NOT c[c.LEN].x / 0 > 1 AND m.s = 'it''s' AND c.flag = true
WITHIN 10 EVENTS PARTITION BY k SELECT ALL AFTER MATCH SKIP TO LAST a;
PATTERN A a AFTER MATCH SKIP PAST LAST ROW; PATTERN B b WHERE b.x = -9223372036854775808 AFTER MATCH SKIP TO NEXT EVENT",
];

/// Every keyword, strategy, unit, operator and punctuation mark of the
/// language, and awkward things: extreme numbers and durations, quotes,
/// comments, non-ASCII text, NUL, newline.
#[rustfmt::skip]
const VOCAB: &[&str] = &[
    "QUERY", "PATTERN", "SEQ", "NOT", "WHERE", "AND", "OR", "WITHIN", "PARTITION", "BY", "SELECT", "ALL",
    "EARLIEST", "LATEST", "AFTER", "MATCH", "SKIP", "NONE", "TO", "NEXT", "EVENT", "ROW", "PAST", "LAST",
    "FIRST", "EVENTS", "LEN", "PREV", "abs", "count", "sum", "avg", "min", "max", "first", "last", "TRUE",
    "false", "NULL", "i", "i-1", "skip-till-next-match", "skip-till-any-match", "strict-contiguity",
    "partition-contiguity", "ms", "s", "sec", "seconds", "min", "minutes", "h", "hours", "d", "days", "ns",
    "us", "=", "!=", "<>", "<", "<=", ">", ">=", "+", "-", "*", "/", "%", "?", "|", ".", "(", ")", "[", "]",
    ",", ";", "[]", "'", "\"", "''", "'x'", "\"é\"", "--", "-- comment\n", "0", "1", "2", "7", "1.5", ".5",
    "5.", "1e3", "1e", "99999999999999999999", "9223372036854775807", "9223372036854775808",
    "-9223372036854775808", "18446744073709551616", "1e999", "-1e999", "1e-999", "0.0000000000000000001",
    "5 ms", "0 s", "99999999999 h", "99999999999 d", "1.5 s", "1000 EVENTS", "0 EVENTS",
    "18446744073709551615 EVENTS", "PREV(a.x, 1024)", "PREV(a.x, 1025)", "a[0]", "a[4294967296].x",
    "a[a.LEN].x", "é", "💥", "\u{0}", "\n", "\r\n", "\t", "#", "$", "\\", "\u{a0}", "\u{feff}", "\u{200b}",
    "\u{202e}", "\u{7f}", "\u{1b}[31m", "'\u{0}\n'",
];

/// Names: variables, types and fields of the seeds, and a few more.
const IDENTS: &[&str] = &[
    "a", "b", "c", "d", "n", "m", "r", "s", "v", "x", "y", "k", "key", "price", "vol", "flag", "symbol", "ts", "type",
    "A", "B", "C", "D", "E", "Tick", "Stock", "Event", "q1", "_", "a1", "é", "LEN",
];

/// Numbers that replace a number of a query.
#[rustfmt::skip]
const NUMBERS: &[&str] = &[
    "0", "1", "00", "9223372036854775807", "9223372036854775808", "99999999999999999999",
    "-9223372036854775808", "4294967295", "4294967296", "1e999", "1e308", "0.5", "1.000000000000000000001",
    "99999999999 h", "99999999999 d", "106751 d", "0 s", "5 ms", "9223372036854775807 ns", "1024", "1025", "65",
];

fn seeds() -> &'static [String] {
    static SEEDS: OnceLock<Vec<String>> = OnceLock::new();
    SEEDS.get_or_init(|| {
        let mut out: Vec<String> = LANGUAGE_EXAMPLES.iter().map(|s| (*s).to_owned()).collect();
        for path in corpus::corpus_files() {
            let name = path.file_stem().and_then(|s| s.to_str()).unwrap_or("?").to_owned();
            let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let case = Case::parse(&name, &text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            out.push(case.query);
        }
        assert!(out.len() >= 20, "expected the corpus in {}", corpus::CORPUS);
        out
    })
}

// ---------------------------------------------------------------------------
// Edits

/// One random change to a query's text (positions in characters, so the
/// result is always a valid string).
#[derive(Clone, Debug)]
enum Edit {
    Delete {
        at: Index,
        len: usize,
    },
    Duplicate {
        from: Index,
        len: usize,
        to: Index,
    },
    /// A range copied many times in place (long operator chains, long lists).
    Repeat {
        from: Index,
        len: usize,
        times: usize,
    },
    Insert {
        at: Index,
        tok: &'static str,
        pad: u8,
    },
    Number {
        which: Index,
        with: &'static str,
    },
}

fn arb_token() -> impl Strategy<Value = &'static str> {
    prop_oneof![4 => prop::sample::select(VOCAB), 1 => prop::sample::select(IDENTS)]
}

fn arb_edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        2 => (any::<Index>(), 1usize..=12).prop_map(|(at, len)| Edit::Delete { at, len }),
        1 => (any::<Index>(), 1usize..=24, any::<Index>()).prop_map(|(from, len, to)| Edit::Duplicate { from, len, to }),
        1 => (any::<Index>(), 1usize..=12, 2usize..=400).prop_map(|(from, len, times)| Edit::Repeat { from, len, times }),
        3 => (any::<Index>(), arb_token(), 0u8..4).prop_map(|(at, tok, pad)| Edit::Insert { at, tok, pad }),
        2 => (any::<Index>(), prop::sample::select(NUMBERS)).prop_map(|(which, with)| Edit::Number { which, with }),
    ]
}

fn apply(src: &str, edit: &Edit) -> String {
    let mut chars: Vec<char> = src.chars().collect();
    let n = chars.len();
    match edit {
        Edit::Delete { at, len } => {
            if n > 0 {
                let start = at.index(n);
                chars.drain(start..(start + len).min(n));
            }
        }
        Edit::Duplicate { from, len, to } => {
            if n > 0 {
                let start = from.index(n);
                let piece: Vec<char> = chars[start..(start + len).min(n)].to_vec();
                let at = to.index(n + 1);
                chars.splice(at..at, piece);
            }
        }
        Edit::Repeat { from, len, times } => {
            if n > 0 {
                let start = from.index(n);
                let end = (start + len).min(n);
                let piece: Vec<char> = chars[start..end].to_vec();
                let copies: Vec<char> = (0..*times).flat_map(|_| piece.iter().copied()).collect();
                chars.splice(end..end, copies);
            }
        }
        Edit::Insert { at, tok, pad } => {
            let mut text = String::new();
            if pad & 1 != 0 {
                text.push(' ');
            }
            text.push_str(tok);
            if pad & 2 != 0 {
                text.push(' ');
            }
            let at = at.index(n + 1);
            chars.splice(at..at, text.chars());
        }
        Edit::Number { which, with } => {
            // The runs of ASCII digits.
            let mut runs = Vec::new();
            let mut i = 0;
            while i < n {
                if chars[i].is_ascii_digit() {
                    let start = i;
                    while i < n && chars[i].is_ascii_digit() {
                        i += 1;
                    }
                    runs.push((start, i));
                } else {
                    i += 1;
                }
            }
            if !runs.is_empty() {
                let (a, b) = runs[which.index(runs.len())];
                chars.splice(a..b, with.chars());
            }
        }
    }
    chars.into_iter().collect()
}

/// A seed with random edits.
fn arb_mutated() -> impl Strategy<Value = (String, Vec<Edit>)> {
    (any::<Index>(), prop::collection::vec(arb_edit(), 1..=6)).prop_map(|(seed, edits)| {
        let seeds = seeds();
        (seeds[seed.index(seeds.len())].clone(), edits)
    })
}

/// A seed or a random valid query of the equivalence tests (every
/// strategy, quantifier, negation, window, aggregate, `PREV`, `SELECT` and
/// skip), with random edits.
///
/// Boxed: unboxed, the strategy's value tree is a value so large that
/// building it overflowed a test thread's stack without optimisation.
fn arb_mutated_any() -> BoxedStrategy<(String, Vec<Edit>)> {
    let generated = prop_oneof![
        arb::arb_query("skip-till-any-match").boxed(),
        arb::arb_query("skip-till-next-match").boxed(),
        arb::arb_query("strict-contiguity").boxed(),
    ];
    prop_oneof![
        1 => arb_mutated().boxed(),
        1 => (generated, prop::collection::vec(arb_edit(), 1..=6)).boxed(),
    ]
    .boxed()
}

fn arb_unit() -> impl Strategy<Value = TimeUnit> {
    prop_oneof![
        4 => Just(TimeUnit::Millis),
        1 => Just(TimeUnit::Seconds),
        1 => Just(TimeUnit::Micros),
        1 => Just(TimeUnit::Nanos),
    ]
}

// ---------------------------------------------------------------------------
// Schemas

/// Registers the fields the seeds name and observes six types over them:
/// A, C and Tick with one mix of int, float, string, bool and missing
/// values, B, D and Stock with another.
fn observed(s: &mut Schema) {
    use Value::{Bool, Float, Int, Null};
    for f in ["x", "y", "s", "k", "key", "price", "vol", "flag", "symbol", "only_b"] {
        s.field(f);
    }
    let a = [Int(1), Float(0.5), Value::str("a"), Int(1), Int(1), Int(10), Int(5), Bool(true), Value::str("IBM"), Null];
    let b = [Float(2.5), Int(2), Value::str("b"), Int(2), Null, Float(1.5), Int(7), Bool(false), Null, Int(3)];
    for (ty, fields) in [("A", &a), ("B", &b), ("C", &a), ("D", &b), ("Tick", &a), ("Stock", &b)] {
        s.observe(Sym::new(ty), fields);
    }
}

/// An empty schema with an open field set (JSON lines before any row), a
/// complete closed one (a whole CSV file) and a partial one (a prefix of
/// JSON lines).
fn schemas() -> [Schema; 3] {
    let open = Schema::new();
    let mut closed = Schema::new();
    observed(&mut closed);
    closed.close_fields();
    closed.set_complete(true);
    let mut partial = Schema::new();
    observed(&mut partial);
    [open, closed, partial]
}

// ---------------------------------------------------------------------------
// The front end

/// A character a terminal does not show as itself: a control character, a
/// blank other than the space, an invisible format character.
fn hidden(c: char) -> bool {
    c.is_control()
        || (c.is_whitespace() && c != ' ')
        || matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{2064}' | '\u{feff}')
}

/// A diagnostic points inside `src`, on character boundaries, and renders
/// to a one-line message, the source line and a caret.
fn check_diag(src: &str, d: &Diagnostic) -> Result<(), TestCaseError> {
    let (start, end) = (d.span.start as usize, d.span.end as usize);
    prop_assert!(start <= end && end <= src.len(), "span {:?} outside the text ({} bytes): {}", d.span, src.len(), d);
    prop_assert!(src.is_char_boundary(start) && src.is_char_boundary(end), "span {:?} splits a character", d.span);
    prop_assert!(!d.message.trim().is_empty(), "empty message");
    prop_assert!(!d.message.chars().any(hidden), "a hidden character in the message {:?}", d.message);
    for note in &d.notes {
        prop_assert!(!note.trim().is_empty() && !note.chars().any(hidden), "bad note {:?}", note);
    }
    let text = d.render(src, "q.cep");
    let word = if d.is_error() { "error" } else { "warning" };
    prop_assert!(text.starts_with(&format!("{word}: q.cep:")), "{}", text);
    prop_assert!(text.contains(&d.message), "{}", text);
    prop_assert!(text.contains('^'), "{}", text);
    Ok(())
}

/// Parses and compiles `src` against every schema in `unit`; checks every
/// diagnostic and renders every plan. Returns whether it compiled against
/// the open schema.
fn check_front_end(src: &str, unit: TimeUnit) -> Result<bool, TestCaseError> {
    if let Err(d) = parse(src) {
        prop_assert!(d.is_error());
        check_diag(src, &d)?;
    }
    let mut compiled_open = false;
    for (i, schema) in schemas().into_iter().enumerate() {
        let mut schema = schema;
        match compile(src, &mut schema, &Options { time_unit: unit }) {
            Ok(c) => {
                compiled_open |= i == 0;
                prop_assert!(!c.programs.is_empty());
                for w in &c.warnings {
                    prop_assert!(!w.is_error(), "an error among the warnings: {}", w);
                    check_diag(src, w)?;
                }
                for p in &c.programs {
                    for choice in [EngineChoice::Auto, EngineChoice::Run, EngineChoice::Stack] {
                        prop_assert!(!plan::render_with(p, choice).is_empty());
                    }
                }
            }
            Err(ds) => {
                prop_assert!(ds.has_errors(), "compile failed without an error");
                for d in &ds.0 {
                    check_diag(src, d)?;
                }
                prop_assert!(!ds.render(src, "q.cep").is_empty());
            }
        }
    }
    Ok(compiled_open)
}

fn arb_soup() -> impl Strategy<Value = String> {
    let sep = prop_oneof![8 => Just(" "), 1 => Just(""), 1 => Just("\n")];
    (any::<bool>(), prop::collection::vec((arb_token(), sep), 20..=60)).prop_map(|(pattern, toks)| {
        let mut s = String::from(if pattern { "PATTERN " } else { "" });
        for (tok, sep) in toks {
            s.push_str(tok);
            s.push_str(sep);
        }
        s
    })
}

// ---------------------------------------------------------------------------
// The engines

/// A field value of a random event.
fn arb_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        3 => Just(Value::Null),
        4 => (-3i64..=3).prop_map(Value::Int),
        3 => prop::sample::select(vec![i64::MIN, i64::MIN + 1, -1, 0, 1, i64::MAX - 1, i64::MAX, 1 << 62, 1 << 53])
            .prop_map(Value::Int),
        2 => prop::sample::select(vec![
            0.0,
            -0.0,
            0.5,
            -2.5,
            1e308,
            -1e308,
            f64::MAX,
            f64::MIN,
            f64::MIN_POSITIVE,
            5e-324,
            9.3e18,
            -9.3e18,
            9_223_372_036_854_775_808.0,
        ])
        .prop_map(Value::Float),
        1 => prop::sample::select(vec!["", "a", "A", "é", "💥", "0"]).prop_map(Value::str),
        1 => any::<bool>().prop_map(Value::Bool),
    ]
}

/// One event before its type and timestamp are resolved: which type, the
/// gap to the previous event, the fields (perhaps fewer than the schema's),
/// and whether the watermark moves towards the next event afterwards.
#[derive(Clone, Debug)]
struct EventSpec {
    ty: Index,
    gap: i64,
    fields: Vec<Value>,
    advance: bool,
}

fn arb_events() -> impl Strategy<Value = (i64, Vec<EventSpec>)> {
    let start = prop::sample::select(vec![i64::MIN, i64::MIN + 1, -5, 0, 7, i64::MAX - 20, i64::MAX]);
    let gap = prop_oneof![
        3 => Just(0i64),
        3 => Just(1i64),
        2 => 2i64..=10,
        1 => Just(1000i64),
        1 => Just(1i64 << 40),
        1 => Just(i64::MAX),
    ];
    let event = (any::<Index>(), gap, prop::collection::vec(arb_value(), 0..=10), prop::bool::weighted(0.1))
        .prop_map(|(ty, gap, fields, advance)| EventSpec { ty, gap, fields, advance });
    (start, prop::collection::vec(event, 0..=50))
}

/// The event types a program names.
fn types_of(p: &Program<Event>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let all = p
        .elements
        .iter()
        .flat_map(|e| e.types.iter())
        .chain(p.negations.iter().flat_map(|n| n.types.iter()))
        .chain(p.trailing.iter().flat_map(|t| t.types.iter()));
    for t in all {
        if !out.contains(t) {
            out.push(t.clone());
        }
    }
    out
}

/// The events of `specs` for a program over `types` and `fields` fields,
/// and the watermarks to move to after each.
fn build_events(start: i64, specs: &[EventSpec], types: &[String], fields: usize) -> (Vec<Event>, Vec<Option<i64>>) {
    let mut types: Vec<Sym> = types.iter().map(|t| Sym::new(t)).collect();
    types.push(Sym::new("Other"));
    let mut ts = start;
    let mut events = Vec::with_capacity(specs.len());
    for (row, s) in specs.iter().enumerate() {
        ts = ts.saturating_add(s.gap);
        let mut values = s.fields.clone();
        values.truncate(fields);
        events.push(Event::new(types[s.ty.index(types.len())], ts, row as u64, values));
    }
    // A watermark between an event and the next one (up to the next one's
    // ts, so that it is not late), or `i64::MAX` after the last.
    let advances = specs
        .iter()
        .enumerate()
        .map(|(i, s)| {
            s.advance.then(|| {
                let ts = events[i].ts;
                events.get(i + 1).map_or(i64::MAX, |next| {
                    let mid = (i128::from(ts) + i128::from(next.ts)).div_euclid(2);
                    i64::try_from(mid).expect("between two i64")
                })
            })
        })
        .collect();
    (events, advances)
}

/// A bound on the state of the engines over the long stream, so that a
/// query whose matches grow exponentially stays cheap.
const CAP: usize = 16;
/// Matches taken per event from the stack engine's enumeration.
const PER_EVENT: usize = 256;

/// The run engine, one event at a time, with the watermarks moved; every
/// match formatted as `cep run` prints it.
fn run_engine(prog: Program<Event>, events: &[Event], wms: &[Option<i64>], cap: Option<usize>) -> Vec<RefMatch> {
    let names = prog.var_names().iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let name = prog.name.clone();
    let mut engine = Engine::new(prog);
    if let Some(c) = cap {
        engine.set_max_partials_per_key(c);
    }
    let mut out = Vec::new();
    let take = |engine: &mut Engine<Event>, out: &mut Vec<RefMatch>| {
        for m in engine.drain() {
            let mut line = Vec::new();
            m.write_json(&mut line, &name, &names);
            let line = String::from_utf8(line).expect("a line is UTF-8");
            assert!(line.ends_with("\"}"), "{line}");
            out.push(to_ref(m));
        }
    };
    for (e, wm) in events.iter().zip(wms) {
        engine.push(e).expect("events in ts order are never late");
        if let Some(wm) = wm {
            engine.advance(*wm);
        }
        take(&mut engine, &mut out);
    }
    engine.finish();
    take(&mut engine, &mut out);
    assert_eq!(engine.stats().nodes, 0, "buffer not empty after finish");
    out
}

/// The run engine, in batches of up to 8 events cut at the watermarks.
fn run_batched(prog: Program<Event>, events: &[Event], wms: &[Option<i64>], cap: Option<usize>) -> Vec<RefMatch> {
    let mut engine = Engine::new(prog);
    if let Some(c) = cap {
        engine.set_max_partials_per_key(c);
    }
    let mut out = Vec::new();
    let mut from = 0;
    for i in 0..events.len() {
        if wms[i].is_some() || i + 1 - from == 8 || i + 1 == events.len() {
            engine.push_batch(&events[from..=i]).expect("never late");
            if let Some(wm) = wms[i] {
                engine.advance(wm);
            }
            out.extend(engine.drain().map(to_ref));
            from = i + 1;
        }
    }
    engine.finish();
    out.extend(engine.drain().map(to_ref));
    assert_eq!(engine.stats().nodes, 0, "buffer not empty after finish");
    out
}

/// The stack engine; with a cap, at most [`PER_EVENT`] matches are taken
/// per event.
fn run_stack(
    prog: Program<Event>,
    how: Construction,
    events: &[Event],
    wms: &[Option<i64>],
    cap: Option<usize>,
) -> Vec<RefMatch> {
    let mut engine = StackEngine::new(prog, how).expect("qualifies");
    if let Some(c) = cap {
        engine.set_max_partials_per_key(c);
    }
    let mut out = Vec::new();
    for (e, wm) in events.iter().zip(wms) {
        let mut n = 0;
        engine
            .push_until(e, &mut |m| {
                out.push(to_ref(m.to_match()));
                n += 1;
                if cap.is_some() && n >= PER_EVENT { ControlFlow::Break(()) } else { ControlFlow::Continue(()) }
            })
            .expect("never late");
        if let Some(wm) = wm {
            engine.advance(*wm);
        }
        out.extend(engine.drain().map(to_ref));
    }
    engine.finish();
    out.extend(engine.drain().map(to_ref));
    out
}

/// The stack engine's counting mode: the total count.
fn run_count(prog: Program<Event>, events: &[Event], wms: &[Option<i64>], cap: Option<usize>) -> u128 {
    let mut engine = StackEngine::new(prog, Construction::PerEvent).expect("qualifies");
    if let Some(c) = cap {
        engine.set_max_partials_per_key(c);
    }
    let mut total = 0u128;
    let mut add = |c: &cep_nfa::stack::MatchCount| total += c.count;
    for (e, wm) in events.iter().zip(wms) {
        engine.push_count(e, &mut add).expect("never late");
        if let Some(wm) = wm {
            engine.advance_count(*wm, &mut add);
        }
    }
    engine.finish_count(&mut add);
    total
}

/// Runs every statement of `src` (which compiles against the open schema)
/// on the events of `specs`: capped on all of them, uncapped and compared on
/// the first ten.
fn check_engines(src: &str, unit: TimeUnit, start: i64, specs: &[EventSpec]) -> Result<(), TestCaseError> {
    let file = parse(src).map_err(|d| TestCaseError::fail(d.to_string()))?;
    let opts = Options { time_unit: unit };
    let mut schema = Schema::new();
    // A seed that needs another time unit (`1.5 s` in seconds) runs as it is
    // in none: nothing to run.
    let Ok(compiled) = compile_file(&file, &mut schema, &opts) else { return Ok(()) };
    let n = compiled.programs.len();
    drop(compiled);
    for i in 0..n {
        let prog = || compile_file(&file, &mut schema.clone(), &opts).expect("compiled once").programs.remove(i);
        let p = prog();
        let (events, wms) = build_events(start, specs, &types_of(&p), schema.field_count());
        let stack = qualifies(&p).is_ok();
        drop(p);

        // The whole stream, with the state bounded: nothing panics.
        let capped = Some(CAP);
        let run = run_engine(prog(), &events, &wms, capped);
        let batched = run_batched(prog(), &events, &wms, capped);
        prop_assert_eq!(&batched, &run, "push_batch differs from push (capped)");
        if stack {
            for how in [Construction::PerEvent, Construction::Direct, Construction::Batch] {
                run_stack(prog(), how, &events, &wms, capped);
            }
            run_count(prog(), &events, &wms, capped);
        }

        // The first ten events, unbounded: the engines agree.
        let k = events.len().min(10);
        let (events, wms) = (&events[..k], &wms[..k]);
        let run = run_engine(prog(), events, wms, None);
        let batched = run_batched(prog(), events, wms, None);
        prop_assert_eq!(&batched, &run, "push_batch differs from push");
        if stack {
            let per_event = run_stack(prog(), Construction::PerEvent, events, wms, None);
            prop_assert_eq!(&per_event, &run, "stack engine (per event) differs from the run engine");
            let direct = run_stack(prog(), Construction::Direct, events, wms, None);
            prop_assert_eq!(&direct, &run, "stack engine (direct) differs from the run engine");
            let batch = run_stack(prog(), Construction::Batch, events, wms, None);
            prop_assert_eq!(sorted(batch), sorted(run.clone()), "stack engine (batch) differs from the run engine");
            let count = run_count(prog(), events, wms, None);
            prop_assert_eq!(count, run.len() as u128, "counting mode differs from enumeration");
        }
        let st: &ast::Statement = &file.statements[i];
        let positives = st.elements.iter().filter(|e| !e.negated).count();
        if positives <= 4 && st.elements.len() <= 6 {
            let want = reference::run(st, events, &schema, unit);
            prop_assert_eq!(&run, &want, "run engine differs from the reference");
        }
    }
    Ok(())
}

/// Applies the edits that keep `seed` compiling (against the open schema),
/// checking the front end on every candidate; the last text that compiled.
fn mutate_compiling(seed: &str, edits: &[Edit], unit: TimeUnit) -> Result<String, TestCaseError> {
    let mut text = seed.to_owned();
    for edit in edits {
        let candidate = apply(&text, edit);
        if check_front_end(&candidate, unit)? {
            text = candidate;
        }
    }
    Ok(text)
}

// ---------------------------------------------------------------------------

fn config(cases: u32) -> ProptestConfig {
    let cases = std::env::var("CEP_PROPTEST_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(cases);
    ProptestConfig { cases, max_shrink_iters: 2000, ..ProptestConfig::default() }
}

proptest! {
    #![proptest_config(config(1000))]

    #[test]
    fn mutated_queries_give_diagnostics_not_panics((seed, edits) in arb_mutated_any(), unit in arb_unit()) {
        let mut text = seed;
        for edit in &edits {
            text = apply(&text, edit);
        }
        check_front_end(&text, unit)?;
    }

    #[test]
    fn token_soup_gives_diagnostics_not_panics(text in arb_soup(), unit in arb_unit()) {
        check_front_end(&text, unit)?;
    }

    #[test]
    fn mutated_queries_run_without_panics(
        (seed, edits) in arb_mutated_any(),
        unit in arb_unit(),
        (start, specs) in arb_events(),
    ) {
        let text = mutate_compiling(&seed, &edits, unit)?;
        check_engines(&text, unit, start, &specs)?;
    }
}

/// Every seed compiles as it is (so that the engine test starts from a
/// running query).
#[test]
fn seeds_compile() {
    for s in seeds() {
        let mut schema = Schema::new();
        if let Err(d) = compile(s, &mut schema, &Options::default()) {
            panic!("{}", d.render(s, "seed"));
        }
    }
}
