//! The [`Runner`]: several queries over one event stream in one thread,
//! with its counts ([`Summary`], [`RunnerStats`]). Its level alerts, late
//! events and snapshots are in the submodules; the push path (watermark,
//! reorder, feed, emit in order) is here because every other part of the
//! crate drives a runner through it.

mod late;
mod levels;
mod owners;
mod snapshot;

use std::io::{self, Write};
use std::sync::Arc;

use cep_core::budget::{LimitHit, Meter, StateBudget};

use cep_core::{Event, FieldId, Match, Timestamp};
use cep_nfa::engine::Stats;
use cep_nfa::program::Program;
use cep_nfa::select::{EngineChoice, QueryEngine};
use cep_nfa::stack::Construction;
use cep_time::{LatePolicy, ReorderBuffer, Watermark};

pub use levels::{LEVEL_KEY_FIELD, LEVELS_BIT, MASK_QUERIES};
pub use snapshot::RunnerSnapshot;

use levels::{Levels, in_mask};
use owners::Owners;

use crate::{PushError, QueryInfo, RunnerError, Sink};

/// Counts of a run, for the summary.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Summary {
    /// Events processed.
    pub events: u64,
    /// Late events (dropped or written aside).
    pub late: u64,
    /// Matches per query.
    pub matches: Vec<u64>,
    /// Level alerts fired.
    pub fires: u64,
    /// The queries' names, by index as in [`matches`](Self::matches).
    /// Not saved in checkpoints (a restored runner takes them from its
    /// queries), so that the checkpoint format stays as it was.
    #[serde(skip)]
    pub queries: Vec<String>,
    /// The queries removed while events flowed
    /// ([`Runner::remove_query`]), with their matches until then, in order
    /// of removal. Not saved in checkpoints (the binary never removes a
    /// query).
    #[serde(skip)]
    pub removed: Vec<(String, u64)>,
}

impl Summary {
    /// Matches by query name: the queries running, in index order, then
    /// the removed ones in order of removal (a name added again after its
    /// removal appears once per run of it).
    ///
    /// # Examples
    /// ```
    /// use cep_runtime::runtime::{Output, Runtime};
    ///
    /// let mut rt = Runtime::builder()
    ///     .query("QUERY ab PATTERN SEQ(A a, B b);")
    ///     .query("QUERY bc PATTERN SEQ(B b, C c)")
    ///     .build(Output::Lines(Box::new(|_| {})))
    ///     .unwrap();
    /// for (ts, ty) in ["A", "B", "C"].into_iter().enumerate() {
    ///     rt.push(&rt.event(ty, ts as i64).build()).unwrap();
    /// }
    /// rt.remove_query("ab").unwrap();
    /// let summary = rt.finish().unwrap();
    /// assert_eq!(summary.by_query(), [("bc", 1), ("ab", 1)]);
    /// assert_eq!(summary.matches_of("ab"), 1);
    /// ```
    pub fn by_query(&self) -> Vec<(&str, u64)> {
        let live = self.matches.iter().enumerate().map(|(i, &n)| (self.queries.get(i).map_or("", String::as_str), n));
        live.chain(self.removed.iter().map(|(name, n)| (name.as_str(), *n))).collect()
    }

    /// The matches of every query named `name`, running or removed (0 if
    /// there is none).
    pub fn matches_of(&self, name: &str) -> u64 {
        self.by_query().into_iter().filter(|(q, _)| *q == name).fold(0, |a, (_, n)| a.saturating_add(n))
    }
}

/// Runs several queries over one event stream, in one thread.
///
/// Each event goes to every query's engine in order; matches go to the sink
/// as they become final. Late events follow the [`LatePolicy`].
///
/// # Examples
/// ```
/// use cep_core::{Event, Schema, Sym, Value};
/// use cep_nfa::compile::{compile, Options};
/// use cep_runtime::{QueryInfo, Runner};
///
/// let mut schema = Schema::new();
/// schema.field("x");
/// let progs = compile("PATTERN SEQ(A a, B b)", &mut schema, &Options::default()).unwrap().programs;
/// let mut runner = Runner::new(progs);
/// let mut got = Vec::new();
/// let mut sink = |q: &QueryInfo, m: &cep_core::Match| got.push((q.name.clone(), m.rows.clone()));
/// for (row, ty) in ["A", "B"].into_iter().enumerate() {
///     let e = Event::new(Sym::new(ty), row as i64, row as u64, vec![Value::Null]);
///     runner.push(&e, &mut sink).unwrap();
/// }
/// runner.finish(&mut sink).unwrap();
/// assert_eq!(got, [("q1".to_string(), vec![0, 1])]);
/// ```
#[derive(Debug)]
pub struct Runner {
    engines: Vec<QueryEngine<Event>>,
    /// The queries each engine stands for (several for a shared program).
    owners: Vec<Owners>,
    /// The queries, in statement order.
    infos: Vec<QueryInfo>,
    watermark: Watermark,
    late: LatePolicy,
    late_out: Option<io::BufWriter<std::fs::File>>,
    summary: Summary,
    line: Vec<u8>,
    field_names: Vec<String>,
    /// With an allowed delay: events wait here until the watermark passes them.
    reorder: Option<ReorderBuffer<Event>>,
    ready: Vec<Event>,
    /// Rows of released events, reused for the next held ones (no
    /// allocation per event once warm).
    spare: Vec<Event>,
    levels: Option<Levels>,
    /// Hand released events to the sink instead of feeding engines (the
    /// front of a sharded runtime).
    forward: bool,
    /// The live state's peaks, sampled.
    peaks: Peaks,
    /// How queries added later run.
    choice: EngineChoice,
    construction: Construction,
    max_partials: Option<usize>,
    /// The job's state bound, shared with every engine (queries added
    /// later too) and the reorder buffer's meter.
    budget: Option<Arc<StateBudget>>,
    /// Where remote conditions are asked (see `set_remote`).
    remote: Option<(Arc<cep_core::remote::RemoteLink>, cep_core::remote::RemoteMode)>,
    reorder_meter: Meter,
    /// Scratch for [`Runner::emit_stepped`]: the matches several engines
    /// made final at once, before they are put in order.
    fired: Vec<Match>,
}

/// Events between samples of the live state's peaks.
const STATS_SAMPLE: u64 = 1 << 16;

/// Events handed to an engine at once by [`Runner::push_batch_for`]: enough
/// for its lookahead, few enough that a query with many matches per event
/// does not queue a whole batch's worth of them (W2's run engine lost 20 %
/// to allocator churn with 256).
const ENGINE_CHUNK: usize = 8;

/// What [`Runner::stats`] cannot read off the engines now: the most live
/// state sampled, and the live partial matches when the input ended.
#[derive(Clone, Copy, Debug, Default)]
struct Peaks {
    partials: usize,
    nodes: usize,
    partials_at_end: usize,
}

/// What a [`Runner`] holds and has done (see [`Runner::stats`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RunnerStats {
    /// Events processed.
    pub events: u64,
    /// Late events.
    pub late: u64,
    /// Matches emitted.
    pub matches: u64,
    /// Level alerts fired.
    pub fires: u64,
    /// Live partial matches now, over all queries (for the stack engine:
    /// stack entries).
    pub partials: usize,
    /// The most live partial matches sampled.
    pub peak_partials: usize,
    /// Live partial matches when the input ended, before the final flush.
    pub partials_at_end: usize,
    /// Live match-buffer nodes now.
    pub nodes: usize,
    /// The most buffer nodes sampled.
    pub peak_nodes: usize,
    /// Keys seen by the query with the most.
    pub partitions: usize,
    /// Events held for reordering now, and at most.
    pub held: usize,
    /// The most events held for reordering at once.
    pub peak_held: usize,
    /// Partial matches dropped by the per-key cap.
    pub dropped: u64,
}

/// The field a query is partitioned by (`None`: one partition, or a key
/// computed by a closure).
pub(crate) fn partition_field(p: &Program<Event>) -> Option<FieldId> {
    match &p.key {
        Some((_, cep_nfa::program::FrameSlot::At(i))) => Some(*i),
        _ => None,
    }
}

/// The names a sink needs for a query's matches.
/// Sets how `engine` waits for remote answers.
fn set_mode(engine: &mut QueryEngine<Event>, mode: cep_core::remote::RemoteMode) {
    match mode {
        cep_core::remote::RemoteMode::Blocking => {}
        cep_core::remote::RemoteMode::Lazy => {
            engine.set_lazy();
        }
        cep_core::remote::RemoteMode::Auto => {
            engine.set_auto();
        }
    }
}

pub(crate) fn query_info(p: &Program<Event>) -> QueryInfo {
    QueryInfo {
        name: p.name.clone(),
        vars: p.var_names().iter().map(|s| s.to_string()).collect(),
        at_deadline: p.trailing.is_some(),
        emit: p.emit.iter().map(|i| i.name.clone()).collect(),
    }
}

impl Runner {
    /// A runner for these programs, dropping late events; each query runs on
    /// the engine [`EngineChoice::Auto`] picks (the stack engine enumerates
    /// each event's matches directly when it arrives).
    pub fn new(programs: Vec<Program<Event>>) -> Runner {
        Runner::with_engines(programs, EngineChoice::Auto, Construction::Direct).expect("Auto runs every query")
    }

    /// A runner whose queries run on the engine `choice` gives them, the
    /// stack engine building matches as `construction` says; an error names
    /// a query the forced engine cannot run.
    pub fn with_engines(
        programs: Vec<Program<Event>>,
        choice: EngineChoice,
        construction: Construction,
    ) -> Result<Runner, RunnerError> {
        let infos: Vec<QueryInfo> = programs.iter().map(query_info).collect();
        let engines = programs.into_iter().enumerate().map(|(i, p)| (p, choice, Owners::one(i))).collect();
        Runner::assemble(infos, engines, choice, construction)
    }

    /// [`with_engines`](Self::with_engines), but consecutive queries that
    /// differ only in one-variable conditions run as one shared program on
    /// the run engine ([`cep_nfa::share`]: exact for strict contiguity,
    /// the only case it groups): a hundred copies of a pattern with
    /// different thresholds cost about one. The output is the same, match
    /// for match and in the same order; engine statistics are per engine,
    /// so [`engine_stats`](Self::engine_stats) shows a shared engine's for
    /// each of its members. Do not bound partial matches per key
    /// (`set_max_partials_per_key`) or state with a budget that drops
    /// them ([`OnLimit::DropOldest`](cep_core::budget::OnLimit)) on such a
    /// runner: a shared engine would drop other runs than its members
    /// would. (A budget that fails the run is fine: the output is exact
    /// up to the stop.)
    /// With [`EngineChoice::Stack`] nothing is shared.
    ///
    /// # Examples
    /// ```
    /// use cep_core::{Event, Match, Schema, Sym, Value};
    /// use cep_nfa::compile::{compile, Options};
    /// use cep_nfa::select::EngineChoice;
    /// use cep_nfa::stack::Construction;
    /// use cep_runtime::{QueryInfo, Runner};
    ///
    /// let mut schema = Schema::new();
    /// let text: String = [5, 7, 9]
    ///     .map(|t| format!("QUERY over{t} PATTERN SEQ(S a, S b) WHERE strict-contiguity AND a.x > {t} AND b.x > {t};"))
    ///     .concat();
    /// let programs = compile(&text, &mut schema, &Options::default()).unwrap().programs;
    /// let mut runner = Runner::with_shared_engines(programs, EngineChoice::Auto, Construction::Direct).unwrap();
    /// assert_eq!((runner.queries().len(), runner.engine_kinds().len()), (3, 3));
    /// let mut got = Vec::new();
    /// let mut sink = |q: &QueryInfo, m: &Match| got.push((q.name.clone(), m.rows.clone()));
    /// for (row, x) in [6, 8, 10, 10].into_iter().enumerate() {
    ///     runner.push(&Event::new(Sym::new("S"), row as i64, row as u64, vec![Value::Int(x)]), &mut sink).unwrap();
    /// }
    /// runner.finish(&mut sink).unwrap();
    /// let names: Vec<&str> = got.iter().map(|(n, _)| n.as_str()).collect();
    /// assert_eq!(names, ["over5", "over5", "over7", "over5", "over7", "over9"]);
    /// ```
    pub fn with_shared_engines(
        programs: Vec<Program<Event>>,
        choice: EngineChoice,
        construction: Construction,
    ) -> Result<Runner, RunnerError> {
        if choice == EngineChoice::Stack {
            return Runner::with_engines(programs, choice, construction);
        }
        let infos: Vec<QueryInfo> = programs.iter().map(query_info).collect();
        let engines = cep_nfa::share::share(programs)
            .into_iter()
            .map(|f| match f.is_shared() {
                true => (f.program, EngineChoice::Run, Owners::shared(f.members)),
                false => (f.program, choice, Owners::one(f.members[0])),
            })
            .collect();
        Runner::assemble(infos, engines, choice, construction)
    }

    /// A runner of `engines` (a program, its engine choice and the
    /// queries it stands for), for the queries `infos`.
    fn assemble(
        infos: Vec<QueryInfo>,
        engines: Vec<(Program<Event>, EngineChoice, Owners)>,
        choice: EngineChoice,
        construction: Construction,
    ) -> Result<Runner, RunnerError> {
        let n = infos.len();
        let queries = infos.iter().map(|q| q.name.clone()).collect();
        let mut owners = Vec::with_capacity(engines.len());
        let engines = engines
            .into_iter()
            .map(|(p, choice, o)| {
                owners.push(o);
                QueryEngine::new(p, choice, construction).map_err(|e| RunnerError::engine(e.to_string()))
            })
            .collect::<Result<_, _>>()?;
        Ok(Runner {
            engines,
            owners,
            infos,
            watermark: Watermark::new(0),
            late: LatePolicy::Drop,
            late_out: None,
            summary: Summary { matches: vec![0; n], queries, ..Summary::default() },
            line: Vec::new(),
            field_names: Vec::new(),
            reorder: None,
            ready: Vec::new(),
            spare: Vec::new(),
            levels: None,
            forward: false,
            peaks: Peaks::default(),
            choice,
            construction,
            max_partials: None,
            budget: None,
            remote: None,
            reorder_meter: Meter::default(),
            fired: Vec::new(),
        })
    }

    /// Allows events to arrive out of order by up to `max_delay` timestamp
    /// units (LANGUAGE.md §1): they are held in a reorder buffer and reach
    /// the engines in `ts` order (ties in arrival order) once the watermark
    /// — the largest `ts` seen minus the delay — passes them; an event behind
    /// the watermark is late. Each held event is a copy of the pushed one, in
    /// a row recycled from events already released.
    ///
    /// # Examples
    /// ```
    /// use cep_core::{Event, Match, Schema, Sym};
    /// use cep_nfa::compile::{compile, Options};
    /// use cep_runtime::{QueryInfo, Runner};
    ///
    /// let progs = compile("PATTERN SEQ(A a, B b)", &mut Schema::new(), &Options::default()).unwrap().programs;
    /// let mut runner = Runner::new(progs);
    /// runner.set_max_delay(5);
    /// let mut got = Vec::new();
    /// let mut sink = |_: &QueryInfo, m: &Match| got.push(m.rows.clone());
    /// // B (ts 3) arrives before A (ts 1): within the delay, so they are reordered.
    /// for (row, (ty, ts)) in [("B", 3), ("A", 1)].into_iter().enumerate() {
    ///     runner.push(&Event::new(Sym::new(ty), ts, row as u64, vec![]), &mut sink).unwrap();
    /// }
    /// runner.finish(&mut sink).unwrap();
    /// assert_eq!(got, [vec![1, 0]]);
    /// ```
    pub fn set_max_delay(&mut self, max_delay: i64) {
        self.reorder = (max_delay > 0).then(|| ReorderBuffer::new(max_delay));
        self.watermark = Watermark::new(max_delay.max(0));
    }

    /// Names of the event fields by field id, for writing late events.
    pub fn set_field_names(&mut self, names: Vec<String>) {
        self.field_names = names;
    }

    /// The queries' names and variables.
    pub fn queries(&self) -> &[QueryInfo] {
        &self.infos
    }

    /// Counts so far.
    pub fn summary(&self) -> &Summary {
        &self.summary
    }

    /// Engine statistics per query (a shared engine's for each member).
    pub fn engine_stats(&self) -> Vec<Stats> {
        (0..self.infos.len()).map(|q| self.engines[self.engine_of(q)].stats()).collect()
    }

    /// The engine of each query.
    pub fn engine_kinds(&self) -> Vec<cep_nfa::select::EngineKind> {
        (0..self.infos.len()).map(|q| self.engines[self.engine_of(q)].kind()).collect()
    }

    /// How many engines run the queries: fewer than the queries when some
    /// share one (see [`with_shared_engines`](Self::with_shared_engines)).
    pub fn engine_count(&self) -> usize {
        self.engines.len()
    }

    /// The index of the engine that runs query `q`.
    fn engine_of(&self, q: usize) -> usize {
        self.owners.iter().position(|o| o.holds(q)).expect("every query has an engine")
    }

    /// Bounds each query's partial matches per key (see
    /// [`QueryEngine::set_max_partials_per_key`]); dropped ones are counted
    /// in [`RunnerStats::dropped`].
    pub fn set_max_partials_per_key(&mut self, cap: usize) {
        self.max_partials = Some(cap);
        for e in &mut self.engines {
            e.set_max_partials_per_key(cap);
        }
    }

    /// Bounds the state of every query (and of events held for
    /// reordering) by `budget`, a job's shared budget of bytes
    /// (`--max-state`, see [`cep_core::budget`]). When the budget's policy
    /// is to fail, a part past it trips the budget and
    /// [`state_limit_hit`](Self::state_limit_hit) says what held the most;
    /// a caller stops feeding then.
    pub fn set_state_budget(&mut self, budget: Arc<StateBudget>) {
        for e in &mut self.engines {
            e.set_state_budget(budget.clone());
        }
        self.reorder_meter = Meter::new(Some(budget.clone()));
        self.budget = Some(budget);
    }

    /// Where the queries' remote conditions are asked (LANGUAGE.md §8): one
    /// link per runner (a shard), shared by its queries, those added later
    /// included.
    pub fn set_remote(&mut self, link: Arc<cep_core::remote::RemoteLink>, mode: cep_core::remote::RemoteMode) {
        for e in &mut self.engines {
            e.set_remote(link.clone());
            set_mode(e, mode);
        }
        self.remote = Some((link, mode));
    }

    /// What held the most when a part of the job passed the state bound
    /// under the `fail` policy (see [`set_state_budget`](Self::set_state_budget)).
    pub fn state_limit_hit(&self) -> Option<LimitHit> {
        self.budget.as_ref().filter(|b| b.tripped()).and_then(|b| b.hit())
    }

    /// The events held for reordering weigh the job's state past its
    /// bound: whatever the policy, the run stops (they are events to
    /// process, not partial matches to drop), naming the delay.
    #[cold]
    fn reorder_at_bound(&mut self, bytes: usize) {
        if let Some(budget) = &self.budget {
            let held = self.reorder.as_ref().map_or(0, ReorderBuffer::len);
            budget.trip(LimitHit {
                holder: "the events held for reordering (--max-delay)".into(),
                key: None,
                key_bytes: bytes,
                key_partials: held,
                bytes,
            });
        }
    }

    /// Adds a query while events flow. It starts at the current watermark:
    /// it sees the events released from now on (with a delay, events still
    /// held for reordering included) and never an earlier one. Its matches
    /// carry its name; an error says why the runner's engine choice cannot
    /// run it. Returns its index among [`queries`](Self::queries).
    ///
    /// # Examples
    /// ```
    /// use cep_core::{Event, Match, Schema, Sym};
    /// use cep_nfa::compile::{compile, Options};
    /// use cep_runtime::{QueryInfo, Runner};
    ///
    /// let mut runner = Runner::new(Vec::new());
    /// let mut got = Vec::new();
    /// let mut sink = |q: &QueryInfo, m: &Match| got.push((q.name.clone(), m.rows.clone()));
    /// let ev = |ty: &str, row: u64| Event::new(Sym::new(ty), row as i64, row, vec![]);
    /// runner.push(&ev("A", 0), &mut sink).unwrap();
    /// let q = "QUERY ab PATTERN SEQ(A a, B b)";
    /// runner.add_query(compile(q, &mut Schema::new(), &Options::default()).unwrap().programs.remove(0)).unwrap();
    /// runner.push(&ev("A", 1), &mut sink).unwrap();
    /// runner.push(&ev("B", 2), &mut sink).unwrap();
    /// assert!(runner.remove_query("ab"));
    /// runner.push(&ev("A", 3), &mut sink).unwrap();
    /// runner.push(&ev("B", 4), &mut sink).unwrap();
    /// runner.finish(&mut sink).unwrap();
    /// assert_eq!(got, [("ab".to_string(), vec![1, 2])]); // not row 0 (before), nothing after removal
    /// ```
    pub fn add_query(&mut self, program: Program<Event>) -> Result<usize, RunnerError> {
        let info = query_info(&program);
        let mut engine = QueryEngine::new(program, self.choice, self.construction)
            .map_err(|e| RunnerError::engine(e.to_string()))?;
        if let Some(cap) = self.max_partials {
            engine.set_max_partials_per_key(cap);
        }
        if let Some(budget) = &self.budget {
            engine.set_state_budget(budget.clone());
        }
        if let Some((link, mode)) = &self.remote {
            engine.set_remote(link.clone());
            set_mode(&mut engine, *mode);
        }
        let wm = self.watermark();
        if wm > Timestamp::MIN {
            engine.advance(wm);
        }
        self.engines.push(engine);
        self.owners.push(Owners::one(self.infos.len()));
        self.infos.push(info);
        self.summary.matches.push(0);
        self.summary.queries.push(self.infos[self.infos.len() - 1].name.clone());
        Ok(self.infos.len() - 1)
    }

    /// Removes the query named `name` (the first, if several share it);
    /// false if there is none. It emits nothing more, not even matches it
    /// would have completed at the end of the input; its count moves to
    /// the summary's [`removed`](Summary::removed), and later queries move
    /// down one index.
    pub fn remove_query(&mut self, name: &str) -> bool {
        let Some(i) = self.infos.iter().position(|q| q.name == name) else { return false };
        let k = self.engine_of(i);
        // Every engine's queries move down past `i`; the engine of `i` goes
        // when `i` was its last.
        let emptied: Vec<bool> = self.owners.iter_mut().map(|o| o.remove(i)).collect();
        if emptied[k] {
            self.engines.remove(k);
            self.owners.remove(k);
        }
        let info = self.infos.remove(i);
        let count = self.summary.matches.remove(i);
        if i < self.summary.queries.len() {
            self.summary.queries.remove(i);
        }
        self.summary.removed.push((info.name, count));
        true
    }

    /// What the runner holds and has done, for `--stats`: counts, live
    /// state now and its peaks (sampled every 65,536 events and at the end
    /// of the input).
    pub fn stats(&self) -> RunnerStats {
        let mut s = RunnerStats {
            events: self.summary.events,
            late: self.summary.late,
            matches: self.summary.matches.iter().fold(0, |a, &m| a.saturating_add(m)),
            fires: self.summary.fires,
            held: self.reorder.as_ref().map_or(0, ReorderBuffer::len),
            peak_held: self.reorder.as_ref().map_or(0, ReorderBuffer::peak_len),
            partials_at_end: self.peaks.partials_at_end,
            ..RunnerStats::default()
        };
        for e in &self.engines {
            let st = e.stats();
            s.partials += st.partials();
            s.nodes += st.nodes;
            s.partitions = s.partitions.max(st.partitions);
            s.dropped += st.dropped;
        }
        s.peak_partials = self.peaks.partials.max(s.partials);
        s.peak_nodes = self.peaks.nodes.max(s.nodes);
        s
    }

    /// Records the live state's peaks; returns the live partial matches.
    #[cold]
    fn sample(&mut self) -> usize {
        let s = self.stats();
        self.peaks.partials = s.peak_partials;
        self.peaks.nodes = s.peak_nodes;
        s.partials
    }

    /// Makes this runner a front end: it keeps its watermark, delay and
    /// late policy, but instead of feeding engines it hands each event it
    /// releases (in event-time order) to [`Sink::on_released`].
    pub fn forward_released(&mut self) {
        self.forward = true;
    }

    /// A forwarding front's fast path (see
    /// [`forward_released`](Self::forward_released)): without a reorder
    /// buffer, an event at or after the watermark is counted as released
    /// and true returned, for the caller to route it itself; otherwise
    /// false, and [`push`](Self::push) handles the event.
    #[inline]
    pub(crate) fn forward_in_order(&mut self, ts: Timestamp) -> bool {
        // A late event leaves the watermark as it was, for `push`.
        if !self.forward || self.reorder.is_some() || ts < self.watermark.get() {
            return false;
        }
        // Without a reorder buffer there is no delay to take off.
        self.watermark.advance(ts);
        self.count_event();
        true
    }

    /// [`forward_in_order`](Self::forward_in_order) for `n` events in `ts`
    /// order from `first` to `last`, all or none: true (the watermark moved
    /// to `last`, the events counted) when the runner forwards without
    /// reordering and none of them is late.
    pub(crate) fn forward_block(&mut self, first: Timestamp, last: Timestamp, n: u64) -> bool {
        if !self.forward || self.reorder.is_some() || first < self.watermark.get() || last < first {
            return false;
        }
        let _ = self.watermark.observe(last);
        let before = self.summary.events;
        self.summary.events += n;
        self.sample_since(before);
        true
    }

    /// Samples the statistics if the event count has passed a multiple of
    /// [`STATS_SAMPLE`] since it was `before`.
    fn sample_since(&mut self, before: u64) {
        if before / STATS_SAMPLE != self.summary.events / STATS_SAMPLE {
            let _ = self.sample();
        }
    }

    /// Counts an event given to the engines (or forwarded), sampling the
    /// statistics now and then.
    #[inline]
    fn count_event(&mut self) {
        self.summary.events += 1;
        if self.summary.events % STATS_SAMPLE == 0 {
            let _ = self.sample();
        }
    }

    /// The field each query is partitioned by (`None`: one partition, or a
    /// key computed by a closure), for routing events to shards.
    pub fn partition_fields(&self) -> Vec<Option<FieldId>> {
        (0..self.infos.len()).map(|q| partition_field(self.engines[self.engine_of(q)].program())).collect()
    }

    /// Processes one event, already in event-time order, for some of the
    /// queries only: bit `i` of `mask` for query `i`, [`LEVELS_BIT`] for the
    /// level alerts (the shards of a sharded runtime each see the events of
    /// their keys, ordered by the front). The runner's own delay does not
    /// apply: an event behind the watermark is late.
    pub fn push_for(&mut self, e: &Event, mask: u64, sink: &mut impl Sink) -> Result<(), PushError> {
        if let Err(wm) = self.watermark.observe(e.ts) {
            return self.on_late(e, wm);
        }
        self.feed(e, mask, sink)
    }

    /// [`push_for`](Self::push_for) for a run of events with the same
    /// mask. With one query and no level alerts, the query's engine gets
    /// the run as one batch ([`Engine::push_batch`](cep_nfa::engine::Engine::push_batch),
    /// which overlaps the cache misses of its events) and the matches come
    /// out in the same order as event by event; otherwise the events go one
    /// by one.
    ///
    /// # Examples
    /// ```
    /// use cep_core::{Event, Match, Schema, Sym, Value};
    /// use cep_nfa::compile::{compile, Options};
    /// use cep_runtime::{QueryInfo, Runner};
    ///
    /// let q = "PATTERN SEQ(A a, B b) WHERE [k]";
    /// let mut runner = Runner::new(compile(q, &mut Schema::new(), &Options::default()).unwrap().programs);
    /// let ev = |ty: &str, ts, k| Event::new(Sym::new(ty), ts, ts as u64, vec![Value::Int(k)]);
    /// let events = [ev("A", 0, 1), ev("A", 1, 2), ev("B", 2, 2), ev("B", 3, 1)];
    /// let mut got = Vec::new();
    /// runner.push_batch_for(&events, u64::MAX, &mut |_: &QueryInfo, m: &Match| got.push(m.rows.clone())).unwrap();
    /// assert_eq!(got, [vec![1, 2], vec![0, 3]]);
    /// ```
    pub fn push_batch_for(&mut self, events: &[Event], mask: u64, sink: &mut impl Sink) -> Result<(), PushError> {
        let batched = self.engines.len() == 1
            && in_mask(self.owners[0].first(), mask)
            && (mask & LEVELS_BIT == 0 || self.levels.is_none())
            && !self.forward;
        if !batched {
            for e in events {
                self.push_for(e, mask, sink)?;
            }
            return Ok(());
        }
        let mut start = 0;
        for (i, e) in events.iter().enumerate() {
            if let Err(wm) = self.watermark.observe(e.ts) {
                self.feed_run(&events[start..i], sink)?;
                self.on_late(e, wm)?;
                start = i + 1;
            }
        }
        self.feed_run(&events[start..], sink)
    }

    /// Gives events in event-time order to the one engine, a few at a time
    /// ([`ENGINE_CHUNK`]), taking its matches after each few.
    fn feed_run(&mut self, events: &[Event], sink: &mut impl Sink) -> Result<(), PushError> {
        if events.is_empty() {
            return Ok(());
        }
        let before = self.summary.events;
        self.summary.events += events.len() as u64;
        for chunk in events.chunks(ENGINE_CHUNK) {
            self.engines[0].push_batch(chunk).map_err(|(_, late)| late).expect("the runner orders events");
            emit(&self.owners[0], &mut self.engines[0], &self.infos, &mut self.summary, sink)?;
        }
        self.sample_since(before);
        Ok(())
    }

    /// Processes one event (or, with a delay, holds it until its turn).
    pub fn push(&mut self, e: &Event, sink: &mut impl Sink) -> Result<(), PushError> {
        let Some(reorder) = &mut self.reorder else {
            if let Err(wm) = self.watermark.observe(e.ts) {
                return self.on_late(e, wm);
            }
            return self.feed(e, u64::MAX, sink);
        };
        let mut held = self.spare.pop().unwrap_or_default();
        held.clone_from(e);
        if let Err(late) = reorder.push(e.ts, held) {
            self.spare.push(late.event);
            return self.on_late(e, late.watermark);
        }
        let held_bytes = reorder.len() * (std::mem::size_of::<Event>() + e.fields.len() * size_of::<cep_core::Value>());
        let mut ready = std::mem::take(&mut self.ready);
        reorder.release(&mut |_, ev| ready.push(ev));
        let wm = reorder.watermark();
        if self.reorder_meter.is_bounded() && self.reorder_meter.update(held_bytes) {
            self.reorder_at_bound(held_bytes);
        }
        let result = self.feed_all(&mut ready, sink).and_then(|()| self.advance_engines(wm, sink));
        self.ready = ready;
        result
    }

    /// Moves the watermark to `wm` without an event (an explicit watermark,
    /// or an idle clock): held events it passes are released, and every
    /// deadline before it fires. It never moves back.
    ///
    /// # Examples
    /// ```
    /// use cep_core::{Event, Match, Schema, Sym};
    /// use cep_nfa::compile::{compile, Options};
    /// use cep_runtime::{QueryInfo, Runner};
    ///
    /// let q = "PATTERN SEQ(A a, NOT B n WITHIN 10)";
    /// let mut runner = Runner::new(compile(q, &mut Schema::new(), &Options::default()).unwrap().programs);
    /// let mut got = Vec::new();
    /// let mut sink = |_: &QueryInfo, m: &Match| got.push(m.end);
    /// runner.push(&Event::new(Sym::new("A"), 5, 0, vec![]), &mut sink).unwrap();
    /// runner.advance_watermark(15, &mut sink).unwrap(); // the quiet period (to 15) is not over yet
    /// runner.advance_watermark(16, &mut sink).unwrap();
    /// assert_eq!(got, [15]);
    /// ```
    pub fn advance_watermark(&mut self, wm: Timestamp, sink: &mut impl Sink) -> Result<(), PushError> {
        match &mut self.reorder {
            Some(reorder) => {
                reorder.advance_watermark(wm);
                let mut ready = std::mem::take(&mut self.ready);
                reorder.release(&mut |_, ev| ready.push(ev));
                let result = self.feed_all(&mut ready, sink);
                self.ready = ready;
                result?;
            }
            None => self.watermark.advance(wm),
        }
        self.advance_engines(wm, sink)
    }

    /// The largest timestamp seen so far minus the allowed delay, or an
    /// explicit watermark if later.
    pub fn watermark(&self) -> Timestamp {
        self.reorder.as_ref().map_or(self.watermark.get(), ReorderBuffer::watermark)
    }

    /// Gives one event, in event-time order, to every engine, then to the
    /// level alerts.
    #[inline]
    fn feed(&mut self, e: &Event, mask: u64, sink: &mut impl Sink) -> Result<(), PushError> {
        self.count_event();
        if self.forward {
            return Ok(sink.on_released(e)?);
        }
        if self.engines.len() > 1 {
            self.fire_before(e.ts, mask, sink)?;
        }
        for (engine, owners) in self.engines.iter_mut().zip(&self.owners) {
            if !in_mask(owners.first(), mask) {
                continue;
            }
            engine.push(e).expect("the runner orders events");
            emit(owners, engine, &self.infos, &mut self.summary, sink)?;
        }
        if mask & LEVELS_BIT == 0 || self.levels.is_none() {
            return Ok(());
        }
        self.feed_levels(e, sink)
    }

    /// Fires every deadline before `ts` in the engines of `mask` and emits
    /// what they make final, before any of them runs the event at `ts`: a
    /// trailing `NOT`'s match whose quiet period ended before the event is
    /// emitted before the matches the event completes, in every statement,
    /// not only in its own (an engine fires its deadlines when it gets the
    /// event, but the statements before it would already have emitted).
    #[inline]
    fn fire_before(&mut self, ts: Timestamp, mask: u64, sink: &mut impl Sink) -> Result<(), PushError> {
        self.emit_stepped(mask, sink, |engine| {
            if engine.emits_on_advance() {
                engine.advance(ts);
            }
        })
    }

    /// Moves the engines of `mask` on with `step` (a watermark, or the end
    /// of the input) and emits what that made final. With several engines
    /// their matches are merged in order of `end`, ties in statement order,
    /// each engine's own order kept: deadlines fire in deadline order
    /// across statements as within one, whichever event or watermark
    /// passes them. (So the order does not depend on which event passed a
    /// deadline, and shards that see different events of the stream can
    /// rebuild it: `order`.)
    fn emit_stepped(
        &mut self,
        mask: u64,
        sink: &mut impl Sink,
        mut step: impl FnMut(&mut QueryEngine<Event>),
    ) -> Result<(), PushError> {
        if let ([engine], [owners]) = (&mut self.engines[..], &self.owners[..]) {
            if in_mask(owners.first(), mask) {
                step(engine);
                emit(owners, engine, &self.infos, &mut self.summary, sink)?;
            }
            return Ok(());
        }
        let mut fired = std::mem::take(&mut self.fired);
        for (engine, owners) in self.engines.iter_mut().zip(&self.owners) {
            if in_mask(owners.first(), mask) {
                step(engine);
                while let Some(mut m) = engine.pop() {
                    let _ = owners.each(&mut m, |m| {
                        fired.push(m.clone());
                        Ok::<(), ()>(())
                    });
                    engine.recycle(m);
                }
            }
        }
        // Stable: each engine's own order stays.
        fired.sort_by_key(|m| (m.end, m.query));
        let (summary, infos) = (&mut self.summary, &self.infos);
        let result = fired.iter().try_for_each(|m| {
            summary.matches[m.query] += 1;
            sink.on_match(&infos[m.query], m)
        });
        fired.clear();
        self.fired = fired;
        Ok(result?)
    }

    fn feed_all(&mut self, ready: &mut Vec<Event>, sink: &mut impl Sink) -> Result<(), PushError> {
        for ev in ready.drain(..) {
            let fed = self.feed(&ev, u64::MAX, sink);
            self.spare.push(ev);
            fed?;
        }
        Ok(())
    }

    /// Moves every engine's watermark, firing the deadlines it passes.
    fn advance_engines(&mut self, wm: Timestamp, sink: &mut impl Sink) -> Result<(), PushError> {
        self.emit_stepped(u64::MAX, sink, |engine| engine.advance(wm))
    }

    /// Hands the sink the matches whose remote answers came since the last
    /// event (lazy evaluation, LANGUAGE.md §8), without waiting; returns how
    /// many matches still wait for answers. A stream whose input is idle
    /// calls it, so that such a match goes out when its answer comes.
    pub fn settle_answers(&mut self, sink: &mut impl Sink) -> Result<usize, PushError> {
        let mut waiting = 0;
        for (engine, owners) in self.engines.iter_mut().zip(&self.owners) {
            waiting += engine.settle_answers();
            emit(owners, engine, &self.infos, &mut self.summary, sink)?;
        }
        Ok(waiting)
    }

    /// Ends the input: held events are released, pending deadlines fire and
    /// every engine empties.
    pub fn finish(&mut self, sink: &mut impl Sink) -> io::Result<()> {
        let io = |e: PushError| match e {
            PushError::Io(e) => e,
            other => io::Error::other(other.to_string()),
        };
        if let Some(reorder) = &mut self.reorder {
            let mut ready = std::mem::take(&mut self.ready);
            reorder.flush(&mut |_, ev| ready.push(ev));
            self.feed_all(&mut ready, sink).map_err(io)?;
        }
        self.peaks.partials_at_end = self.sample();
        self.emit_stepped(u64::MAX, sink, QueryEngine::finish).map_err(io)?;
        if let Some(out) = &mut self.late_out {
            out.flush()?;
        }
        Ok(())
    }
}

/// Hands an engine's matches to the sink, numbered by query. Most events
/// complete no match, so it first looks whether any waits, inline: the
/// loop that takes them loads much of the engine before its first test (in
/// the runner's per-event path, a call and 43 instructions an event before
/// it found the queue empty: a tenth of W5's instructions on one thread).
#[inline(always)]
fn emit(
    owners: &Owners,
    engine: &mut QueryEngine<Event>,
    infos: &[QueryInfo],
    summary: &mut Summary,
    sink: &mut impl Sink,
) -> Result<(), PushError> {
    if engine.has_matches() {
        take_matches(owners, engine, infos, summary, sink)?;
    }
    Ok(())
}

/// The matches waiting in `engine`, to the sink (out of line: see [`emit`]).
#[inline(never)]
fn take_matches(
    owners: &Owners,
    engine: &mut QueryEngine<Event>,
    infos: &[QueryInfo],
    summary: &mut Summary,
    sink: &mut impl Sink,
) -> Result<(), PushError> {
    while let Some(mut m) = engine.pop() {
        owners.each(&mut m, |m| {
            summary.matches[m.query] += 1;
            sink.on_match(&infos[m.query], m)
        })?;
        engine.recycle(m);
    }
    Ok(())
}
