//! The baselines against the general engines: the hand-written and the
//! naive rise / spike engines give exactly the compiled query's matches, in
//! its order; the two-BTreeMap level index fires exactly as `LevelIndex`.

use cep_bench::baseline::levels::TwoBTreeMaps;
use cep_bench::baseline::naive::Naive;
use cep_bench::baseline::rise_spike::HandWritten;
use cep_bench::w1::{self, RISE_SPIKE, Tick, Ticks, XorShift64};
use cep_core::{Event, Match, Sym, Value};
use cep_index::{Alert, AlertState, LevelIndex};
use cep_nfa::compile::{Options, compile};
use cep_nfa::engine::Engine;

fn engine_matches(ticks: impl Iterator<Item = Tick>) -> Vec<Match> {
    let mut schema = w1::schema();
    let prog = compile(RISE_SPIKE, &mut schema, &Options::default()).unwrap().programs.remove(0);
    let mut engine = Engine::new(prog);
    let mut e = Event::default();
    let tick = Sym::new("Tick");
    let mut out = Vec::new();
    for t in ticks {
        w1::fill(&mut e, &t, tick);
        engine.push(&e).unwrap();
        out.extend(engine.drain());
    }
    engine.finish();
    out.extend(engine.drain());
    out
}

fn hand_written_matches(ticks: impl Iterator<Item = Tick>) -> Vec<Match> {
    let mut hw = HandWritten::new();
    let mut out = Vec::new();
    for t in ticks {
        hw.push(&t);
        out.extend(hw.drain());
    }
    hw.finish();
    out.extend(hw.drain());
    assert_eq!(hw.partials(), 0);
    out
}

fn naive_matches(ticks: impl Iterator<Item = Tick>) -> Vec<Match> {
    let mut n = Naive::new();
    let mut out = Vec::new();
    for t in ticks {
        n.push(&t);
        out.extend(n.drain());
    }
    n.finish();
    out.extend(n.drain());
    out
}

#[test]
fn hand_written_equals_engine_on_first_million_ticks() {
    let want = engine_matches(Ticks::new(1_000_000));
    let got = hand_written_matches(Ticks::new(1_000_000));
    assert!(want.len() > 100, "{}", want.len());
    assert_eq!(got, want);
}

#[test]
fn hand_written_equals_engine_on_full_w1() {
    let want = engine_matches(Ticks::new(w1::TICKS));
    assert_eq!(want.len(), 450);
    // Through `push_event`, from the same events the engine reads.
    let tick = Sym::new("Tick");
    let mut e = Event::default();
    let mut hw = HandWritten::with_keys(w1::KEYS);
    let mut got = Vec::new();
    for t in Ticks::new(w1::TICKS) {
        w1::fill(&mut e, &t, tick);
        hw.push_event(&e);
        got.extend(hw.drain());
    }
    hw.finish();
    got.extend(hw.drain());
    assert_eq!(hw.matches(), 450);
    assert_eq!(got, want);
}

#[test]
fn naive_equals_engine_on_w1_prefix() {
    let n = 200_000;
    let want = engine_matches(Ticks::new(n));
    assert!(want.len() >= 20, "{}", want.len());
    assert_eq!(naive_matches(Ticks::new(n)), want);
}

/// A dense stream: few keys, frequent rises, spikes and reversals, equal
/// timestamps, ticks of one key close together — many waiting rises per
/// key, spikes completing several at once, several quiet periods per key,
/// reversals killing candidates, rises expiring.
fn dense_ticks(seed_skip: usize, n: usize, keys: u64) -> Vec<Tick> {
    let mut rng = XorShift64::default();
    for _ in 0..seed_skip {
        rng.next_u64();
    }
    let mut prices = vec![10_000i64; keys as usize];
    let mut ts = 0i64;
    (0..n as u64)
        .map(|row| {
            ts += (rng.next_u64() % 4) as i64 * 1000; // 0 to 3 s, ties included
            let key = rng.next_u64() % keys;
            let p = &mut prices[key as usize];
            *p = match rng.next_u64() % 10 {
                0..=2 => *p * 103 / 100, // a rise
                3..=4 => *p * 97 / 100,  // a reversal
                _ => *p + (rng.next_u64() % 21) as i64 - 10,
            }
            .clamp(1000, 100_000);
            let vol = if rng.next_u64() % 6 == 0 { 2000 } else { 10 };
            Tick { row, ts, key: key as i64, price: *p, vol }
        })
        .collect()
}

#[test]
fn all_three_agree_on_dense_streams() {
    let mut total = 0;
    for (i, keys) in [1u64, 2, 3, 5, 8].into_iter().enumerate() {
        let ticks = dense_ticks(i * 7919, 20_000, keys);
        let want = engine_matches(ticks.iter().copied());
        assert_eq!(hand_written_matches(ticks.iter().copied()), want, "hand-written, {keys} keys");
        assert_eq!(naive_matches(ticks.iter().copied()), want, "naive, {keys} keys");
        total += want.len();
    }
    assert!(total > 1000, "{total}");
}

#[test]
fn hand_written_handles_keys_outside_the_dense_range() {
    let shift = |k: i64| if k % 2 == 0 { -k - 1 } else { k + (1 << 40) };
    let ticks: Vec<Tick> = dense_ticks(17, 20_000, 6).into_iter().map(|t| Tick { key: shift(t.key), ..t }).collect();
    let want = engine_matches(ticks.iter().copied());
    assert!(!want.is_empty());
    assert_eq!(hand_written_matches(ticks.iter().copied()), want);
}

// ---- level alerts ----

fn random_alerts(rng: &mut XorShift64, keys: i64, per_key: usize, tag: &str) -> Vec<Alert> {
    let mut v = Vec::new();
    for key in 0..keys {
        for i in 0..per_key {
            let above = rng.next_u64() % 2 == 0;
            let level = 900.0 + (rng.next_u64() % 200) as f64 + if rng.next_u64() % 3 == 0 { 0.5 } else { 0.0 };
            let band = [0.0, 1.0, 5.0, 12.5][(rng.next_u64() % 4) as usize];
            let field = if rng.next_u64() % 4 == 0 { "vol" } else { "price" };
            let id = format!("{tag}{key}_{i}");
            v.push(if above {
                Alert::above(id, Value::Int(key), field, level, band)
            } else {
                Alert::below(id, Value::Int(key), field, level, band)
            });
        }
    }
    v
}

#[test]
fn two_btreemaps_fire_as_level_index_on_random_walks() {
    let mut rng = XorShift64::default();
    let keys = 7;
    let mut a = LevelIndex::new();
    let mut b = TwoBTreeMaps::new();
    for al in random_alerts(&mut rng, keys, 40, "a") {
        a.add(al.clone()).unwrap();
        b.add(al).unwrap();
    }
    let mut values = vec![1000i64; keys as usize * 2];
    let mut total = 0;
    for row in 0..60_000u64 {
        // Add and remove alerts while running.
        if row % 5000 == 2500 {
            for al in random_alerts(&mut rng, keys, 5, &format!("r{row}_")) {
                a.add(al.clone()).unwrap();
                b.add(al).unwrap();
            }
            for key in 0..keys {
                let id = format!("a{key}_{}", row / 5000);
                assert_eq!(a.remove(&id), b.remove(&id));
            }
        }
        let key = (rng.next_u64() % keys as u64) as i64;
        let field_i = (rng.next_u64() % 2) as usize;
        let v = &mut values[key as usize * 2 + field_i];
        *v += (rng.next_u64() % 41) as i64 - 20 + if rng.next_u64() % 50 == 0 { 60 } else { 0 };
        *v = (*v).clamp(850, 1150);
        // Sometimes a float value, sometimes a NULL.
        let value = match rng.next_u64() % 20 {
            0 => Value::Float(*v as f64 + 0.5),
            1 => Value::Null,
            _ => Value::Int(*v),
        };
        let field = ["price", "vol"][field_i];
        let (mut fa, mut fb) = (Vec::new(), Vec::new());
        let own = |f: &cep_index::Fire<'_>| (f.id.to_owned(), f.key, f.ts, f.row, f.value, f.direction);
        a.update_named(field, Value::Int(key), value, row as i64, row, |f| fa.push(own(f)));
        b.update(Value::Int(key), field, value, row as i64, row, |f| fb.push(own(f)));
        fa.sort_by(|x, y| x.0.cmp(&y.0));
        fb.sort_by(|x, y| x.0.cmp(&y.0));
        assert_eq!(fa, fb, "row {row}");
        total += fa.len();
    }
    assert!(total > 5_000, "{total}");
    eprintln!("{total} fires");
    assert_eq!(a.len(), b.len());
    for key in 0..keys {
        for i in 0..40 {
            let id = format!("a{key}_{i}");
            assert_eq!(a.state(&id).map(|s| s == AlertState::Armed), b.is_armed(&id), "{id}");
        }
    }
}

#[test]
fn two_btreemaps_fire_as_level_index_on_w1b_prefix() {
    // W1b on 500 keys (50,000 alerts) and the ticks of those keys.
    let alerts = cep_bench::levels::alerts(500, 100);
    let mut a = LevelIndex::new();
    let mut b = TwoBTreeMaps::new();
    for al in alerts {
        a.add(al.clone()).unwrap();
        b.add(al).unwrap();
    }
    let (mut na, mut nb) = (0usize, 0usize);
    for t in Ticks::new(1_000_000).filter(|t| t.key < 500) {
        let (mut fa, mut fb) = (Vec::new(), Vec::new());
        a.update_named("price", Value::Int(t.key), Value::Int(t.price), t.ts, t.row, |f| fa.push(f.id.to_owned()));
        b.update(Value::Int(t.key), "price", Value::Int(t.price), t.ts, t.row, |f| fb.push(f.id.to_owned()));
        fa.sort();
        fb.sort();
        assert_eq!(fa, fb);
        na += fa.len();
        nb += fb.len();
    }
    assert_eq!(na, nb);
    assert!(na > 1000, "{na}");
}
