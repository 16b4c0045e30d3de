//! The macro workloads of DESIGN.md §3 as data, for `cargo xtask bench`.
//!
//! A [`Workload`] has a name, a one-line description, a [`Target`], a
//! stream [`Size`] (full and `--quick`), what its rates are compared with
//! (a [`Baseline`]) and its [`Contender`]s. A contender prepares a
//! [`PassFn`] for a stream of `n` events — generating the stream (once per
//! process, shared by the contenders that read it) and anything else that
//! is setup — and each call of the pass function then runs one measured
//! pass from fresh state over the in-memory stream: generation, CSV parsing,
//! compiling the query and building an index are outside the timed loop;
//! pushing every event, taking every match, and the end of the input
//! (`finish`) are inside. A [`Pass`] reports events, matches, seconds and
//! the allocations made during the timed loop (counted when the binary
//! installs [`crate::alloc::Counting`]).
//!
//! With `check` set, a pass also folds every match into a [`Pass::digest`]:
//! a hash of the multiset of `(key, start, end, rows, ends)` (for level
//! alerts, of `(row, alert id)`), computed without the process-local
//! symbol numbering, so that two contenders — or two processes — with the
//! same matches have the same digest. The harness compares them; timed
//! passes run without `check` and only count.
//!
//! ```
//! use cep_bench::suite::{self, Scale};
//! let all = suite::workloads(Scale::Quick);
//! let w1a = all.iter().find(|w| w.name == "W1a").unwrap();
//! assert_eq!(w1a.contenders.iter().map(|c| c.name).collect::<Vec<_>>(), ["cep", "cep (builder)", "hand-written"]);
//! let mut cep = w1a.contenders[0].prepare(20_000);
//! let mut hw = w1a.contenders[2].prepare(20_000);
//! let (a, b) = (cep(true), hw(true));
//! assert_eq!((a.events, a.matches, a.digest), (b.events, b.matches, b.digest));
//! ```

use std::cell::RefCell;
use std::fmt;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::io::{self, Write};
use std::rc::Rc;
use std::time::{Duration, Instant};

use cep_core::{Event, Match, Schema, Sym, Value};
use cep_index::{Alert, FieldRef, Fire, LevelIndex};
use cep_nfa::compile::{Options, compile};
use cep_nfa::engine::{Engine, StreamEvent};
use cep_nfa::program::Program;
use cep_nfa::select::{EngineChoice, QueryEngine};
use cep_nfa::stack::{Construction, MatchCount, MatchRef, StackEngine};
use cep_runtime::shard::ShardedRunner;

use crate::baseline::levels::TwoBTreeMaps;
use crate::baseline::naive::Naive;
use crate::baseline::rise_spike::HandWritten;
use crate::baseline::timers::{LazyHeap, Timers, Tree, Wheel};
use crate::w1::{self, Tick};
use crate::w2::{self, Kind};
use crate::{levels, w3, w4};

/// Full sizes or the small `--quick` ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    /// The sizes of the table in the README.
    Full,
    /// Small sizes: the whole suite in well under two minutes.
    Quick,
}

/// A stream size (events) per [`Scale`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Size {
    /// Events of a full run.
    pub full: usize,
    /// Events of a `--quick` run.
    pub quick: usize,
}

impl Size {
    /// The size at `scale`.
    pub fn at(self, scale: Scale) -> usize {
        match scale {
            Scale::Full => self.full,
            Scale::Quick => self.quick,
        }
    }
}

/// What a workload's rates are divided by in the "ratio" column.
#[derive(Clone, Debug, PartialEq)]
pub enum Baseline {
    /// The median events/s of this contender of the workload.
    Contender(&'static str),
    /// A fixed rate in events/s, measured elsewhere (W4: SASE 1.0).
    Rate {
        /// Events per second.
        events_per_sec: f64,
        /// Where the number comes from.
        label: &'static str,
    },
    /// No baseline yet.
    None,
}

/// A target of DESIGN.md §3: its text and its check.
#[derive(Clone, Debug, PartialEq)]
pub struct Target {
    /// As the table shows it, e.g. `≥ 0.5× hand-written (aim 0.8×)`.
    pub text: String,
    /// How a row is checked against it.
    pub check: Check,
}

/// The check of a [`Target`], applied to every contender of the workload
/// but the baseline contender.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Check {
    /// Nothing to check (reported only).
    None,
    /// The ratio to the baseline is at least this.
    RatioAtLeast(f64),
    /// The median rate is at least this many events/s.
    EventsPerSecAtLeast(f64),
    /// The named contender's ratio to the baseline is at least this (the
    /// other contenders are reported only).
    ContenderRatioAtLeast(&'static str, f64),
}

impl Check {
    /// Whether a row with this median rate and ratio meets the target;
    /// `None` when there is nothing to check.
    pub fn holds(self, contender: &str, events_per_sec: f64, ratio: Option<f64>) -> Option<bool> {
        match self {
            Check::None => None,
            Check::ContenderRatioAtLeast(name, min) => (name == contender).then(|| ratio.is_some_and(|r| r >= min)),
            Check::RatioAtLeast(min) => ratio.map(|r| r >= min),
            Check::EventsPerSecAtLeast(min) => Some(events_per_sec >= min),
        }
    }
}

/// A point of a series on the W2 chart: the query and stream, and the window.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// E.g. `SEQ(A,B,D) uniform`.
    pub name: String,
    /// The window (time units = rows).
    pub window: i64,
    /// The aggregated-link paper's batch / per-event ratio here, if it
    /// reports one.
    pub paper: Option<f64>,
}

/// Live partial matches of an engine at the end of the stream (before
/// `finish`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Partials {
    /// Runs and pending matches.
    pub live: usize,
    /// Bytes of matching state per live partial match.
    pub bytes_each: usize,
}

/// What it cost to register a workload's standing queries (level alerts)
/// before the stream: reported beside the events/s.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Setup {
    /// Queries registered.
    pub items: u64,
    /// Wall-clock seconds to register them.
    pub seconds: f64,
    /// Heap bytes the structure holds afterwards (live bytes of the counting
    /// allocator; 0 when it is not installed).
    pub bytes: u64,
}

/// One measured pass.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pass {
    /// Events pushed.
    pub events: u64,
    /// Matches (for level alerts: fires).
    pub matches: u64,
    /// The multiset digest of the matches, when the pass was asked to check.
    pub digest: Option<u64>,
    /// Wall-clock seconds of the timed loop.
    pub seconds: f64,
    /// Allocations (`alloc` + `realloc`) during the timed loop.
    pub allocations: u64,
    /// The engine's partial matches at the end of the stream, if it tells.
    pub partials: Option<Partials>,
    /// Registering standing queries, for workloads that have them.
    pub setup: Option<Setup>,
    /// Event-to-match latency, for paced workloads.
    pub latency: Option<Latency>,
}

/// Event-to-match latency of a pass fed at a fixed rate: per match, the
/// wall time from the push of the event that completes it to its output
/// line reaching the caller's writer.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Latency {
    /// Events per second the stream was paced at.
    pub rate: f64,
    /// Matches measured (those completed by an event of the stream; not
    /// those only `finish` completes).
    pub matches: u64,
    /// Median latency, seconds.
    pub p50: f64,
    /// 99th percentile (nearest rank), seconds.
    pub p99: f64,
    /// The largest, seconds.
    pub max: f64,
}

/// One measured pass per call: `check` asks for the digest.
pub type PassFn = Box<dyn FnMut(bool) -> Pass>;

type Prepare = Box<dyn Fn(usize) -> PassFn>;

/// An engine (or baseline) of a workload.
pub struct Contender {
    /// As the table shows it.
    pub name: &'static str,
    prepare: Prepare,
}

impl Contender {
    /// A contender whose `prepare(n)` returns the pass function for a
    /// stream of `n` events.
    pub fn new(name: &'static str, prepare: impl Fn(usize) -> PassFn + 'static) -> Contender {
        Contender { name, prepare: Box::new(prepare) }
    }

    /// Generates (or reuses) the first `n` events of the stream and returns
    /// the pass function.
    pub fn prepare(&self, n: usize) -> PassFn {
        (self.prepare)(n)
    }
}

impl fmt::Debug for Contender {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Contender").field("name", &self.name).finish_non_exhaustive()
    }
}

/// A macro workload.
#[derive(Debug)]
pub struct Workload {
    /// E.g. `W1a`, `W2 abd w500`.
    pub name: String,
    /// One line: what runs, on what, and any reduction from DESIGN.md.
    pub description: String,
    /// Stream sizes.
    pub size: Size,
    /// The size at the scale the suite was made for.
    pub events: usize,
    /// The ratio column's reference.
    pub baseline: Baseline,
    /// DESIGN.md §3's target.
    pub target: Target,
    /// The number of matches the stream is known to have, if known.
    pub expect: Option<u64>,
    /// Where the workload sits on the W2 chart.
    pub series: Option<Series>,
    /// The engines measured, each over the same stream.
    pub contenders: Vec<Contender>,
}

impl Workload {
    /// The contender called `name`.
    pub fn contender(&self, name: &str) -> Option<&Contender> {
        self.contenders.iter().find(|c| c.name == name)
    }
}

// ---------------------------------------------------------------------------
// Counting and digests.

/// Counts matches; when checking, folds each into a multiset digest.
#[derive(Debug)]
struct Tally {
    check: bool,
    matches: u64,
    digest: u64,
}

impl Tally {
    #[inline]
    fn add(&mut self, m: &Match) {
        self.matches += 1;
        if self.check {
            self.digest = self.digest.wrapping_add(match_digest(m));
        }
    }

    /// As [`add`](Self::add), for a borrowed stack-engine match (same digest).
    #[inline]
    fn add_ref(&mut self, m: &MatchRef<'_>) {
        self.matches += 1;
        if self.check {
            self.digest = self.digest.wrapping_add(digest_parts(&m.key, m.start, m.end, m.rows, &ENDS[..m.rows.len()]));
        }
    }

    /// One output line (its text digests the same whatever order lines come in).
    #[inline]
    fn add_line(&mut self, line: &str) {
        self.matches += 1;
        if self.check {
            let mut h = DefaultHasher::new();
            line.hash(&mut h);
            self.digest = self.digest.wrapping_add(h.finish());
        }
    }

    /// An event read (W5's parsing rows): counted as a match, its row, `ts`,
    /// type and fields digested.
    #[inline]
    fn add_event(&mut self, e: &Event) {
        self.matches += 1;
        if self.check {
            let mut h = DefaultHasher::new();
            (e.row, e.ts, e.ty.as_str()).hash(&mut h);
            e.fields.iter().for_each(|v| hash_value(v, &mut h));
            self.digest = self.digest.wrapping_add(h.finish());
        }
    }

    /// Every line of `out` (JSON lines), as [`add_line`](Self::add_line).
    fn add_output(&mut self, out: &[u8]) {
        for line in String::from_utf8_lossy(out).lines() {
            self.add_line(line);
        }
    }

    /// Counting mode: `c.count` matches ending at one event.
    #[inline]
    fn add_count(&mut self, c: &MatchCount) {
        self.matches += u64::try_from(c.count).unwrap_or(u64::MAX);
        if self.check {
            let mut h = DefaultHasher::new();
            hash_value(&c.key, &mut h);
            (c.row, c.count).hash(&mut h);
            self.digest = self.digest.wrapping_add(h.finish());
        }
    }

    #[inline]
    fn add_timer(&mut self, deadline: i64, value: u32) {
        self.matches += 1;
        if self.check {
            let mut h = DefaultHasher::new();
            (deadline, value).hash(&mut h);
            self.digest = self.digest.wrapping_add(h.finish());
        }
    }

    #[inline]
    fn add_fire(&mut self, f: &Fire<'_>) {
        self.matches += 1;
        if self.check {
            let mut h = DefaultHasher::new();
            (f.row, f.id).hash(&mut h);
            self.digest = self.digest.wrapping_add(h.finish());
        }
    }
}

/// Hashes a value by content (a string by its text, not its symbol number).
fn hash_value(v: &Value, h: &mut impl Hasher) {
    match v {
        Value::Null => 0u8.hash(h),
        Value::Int(x) => (1u8, x).hash(h),
        Value::Float(x) => (2u8, x.to_bits()).hash(h),
        Value::Bool(b) => (3u8, b).hash(h),
        Value::Str(s) => (4u8, s.as_str()).hash(h),
    }
}

/// `Match::ends` of a match with one event per variable: 1, 2, 3, …
const ENDS: [u32; 64] = {
    let mut a = [0; 64];
    let mut i = 0;
    while i < 64 {
        a[i] = i as u32 + 1;
        i += 1;
    }
    a
};

/// The digest of one match: `(key, start, end, rows, ends)`.
pub fn match_digest(m: &Match) -> u64 {
    digest_parts(&m.key, m.start, m.end, &m.rows, &m.ends)
}

/// [`match_digest`] of a match given by its parts (a borrowed stack-engine
/// match digests like the owned one).
fn digest_parts(key: &Value, start: i64, end: i64, rows: &[u64], ends: &[u32]) -> u64 {
    let mut h = DefaultHasher::new();
    hash_value(key, &mut h);
    (start, end, rows, ends).hash(&mut h);
    h.finish()
}

/// Runs `body` as the timed loop of a pass over `events` events.
fn measure(events: usize, check: bool, body: impl FnOnce(&mut Tally) -> Option<Partials>) -> Pass {
    let mut tally = Tally { check, matches: 0, digest: 0 };
    let before = crate::alloc::counts();
    let start = Instant::now();
    let partials = body(&mut tally);
    let seconds = start.elapsed().as_secs_f64();
    let allocations = crate::alloc::counts().since(before).allocations();
    Pass {
        events: events as u64,
        matches: tally.matches,
        digest: check.then_some(tally.digest),
        seconds,
        allocations,
        partials,
        setup: None,
        latency: None,
    }
}

// ---------------------------------------------------------------------------
// Streams, generated once per process and shared.

/// A lazily generated stream: the longest prefix asked for so far.
struct Stream<T> {
    cached: RefCell<Option<Rc<Vec<T>>>>,
    generate: Box<dyn Fn(usize) -> Vec<T>>,
}

impl<T> Stream<T> {
    fn new(generate: impl Fn(usize) -> Vec<T> + 'static) -> Rc<Stream<T>> {
        Rc::new(Stream { cached: RefCell::new(None), generate: Box::new(generate) })
    }

    /// At least the first `n` items (slice with `[..n]`).
    fn get(&self, n: usize) -> Rc<Vec<T>> {
        let mut c = self.cached.borrow_mut();
        if let Some(v) = c.as_ref().filter(|v| v.len() >= n) {
            return v.clone();
        }
        let v = Rc::new((self.generate)(n));
        *c = Some(v.clone());
        v
    }
}

/// Events built from generated items by a `fill` function.
fn events_of<T>(items: impl Iterator<Item = T>, mut fill: impl FnMut(&mut Event, &T)) -> Vec<Event> {
    items
        .map(|t| {
            let mut e = Event::default();
            fill(&mut e, &t);
            e
        })
        .collect()
}

struct Streams {
    ticks: Rc<Stream<Tick>>,
    w1: Rc<Stream<Event>>,
    w2: [Rc<Stream<Event>>; 3],
    w3: Rc<Stream<Event>>,
    w4: Rc<Stream<Event>>,
}

impl Streams {
    fn new() -> Streams {
        let w2 = |kind: Kind| {
            Stream::new(move |n| {
                let types = w2::type_syms();
                events_of(w2::Events::new(kind, n), |e, w| w2::fill(e, w, &types))
            })
        };
        Streams {
            ticks: Stream::new(|n| w1::Ticks::new(n).collect()),
            w1: Stream::new(|n| {
                let tick = Sym::new("Tick");
                events_of(w1::Ticks::new(n), |e, t| w1::fill(e, t, tick))
            }),
            w2: Kind::ALL.map(w2),
            w3: Stream::new(|n| {
                let types = w3::type_syms();
                events_of(w3::Events::new(n), |e, w| w3::fill(e, w, &types))
            }),
            w4: Stream::new(|n| {
                let syms = w4::Syms::new();
                events_of(w4::Trades::new(n), |e, t| w4::fill(e, t, &syms))
            }),
        }
    }

    fn w2(&self, kind: Kind) -> Rc<Stream<Event>> {
        self.w2[Kind::ALL.iter().position(|&k| k == kind).expect("a W2 kind")].clone()
    }
}

// ---------------------------------------------------------------------------
// Contenders.

/// The one statement of `query`, compiled (the workloads' queries are valid).
fn compile_one(query: &str, schema: &mut Schema) -> Program<Event> {
    compile(query, schema, &Options::default())
        .unwrap_or_else(|e| panic!("the query does not compile: {e:?}"))
        .programs
        .remove(0)
}

/// A contender that compiles `query` afresh for every pass and runs `pass`
/// on the program and the first `n` events of `stream`.
fn text_contender(
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
fn stack_visit(
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
fn stack_count(name: &'static str, query: String, schema: fn() -> Schema, stream: Rc<Stream<Event>>) -> Contender {
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
fn engine_pass<E: StreamEvent>(engine: &mut QueryEngine<E>, events: &[E], check: bool) -> Pass {
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
const ENGINE_BATCH: usize = 8;

/// `cep`: the engine compiled from query text, over an event stream.
fn cep_text(name: &'static str, query: String, schema: fn() -> Schema, stream: Rc<Stream<Event>>) -> Contender {
    cep_text_on(name, query, schema, stream, EngineChoice::Run, Construction::PerEvent)
}

/// [`cep_text`] on the engine `choice` gives the query.
fn cep_text_on(
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

fn cep_builder(ticks: Rc<Stream<Tick>>) -> Contender {
    Contender::new("cep (builder)", move |n| {
        let ticks = ticks.get(n);
        Box::new(move |check| {
            let mut engine = QueryEngine::Run(Engine::new(w1::rise_spike_builder()));
            engine_pass(&mut engine, &ticks[..n], check)
        })
    })
}

/// The rise / spike baselines' common interface.
trait TickEngine {
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

fn tick_baseline<B: TickEngine + 'static>(name: &'static str, make: fn() -> B, ticks: Rc<Stream<Tick>>) -> Contender {
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

/// The level indexes' common interface.
trait Levels: Default {
    fn add_all(&mut self, alerts: &[Alert]);
    fn update(&mut self, t: &Tick, fire: impl FnMut(&Fire<'_>));
}

/// `cep-index` as the runtime uses it: alerts registered in bulk, the
/// watched field resolved once.
#[derive(Debug, Default)]
struct Indexed {
    idx: LevelIndex,
    price: Option<FieldRef>,
}

impl Levels for Indexed {
    fn add_all(&mut self, alerts: &[Alert]) {
        self.idx.add_all(alerts.iter().cloned()).expect("valid alerts");
        self.price = self.idx.field(levels::FIELD);
    }

    #[inline]
    fn update(&mut self, t: &Tick, fire: impl FnMut(&Fire<'_>)) {
        if let Some(price) = self.price {
            self.idx.update(price, Value::Int(t.key), Value::Int(t.price), t.ts, t.row, fire)
        }
    }
}

impl Levels for TwoBTreeMaps {
    fn add_all(&mut self, alerts: &[Alert]) {
        for a in alerts {
            self.add(a.clone()).expect("valid alerts");
        }
    }

    #[inline]
    fn update(&mut self, t: &Tick, fire: impl FnMut(&Fire<'_>)) {
        TwoBTreeMaps::update(self, Value::Int(t.key), levels::FIELD, Value::Int(t.price), t.ts, t.row, fire)
    }
}

fn level_contender<L: Levels + 'static>(
    name: &'static str,
    alerts: Rc<Stream<Alert>>,
    count: usize,
    ticks: Rc<Stream<Tick>>,
) -> Contender {
    Contender::new(name, move |n| {
        let ticks = ticks.get(n);
        let alerts = alerts.get(count);
        Box::new(move |check| {
            let (live, start) = (crate::alloc::counts().live, Instant::now());
            let mut idx = L::default();
            idx.add_all(&alerts[..count]);
            let setup = Setup {
                items: count as u64,
                seconds: start.elapsed().as_secs_f64(),
                bytes: crate::alloc::counts().live.saturating_sub(live),
            };
            let pass = measure(n, check, |tally| {
                for t in &ticks[..n] {
                    idx.update(t, |f| tally.add_fire(f));
                }
                None
            });
            Pass { setup: Some(setup), ..pass }
        })
    })
}

// ---------------------------------------------------------------------------
// The suite.

const W1A_SIZE: Size = Size { full: w1::TICKS, quick: 300_000 };
const NAIVE_SIZE: Size = Size { full: 300_000, quick: 300_000 };
const W1B_SIZE: Size = Size { full: w1::TICKS, quick: 300_000 };
/// Alerts per key of W1b: DESIGN.md's 100, or 10 in `--quick`.
const W1B_PER_KEY: Size = Size { full: levels::PER_KEY, quick: 10 };
const W2_ABD_SIZE: Size = Size { full: 2_000, quick: 400 };
/// Counting mode runs on the paper's full stream.
const W2_COUNT_SIZE: Size = Size { full: w2::EVENTS, quick: 2_000 };
const W2_ABDC_SIZE: Size = Size { full: 300, quick: 150 };
const W3_SIZE: Size = Size { full: w3::EVENTS, quick: 100_000 };
const W4_SIZE: Size = Size { full: w4::EVENTS, quick: 100_000 };
const W1A_OOO_SIZE: Size = Size { full: w1::TICKS, quick: 300_000 };
/// W5's paced latency rows: 1 s at 1 M events/s (0.2 s in `--quick`).
const W5_LATENCY_SIZE: Size = Size { full: 1_000_000, quick: 200_000 };
/// Live timers of the W6 rows.
const W6_TIMERS: [Size; 3] =
    [Size { full: 4_096, quick: 4_096 }, Size { full: 65_536, quick: 65_536 }, Size { full: 1 << 20, quick: 1 << 18 }];
/// SASE 1.0 on W4 (DESIGN.md §3).
const SASE_EVENTS_PER_SEC: f64 = 150_000.0;

/// `3,000,000`.
pub fn thousands(n: usize) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The order W1a-ooo feeds the ticks in: 5 % of them held back by up to
/// 499 ms (a stable sort by `ts + hold`), so none is behind a 500 ms delay.
fn displaced_order(ticks: &[Tick]) -> Vec<u32> {
    let mut rng = w1::XorShift64::default();
    let mut keyed: Vec<(i64, u32)> = ticks
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let hold = if rng.next_u64() % 20 == 0 { (rng.next_u64() % 500) as i64 } else { 0 };
            (t.ts + hold, i as u32)
        })
        .collect();
    keyed.sort_by_key(|&(k, _)| k);
    keyed.into_iter().map(|(_, i)| i).collect()
}

/// `cep run`'s path without parsing: the runner with `--max-delay 500`
/// (reorder buffer, watermark, late policy) over the W1 ticks in the given
/// order (`None`: as generated), each filled into one reused `Event` row.
fn cep_runner(name: &'static str, displaced: bool, ticks: Rc<Stream<Tick>>) -> Contender {
    Contender::new(name, move |n| {
        let ticks = ticks.get(n);
        let order: Vec<u32> = if displaced { displaced_order(&ticks[..n]) } else { (0..n as u32).collect() };
        Box::new(move |check| {
            let mut runner = rise_spike_runner();
            runner.set_max_delay(500);
            let tick = Sym::new("Tick");
            let mut e = Event::default();
            measure(n, check, |tally| {
                let mut sink = |_: &cep_runtime::QueryInfo, m: &Match| tally.add(m);
                for &i in &order {
                    w1::fill(&mut e, &ticks[i as usize], tick);
                    runner.push(&e, &mut sink).expect("no event is late");
                }
                runner.finish(&mut sink).expect("no output to fail");
                None
            })
        })
    })
}

/// W5: rise_spike through the runtime on `threads` threads (one: the
/// runner; more: the sharded runtime) over the W1 ticks filled into one
/// reused `Event` row (no parsing); matches are the JSON lines written.
fn runtime_contender(name: &'static str, threads: usize, ticks: Rc<Stream<Tick>>) -> Contender {
    Contender::new(name, move |n| {
        let ticks = ticks.get(n);
        Box::new(move |check| {
            let mut out = Vec::new();
            measure(n, check, |tally| {
                runtime_output(&ticks[..n], threads, &mut out);
                tally.add_output(&out);
                None
            })
        })
    })
}

/// `ticks` through rise_spike on `threads` threads through the library's
/// front door, [`Runtime`](cep_runtime::runtime::Runtime) (a job the caller
/// pushes events to: one thread, the runner on this thread; more, the keys
/// shared between this thread and `threads - 1` workers), each tick filled
/// into one reused `Event` row (no parsing); its JSON lines appended to
/// `out`. What W5 times, and its examples too.
pub fn runtime_output(ticks: &[Tick], threads: usize, out: &mut Vec<u8>) {
    use cep_runtime::runtime::{Output, Runtime};
    let lines = std::sync::Arc::new(parking_lot::Mutex::new(std::mem::take(out)));
    let mut rt = Runtime::builder()
        .schema(w1::schema())
        .query(w1::RISE_SPIKE)
        .threads(threads.max(1))
        .build(Output::Writer(Box::new(SharedBytes(lines.clone()))))
        .expect("rise_spike compiles");
    let (mut e, tick) = (Event::default(), Sym::new("Tick"));
    for t in ticks {
        w1::fill(&mut e, t, tick);
        rt.push(&e).expect("events in order");
    }
    rt.finish().expect("no output to fail");
    *out = std::mem::take(&mut *lines.lock());
}

/// Bytes written through a lock, for an output that must be `'static`.
struct SharedBytes(std::sync::Arc<parking_lot::Mutex<Vec<u8>>>);

impl Write for SharedBytes {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.lock().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// `ticks` through rise_spike on `shards` shard threads, each with its
/// keys, the calling thread only ordering and routing
/// ([`ShardedRunner::new`]): the runtime's other split, for comparison.
pub fn sharded_output(ticks: &[Tick], shards: usize, out: &mut Vec<u8>) {
    let runners = (0..shards).map(|_| rise_spike_runner()).collect();
    sharded_pass(ShardedRunner::new(cep_runtime::Runner::new(Vec::new()), runners), ticks, out);
}

/// `ticks` through `r` (each filled into one reused `Event` row), its
/// output appended to `out`.
pub fn sharded_pass(mut r: ShardedRunner, ticks: &[Tick], out: &mut Vec<u8>) {
    let (mut e, tick) = (Event::default(), Sym::new("Tick"));
    for t in ticks {
        w1::fill(&mut e, t, tick);
        r.push(&e, out).expect("events in order");
    }
    r.finish(out).expect("no output to fail");
}

/// A runner of W1's rise_spike query.
pub fn rise_spike_runner() -> cep_runtime::Runner {
    let progs = compile(w1::RISE_SPIKE, &mut w1::schema(), &Options::default()).expect("rise_spike compiles").programs;
    cep_runtime::Runner::new(progs)
}

/// What two threads could give here at best without parsing: the ticks
/// split by key in two, each half run by its own one-thread runner on its
/// own thread at the same time (no routing, no channel).
fn runtime_split_contender(name: &'static str, ticks: Rc<Stream<Tick>>) -> Contender {
    Contender::new(name, move |n| {
        let ticks = ticks.get(n);
        let halves: [Vec<Tick>; 2] =
            [0, 1].map(|half| ticks[..n].iter().filter(|t| t.key.rem_euclid(2) == half).copied().collect());
        Box::new(move |check| {
            measure(n, check, |tally| {
                let outs = std::thread::scope(|scope| {
                    let run = |half: &[Tick]| {
                        let mut out = Vec::new();
                        runtime_output(half, 1, &mut out);
                        out
                    };
                    let threads: Vec<_> = halves.iter().map(|h| scope.spawn(move || run(h))).collect();
                    threads.into_iter().map(|t| t.join().expect("a runner thread")).collect::<Vec<_>>()
                });
                for out in &outs {
                    tally.add_output(out);
                }
                None
            })
        })
    })
}

/// The `cep` binary: `CEP_BIN`, or `cep` beside the running executable (or
/// one directory up, for a test binary in `target/*/deps`).
pub fn cep_binary() -> Option<std::path::PathBuf> {
    if let Some(p) = std::env::var_os("CEP_BIN") {
        return Some(p.into());
    }
    let me = std::env::current_exe().ok()?;
    let name = format!("cep{}", std::env::consts::EXE_SUFFIX);
    me.ancestors().skip(1).take(2).map(|d| d.join(&name)).find(|p| p.is_file())
}

/// A scratch directory, removed with everything in it when dropped.
struct Scratch(std::path::PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// W5 through the binary: `cep run --threads N` on a CSV of the first
/// `n` W1 ticks (written by the contender's preparation), its matches read
/// back from `--out`; the pass times the whole process.
/// `cep run` with `--threads N`, or without the flag (`None`: a thread per
/// core), and with the `extra` arguments (`--parallel`).
fn cli_contender(name: &'static str, threads: Option<usize>, extra: &'static [&'static str]) -> Contender {
    Contender::new(name, move |n| {
        let tag = name.replace(|c: char| !c.is_ascii_alphanumeric(), "-");
        let (scratch, csv) = w1_csv(&format!("w5-cli-{tag}"), n);
        let (query, out) = (scratch.0.join("q.cep"), scratch.0.join("out.jsonl"));
        std::fs::write(&query, w1::RISE_SPIKE).expect("the query");
        let cep = cep_binary().expect("the cep binary beside this one (cargo build --release -p cep-cli)");
        if threads != Some(1) {
            // Which split ran, and why (`--parallel auto` decides by timing
            // the rows read ahead, so a busy host can change its choice): a
            // line on stderr beside the table.
            let mut probe = cep_run(&cep, threads, &query, &csv, &out);
            let probe = probe.args(extra).arg("--stats").stderr(std::process::Stdio::piped()).output();
            if let Ok(o) = probe {
                let text = String::from_utf8_lossy(&o.stderr);
                if let Some(split) = text.lines().find_map(|l| l.strip_prefix("stats: threads: ")) {
                    eprintln!("note: W5-cli {name} ran {split}");
                }
            }
        }
        Box::new(move |check| {
            let _ = &scratch; // removed with the pass function
            measure(n, check, |tally| {
                let status = cep_run(&cep, threads, &query, &csv, &out).args(extra).status().expect("cep runs");
                assert!(status.success(), "cep run failed: {status}");
                for line in std::fs::read_to_string(&out).expect("the output").lines() {
                    add_cli_line(tally, line, None);
                }
                None
            })
        })
    })
}

/// A scratch directory named after `tag` holding the CSV of the first `n`
/// W1 ticks (`w1.csv`), and that file's path.
fn w1_csv(tag: &str, n: usize) -> (Scratch, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!("cep-bench-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    let csv = dir.join("w1.csv");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&csv).expect("the CSV"));
    w1::write_csv(&mut f, n).and_then(|()| f.flush()).expect("write the CSV");
    (Scratch(dir), csv)
}

/// W5's parsing alone: the CSV of the first `n` W1 ticks read to its end
/// into events, no query (every event tallied as a match). One thread: a
/// [`Reader`](cep_io::Reader) on the file, as `cep run --threads 1`
/// reads it. More: a [`ParallelReader`](cep_io::parallel::ParallelReader)
/// with `threads - 1` parser threads, the calling thread taking every event
/// in order and parsing whenever it waits for a block (`cep run` on shards
/// parses the same blocks, split by shard, on the shards).
fn parse_contender(name: &'static str, threads: usize) -> Contender {
    Contender::new(name, move |n| {
        let (scratch, csv) = w1_csv(&format!("w5-parse-{threads}"), n);
        Box::new(move |check| {
            let _ = &scratch; // removed with the pass function
            measure(n, check, |tally| {
                read_events(&csv, threads, |e| tally.add_event(e));
                None
            })
        })
    })
}

/// Every event of the CSV file at `path`, read on `threads` threads (see
/// [`parse_contender`]), handed to `each` in input order.
fn read_events(path: &std::path::Path, threads: usize, mut each: impl FnMut(&Event)) {
    use cep_io::read::EventSource;
    let file = std::fs::File::open(path).expect("the CSV");
    let mut head = cep_io::Reader::new(io::BufReader::new(file), "w1.csv", cep_io::Format::Csv).expect("a header");
    let mut rest = (threads > 1).then(|| {
        cep_io::parallel::ParallelReader::open(path, &head, head.position(), threads - 1, None).expect("reopened")
    });
    let source: &mut dyn EventSource = match &mut rest {
        Some(rest) => rest,
        None => &mut head,
    };
    let mut e = Event::default();
    while source.next_event(&mut e).expect("a good row") {
        each(&e);
    }
}

/// `cep run` of `query` on `csv` into `out` (with `--threads` if given),
/// its stderr dropped.
fn cep_run(
    cep: &std::path::Path,
    threads: Option<usize>,
    query: &std::path::Path,
    csv: &std::path::Path,
    out: &std::path::Path,
) -> std::process::Command {
    let mut command = std::process::Command::new(cep);
    command.arg("run");
    if let Some(t) = threads {
        command.args(["--threads", &t.to_string()]);
    }
    command.arg("--query").arg(query).arg("--events").arg(csv).arg("--out").arg(out);
    command.stderr(std::process::Stdio::null());
    command
}

/// What two threads could give here at best: the W1 CSV split by key into
/// two files, each run by its own `cep run --threads 1` at the same time —
/// sharding with no routing, nothing shared but the machine. (Its matches
/// tally as the whole file's: rows mapped back, see [`add_cli_line`].)
fn split_contender(name: &'static str) -> Contender {
    Contender::new(name, move |n| {
        let dir = std::env::temp_dir().join(format!("cep-bench-w5-split-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a scratch directory");
        let mut whole = Vec::new();
        w1::write_csv(&mut whole, n).expect("the CSV in memory");
        let text = String::from_utf8(whole).expect("ASCII");
        let mut lines = text.lines();
        let header = lines.next().expect("a header");
        let key_at = header.split(',').position(|c| c == "key").expect("a key column");
        // Per half: its CSV, and the row in the whole file of each of its rows.
        let mut halves: [(String, Vec<u64>); 2] = Default::default();
        for (row, line) in lines.enumerate() {
            let key: i64 = line.split(',').nth(key_at).and_then(|k| k.parse().ok()).expect("an integer key");
            let half = &mut halves[key.rem_euclid(2) as usize];
            if half.0.is_empty() {
                half.0 = format!("{header}\n");
            }
            half.0.push_str(line);
            half.0.push('\n');
            half.1.push(row as u64);
        }
        let query = dir.join("q.cep");
        std::fs::write(&query, w1::RISE_SPIKE).expect("the query");
        let files: Vec<_> = halves
            .into_iter()
            .enumerate()
            .map(|(i, (csv, rows))| {
                let (path, out) = (dir.join(format!("half{i}.csv")), dir.join(format!("out{i}.jsonl")));
                std::fs::write(&path, if csv.is_empty() { "type,ts,key,price,vol\n" } else { &csv }).expect("a half");
                (path, out, rows)
            })
            .collect();
        let cep = cep_binary().expect("the cep binary beside this one (cargo build --release -p cep-cli)");
        let scratch = Scratch(dir);
        Box::new(move |check| {
            let _ = &scratch; // removed with the pass function
            measure(n, check, |tally| {
                let children: Vec<_> = files
                    .iter()
                    .map(|(csv, out, _)| cep_run(&cep, Some(1), &query, csv, out).spawn().expect("cep runs"))
                    .collect();
                for mut child in children {
                    let status = child.wait().expect("cep runs");
                    assert!(status.success(), "cep run failed: {status}");
                }
                for (_, out, rows) in &files {
                    for line in std::fs::read_to_string(out).expect("the output").lines() {
                        add_cli_line(tally, line, Some(rows));
                    }
                }
                None
            })
        })
    })
}

/// Tallies a `cep run` output line, its rows mapped through `rows` (a
/// file's row → the whole file's) and without its id (a function of the
/// rows), so that the key-split contender's two files tally as the whole
/// file does.
fn add_cli_line(tally: &mut Tally, line: &str, rows: Option<&[u64]>) {
    if !tally.check {
        return tally.add_line(line);
    }
    let mut m: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
    let map = m.as_object_mut().expect("an object");
    map.remove("id");
    if let (Some(rows), Some(vars)) = (rows, map.get_mut("vars").and_then(|v| v.as_object_mut())) {
        for bound in vars.values_mut().filter_map(|v| v.as_array_mut()) {
            for row in bound {
                *row = rows[row.as_u64().expect("a row") as usize].into();
            }
        }
    }
    tally.add_line(&m.to_string());
}

/// The name of W5's and W5-cli's ceiling contender: the keys split in two,
/// each half run on its own thread or process, nothing shared but the
/// machine. What two threads give on this host at that moment.
pub const CEILING: &str = "2 × 1 thread, keys split";

/// A W5 workload over `n` W1 ticks: one thread (the baseline) against
/// two. DESIGN.md §3 sets the 1.7× target on `cep run` (W5-cli); the
/// runtime fed without parsing (W5) is reported beside it.
fn w5(name: &str, description: String, n: usize, target: Target, contenders: Vec<Contender>) -> Workload {
    Workload {
        name: name.into(),
        description,
        size: W1A_OOO_SIZE,
        events: n,
        baseline: Baseline::Contender("1 thread"),
        target,
        expect: (n == w1::TICKS).then_some(450),
        series: None,
        contenders,
    }
}

/// A writer that keeps the bytes and when each write reached it.
#[derive(Debug)]
struct Stamped {
    start: Instant,
    bytes: Vec<u8>,
    /// Per write: the length of `bytes` after it, and its time since `start`.
    writes: Vec<(usize, Duration)>,
}

impl Write for Stamped {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.bytes.extend_from_slice(buf);
        self.writes.push((self.bytes.len(), self.start.elapsed()));
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// What [`paced_run`] gives.
#[derive(Debug)]
pub struct PacedRun {
    /// The output: one JSON line per match.
    pub out: Vec<u8>,
    /// Wall-clock seconds from the first push to the end of `finish`.
    pub seconds: f64,
    /// Latency of the matches completed by an event of the stream.
    pub latency: Latency,
}

/// W5's latency run: rise_spike over `ticks` through the runtime on
/// `threads` threads (one: the runner; more: the balanced runtime, its
/// partial batches sent after `flush_after` if given), each tick pushed at
/// its due time — tick `i` at `i / rate` seconds, by busy-waiting on the
/// wall clock (`rate` infinite: as fast as it goes). A rise_spike match
/// ends with its quiet period (`end`, no event), so the event that
/// completes it is the first tick after `end`; its latency is the time from
/// that tick's push to the write of the match's line.
pub fn paced_run(threads: usize, ticks: &[Tick], rate: f64, flush_after: Option<Duration>) -> PacedRun {
    let tick = Sym::new("Tick");
    let mut e = Event::default();
    let mut pushed = Vec::with_capacity(ticks.len());
    let start = Instant::now();
    let mut out = Stamped { start, bytes: Vec::new(), writes: Vec::new() };
    let pace = |i: usize| {
        let due = Duration::from_secs_f64(i as f64 / rate);
        while start.elapsed() < due {
            std::hint::spin_loop();
        }
        start.elapsed()
    };
    if threads == 1 {
        let mut r = rise_spike_runner();
        let mut sink = cep_runtime::JsonLines::new(&mut out);
        for (i, t) in ticks.iter().enumerate() {
            w1::fill(&mut e, t, tick);
            pushed.push(pace(i));
            r.push(&e, &mut sink).expect("events in order");
        }
        r.finish(&mut sink).expect("no output to fail");
    } else {
        let slices = (0..ShardedRunner::slices_for(threads)).map(|_| rise_spike_runner()).collect();
        let mut r = ShardedRunner::balanced(cep_runtime::Runner::new(Vec::new()), slices, threads - 1);
        if let Some(wait) = flush_after {
            r.set_flush_after(wait);
        }
        for (i, t) in ticks.iter().enumerate() {
            w1::fill(&mut e, t, tick);
            pushed.push(pace(i));
            r.push(&e, &mut out).expect("events in order");
        }
        r.finish(&mut out).expect("no output to fail");
    }
    let seconds = start.elapsed().as_secs_f64();
    let latency = latency(&out, &pushed, ticks, rate);
    PacedRun { out: out.bytes, seconds, latency }
}

/// The latency of each match line of `out` (see [`paced_run`]), summarised.
fn latency(out: &Stamped, pushed: &[Duration], ticks: &[Tick], rate: f64) -> Latency {
    let mut lat = Vec::new();
    let mut at = 0;
    for line in out.bytes.split_inclusive(|&b| b == b'\n') {
        at += line.len();
        let written = out.writes[out.writes.partition_point(|w| w.0 < at)].1;
        let end = json_int(line, "\"end\":").expect("a match line has an end");
        let completing = ticks.partition_point(|t| t.ts <= end);
        if let Some(&pushed) = pushed.get(completing) {
            lat.push(written.saturating_sub(pushed).as_secs_f64());
        }
    }
    lat.sort_by(f64::total_cmp);
    let rank = |p: f64| lat.get(((p * lat.len() as f64).ceil() as usize).max(1) - 1).copied().unwrap_or(f64::NAN);
    Latency { rate, matches: lat.len() as u64, p50: rank(0.5), p99: rank(0.99), max: rank(1.0) }
}

/// The integer after `key` in a JSON line.
fn json_int(line: &[u8], key: &str) -> Option<i64> {
    let text = std::str::from_utf8(line).ok()?;
    let rest = &text[text.find(key)? + key.len()..];
    let digits = rest.find(|c: char| !(c.is_ascii_digit() || c == '-')).unwrap_or(rest.len());
    rest[..digits].parse().ok()
}

/// The rate W5's latency rows are paced at.
pub const W5_LATENCY_RATE: f64 = 1e6;

/// W5 latency: [`paced_run`] at [`W5_LATENCY_RATE`]; events/s is the rate
/// achieved, matches the output lines.
fn latency_contender(name: &'static str, threads: usize, ticks: Rc<Stream<Tick>>) -> Contender {
    Contender::new(name, move |n| {
        let ticks = ticks.get(n);
        Box::new(move |check| {
            let mut paced = None;
            let pass = measure(n, check, |tally| {
                let run = paced_run(threads, &ticks[..n], W5_LATENCY_RATE, None);
                tally.add_output(&run.out);
                paced = Some((run.seconds, run.latency));
                None
            });
            let (seconds, latency) = paced.expect("the pass ran");
            Pass { seconds, latency: Some(latency), ..pass }
        })
    })
}

/// One W6 pass: arm `n` timers (deadlines uniform over 2^20), cancel every
/// other one, then advance the watermark in 64 steps past the last deadline.
/// Events = timers handled (each armed, then cancelled or fired); matches =
/// timers fired.
fn timer_pass<T: Timers + Default>(n: usize, check: bool) -> Pass {
    let mut rng = w1::XorShift64::default();
    let deadlines: Vec<i64> = (0..n).map(|_| (rng.next_u64() % (1 << 20)) as i64).collect();
    let mut handles = Vec::with_capacity(n);
    measure(n, check, |tally| {
        let mut t = T::default();
        for (i, &d) in deadlines.iter().enumerate() {
            handles.push(t.arm(d, i as u32));
        }
        for h in handles.iter().step_by(2) {
            t.cancel(*h);
        }
        for step in 1..=64i64 {
            t.advance(step << 14, &mut |d, v| tally.add_timer(d, v));
        }
        None
    })
}

fn timer_contender<T: Timers + Default + 'static>(name: &'static str) -> Contender {
    Contender::new(name, move |n| Box::new(move |check| timer_pass::<T>(n, check)))
}

/// All workloads, in table order, at `scale`.
pub fn workloads(scale: Scale) -> Vec<Workload> {
    let s = Streams::new();
    let mut out = Vec::new();

    // W1a: the compiled query against the hand-written engine.
    let n = W1A_SIZE.at(scale);
    out.push(Workload {
        name: "W1a".into(),
        description: format!(
            "rise_spike (LANGUAGE.md §7) over the first {} W1 ticks: the query compiled from text (Event rows), \
             the same pattern built with closures, and the hand-written engine (Tick structs)",
            thousands(n)
        ),
        size: W1A_SIZE,
        events: n,
        baseline: Baseline::Contender("hand-written"),
        target: Target { text: "≥ 0.5× hand-written (aim 0.8×)".into(), check: Check::RatioAtLeast(0.5) },
        expect: (n == w1::TICKS).then_some(450),
        series: None,
        contenders: vec![
            cep_text("cep", w1::RISE_SPIKE.into(), w1::schema, s.w1.clone()),
            cep_builder(s.ticks.clone()),
            tick_baseline("hand-written", || HandWritten::with_keys(w1::KEYS), s.ticks.clone()),
        ],
    });

    // The naive tier, on a prefix.
    let n = NAIVE_SIZE.at(scale);
    out.push(Workload {
        name: "W1a-naive".into(),
        description: format!(
            "rise_spike over the first {} W1 ticks: the naive tier (re-runs the pattern over each key's stored \
             window on every tick) against the compiled query, to show the gap (a key's 70 s window holds about \
             3.5 W1 ticks, so brute force stays cheap here)",
            thousands(n)
        ),
        size: NAIVE_SIZE,
        events: n,
        baseline: Baseline::Contender("naive"),
        target: Target { text: "— (shows the gap)".into(), check: Check::None },
        expect: None,
        series: None,
        contenders: vec![
            cep_text("cep", w1::RISE_SPIKE.into(), w1::schema, s.w1.clone()),
            tick_baseline("naive", Naive::new, s.ticks.clone()),
        ],
    });

    // W1a out of order: the runner with --max-delay 500, in order and displaced.
    let n = W1A_OOO_SIZE.at(scale);
    out.push(Workload {
        name: "W1a-ooo".into(),
        description: format!(
            "rise_spike through the runner with --max-delay 500 (reorder buffer) over the first {} W1 ticks, \
             as generated and with 5 % of them held back up to 499 ms; no parsing",
            thousands(n)
        ),
        size: W1A_OOO_SIZE,
        events: n,
        baseline: Baseline::Contender("in order"),
        target: Target { text: "— (report the ratio)".into(), check: Check::None },
        expect: (n == w1::TICKS).then_some(450),
        series: None,
        contenders: vec![
            cep_runner("in order", false, s.ticks.clone()),
            cep_runner("5 % displaced", true, s.ticks.clone()),
        ],
    });

    // W5: the runtime on one and two threads, then the binary.
    let n = W1A_OOO_SIZE.at(scale);
    out.push(w5(
        "W5",
        format!(
            "rise_spike through the runtime over the first {} W1 ticks (no parsing): the runner on one thread \
             against the runtime on 2 threads (`ShardedRunner::balanced`: the calling thread runs a share of the keys, a worker the rest); matches = output lines. \
             `{CEILING}` is what two cores give here at best: the ticks split by key in two, each \
             half run by its own runner on its own thread at the same time",
            thousands(n)
        ),
        n,
        Target { text: "— (the 1.7× target is `cep run`'s: W5-cli)".into(), check: Check::None },
        vec![
            runtime_contender("1 thread", 1, s.ticks.clone()),
            runtime_contender("2 threads", 2, s.ticks.clone()),
            runtime_split_contender(CEILING, s.ticks.clone()),
        ],
    ));
    out.push(w5(
        "W5-cli",
        format!(
            "rise_spike through `cep run --threads 1|2` and `cep run` (the default: a thread per core, so \
             `--threads 2` here; both with `--parallel auto`, which picks the pipeline for this query, and \
             with each split forced) on a CSV file of the first {} W1 ticks, parsing included (the `cep` binary \
             beside this one; `cargo xtask bench` builds it); wall time of the process; peak RSS is the bench's \
             own, not cep's. `{CEILING}` is what two cores give here at best: the file split by \
             key in two, each half run by its own `cep run --threads 1` at the same time",
            thousands(n)
        ),
        n,
        Target { text: "≥ 1.7× with 2 threads".into(), check: Check::ContenderRatioAtLeast("2 threads", 1.7) },
        vec![
            cli_contender("1 thread", Some(1), &[]),
            cli_contender("2 threads", Some(2), &[]),
            cli_contender("default", None, &[]),
            cli_contender("2 threads, shards", Some(2), &["--parallel", "shards"]),
            cli_contender("2 threads, pipeline", Some(2), &["--parallel", "pipeline"]),
            split_contender(CEILING),
        ],
    ));

    out.push(Workload {
        name: "W5-parse".into(),
        description: format!(
            "W5's parsing alone: the CSV file of the first {} W1 ticks read into events to its end, no query \
             (matches = events read). One thread: a `Reader`, as `cep run --threads 1` reads; 2 threads: a \
             `ParallelReader` with one parser thread and the calling thread (which parses whenever it waits for \
             a block); `cep run` on shards parses the same blocks, split by shard, on the shards",
            thousands(n)
        ),
        size: W1A_OOO_SIZE,
        events: n,
        baseline: Baseline::Contender("1 thread"),
        target: Target { text: "— (parsing reported separately)".into(), check: Check::None },
        expect: Some(n as u64),
        series: None,
        contenders: vec![parse_contender("1 thread", 1), parse_contender("2 threads", 2)],
    });

    // W5 latency: the same, paced below saturation.
    let n = W5_LATENCY_SIZE.at(scale);
    out.push(Workload {
        name: "W5-latency".into(),
        description: format!(
            "event-to-match latency: W5's runtimes fed the first {} W1 ticks at {} events/s (a busy-wait on the \
             wall clock); per match, from the push of the tick that completes it (the first after its quiet \
             period) to its line reaching the writer; events/s = the rate kept",
            thousands(n),
            thousands(W5_LATENCY_RATE as usize)
        ),
        size: W5_LATENCY_SIZE,
        events: n,
        baseline: Baseline::None,
        target: Target { text: "— (report p50 / p99)".into(), check: Check::None },
        expect: (n == w1::TICKS).then_some(450),
        series: None,
        contenders: vec![
            latency_contender("1 thread", 1, s.ticks.clone()),
            latency_contender("2 threads", 2, s.ticks.clone()),
        ],
    });

    // W1b: level alerts.
    let n = W1B_SIZE.at(scale);
    let per_key = W1B_PER_KEY.at(scale);
    let count = levels::KEYS * per_key;
    let alerts = Stream::new(move |_| levels::alerts(levels::KEYS, per_key));
    out.push(Workload {
        name: "W1b".into(),
        description: format!(
            "level alerts: {} keys × {per_key} `above` alerts (band {}) over the first {} W1 ticks; \
             cep-index (sorted edges per key, live bits, cached nearest live edges) against the two-BTreeMap index of DESIGN.md §2.6; \
             matches = fires",
            thousands(levels::KEYS),
            levels::BAND,
            thousands(n)
        ),
        size: W1B_SIZE,
        events: n,
        baseline: Baseline::Contender("two-btreemaps"),
        target: Target { text: "≥ 2× two-btreemaps (aim 5×)".into(), check: Check::RatioAtLeast(2.0) },
        expect: (n == w1::TICKS && per_key == levels::PER_KEY).then_some(levels::FIRES as u64),
        series: None,
        contenders: vec![
            level_contender::<Indexed>("cep-index", alerts.clone(), count, s.ticks.clone()),
            level_contender::<TwoBTreeMaps>("two-btreemaps", alerts, count, s.ticks.clone()),
        ],
    });

    // W2: any-match sequences on the stack engine, aggregated-link batches
    // against per-event construction (the paper's experiment), with the run
    // engine beside them.
    let mut w2 = |query: &str, q: fn(i64) -> String, kind: Kind, window: i64, size: Size| {
        let n = size.at(scale);
        let suffix = if kind == Kind::Uniform { String::new() } else { format!(" {}", kind.name()) };
        let short = query.replace(['(', ')', ','], "").replace("SEQ", "").to_lowercase();
        let binds = if (n as i64) <= window { "; fewer events than the window, so it does not bind" } else { "" };
        let paper = w2::paper_ratio(query, kind, window);
        out.push(Workload {
            name: format!("W2 {short} w{window}{suffix}"),
            description: format!(
                "{query} skip-till-any-match WITHIN {window}, every match enumerated, over the first {} events of \
                 the {} W2 stream (the paper: 10,000; enumeration grows like window^(k-1)·n for k elements{binds}); \
                 ratio = events/s against per-event construction on the same stack engine; `stack direct` is the \
                 forward enumeration beyond the paper",
                thousands(n),
                kind.name()
            ),
            size,
            events: n,
            baseline: Baseline::Contender("stack per-event"),
            target: match paper {
                Some((text, min)) => Target {
                    text: format!("batch ≥ {text} (paper)"),
                    check: Check::ContenderRatioAtLeast("stack batch", min),
                },
                None => Target { text: "—".into(), check: Check::None },
            },
            expect: None,
            series: Some(Series {
                name: format!("{query} {}", kind.name()),
                window,
                paper: w2::paper_point(query, kind, window),
            }),
            contenders: vec![
                stack_visit("stack batch", q(window), w2::schema, s.w2(kind), Construction::Batch),
                stack_visit("stack per-event", q(window), w2::schema, s.w2(kind), Construction::PerEvent),
                stack_visit("stack direct", q(window), w2::schema, s.w2(kind), Construction::Direct),
                cep_text("run", q(window), w2::schema, s.w2(kind)),
            ],
        });
    };
    for window in w2::WINDOWS {
        w2("SEQ(A,B,D)", w2::seq_abd, Kind::Uniform, window, W2_ABD_SIZE);
    }
    for window in w2::WINDOWS {
        w2("SEQ(A,B,D,C)", w2::seq_abdc, Kind::Uniform, window, W2_ABDC_SIZE);
    }
    for kind in [Kind::ClusterFriendly, Kind::ClusterFree] {
        w2("SEQ(A,B,D)", w2::seq_abd, kind, *w2::WINDOWS.last().expect("windows"), W2_ABD_SIZE);
    }
    // Counting mode on the paper's full stream.
    let n = W2_COUNT_SIZE.at(scale);
    for (query, q) in [("SEQ(A,B,D)", w2::seq_abd as fn(i64) -> String), ("SEQ(A,B,D,C)", w2::seq_abdc)] {
        for window in [w2::WINDOWS[0], *w2::WINDOWS.last().expect("windows")] {
            let short = query.replace(['(', ')', ','], "").replace("SEQ", "").to_lowercase();
            out.push(Workload {
                name: format!("W2 {short} w{window} count"),
                description: format!(
                    "{query} skip-till-any-match WITHIN {window} over the first {} events of the uniform W2 stream, \
                     counting mode: per event the number of matches ending at it, none enumerated (matches = \
                     their sum; matches/s = matches counted per second)",
                    thousands(n)
                ),
                size: W2_COUNT_SIZE,
                events: n,
                baseline: Baseline::None,
                target: Target { text: "—".into(), check: Check::None },
                expect: None,
                series: None,
                contenders: vec![stack_count("stack count", q(window), w2::schema, s.w2(Kind::Uniform))],
            });
        }
    }

    // W3: the CORE-style sequence.
    let n = W3_SIZE.at(scale);
    out.push(Workload {
        name: "W3".into(),
        description: format!(
            "SEQ(AA a, AB b, AC c) skip-till-any-match WITHIN 100 EVENTS over {} events of 9 uniform types, \
             every match enumerated, stack engine (per-event) against the run engine (the CORE peer is not \
             measured here)",
            thousands(n)
        ),
        size: W3_SIZE,
        events: n,
        baseline: Baseline::Contender("run"),
        target: Target { text: "stack ≥ run".into(), check: Check::ContenderRatioAtLeast("stack", 1.0) },
        expect: None,
        series: None,
        contenders: vec![
            stack_visit("stack", w3::QUERY.into(), w3::schema, s.w3.clone(), Construction::PerEvent),
            stack_visit("stack direct", w3::QUERY.into(), w3::schema, s.w3.clone(), Construction::Direct),
            cep_text("run", w3::QUERY.into(), w3::schema, s.w3.clone()),
        ],
    });

    // W4: SASE+ Kleene.
    let n = W4_SIZE.at(scale);
    out.push(Workload {
        name: "W4".into(),
        description: format!(
            "SEQ(Stock+ a[], Stock b) skip-till-next-match [symbol] WITHIN 500 over {} trades of 2 symbols; \
             ratio to SASE 1.0's 150,000 events/s",
            thousands(n)
        ),
        size: W4_SIZE,
        events: n,
        baseline: Baseline::Rate { events_per_sec: SASE_EVENTS_PER_SEC, label: "SASE 1.0 (150 k events/s)" },
        target: Target { text: "≥ 15 M events/s (100× SASE 1.0)".into(), check: Check::EventsPerSecAtLeast(15e6) },
        expect: None,
        series: None,
        contenders: vec![cep_text("cep", w4::QUERY.into(), w4::schema, s.w4.clone())],
    });

    // W6: timers.
    for size in W6_TIMERS {
        let n = size.at(scale);
        out.push(Workload {
            name: format!("W6 {}", thousands(n)),
            description: format!(
                "timers: arm {} (deadlines uniform over 2^20), cancel every other one, expire the rest in 64 \
                 watermark steps; events = timers handled, matches = timers fired; ns per arm / cancel / expire: \
                 `cargo bench -p cep-time --bench timers`",
                thousands(n)
            ),
            size,
            events: n,
            baseline: Baseline::Contender("binary heap"),
            target: Target { text: "flat; ≤ 40 ns arm, ≤ 25 ns cancel (criterion)".into(), check: Check::None },
            expect: Some(n as u64 / 2),
            series: None,
            contenders: vec![
                timer_contender::<Wheel>("timing wheel"),
                timer_contender::<LazyHeap>("binary heap"),
                timer_contender::<Tree>("btreemap"),
            ],
        });
    }

    out
}

#[cfg(test)]
mod tests {
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
        let m = |key: Value, start| Match { query: 0, key, start, end: 5, rows: vec![1, 2], ends: vec![1, 2] };
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
}
