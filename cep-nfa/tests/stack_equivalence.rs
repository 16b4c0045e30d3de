//! The stack engine against the run engine and the reference matcher on
//! random streams and random qualifying queries (sequences of single-event
//! elements under skip-till-any-match, with filters, conditions between
//! variables, windows in time and in events, partitions, `EMIT` items):
//! per-event and batch construction give the same matches as multisets,
//! with the same `EMIT` values; per-event and direct construction also in
//! the run engine's emission order.

use cep_testkit::arb;
use cep_testkit::drive::{sorted, to_ref};

use cep_core::{Event, Schema, TimeUnit};
use cep_nfa::compile::{Options, compile_file};
use cep_nfa::engine::Engine;
use cep_nfa::reference::{self, RefMatch};
use cep_nfa::stack::{Construction, StackEngine, qualifies};
use cep_nfa::syntax::parse;
use proptest::prelude::*;

/// A qualifying query over types A, B, C and fields k, x, y.
fn arb_query() -> impl Strategy<Value = String> {
    let ty = prop_oneof![3 => Just("A"), 3 => Just("B"), 2 => Just("C"), 1 => Just("(A | B)")];
    (1usize..=4)
        .prop_flat_map(move |n| {
            let types = prop::collection::vec(ty.clone(), n);
            let conds = prop::collection::vec((0..n, 0..n, 0usize..6, 0i64..5), 0..=3);
            let window = prop_oneof![2 => Just(String::new()), 2 => (1i64..8).prop_map(|w| format!(" WITHIN {w}")),
                                     1 => (1i64..6).prop_map(|w| format!(" WITHIN {w} EVENTS"))];
            let part = prop_oneof![2 => Just(""), 1 => Just(" PARTITION BY k")];
            let emit = prop_oneof![1 => Just(Vec::new()), 1 => prop::collection::vec((0..n, 0..n, 0usize..9), 1..=4)];
            (Just(n), types, conds, window, part, emit)
        })
        .prop_map(|(_, types, conds, window, part, emit)| {
            let elements: Vec<String> = types.iter().enumerate().map(|(i, t)| format!("{t} a{i}")).collect();
            let mut wh = vec!["skip-till-any-match".to_string()];
            for (i, j, form, c) in conds {
                let (lo, hi) = (i.min(j), i.max(j));
                wh.push(match form {
                    0 => format!("a{i}.x > {c}"),
                    1 => format!("a{i}.y <= {c}"),
                    2 if lo < hi => format!("a{hi}.x >= a{lo}.x"),
                    3 if lo < hi => format!("a{hi}.y = a{lo}.y + 1"),
                    4 if lo < hi => format!("a{hi}.x + a{lo}.y > {c}"),
                    _ => format!("a{i}.x != {c}"),
                });
            }
            let mut q = format!("PATTERN SEQ({}) WHERE {}{window}{part}", elements.join(", "), wh.join(" AND "));
            // `EMIT`: expressions over one or two variables (named `AS eN`)
            // and objects (`aN.*`, once each).
            let mut items: Vec<String> = Vec::new();
            for (n, (i, j, form)) in emit.into_iter().enumerate() {
                let (lo, hi) = (i.min(j), i.max(j));
                let item = match form {
                    0 | 1 => format!("a{i}.*"),
                    2 => format!("a{i}.x AS e{n}"),
                    3 => format!("a{i}.y + a{j}.x AS e{n}"),
                    4 => format!("a{hi}.ts - a{lo}.ts AS e{n}"),
                    5 => format!("count(a{i}) + a{i}.LEN AS e{n}"),
                    6 => format!("a{i}.x / 0 AS e{n}"),
                    7 => format!("a{j}.y >= a{i}.x AS e{n}"),
                    _ => format!("a{i}.x * 9223372036854775807 AS e{n}"),
                };
                if !items.contains(&item) {
                    items.push(item);
                }
            }
            if !items.is_empty() {
                q.push_str(" EMIT ");
                q.push_str(&items.join(", "));
            }
            q
        })
}

/// Longer streams than the reference cases: up to `max` events.
fn arb_events(max: usize) -> impl Strategy<Value = (Vec<Event>, Schema)> {
    let ty = prop_oneof![4 => Just("A"), 4 => Just("B"), 4 => Just("C"), 1 => Just("D")];
    let event = (
        ty,
        0i64..=2,
        prop_oneof![9 => (1i64..=2).prop_map(Some), 1 => Just(None)],
        prop_oneof![9 => (0i64..=5).prop_map(Some), 1 => Just(None)],
        0i64..=3,
    );
    prop::collection::vec(event, 0..max).prop_map(|specs| arb::build_events(&specs))
}

fn run_stack(prog: cep_nfa::program::Program<Event>, how: Construction, events: &[Event]) -> Vec<RefMatch> {
    let mut engine = StackEngine::new(prog, how).expect("the query qualifies");
    let mut got = Vec::new();
    for e in events {
        engine.push(e).unwrap();
        got.extend(engine.drain().map(to_ref));
    }
    engine.finish();
    got.extend(engine.drain().map(to_ref));
    got
}

fn check(query: &str, events: &[Event], schema: &Schema, with_reference: bool) -> Result<(), TestCaseError> {
    let file = parse(query).map_err(|d| TestCaseError::fail(d.render(query, "q")))?;
    let compile = |schema: &mut Schema| {
        compile_file(&file, schema, &Options::default()).map(|c| c.programs.into_iter().next().unwrap())
    };
    let prog = compile(&mut schema.clone()).map_err(|d| TestCaseError::fail(d.render(query, "q")))?;
    prop_assert_eq!(qualifies(&prog), Ok(()), "{}", query);
    let mut run = Engine::new(prog);
    let mut want = Vec::new();
    for e in events {
        run.push(e).unwrap();
        want.extend(run.drain().map(to_ref));
    }
    run.finish();
    want.extend(run.drain().map(to_ref));
    if with_reference {
        let reference = reference::run(&file.statements[0], events, schema, TimeUnit::Millis);
        prop_assert_eq!(sorted(reference), sorted(want.clone()), "run engine vs reference: {}", query);
    }
    let per_event = run_stack(compile(&mut schema.clone()).unwrap(), Construction::PerEvent, events);
    // Per event: every match is emitted when its last event arrives, as in
    // the run engine, in the same order.
    prop_assert_eq!(&per_event, &want, "per event: {}", query);
    let direct = run_stack(compile(&mut schema.clone()).unwrap(), Construction::Direct, events);
    prop_assert_eq!(&direct, &want, "direct: {}", query);
    let batch = run_stack(compile(&mut schema.clone()).unwrap(), Construction::Batch, events);
    prop_assert_eq!(sorted(batch), sorted(want), "batch: {}", query);
    Ok(())
}

/// A snapshot at `cut` (through JSON) restored into a fresh engine gives
/// the matches, with their `EMIT` values, of an uninterrupted run: the
/// entries keep their frames and, for `x.*`, their events' objects.
fn check_resume(query: &str, events: &[Event], schema: &Schema, cut: usize) -> Result<(), TestCaseError> {
    let file = parse(query).map_err(|d| TestCaseError::fail(d.render(query, "q")))?;
    let prog = || compile_file(&file, &mut schema.clone(), &Options::default()).unwrap().programs.remove(0);
    let cut = cut % (events.len() + 1);
    for how in [Construction::PerEvent, Construction::Direct, Construction::Batch] {
        let want = run_stack(prog(), how, events);
        let mut first = StackEngine::new(prog(), how).unwrap();
        let mut got = Vec::new();
        for e in &events[..cut] {
            first.push(e).unwrap();
            got.extend(first.drain().map(to_ref));
        }
        let text = serde_json::to_string(&first.snapshot()).unwrap();
        drop(first);
        let mut resumed = StackEngine::new(prog(), how).unwrap();
        resumed.restore(serde_json::from_str(&text).unwrap()).unwrap();
        for e in &events[cut..] {
            resumed.push(e).unwrap();
            got.extend(resumed.drain().map(to_ref));
        }
        resumed.finish();
        got.extend(resumed.drain().map(to_ref));
        prop_assert_eq!(&got, &want, "{:?}, cut at {}: {}", how, cut, query);
    }
    Ok(())
}

/// Counting mode against enumeration: per event, the number of matches
/// ending at it, in both constructions.
fn check_counts(query: &str, events: &[Event], schema: &Schema) -> Result<(), TestCaseError> {
    let file = parse(query).map_err(|d| TestCaseError::fail(d.render(query, "q")))?;
    let prog = || compile_file(&file, &mut schema.clone(), &Options::default()).unwrap().programs.remove(0);
    let mut want: std::collections::BTreeMap<u64, u128> = Default::default();
    for m in run_stack(prog(), Construction::PerEvent, events) {
        *want.entry(*m.vars.last().unwrap().last().unwrap()).or_default() += 1;
    }
    for how in [Construction::PerEvent, Construction::Batch] {
        let mut engine = StackEngine::new(prog(), how).unwrap();
        let mut got: std::collections::BTreeMap<u64, u128> = Default::default();
        let mut take = |c: &cep_nfa::stack::MatchCount| {
            assert!(c.count > 0);
            assert!(got.insert(c.row, c.count).is_none(), "row {} counted twice", c.row);
        };
        for e in events {
            engine.push_count(e, &mut take).unwrap();
        }
        engine.finish_count(&mut take);
        prop_assert_eq!(&got, &want, "{:?}: {}", how, query);
    }
    Ok(())
}

/// A consumer that takes the first `k` matches of each event and stops
/// gets exactly the first `k` of the full enumeration, in both immediate
/// constructions.
fn check_early_stop(query: &str, events: &[Event], schema: &Schema, k: usize) -> Result<(), TestCaseError> {
    let file = parse(query).map_err(|d| TestCaseError::fail(d.render(query, "q")))?;
    let prog = || compile_file(&file, &mut schema.clone(), &Options::default()).unwrap().programs.remove(0);
    for how in [Construction::PerEvent, Construction::Direct] {
        let (mut full, mut part) = (StackEngine::new(prog(), how).unwrap(), StackEngine::new(prog(), how).unwrap());
        for e in events {
            let mut all = Vec::new();
            full.push_to(e, &mut |m| all.push(m.rows.to_vec())).unwrap();
            let mut some = Vec::new();
            part.push_until(e, &mut |m| {
                some.push(m.rows.to_vec());
                if some.len() == k { std::ops::ControlFlow::Break(()) } else { std::ops::ControlFlow::Continue(()) }
            })
            .unwrap();
            all.truncate(k);
            prop_assert_eq!(some, all, "{:?} row {}: {}", how, e.row, query);
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(arb::config())]

    /// The shared generator's `EMIT` queries (LANGUAGE.md §5) that the
    /// stack engine takes: the same matches and values as the run engine
    /// and the reference.
    #[test]
    fn stack_equals_run_and_reference_with_emit(case in arb::arb_emit_case("skip-till-any-match")) {
        let qualifying = parse(&case.query).ok().and_then(|f| {
            let prog = compile_file(&f, &mut case.schema.clone(), &Options::default()).ok()?.programs.remove(0);
            qualifies(&prog).is_ok().then_some(())
        });
        if qualifying.is_some() {
            check(&case.query, &case.events, &case.schema, true)?;
        }
    }

    #[test]
    fn stack_equals_run_and_reference(query in arb_query(), (events, schema) in arb::arb_events()) {
        check(&query, &events, &schema, true)?;
    }

    #[test]
    fn early_stop_takes_a_prefix(query in arb_query(), (events, schema) in arb_events(60), k in 1usize..4) {
        check_early_stop(&query, &events, &schema, k)?;
    }

    #[test]
    fn resumed_equals_uninterrupted(query in arb_query(), (events, schema) in arb_events(60), cut in any::<usize>()) {
        check_resume(&query, &events, &schema, cut)?;
    }

    #[test]
    fn counting_equals_enumeration(query in arb_query(), (events, schema) in arb_events(80)) {
        check_counts(&query, &events, &schema)?;
    }

    #[test]
    fn stack_equals_run_on_longer_streams(query in arb_query(), (events, schema) in arb_events(80)) {
        check(&query, &events, &schema, false)?;
    }
}
