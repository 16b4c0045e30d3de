//! `set_max_partials_per_key`: with a cap, no key ever holds more partial
//! matches than the cap (run engine: runs; stack engine: entries per stack,
//! plus the one event being pushed), and — where emitting one match cannot
//! discard others (no `AFTER MATCH SKIP`, `SELECT ALL`) — the capped matches
//! are a subset of the uncapped ones; when nothing was dropped, the matches
//! are exactly the uncapped ones.

use cep_core::{Event, Match};
use cep_nfa::compile::{Options, compile};
use cep_nfa::select::{EngineChoice, QueryEngine};
use cep_nfa::stack::Construction;
use cep_testkit::arb::{self, Case, arb_case};
use proptest::prelude::*;

/// The matches (sorted) and the partial matches dropped.
fn run(case: &Case, choice: EngineChoice, cap: Option<usize>) -> (Vec<Vec<u64>>, u64) {
    let prog = compile(&case.query, &mut case.schema.clone(), &Options::default()).unwrap().programs.remove(0);
    let Ok(mut engine) = QueryEngine::<Event>::new(prog, choice, Construction::Direct) else {
        return (Vec::new(), 0);
    };
    if let Some(cap) = cap {
        engine.set_max_partials_per_key(cap);
    }
    let mut out: Vec<Vec<u64>> = Vec::new();
    let mut take = |m: Match| out.push(m.rows);
    for e in &case.events {
        engine.push(e).unwrap();
        if let Some(cap) = cap {
            let s = engine.stats();
            let bound = match engine.kind() {
                cep_nfa::select::EngineKind::Run => cap * s.partitions,
                // Each stack may hold the event just pushed on top of its cap.
                cep_nfa::select::EngineKind::Stack => (cap + 1) * 4 * s.partitions,
            };
            assert!(s.runs <= bound, "{} live with cap {cap} over {} keys", s.runs, s.partitions);
        }
        while let Some(m) = engine.pop() {
            take(m);
        }
    }
    engine.finish();
    while let Some(m) = engine.pop() {
        take(m);
    }
    out.sort();
    (out, engine.stats().dropped)
}

fn check(case: &Case, choice: EngineChoice, cap: usize) -> Result<(), TestCaseError> {
    let (all, none) = run(case, choice, None);
    prop_assert_eq!(none, 0);
    let (capped, dropped) = run(case, choice, Some(cap));
    if dropped == 0 {
        prop_assert_eq!(&capped, &all, "nothing dropped, same matches: {}", &case.query);
    }
    if !case.query.contains("SKIP") && !case.query.contains("SELECT") {
        let mut rest = all.clone();
        for m in &capped {
            let i = rest.iter().position(|x| x == m);
            prop_assert!(i.is_some(), "{:?} is not an uncapped match of {}", m, &case.query);
            rest.swap_remove(i.unwrap());
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(arb::config())]

    #[test]
    fn capped_engines_stay_within_the_cap(case in prop_oneof![
        arb_case("skip-till-any-match"), arb_case("skip-till-next-match"), arb_case("strict-contiguity")],
        cap in 1usize..4) {
        check(&case, EngineChoice::Run, cap)?;
        check(&case, EngineChoice::Stack, cap)?;
    }
}
