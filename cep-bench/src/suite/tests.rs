//! The catalogue's own checks: unique names, baselines that exist,
//! contenders that agree, and the digest's independence of symbol numbers.

use cep_core::{Match, Value};

use super::*;

#[test]
fn names_are_unique_and_baselines_exist() {
    let all = workloads(Scale::Quick);
    let mut names: Vec<_> = all.iter().map(|w| w.name.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), all.len());
    for w in &all {
        if let Baseline::Contender(b) = w.baseline {
            assert!(w.contender(b).is_some(), "{}: no contender {b}", w.name);
        }
        assert!(!w.contenders.is_empty());
    }
}

#[test]
fn contenders_agree_on_small_streams() {
    for w in workloads(Scale::Quick) {
        if w.name == "W5-cli" && cep_binary().is_none() {
            eprintln!("W5-cli skipped: no cep binary built beside the tests");
            continue;
        }
        // W2's enumeration grows fast: a few hundred events suffice there.
        let n = w.events.min(if w.series.is_some() { 300 } else { 5_000 });
        let passes: Vec<Pass> = w.contenders.iter().map(|c| c.prepare(n)(true)).collect();
        for (c, p) in w.contenders.iter().zip(&passes) {
            assert_eq!(p.events, n as u64);
            assert_eq!((p.matches, p.digest), (passes[0].matches, passes[0].digest), "{} {}", w.name, c.name);
        }
    }
}

#[test]
fn digest_ignores_symbol_numbers_and_order() {
    let m = |key: Value, start| Match {
        query: 0,
        key,
        start,
        end: 5,
        rows: vec![1, 2],
        ends: vec![1, 2],
        emit: vec![],
        unverified: false,
    };
    let a = match_digest(&m(Value::str("S0"), 1));
    assert_eq!(a, match_digest(&m(Value::str("S0"), 1)));
    assert_ne!(a, match_digest(&m(Value::str("S1"), 1)));
    assert_ne!(a, match_digest(&m(Value::str("S0"), 2)));
}

#[test]
fn thousands_separators() {
    assert_eq!(thousands(0), "0");
    assert_eq!(thousands(999), "999");
    assert_eq!(thousands(3_000_000), "3,000,000");
}
