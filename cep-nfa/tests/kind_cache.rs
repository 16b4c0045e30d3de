//! The engine remembers the type tests' answers per kind of event (the
//! type's symbol number) in a small direct-mapped cache. Types whose numbers
//! share a place in it must still get their own answers: a stream that
//! alternates three such types, under a query with an element, a middle
//! `NOT` and a trailing `NOT` on them, gives the reference matcher's
//! matches.

use cep_core::{Event, Schema, Sym, TimeUnit, Value};
use cep_nfa::compile::{Options, compile_file};
use cep_nfa::reference;
use cep_nfa::syntax::parse;
use cep_testkit::XorShift64;
use cep_testkit::drive::run_engine;

/// Three new type names whose symbol numbers are equal modulo 16 (the
/// cache's size), and one that differs.
fn colliding_types() -> ([String; 3], String) {
    let mut by_place: Vec<Vec<String>> = vec![Vec::new(); 16];
    let mut other = None;
    for i in 0.. {
        let name = format!("Kc{i}");
        let place = Sym::new(&name).index() as usize % 16;
        by_place[place].push(name);
        if let Some(group) = by_place.iter().find(|g| g.len() == 3) {
            let place = Sym::new(&group[0]).index() as usize % 16;
            let other = other.get_or_insert_with(|| {
                by_place.iter().enumerate().find(|(p, g)| *p != place && !g.is_empty()).map(|(_, g)| g[0].clone())
            });
            if let Some(other) = other.clone() {
                return ([group[0].clone(), group[1].clone(), group[2].clone()], other);
            }
        }
    }
    unreachable!()
}

#[test]
fn types_sharing_a_cache_place_get_their_own_answers() {
    let ([a, b, c], d) = colliding_types();
    let query =
        format!("PATTERN SEQ({a} x, NOT {c} n, {b} y, NOT {d} z WITHIN 5) WHERE [k] AND y.v > x.v SELECT ALL\n");
    let mut schema = Schema::new();
    let (k, v) = (schema.field("k"), schema.field("v"));
    let file = parse(&query).expect("parses");
    let prog = compile_file(&file, &mut schema, &Options::default()).expect("compiles").programs.remove(0);
    let types = [&a, &b, &c, &d];
    let mut next = XorShift64::default().into_fn();
    let events: Vec<Event> = (0..400u64)
        .map(|row| {
            let r = next();
            let ty = types[(r % 7).min(3) as usize % 4];
            let mut fields = vec![Value::Null; 2];
            fields[k as usize] = Value::Int((r >> 8) as i64 % 3);
            fields[v as usize] = Value::Int((r >> 16) as i64 % 10);
            Event::new(Sym::new(ty), row as i64 * 2, row, fields)
        })
        .collect();
    let got = run_engine(prog, &events).expect("in order");
    let want = reference::run(&file.statements[0], &events, &schema, TimeUnit::Millis);
    assert!(!want.is_empty(), "the stream has matches");
    assert_eq!(got, want);
}
