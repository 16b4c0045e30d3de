//! The run engine against the reference matcher (`cep_nfa::reference`) on
//! random small streams and random queries, per strategy: the same matches,
//! in the same emission order, and an empty buffer at the end; and
//! `push_batch` against `push`.

use cep_core::{TimeUnit, Value};
use cep_nfa::compile::{Options, compile_file};
use cep_nfa::engine::Engine;
use cep_nfa::reference::{self, RefMatch};
use cep_nfa::syntax::parse;
use cep_testkit::arb::{self, Case, arb_case, arb_emit_case};
use cep_testkit::drive::to_ref;
use proptest::prelude::*;

fn check(case: &Case) -> Result<(), TestCaseError> {
    let file = parse(&case.query).map_err(|d| TestCaseError::fail(format!("parse: {}", d.render(&case.query, "q"))))?;
    let mut schema = case.schema.clone();
    let compiled = compile_file(&file, &mut schema, &Options::default())
        .map_err(|d| TestCaseError::fail(format!("compile:\n{}", d.render(&case.query, "q"))))?;
    let mut engine = Engine::new(compiled.programs.into_iter().next().unwrap());
    let mut got = Vec::new();
    for e in &case.events {
        engine.push(e).map_err(|l| TestCaseError::fail(l.to_string()))?;
        got.extend(engine.drain().map(to_ref));
    }
    engine.finish();
    got.extend(engine.drain().map(to_ref));
    prop_assert_eq!(engine.stats().nodes, 0, "buffer not empty after finish");
    // The same stream in batches gives the same matches in the same order:
    // small batches (so that later batches look up partitions that exist)
    // and the whole stream at once.
    for size in [2 + case.events.len() % 4, case.events.len().max(1)] {
        let prog = compile_file(&file, &mut schema, &Options::default()).unwrap().programs.remove(0);
        let mut batched = Engine::new(prog);
        let mut by_batch = Vec::new();
        for chunk in case.events.chunks(size) {
            batched.push_batch(chunk).map_err(|(_, l)| TestCaseError::fail(l.to_string()))?;
            by_batch.extend(batched.drain().map(to_ref));
        }
        batched.finish();
        by_batch.extend(batched.drain().map(to_ref));
        prop_assert_eq!(&by_batch, &got, "push_batch in batches of {} differs from push", size);
    }
    let want = reference::run(&file.statements[0], &case.events, &case.schema, TimeUnit::Millis);
    if got != want {
        let show = |ms: &[RefMatch]| -> String {
            ms.iter()
                .map(|m| {
                    format!(
                        "  key {} start {} end {} vars {:?} emit {:?}\n",
                        fmt_key(m.key),
                        m.start,
                        m.end,
                        m.vars,
                        m.emit
                    )
                })
                .collect()
        };
        let events: String =
            case.events.iter().map(|e| format!("  row {} {} ts {} {:?}\n", e.row, e.ty, e.ts, e.fields)).collect();
        return Err(TestCaseError::fail(format!(
            "query:\n{}\nevents (k, x, y):\n{events}engine:\n{}reference:\n{}",
            case.query,
            show(&got),
            show(&want)
        )));
    }
    Ok(())
}

fn fmt_key(v: Value) -> String {
    v.to_string()
}

proptest! {
    #![proptest_config(arb::config())]

    /// With `EMIT`: the same matches, each with the values the reference
    /// computes from its bound events (the engine reads registers and the
    /// objects kept beside buffer nodes).
    #[test]
    fn emit_skip_till_any_match(case in arb_emit_case("skip-till-any-match")) {
        check(&case)?;
    }

    #[test]
    fn emit_skip_till_next_match(case in arb_emit_case("skip-till-next-match")) {
        check(&case)?;
    }

    #[test]
    fn emit_strict_contiguity(case in arb_emit_case("strict-contiguity")) {
        check(&case)?;
    }

    #[test]
    fn skip_till_any_match(case in arb_case("skip-till-any-match")) {
        check(&case)?;
    }

    #[test]
    fn skip_till_next_match(case in arb_case("skip-till-next-match")) {
        check(&case)?;
    }

    #[test]
    fn strict_contiguity(case in arb_case("strict-contiguity")) {
        check(&case)?;
    }
}
