//! The level index against its definition: the worked example of the issue,
//! hand cases for each direction and for bands, and property tests against
//! the scanning reference on random walks with alerts added and removed
//! while values flow.

use cep_core::Value;
use cep_index::{Alert, AlertError, AlertState, Direction, LevelIndex, ScanIndex};
use proptest::prelude::*;

/// Fires per value of one key's `price`, as `(row, id, direction)`.
fn run(idx: &mut LevelIndex, values: &[f64]) -> Vec<Vec<(String, Direction)>> {
    let price = idx.field("price").expect("alerts on price");
    values
        .iter()
        .enumerate()
        .map(|(row, &v)| {
            let mut out = Vec::new();
            idx.update(price, Value::Int(1), Value::Float(v), row as i64, row as u64, |f| {
                out.push((f.id.to_owned(), f.direction))
            });
            out
        })
        .collect()
}

fn counts(fires: &[Vec<(String, Direction)>]) -> Vec<usize> {
    fires.iter().map(Vec::len).collect()
}

#[test]
fn the_worked_example_fires_0_1_0_0_0_0_1() {
    let mut idx = LevelIndex::new();
    idx.add(Alert::above("a", Value::Int(1), "price", 10100.0, 5.0)).unwrap();
    let fires = run(&mut idx, &[10000.0, 10120.0, 10130.0, 10098.0, 10110.0, 10090.0, 10105.0]);
    assert_eq!(counts(&fires), [0, 1, 0, 0, 0, 0, 1]);
}

#[test]
fn below_mirrors_above() {
    let mut idx = LevelIndex::new();
    idx.add(Alert::below("b", Value::Int(1), "price", 9900.0, 5.0)).unwrap();
    let fires = run(&mut idx, &[10000.0, 9880.0, 9870.0, 9902.0, 9890.0, 9910.0, 9895.0]);
    assert_eq!(counts(&fires), [0, 1, 0, 0, 0, 0, 1]);
    assert_eq!(fires[1], [("b".to_string(), Direction::Below)]);
}

#[test]
fn the_first_value_never_fires_and_touching_the_level_counts() {
    let mut idx = LevelIndex::new();
    idx.add(Alert::above("a", Value::Int(1), "price", 100.0, 0.0)).unwrap();
    // 100 first: no fire. 99 then 100: prev < 100 <= 100 fires. With band 0,
    // 100 itself re-arms (100 <= 100 - 0), but prev = 100 is not below.
    assert_eq!(counts(&run(&mut idx, &[100.0, 99.0, 100.0, 100.0, 101.0, 99.0, 100.0])), [0, 0, 1, 0, 0, 0, 1]);
}

#[test]
fn enter_fires_on_entering_from_either_side_once_per_visit() {
    let mut idx = LevelIndex::new();
    idx.add(Alert::enter("in", Value::Int(1), "price", 100.0, 110.0, 2.0)).unwrap();
    // 90 → 105 enters; 111 (outside, but not by the band) → 108 does not;
    // 113 (>= 110 + 2) re-arms → 109 enters from above; 80 → 120 jumps over.
    let fires = run(&mut idx, &[90.0, 105.0, 111.0, 108.0, 113.0, 109.0, 80.0, 120.0]);
    assert_eq!(counts(&fires), [0, 1, 0, 0, 0, 1, 0, 0]);
    assert_eq!(fires[5], [("in".to_string(), Direction::Enter)]);
}

#[test]
fn exit_fires_on_leaving_and_rearms_well_inside() {
    let mut idx = LevelIndex::new();
    idx.add(Alert::exit("out", Value::Int(1), "price", 100.0, 110.0, 3.0)).unwrap();
    // 105 → 111 leaves; 109 is inside but not by 3 (re-arm needs 103..=107);
    // 112 stays disarmed; 106 re-arms; 99 leaves below.
    let fires = run(&mut idx, &[105.0, 111.0, 109.0, 112.0, 106.0, 99.0]);
    assert_eq!(counts(&fires), [0, 1, 0, 0, 0, 1]);
    // A band wider than half the interval never re-arms.
    let mut idx = LevelIndex::new();
    idx.add(Alert::exit("narrow", Value::Int(1), "price", 100.0, 104.0, 3.0)).unwrap();
    assert_eq!(counts(&run(&mut idx, &[102.0, 105.0, 102.0, 99.0])), [0, 1, 0, 0]);
}

#[test]
fn fires_come_in_the_order_the_value_passes_them() {
    let mut idx = LevelIndex::new();
    for (id, level) in [("c", 103.0), ("a", 101.0), ("b", 102.0), ("b2", 102.0)] {
        idx.add(Alert::above(id, Value::Int(1), "price", level, 1.0)).unwrap();
        idx.add(Alert::below(format!("{id}-down"), Value::Int(1), "price", level, 1.0)).unwrap();
    }
    let fires = run(&mut idx, &[100.0, 104.0, 100.0]);
    let ids = |i: usize| fires[i].iter().map(|f| f.0.as_str()).collect::<Vec<_>>();
    assert_eq!(ids(1), ["a", "b", "b2", "c"]);
    assert_eq!(ids(2), ["c-down", "b-down", "b2-down", "a-down"]);
}

#[test]
fn alerts_come_and_go_while_values_flow() {
    let mut idx = LevelIndex::new();
    idx.add(Alert::above("a", Value::Int(1), "price", 100.0, 1.0)).unwrap();
    let price = idx.field("price").unwrap();
    let mut fired = Vec::new();
    let mut feed = |idx: &mut LevelIndex, row: u64, v: i64| {
        idx.update(price, Value::Int(1), Value::Int(v), row as i64, row, |f| fired.push((row, f.id.to_owned())));
    };
    feed(&mut idx, 0, 95);
    // Added after 95 was seen: 95 is its prev, so 105 crosses.
    idx.add(Alert::above("late", Value::Int(1), "price", 104.0, 1.0)).unwrap();
    feed(&mut idx, 1, 105);
    assert_eq!(idx.state("a"), Some(AlertState::Disarmed));
    assert!(idx.remove("a"));
    assert!(!idx.remove("a"));
    assert_eq!(idx.state("a"), None);
    feed(&mut idx, 2, 90);
    // The freed slot is reused by a new alert with the same id.
    idx.add(Alert::above("a", Value::Int(1), "price", 100.0, 1.0)).unwrap();
    assert_eq!(idx.state("a"), Some(AlertState::Armed));
    feed(&mut idx, 3, 105);
    assert_eq!(fired, [(1, "a".into()), (1, "late".into()), (3, "a".into()), (3, "late".into())]);
}

#[test]
fn bad_alerts_are_refused() {
    let mut idx = LevelIndex::new();
    idx.add(Alert::above("a", Value::Int(1), "price", 1.0, 0.0)).unwrap();
    assert_eq!(idx.add(Alert::above("a", Value::Int(2), "price", 1.0, 0.0)), Err(AlertError::DuplicateId("a".into())));
    for bad in [
        Alert::above("n", Value::Int(1), "price", f64::NAN, 0.0),
        Alert::above("n", Value::Int(1), "price", 1.0, -1.0),
        Alert::above("n", Value::Int(1), "price", f64::MAX, f64::MAX),
        Alert::enter("n", Value::Int(1), "price", 5.0, 4.0, 0.0),
    ] {
        assert!(matches!(idx.add(bad), Err(AlertError::BadNumber(_))));
    }
    assert_eq!(idx.len(), 1);
}

#[test]
fn keys_and_fields_are_separate() {
    let mut idx = LevelIndex::new();
    idx.add(Alert::above("k1", Value::Int(1), "price", 10.0, 0.0)).unwrap();
    idx.add(Alert::above("k2", Value::Str(cep_core::Sym::new("AAPL")), "price", 10.0, 0.0)).unwrap();
    idx.add(Alert::above("vol", Value::Int(1), "vol", 10.0, 0.0)).unwrap();
    let mut fired = Vec::new();
    for (field, key, v) in [
        ("price", Value::Int(1), 5),
        ("vol", Value::Int(1), 5),
        ("price", Value::Str(cep_core::Sym::new("AAPL")), 5),
        ("price", Value::Int(1), 15),
        ("price", Value::Str(cep_core::Sym::new("AAPL")), 15),
        ("other", Value::Int(1), 15),
    ] {
        idx.update_named(field, key, Value::Int(v), 0, 0, |f| fired.push(f.id.to_owned()));
    }
    assert_eq!(fired, ["k1", "k2"]);
}

/// One step of a random scenario.
#[derive(Clone, Debug)]
enum Op {
    Value { key: i64, field: usize, v: i64 },
    Add { id: usize, key: i64, field: usize, dir: usize, a: i64, b: i64, band: i64 },
    Remove { id: usize },
}

const FIELDS: [&str; 2] = ["price", "vol"];

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0i64..3, 0usize..2, -6i64..=6).prop_map(|(key, field, v)| Op::Value { key, field, v }),
        2 => (0usize..40, 0i64..3, 0usize..2, 0usize..4, 0i64..40, 0i64..40, 0i64..6)
            .prop_map(|(id, key, field, dir, a, b, band)| Op::Add { id, key, field, dir, a, b, band }),
        1 => (0usize..40).prop_map(|id| Op::Remove { id }),
    ]
}

/// Runs the ops on both indexes (values as a random walk per key and field,
/// levels and bands on the same small grid, so ties and exact touches are
/// common) and compares what fires at each value and every alert's state.
fn check(ops: &[Op], bulk: bool) -> Result<(), TestCaseError> {
    let mut idx = LevelIndex::new();
    let mut scan = ScanIndex::new();
    let mut walk = std::collections::HashMap::new();
    let mut pending = Vec::new();
    for (row, op) in ops.iter().enumerate() {
        match *op {
            Op::Value { key, field, v } => {
                if bulk && !pending.is_empty() {
                    let batch: Vec<Alert> = std::mem::take(&mut pending);
                    let r = idx.add_all(batch.iter().cloned());
                    let mut expect = Ok(());
                    for a in batch {
                        if let Err(e) = scan.add(a) {
                            expect = Err(e);
                        }
                    }
                    // A batch with a duplicate adds nothing: undo the others in the scan.
                    if expect.is_err() {
                        prop_assert!(r.is_err());
                        return Ok(()); // states now differ by design; stop this case
                    }
                    prop_assert_eq!(r, Ok(()));
                }
                let x = walk.entry((key, field)).or_insert(20i64);
                *x += v;
                let value = if row % 3 == 0 { Value::Float(*x as f64) } else { Value::Int(*x) };
                let (mut a, mut b) = (Vec::new(), Vec::new());
                idx.update_named(FIELDS[field], Value::Int(key), value, row as i64, row as u64, |f| {
                    a.push((f.id.to_owned(), f.direction, f.row))
                });
                scan.update(FIELDS[field], Value::Int(key), value, row as i64, row as u64, |f| {
                    b.push((f.id.to_owned(), f.direction, f.row))
                });
                a.sort();
                b.sort();
                prop_assert_eq!(a, b, "row {}", row);
            }
            Op::Add { id, key, field, dir, a, b, band } => {
                let (lo, hi) = (a.min(b) as f64, a.max(b) as f64);
                let (id, key, field, band) = (format!("x{id}"), Value::Int(key), FIELDS[field], band as f64);
                let alert = match dir {
                    0 => Alert::above(id, key, field, a as f64, band),
                    1 => Alert::below(id, key, field, a as f64, band),
                    2 => Alert::enter(id, key, field, lo, hi, band),
                    _ => Alert::exit(id, key, field, lo, hi, band),
                };
                if bulk {
                    pending.push(alert);
                } else {
                    prop_assert_eq!(idx.add(alert.clone()), scan.add(alert));
                }
            }
            Op::Remove { id } => {
                if bulk {
                    continue;
                }
                let id = format!("x{id}");
                prop_assert_eq!(idx.remove(&id), scan.remove(&id));
            }
        }
        for id in 0..40 {
            let id = format!("x{id}");
            if !bulk || pending.iter().all(|a| a.id != id) {
                prop_assert_eq!(idx.state(&id), scan.state(&id), "state of {} after row {}", id, row);
            }
        }
    }
    Ok(())
}

fn cases() -> u32 {
    std::env::var("CEP_PROPTEST_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(1000)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    #[test]
    fn index_equals_scan_with_adds_and_removes(ops in prop::collection::vec(op(), 0..120)) {
        check(&ops, false)?;
    }

    #[test]
    fn index_equals_scan_with_bulk_adds(ops in prop::collection::vec(op(), 0..120)) {
        check(&ops, true)?;
    }

    /// Big jumps over many alerts of one key: the summary bits and the
    /// cursor's gallop, far from the last value.
    #[test]
    fn index_equals_scan_on_wild_values(levels in prop::collection::vec((0i64..2000, 0usize..4, 0i64..50), 1..300),
                                        values in prop::collection::vec(-100i64..2100, 1..200)) {
        let mut idx = LevelIndex::new();
        let mut scan = ScanIndex::new();
        for (i, &(l, dir, band)) in levels.iter().enumerate() {
            let (id, key, l, band) = (format!("a{i}"), Value::Int(0), l as f64, band as f64);
            let alert = match dir {
                0 => Alert::above(id, key, "price", l, band),
                1 => Alert::below(id, key, "price", l, band),
                2 => Alert::enter(id, key, "price", l, l + 100.0, band),
                _ => Alert::exit(id, key, "price", l, l + 100.0, band),
            };
            idx.add(alert.clone()).unwrap();
            scan.add(alert).unwrap();
        }
        for (row, &v) in values.iter().enumerate() {
            let (mut a, mut b) = (Vec::new(), Vec::new());
            idx.update_named("price", Value::Int(0), Value::Int(v), 0, row as u64, |f| a.push(f.id.to_owned()));
            scan.update("price", Value::Int(0), Value::Int(v), 0, row as u64, |f| b.push(f.id.to_owned()));
            a.sort();
            b.sort();
            prop_assert_eq!(a, b, "row {}", row);
        }
    }
}
