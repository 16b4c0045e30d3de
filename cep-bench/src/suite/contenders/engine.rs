//! Contenders that run the engines directly: a query's text on the engine
//! `Auto` picks or a forced one, the stack engine's visiting and counting
//! modes, the typed builder and the hand-written baselines over ticks.

use std::rc::Rc;

use cep_core::{Event, Schema};
use cep_nfa::compile::{Options, compile};
use cep_nfa::engine::{Engine, StreamEvent};
use cep_nfa::program::Program;
use cep_nfa::select::{EngineChoice, QueryEngine};
use cep_nfa::stack::{Construction, MatchCount, MatchRef, StackEngine};

use crate::baseline::naive::Naive;
use crate::baseline::rise_spike::HandWritten;
use crate::suite::digest::{Tally, measure};
use crate::suite::streams::Stream;
use crate::suite::{Contender, Partials, Pass};
use crate::w1::{self, Tick};

/// The one statement of `query`, compiled (the workloads' queries are valid).
pub(crate) fn compile_one(query: &str, schema: &mut Schema) -> Program<Event> {
    compile(query, schema, &Options::default())
        .unwrap_or_else(|e| panic!("the query does not compile: {e:?}"))
        .programs
        .remove(0)
}

/// A contender that compiles `query` afresh for every pass and runs `pass`
/// on the program and the first `n` events of `stream`.
pub(crate) fn text_contender(
    name: &'static str,
    query: String,
    schema: fn() -> Schema,
    stream: Rc<Stream<Event>>,
    pass: impl Fn(Program<Event>, &[Event], bool) -> Pass + Copy + 'static,
) -> Contender {
    Contender::new(name, move |n| {
        let events = stream.get(n);
        let query = query.clone();
        Box::new(move |check| pass(compile_one(&query, &mut schema()), &events[..n], check))
    })
}

/// The stack engine with matches taken as borrowed [`MatchRef`]s (no
/// allocation per match), building them as `construction` says.
pub(crate) fn stack_visit(
    name: &'static str,
    query: String,
    schema: fn() -> Schema,
    stream: Rc<Stream<Event>>,
    construction: Construction,
) -> Contender {
    text_contender(name, query, schema, stream, move |prog, events, check| {
        let mut engine = StackEngine::new(prog, construction).expect("the query qualifies");
        measure(events.len(), check, |tally| {
            let mut visit = |m: &MatchRef<'_>| tally.add_ref(m);
            for e in events {
                engine.push_to(e, &mut visit).expect("events in time order");
            }
            let stats = engine.stats();
            engine.finish_to(&mut visit);
            let live = stats.runs + stats.pending;
            Some(Partials { live, bytes_each: stats.state_bytes.checked_div(live).unwrap_or(0) })
        })
    })
}

/// The stack engine in counting mode: per event, the number of matches
/// ending at it, without enumerating them.
pub(crate) fn stack_count(
    name: &'static str,
    query: String,
    schema: fn() -> Schema,
    stream: Rc<Stream<Event>>,
) -> Contender {
    text_contender(name, query, schema, stream, |prog, events, check| {
        let mut engine = StackEngine::new(prog, Construction::PerEvent).expect("the query qualifies");
        measure(events.len(), check, |tally| {
            let mut visit = |c: &MatchCount| tally.add_count(c);
            for e in events {
                engine.push_count(e, &mut visit).expect("events in time order");
            }
            engine.finish_count(&mut visit);
            None
        })
    })
}

/// Pushes `events` through `engine`, taking every match, then finishes it.
pub(crate) fn engine_pass<E: StreamEvent>(engine: &mut QueryEngine<E>, events: &[E], check: bool) -> Pass {
    measure(events.len(), check, |tally| {
        // Batches, as the runtime hands them to an engine: the run engine
        // looks a batch's partitions up ahead of processing it.
        for batch in events.chunks(ENGINE_BATCH) {
            engine.push_batch(batch).map_err(|(_, late)| late).expect("events in time order");
            while let Some(m) = engine.pop() {
                tally.add(&m);
            }
        }
        let stats = engine.stats();
        engine.finish();
        while let Some(m) = engine.pop() {
            tally.add(&m);
        }
        Some(Partials { live: stats.partials(), bytes_each: stats.bytes_per_partial() })
    })
}

/// Events an engine contender is given at a time (`push_batch`): the
/// engine's lookahead covers 8, and matches are taken after each batch, so
/// that match-heavy queries (W2) do not queue many events' worth of them.
pub(crate) const ENGINE_BATCH: usize = 8;

/// `cep`: the engine compiled from query text, over an event stream.
pub(crate) fn cep_text(
    name: &'static str,
    query: String,
    schema: fn() -> Schema,
    stream: Rc<Stream<Event>>,
) -> Contender {
    cep_text_on(name, query, schema, stream, EngineChoice::Run, Construction::PerEvent)
}

/// [`cep_text`] on the engine `choice` gives the query.
pub(crate) fn cep_text_on(
    name: &'static str,
    query: String,
    schema: fn() -> Schema,
    stream: Rc<Stream<Event>>,
    choice: EngineChoice,
    construction: Construction,
) -> Contender {
    text_contender(name, query, schema, stream, move |prog, events, check| {
        let mut engine = QueryEngine::new(prog, choice, construction).expect("the engine runs the query");
        engine_pass(&mut engine, events, check)
    })
}

pub(crate) fn cep_builder(ticks: Rc<Stream<Tick>>) -> Contender {
    Contender::new("cep (builder)", move |n| {
        let ticks = ticks.get(n);
        Box::new(move |check| {
            let mut engine = QueryEngine::Run(Engine::new(w1::rise_spike_builder()));
            engine_pass(&mut engine, &ticks[..n], check)
        })
    })
}

/// The rise / spike baselines' common interface.
pub(crate) trait TickEngine {
    fn push(&mut self, t: &Tick);
    fn finish(&mut self);
    fn take(&mut self, tally: &mut Tally);
}

macro_rules! tick_engine {
    ($t:ty) => {
        impl TickEngine for $t {
            #[inline]
            fn push(&mut self, t: &Tick) {
                <$t>::push(self, t)
            }
            fn finish(&mut self) {
                <$t>::finish(self)
            }
            #[inline]
            fn take(&mut self, tally: &mut Tally) {
                for m in self.drain() {
                    tally.add(&m);
                }
            }
        }
    };
}

tick_engine!(HandWritten);
tick_engine!(Naive);

pub(crate) fn tick_baseline<B: TickEngine + 'static>(
    name: &'static str,
    make: fn() -> B,
    ticks: Rc<Stream<Tick>>,
) -> Contender {
    Contender::new(name, move |n| {
        let ticks = ticks.get(n);
        Box::new(move |check| {
            let mut b = make();
            measure(n, check, |tally| {
                for t in &ticks[..n] {
                    b.push(t);
                    b.take(tally);
                }
                b.finish();
                b.take(tally);
                None
            })
        })
    })
}
