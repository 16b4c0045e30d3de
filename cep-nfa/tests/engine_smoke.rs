//! Hand-written cases from LANGUAGE.md §7 and DESIGN.md §2.3, run on the engine.

use cep_core::{Event, Match, Schema, Sym, Value};
use cep_nfa::compile::{Options, compile};
use cep_nfa::engine::Engine;

/// Events from `(type, ts, [(field, value)])`.
fn events(schema: &mut Schema, spec: &[(&str, i64, &[(&str, i64)])]) -> Vec<Event> {
    spec.iter()
        .enumerate()
        .map(|(row, (ty, ts, fields))| {
            let mut vals = vec![];
            for (name, v) in fields.iter() {
                let id = schema.field(name) as usize;
                if vals.len() <= id {
                    vals.resize(id + 1, Value::Null);
                }
                vals[id] = Value::Int(*v);
            }
            Event::new(Sym::new(ty), *ts, row as u64, vals)
        })
        .collect()
}

fn run(query: &str, evs: &[Event], schema: &mut Schema) -> Vec<Match> {
    let prog = compile(query, schema, &Options::default()).unwrap_or_else(|d| panic!("{}", d.render(query, "q")));
    let mut engine = Engine::new(prog.programs.into_iter().next().unwrap());
    let mut out = vec![];
    for e in evs {
        engine.push(e).unwrap();
        out.extend(engine.drain());
    }
    engine.finish();
    out.extend(engine.drain());
    assert_eq!(engine.stats().nodes, 0, "buffer empty at the end");
    out
}

const RISE_SPIKE: &str = "QUERY rise_spike
PATTERN SEQ(Tick r, Tick s WITHIN 60 s, NOT Tick v WITHIN 10 s)
WHERE skip-till-next-match
  AND [key]
  AND r.price * 100 >= PREV(r.price) * 102
  AND s.vol >= 1000
  AND v.price * 100 <= s.price * 99
SELECT EARLIEST;";

fn ticks(schema: &mut Schema, extra: Option<(i64, i64, i64)>, spike_ts: i64) -> Vec<Event> {
    let mut spec: Vec<(i64, i64, i64)> =
        vec![(0, 10000, 10), (1000, 10250, 10), (spike_ts, 10260, 5000), (40000, 10270, 10)];
    if let Some(x) = extra {
        spec.push(x);
    }
    spec.sort_by_key(|t| t.0);
    let owned: Vec<(String, i64, Vec<(&str, i64)>)> =
        spec.iter().map(|(ts, p, v)| ("Tick".to_string(), *ts, vec![("key", 1), ("price", *p), ("vol", *v)])).collect();
    let refs: Vec<(&str, i64, &[(&str, i64)])> =
        owned.iter().map(|(t, ts, f)| (t.as_str(), *ts, f.as_slice())).collect();
    events(schema, &refs)
}

#[test]
fn rise_spike_examples() {
    let mut schema = Schema::new();
    let evs = ticks(&mut schema, None, 21000);
    let m = run(RISE_SPIKE, &evs, &mut schema);
    assert_eq!(m.len(), 1, "{m:?}");
    assert_eq!((m[0].key, m[0].start, m[0].end), (Value::Int(1), 1000, 31000));
    assert_eq!(m[0].rows, [1, 2]);

    let evs = ticks(&mut schema, Some((25000, 10100, 10)), 21000);
    assert!(run(RISE_SPIKE, &evs, &mut schema).is_empty());

    let evs = ticks(&mut schema, None, 70000);
    assert!(run(RISE_SPIKE, &evs, &mut schema).is_empty());
}

#[test]
fn aggregated_link_example_has_seven_matches() {
    let mut schema = Schema::new();
    let spec: Vec<(&str, i64, &[(&str, i64)])> =
        vec![("A", 1, &[]), ("B", 3, &[]), ("A", 4, &[]), ("D", 5, &[]), ("B", 6, &[]), ("D", 7, &[]), ("D", 9, &[])];
    let evs = events(&mut schema, &spec);
    let m = run("PATTERN SEQ(A a, B b, D d) WHERE skip-till-any-match WITHIN 9", &evs, &mut schema);
    let mut got: Vec<Vec<u64>> = m.iter().map(|m| m.rows.clone()).collect();
    got.sort();
    assert_eq!(
        got,
        vec![vec![0, 1, 3], vec![0, 1, 5], vec![0, 1, 6], vec![0, 4, 5], vec![0, 4, 6], vec![2, 4, 5], vec![2, 4, 6],]
    );
}
