//! The W2–W4 generators: they follow their documented specs (re-derived
//! here from the text), their CSV reads back as the events `fill` builds,
//! and the compiled queries agree with the reference matcher on prefixes.

use cep_bench::w1::XorShift64;
use cep_bench::{levels, w1, w2, w3, w4};
use cep_core::{Event, Schema, TimeUnit, Value};
use cep_io::{Format, Reader};
use cep_nfa::compile::{Options, compile};
use cep_nfa::engine::Engine;
use cep_nfa::reference;

fn read_csv(bytes: &[u8]) -> Vec<Event> {
    let mut r = Reader::new(bytes, "test.csv", Format::Csv).unwrap();
    let mut out = Vec::new();
    let mut e = Event::default();
    while r.next_event(&mut e).unwrap() {
        out.push(e.clone());
    }
    out
}

fn engine_rows(query: &str, mut schema: Schema, events: &[Event]) -> Vec<(Value, i64, i64, Vec<u64>)> {
    let prog = compile(query, &mut schema, &Options::default()).unwrap().programs.remove(0);
    let mut engine = Engine::new(prog);
    let mut out = Vec::new();
    for e in events {
        engine.push(e).unwrap();
        out.extend(engine.drain());
    }
    engine.finish();
    out.extend(engine.drain());
    assert_eq!(engine.stats().nodes, 0);
    out.into_iter().map(|m| (m.key, m.start, m.end, m.rows)).collect()
}

fn reference_rows(query: &str, schema: &Schema, events: &[Event]) -> Vec<(Value, i64, i64, Vec<u64>)> {
    let file = cep_nfa::syntax::parse(query).unwrap();
    reference::run(&file.statements[0], events, schema, TimeUnit::default())
        .into_iter()
        .map(|m| (m.key, m.start, m.end, m.vars.concat()))
        .collect()
}

fn w2_events(kind: w2::Kind, n: usize) -> Vec<Event> {
    let types = w2::type_syms();
    w2::Events::new(kind, n)
        .map(|w| {
            let mut e = Event::default();
            w2::fill(&mut e, &w, &types);
            e
        })
        .collect()
}

fn w3_events(n: usize) -> Vec<Event> {
    let types = w3::type_syms();
    w3::Events::new(n)
        .map(|w| {
            let mut e = Event::default();
            w3::fill(&mut e, &w, &types);
            e
        })
        .collect()
}

fn w4_events(n: usize) -> Vec<Event> {
    let syms = w4::Syms::new();
    w4::Trades::new(n)
        .map(|t| {
            let mut e = Event::default();
            w4::fill(&mut e, &t, &syms);
            e
        })
        .collect()
}

#[test]
fn generators_follow_their_specs() {
    // W2 uniform: one draw per event, "ABCD"[rnd % 4].
    let mut rng = XorShift64::default();
    for (i, e) in w2::Events::uniform(5000).enumerate() {
        assert_eq!((e.row, e.ts), (i as u64, i as i64));
        assert_eq!(e.type_name(), ["A", "B", "C", "D"][(rng.next_u64() % 4) as usize]);
    }
    // W3: one draw per event, of nine types.
    let mut rng = XorShift64::default();
    let names = ["AA", "AB", "AC", "N1", "N2", "N3", "N4", "N5", "N6"];
    for e in w3::Events::new(5000) {
        assert_eq!(e.type_name(), names[(rng.next_u64() % 9) as usize]);
    }
    // W4: symbol, move, (step), volume.
    let mut rng = XorShift64::default();
    let mut prices = [1000i64; 2];
    for t in w4::Trades::new(20_000) {
        let s = (rng.next_u64() % 2) as usize;
        let m = rng.next_u64() % 100;
        if m < 70 {
            prices[s] += 1 + (rng.next_u64() % 3) as i64;
        } else if m < 85 {
            prices[s] -= 1 + (rng.next_u64() % 3) as i64;
        }
        let volume = (rng.next_u64() % 1000) as i64;
        assert_eq!((t.symbol as usize, t.price, t.volume, t.ts), (s, prices[s], volume, t.row as i64));
    }
    // W1b levels: a fresh W1 generator, key-major.
    let mut rng = XorShift64::default();
    let alerts = levels::alerts(3, 100);
    for (j, a) in alerts.iter().enumerate() {
        assert_eq!(a.id, format!("k{}_{}", j / 100, j % 100));
        assert_eq!(a.key, Value::Int((j / 100) as i64));
        assert_eq!(a.trigger, cep_index::Trigger::Above((9000 + rng.next_u64() % 2000) as f64));
    }
}

#[test]
fn csv_reads_back_as_filled_events() {
    let n = 3000;
    let mut buf = Vec::new();
    w2::write_csv(&mut buf, n).unwrap();
    assert_eq!(read_csv(&buf), w2_events(w2::Kind::Uniform, n));
    for kind in w2::Kind::ALL {
        buf.clear();
        w2::write_csv_of(&mut buf, kind, n).unwrap();
        assert_eq!(read_csv(&buf), w2_events(kind, n), "{}", kind.name());
    }
    buf.clear();
    w3::write_csv(&mut buf, n).unwrap();
    assert_eq!(read_csv(&buf), w3_events(n));
    buf.clear();
    w4::write_csv(&mut buf, n).unwrap();
    assert!(buf.starts_with(b"type,ts,symbol,price,volume\nStock,0,S"));
    assert_eq!(read_csv(&buf), w4_events(n));
    buf.clear();
    w1::write_csv(&mut buf, n).unwrap();
    let tick = cep_core::Sym::new("Tick");
    let want: Vec<Event> = w1::Ticks::new(n)
        .map(|t| {
            let mut e = Event::default();
            w1::fill(&mut e, &t, tick);
            e
        })
        .collect();
    assert_eq!(read_csv(&buf), want);
    buf.clear();
    levels::write_csv(&mut buf, 2, 3).unwrap();
    let text = String::from_utf8(buf.clone()).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "id,key,field,direction,level,band");
    assert_eq!(lines.len(), 7);
    assert!(lines[4].starts_with("k1_0,1,price,above,"), "{}", lines[4]);
}

#[test]
fn w2_queries_match_the_reference() {
    for kind in w2::Kind::ALL {
        let events = w2_events(kind, 300);
        for (query, name) in [(w2::seq_abd(40), "abd"), (w2::seq_abdc(40), "abdc")] {
            let want = reference_rows(&query, &w2::schema(), &events);
            // Only the uniform stream has C events.
            assert!(!want.is_empty() || (name == "abdc" && kind != w2::Kind::Uniform), "{} {name}", kind.name());
            assert_eq!(engine_rows(&query, w2::schema(), &events), want, "{} {name}", kind.name());
        }
    }
}

#[test]
fn w3_query_matches_the_reference() {
    let events = w3_events(2000);
    let want = reference_rows(w3::QUERY, &w3::schema(), &events);
    assert!(want.len() > 100, "{}", want.len());
    assert_eq!(engine_rows(w3::QUERY, w3::schema(), &events), want);
}

#[test]
fn w4_query_matches_the_reference() {
    let events = w4_events(6000);
    let want = reference_rows(w4::QUERY, &w4::schema(), &events);
    assert!(!want.is_empty());
    assert!(want.iter().all(|m| m.3.len() >= 2));
    assert_eq!(engine_rows(w4::QUERY, w4::schema(), &events), want);
}

#[test]
fn w4_full_stream_match_count() {
    let events = w4_events(w4::EVENTS);
    assert_eq!(engine_rows(w4::QUERY, w4::schema(), &events).len(), w4::MATCHES);
}
