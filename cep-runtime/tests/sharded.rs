//! The sharded runtime gives the same matches (as a multiset of output
//! lines) as one runner, for random queries of every strategy on random
//! keyed streams, with 2 and 3 shards, with and without an allowed delay.

#[path = "../../cep-nfa/tests/support/mod.rs"]
mod support;

use cep_core::Schema;
use cep_nfa::compile::{Options, compile};
use cep_runtime::shard::ShardedRunner;
use cep_runtime::{JsonLines, Runner};
use proptest::prelude::*;
use support::{Case, arb_case};

fn runner(case: &Case, schema: &mut Schema, delay: i64) -> Runner {
    let progs = compile(&case.query, schema, &Options::default()).expect("generated queries compile").programs;
    let mut r = Runner::new(progs);
    r.set_max_delay(delay);
    r
}

fn lines(bytes: Vec<u8>) -> Vec<String> {
    let mut v: Vec<String> = String::from_utf8(bytes).unwrap().lines().map(str::to_owned).collect();
    v.sort();
    v
}

fn check(case: &Case, shards: usize, delay: i64) -> Result<(), TestCaseError> {
    let mut one = runner(case, &mut case.schema.clone(), delay);
    let mut sink = JsonLines::new(Vec::new());
    for e in &case.events {
        one.push(e, &mut sink).unwrap();
    }
    one.finish(&mut sink).unwrap();
    let want = lines(sink.into_inner().unwrap());

    let mut front = Runner::new(Vec::new());
    front.set_max_delay(delay);
    let runners = (0..shards).map(|_| runner(case, &mut case.schema.clone(), 0)).collect();
    let mut sharded = ShardedRunner::new(front, runners);
    let mut out = Vec::new();
    for e in &case.events {
        sharded.push(e, &mut out).unwrap();
    }
    let summary = sharded.finish(&mut out).unwrap();
    prop_assert_eq!(summary.matches.iter().sum::<u64>(), want.len() as u64);
    prop_assert_eq!(lines(out), want, "query: {}", case.query);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn two_and_three_shards_equal_one(case in prop_oneof![
        arb_case("skip-till-any-match"), arb_case("skip-till-next-match"), arb_case("strict-contiguity")],
        delay in prop_oneof![Just(0i64), 1i64..4]) {
        check(&case, 2, delay)?;
        check(&case, 3, delay)?;
    }
}
