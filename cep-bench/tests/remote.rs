//! Remote predicates on random queries and streams (LANGUAGE.md §8): a
//! random query of each strategy gets a remote conjunct (`f(v.x, v.y)` or
//! `NOT f(…)`) on one of its single-event variables, and its matches with
//! `f` asked through a resolver equal the reference matcher's with `f`
//! evaluated in-process. The resolver answers after random delays, in a
//! random order within a batch (`cep_remote::DelayResolver`), or at once;
//! the queries run on the run engine alone and in a job on one and two
//! threads (`Runtime`), blocking and lazy (which applies under
//! skip-till-any-match and strict contiguity, and leaves the others
//! blocking).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use cep_core::remote::{FnResolver, OnFailure, RemoteLink, RemoteMode, Resolver};
use cep_core::{Schema, TimeUnit, Value};
use cep_nfa::compile::{Options, compile};
use cep_nfa::engine::Engine;
use cep_nfa::reference::{RefMatch, run_with_remote};
use cep_nfa::syntax::ast::Quant;
use cep_nfa::syntax::parse;
use cep_remote::{DelayConfig, DelayResolver};
use cep_runtime::job::RemoteSpec;
use cep_runtime::record::Record;
use cep_runtime::{Output, Runtime};
use cep_testkit::arb::{Case, arb_case, config};
use cep_testkit::drive::{run_engine_with, sorted};
use proptest::prelude::*;

const DECL: &str = "REMOTE f(a int, b int);\n";

/// The remote function: a pure function of its (converted) arguments.
fn f(_func: u16, args: &[Value]) -> bool {
    match (args[0], args[1]) {
        (Value::Int(x), Value::Int(y)) => (x * 3 + y) % 4 != 1,
        (Value::Null, Value::Int(y)) => y % 2 == 0,
        _ => true,
    }
}

/// `case`'s query with a call of `f` on its `pick`-th single-event
/// positive variable (`NOT f(…)` when `negated`), or `None` when it has
/// none.
fn with_call(case: &Case, pick: usize, negated: bool) -> Option<String> {
    let file = parse(&case.query).expect("the generator's queries parse");
    let st = &file.statements[0];
    let singles: Vec<&str> = st
        .elements
        .iter()
        .filter(|e| !e.negated && matches!(e.quant, Quant::One | Quant::Opt))
        .map(|e| e.var.name.as_str())
        .collect();
    let v = *singles.get(pick % singles.len().max(1))?;
    let call = format!("{}f({v}.x, {v}.y)", if negated { "NOT " } else { "" });
    let q = &case.query;
    let text = match q.find(" WHERE ") {
        Some(at) => {
            let rest = &q[at + 7..];
            match ["skip-till-any-match", "skip-till-next-match", "strict-contiguity", "partition-contiguity"]
                .iter()
                .find(|s| rest.starts_with(*s))
            {
                Some(s) => format!("{} AND {call}{}", &q[..at + 7 + s.len()], &rest[s.len()..]),
                None => format!("{}{call} AND {rest}", &q[..at + 7]),
            }
        }
        None => {
            // The pattern ends at the last element, or the `)` after it.
            let last = st.elements.last().expect("an element").span.end as usize;
            let end = if st.seq { last + q[last..].find(')').expect("the SEQ's `)`") + 1 } else { last };
            format!("{} WHERE {call}{}", &q[..end], &q[end..])
        }
    };
    Some(format!("{DECL}{text}"))
}

/// The reference's matches of `text` over `case`'s events.
fn reference(text: &str, case: &Case) -> Vec<RefMatch> {
    let file = parse(text).unwrap();
    let fns = compile(text, &mut case.schema.clone(), &Options::default()).unwrap().remotes;
    sorted(run_with_remote(&file.statements[0], &case.events, &case.schema, TimeUnit::Millis, &fns, &f))
}

fn link(resolver: Box<dyn Resolver>) -> Arc<RemoteLink> {
    Arc::new(RemoteLink::new(resolver, vec![("f".into(), "in-process".into())], OnFailure::Fail))
}

/// A resolver answering after random delays, in a random order within a
/// batch.
fn delayed(seed: u64) -> Box<dyn Resolver> {
    let cfg = DelayConfig::default()
        .with_comm(Duration::ZERO, Duration::from_micros(20))
        .with_eval(Duration::ZERO, Duration::from_micros(10))
        .with_reorder(seed)
        .with_seed(seed);
    Box::new(DelayResolver::new(cfg, f))
}

/// The engine's matches with `f` asked through `resolver`, lazily where
/// the query allows it when `lazy`.
fn engine(text: &str, case: &Case, resolver: Box<dyn Resolver>, lazy: bool) -> Vec<RefMatch> {
    let prog = compile(text, &mut case.schema.clone(), &Options::default()).unwrap().programs.remove(0);
    let fits = cep_nfa::engine::lazy_fits(&prog).is_none();
    let mut engine = Engine::new(prog);
    engine.set_remote(link(resolver));
    // Blocking unless asked: `set_lazy` makes the engine lazy where it fits.
    if lazy {
        assert_eq!(engine.set_lazy(), fits, "{text}");
    }
    assert_eq!(engine.lazy_now(), lazy && fits, "{text}");
    sorted(run_engine_with(engine, &case.events).expect("in order"))
}

/// The job's matches on `threads` threads, as sorted `(rows, key)` texts.
fn job(text: &str, case: &Case, threads: usize, seed: u64, mode: RemoteMode) -> Vec<String> {
    let make = Arc::new(move || Ok(delayed(seed)));
    let lines = Arc::new(Mutex::new(Vec::new()));
    let seen = lines.clone();
    let mut rt = Runtime::builder()
        .query(text)
        .schema(case.schema.clone())
        .threads(threads)
        .remote(RemoteSpec::new(vec![("f".into(), "in-process".into())], make, OnFailure::Fail).with_mode(mode))
        .build(Output::Lines(Box::new(move |l: &str| seen.lock().unwrap().push(l.to_owned()))))
        .unwrap();
    for e in &case.events {
        rt.push(e).unwrap();
    }
    rt.finish().unwrap();
    let mut out: Vec<String> = lines
        .lock()
        .unwrap()
        .iter()
        .map(|l| {
            let Ok(Record::Match(m)) = Record::parse(l) else { panic!("a match line: {l}") };
            let vars: Vec<&Vec<u64>> = m.vars.iter().map(|(_, rows)| rows).collect();
            format!("{vars:?} {}", m.key)
        })
        .collect();
    out.sort();
    out
}

fn as_lines(ms: &[RefMatch]) -> Vec<String> {
    let mut out: Vec<String> = ms
        .iter()
        .map(|m| {
            let key = match m.key {
                Value::Null => "null".to_owned(),
                k => k.to_string(),
            };
            format!("{:?} {key}", m.vars)
        })
        .collect();
    out.sort();
    out
}

/// The engine's matches, lazy where the query allows it, with a
/// checkpoint taken after `cut` events (through JSON, calls in flight
/// included) and restored into a new engine with a new resolver, which
/// makes the calls in flight again.
fn engine_resumed(text: &str, case: &Case, cut: usize, seed: u64) -> Vec<RefMatch> {
    let prog = || compile(text, &mut case.schema.clone(), &Options::default()).unwrap().programs.remove(0);
    let lazy = |seed: u64| {
        let mut engine = Engine::new(prog());
        engine.set_remote(link(delayed(seed)));
        engine.set_lazy();
        engine
    };
    let cut = cut.min(case.events.len());
    let mut got = Vec::new();
    let mut first = lazy(seed);
    for e in &case.events[..cut] {
        first.push(e).unwrap();
        got.extend(first.drain());
    }
    let saved = serde_json::to_string(&first.snapshot()).unwrap();
    drop(first);
    let mut second = lazy(seed ^ 1);
    second.restore(serde_json::from_str(&saved).unwrap()).unwrap();
    for e in &case.events[cut..] {
        second.push(e).unwrap();
        got.extend(second.drain());
    }
    second.finish();
    got.extend(second.drain());
    sorted(got.into_iter().map(cep_testkit::drive::to_ref).collect())
}

fn check(case: &Case, pick: usize, negated: bool, seed: u64) -> Result<(), TestCaseError> {
    let Some(text) = with_call(case, pick, negated) else { return Ok(()) };
    let want = reference(&text, case);
    prop_assert_eq!(&engine(&text, case, Box::new(FnResolver::new(f)), false), &want, "at once: {}", text);
    prop_assert_eq!(&engine(&text, case, delayed(seed), false), &want, "delayed: {}", text);
    prop_assert_eq!(&engine(&text, case, Box::new(FnResolver::new(f)), true), &want, "lazy, at once: {}", text);
    prop_assert_eq!(&engine(&text, case, delayed(seed), true), &want, "lazy, delayed: {}", text);
    let cut = (seed % 16) as usize;
    prop_assert_eq!(&engine_resumed(&text, case, cut, seed), &want, "lazy, resumed after {} events: {}", cut, text);
    let want = as_lines(&want);
    for threads in [1, 2] {
        for mode in [RemoteMode::Blocking, RemoteMode::Lazy, RemoteMode::Auto] {
            prop_assert_eq!(&job(&text, case, threads, seed, mode), &want, "{} threads, {:?}: {}", threads, mode, text);
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn remote_any_match_equals_the_reference(case in arb_case("skip-till-any-match"), pick in 0usize..4, negated: bool, seed: u64) {
        check(&case, pick, negated, seed)?;
    }

    #[test]
    fn remote_next_match_equals_the_reference(case in arb_case("skip-till-next-match"), pick in 0usize..4, negated: bool, seed: u64) {
        check(&case, pick, negated, seed)?;
    }

    #[test]
    fn remote_strict_equals_the_reference(case in arb_case("strict-contiguity"), pick in 0usize..4, negated: bool, seed: u64) {
        check(&case, pick, negated, seed)?;
    }
}

/// A hand-checked case: `f` decides which `B` follows the `A`.
#[test]
fn a_remote_condition_decides_which_event_binds() {
    let mut schema = Schema::new();
    for name in ["k", "x", "y"] {
        schema.field(name);
    }
    let (events, schema) = cep_testkit::arb::build_events(&[
        ("A", 1, Some(1), Some(0), 0),
        ("B", 1, Some(1), Some(1), 0),
        ("B", 1, Some(1), Some(2), 0),
    ]);
    let case = Case { query: "PATTERN SEQ(A a, B b) WHERE [k]".into(), events, schema };
    // f(1, 0) = (3 + 0) % 4 != 1: true; f(2, 0) = 6 % 4 != 1: true. NOT f: none.
    let text = with_call(&case, 1, false).unwrap();
    assert_eq!(text, format!("{DECL}PATTERN SEQ(A a, B b) WHERE f(b.x, b.y) AND [k]"));
    let got = engine(&text, &case, delayed(7), false);
    assert_eq!(got.iter().map(|m| m.vars.clone()).collect::<Vec<_>>(), [vec![vec![0], vec![1]]]);
    let text = with_call(&case, 1, true).unwrap();
    assert!(engine(&text, &case, delayed(7), false).is_empty());
}

/// A long stream under skip-till-any-match, lazy: partial matches that owe
/// an answer which came back false are dropped before they are final
/// (early settlement, counted), and the matches are still the reference's.
#[test]
fn lazy_settles_early_on_a_long_stream() {
    let mut rng = cep_testkit::XorShift64::new(0xE4A1);
    let specs: Vec<cep_testkit::arb::EventSpec> = (0..3000)
        .map(|_| {
            let ty = ["A", "B", "C"][(rng.next_u64() % 3) as usize];
            let k = Some((rng.next_u64() % 3) as i64);
            let x = Some((rng.next_u64() % 6) as i64);
            (ty, 1, k, x, (rng.next_u64() % 4) as i64)
        })
        .collect();
    let (events, schema) = cep_testkit::arb::build_events(&specs);
    let case = Case { query: String::new(), events, schema };
    let text = format!("{DECL}PATTERN SEQ(A a, B b, C c) WHERE skip-till-any-match AND [k] AND f(b.x, b.y) WITHIN 60");
    let want = reference(&text, &case);
    assert!(want.len() > 100, "{}", want.len());
    let prog = compile(&text, &mut case.schema.clone(), &Options::default()).unwrap().programs.remove(0);
    let shared = link(delayed(11));
    let mut engine = Engine::new(prog);
    engine.set_remote(shared.clone());
    assert!(engine.set_lazy());
    let got = sorted(run_engine_with(engine, &case.events).unwrap());
    assert_eq!(got, want);
    let stats = shared.stats();
    assert!(stats.dropped_early > 0, "{stats:?}");
    assert_eq!(stats.settled_true as usize, want.len(), "{stats:?}");
}

/// 1,500 random events of types `A` and `B` over 4 keys (`seed`), for the
/// `auto` tests.
fn ab_stream(seed: u64) -> (Vec<cep_core::Event>, Schema) {
    let mut rng = cep_testkit::XorShift64::new(seed);
    let specs: Vec<cep_testkit::arb::EventSpec> = (0..1500)
        .map(|_| {
            let ty = ["A", "B"][(rng.next_u64() % 2) as usize];
            (ty, 1, Some((rng.next_u64() % 4) as i64), Some((rng.next_u64() % 6) as i64), (rng.next_u64() % 4) as i64)
        })
        .collect();
    cep_testkit::arb::build_events(&specs)
}

/// `auto` measures the answer delay: with answers at once (an in-process
/// function) it waits for them; with a millisecond's delay it goes on
/// lazily; the matches are the reference's either way.
#[test]
fn auto_follows_the_answer_delay() {
    let (events, schema) = ab_stream(0xA070);
    let case = Case { query: String::new(), events, schema };
    let text = format!("{DECL}PATTERN SEQ(A a, B b) WHERE strict-contiguity AND [k] AND f(b.x, b.y)");
    let want = reference(&text, &case);
    assert!(!want.is_empty());
    let slow = || {
        let cfg = DelayConfig::default().with_comm(Duration::from_millis(1), Duration::ZERO).with_seed(3);
        Box::new(DelayResolver::new(cfg, f)) as Box<dyn Resolver>
    };
    for (resolver, lazy_at_the_end) in [(Box::new(FnResolver::new(f)) as Box<dyn Resolver>, false), (slow(), true)] {
        let prog = compile(&text, &mut case.schema.clone(), &Options::default()).unwrap().programs.remove(0);
        let mut engine = Engine::new(prog);
        engine.set_remote(link(resolver));
        assert!(engine.set_auto());
        let mut got = Vec::new();
        for e in &case.events {
            engine.push(e).unwrap();
            got.extend(engine.drain().map(cep_testkit::drive::to_ref));
        }
        assert_eq!(engine.lazy_now(), lazy_at_the_end);
        engine.finish();
        got.extend(engine.drain().map(cep_testkit::drive::to_ref));
        assert_eq!(sorted(got), want);
    }
}

/// `auto` chooses per function: with `f` answered after a millisecond and
/// `g` at once, it carries `f`'s answers as debts and waits for `g`'s (an
/// element with both asks `g` first, then owes `f`); the matches are the
/// reference's.
#[test]
fn auto_chooses_per_function() {
    fn fg(func: u16, args: &[Value]) -> bool {
        match (func, args[0], args[1]) {
            (0, ..) => f(func, args),
            (_, Value::Int(x), Value::Int(y)) => (x + 2 * y) % 3 == 0,
            _ => false,
        }
    }
    let (events, schema) = ab_stream(0xF6);
    let text = "REMOTE f(a int, b int);\nREMOTE g(a int, b int);\n\
                PATTERN SEQ(A a, B b) WHERE strict-contiguity AND [k] AND f(b.x, b.y) AND NOT g(a.x, b.y)";
    let file = parse(text).unwrap();
    let compiled = compile(text, &mut schema.clone(), &Options::default()).unwrap();
    let want = sorted(run_with_remote(&file.statements[0], &events, &schema, TimeUnit::Millis, &compiled.remotes, &fg));
    assert!(!want.is_empty());
    let cfg = DelayConfig::default().with_function_delays(0, Duration::from_millis(1), Duration::ZERO).with_seed(9);
    let functions = vec![("f".into(), "in-process".into()), ("g".into(), "in-process".into())];
    let link = Arc::new(RemoteLink::new(Box::new(DelayResolver::new(cfg, fg)), functions, OnFailure::Fail));
    let mut engine = Engine::new(compiled.programs.into_iter().next().unwrap());
    engine.set_remote(link.clone());
    assert!(engine.set_auto());
    let mut got = Vec::new();
    for e in &events {
        engine.push(e).unwrap();
        got.extend(engine.drain().map(cep_testkit::drive::to_ref));
    }
    assert!(engine.lazy_now_for(0) && !engine.lazy_now_for(1));
    engine.finish();
    got.extend(engine.drain().map(cep_testkit::drive::to_ref));
    assert_eq!(sorted(got), want);
    assert!(link.stats().settled_true + link.stats().settled_false > 0, "f's answers were debts");
}
