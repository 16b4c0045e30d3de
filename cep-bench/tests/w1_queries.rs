//! The W1 stream through the text-compiled rise_spike query and through the
//! same pattern built with closures: both give the stream's 450 matches.

use cep_bench::w1::{self, RISE_SPIKE, Ticks};
use cep_core::{Event, Match, Sym};
use cep_nfa::compile::{Options, compile};
use cep_nfa::engine::Engine;

fn text_matches(n: usize) -> Vec<Match> {
    let mut schema = w1::schema();
    let prog = compile(RISE_SPIKE, &mut schema, &Options::default()).unwrap().programs.remove(0);
    let mut engine = Engine::new(prog);
    let mut e = Event::default();
    let tick = Sym::new("Tick");
    let mut out = Vec::new();
    for t in Ticks::new(n) {
        w1::fill(&mut e, &t, tick);
        engine.push(&e).unwrap();
        out.extend(engine.drain());
    }
    engine.finish();
    out.extend(engine.drain());
    assert_eq!(engine.stats().nodes, 0);
    out
}

fn builder_matches(n: usize) -> Vec<Match> {
    let mut engine = Engine::new(w1::rise_spike_builder());
    let mut out = Vec::new();
    for t in Ticks::new(n) {
        engine.push(&t).unwrap();
        out.extend(engine.drain());
    }
    engine.finish();
    out.extend(engine.drain());
    out
}

#[test]
fn text_and_builder_agree_on_w1() {
    let n = 600_000;
    let a = text_matches(n);
    let b = builder_matches(n);
    assert!(!a.is_empty());
    assert_eq!(a, b);
}

#[test]
fn w1_has_450_rise_spike_matches() {
    let m = text_matches(w1::TICKS);
    assert_eq!(m.len(), 450);
    // Every match: a rise, then a spike within 60 s, ended by a 10 s quiet period.
    // ts = 2 * row: start is the rise's ts, end the spike's ts plus 10 s.
    for x in &m {
        assert_eq!(x.rows.len(), 2);
        assert_eq!(x.start, 2 * x.rows[0] as i64);
        assert_eq!(x.end, 2 * x.rows[1] as i64 + 10_000);
        assert!(x.end - x.start <= 70_000, "{x:?}");
    }
}
