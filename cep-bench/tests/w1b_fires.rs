//! W1b end to end: the 1,000,000 level alerts over the 3,000,000 W1 ticks
//! fire 759,291 times in the two-BTreeMap baseline (DESIGN.md §3).
//!
//! About 8 s at the test profile's opt-level 1 (a million alerts, each with
//! its own id string), so it is ignored by default:
//! `cargo test -p cep-bench --test w1b_fires -- --ignored`.

use cep_bench::baseline::levels::TwoBTreeMaps;
use cep_bench::levels::{self, FIRES, KEYS, PER_KEY};
use cep_bench::w1::{self, Ticks};
use cep_core::Value;

#[test]
#[ignore = "slow: 1,000,000 alerts over 3,000,000 ticks"]
fn w1b_fires() {
    let mut idx = TwoBTreeMaps::new();
    for a in levels::alerts(KEYS, PER_KEY) {
        idx.add(a).unwrap();
    }
    assert_eq!(idx.len(), 1_000_000);
    let mut fires = 0usize;
    for t in Ticks::new(w1::TICKS) {
        idx.update(Value::Int(t.key), levels::FIELD, Value::Int(t.price), t.ts, t.row, |_| fires += 1);
    }
    assert_eq!(fires, FIRES);
}
