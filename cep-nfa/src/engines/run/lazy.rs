//! Lazy remote evaluation (LANGUAGE.md §8, DESIGN.md §2.4): a candidate
//! whose remote calls are not answered yet binds as if they were true; the
//! binding's buffer node records what it owes ([`Debt`]: a call and the
//! answer it needs). A match is settled when it becomes final: every debt
//! on its path paid, it is emitted; one answered otherwise, it is dropped;
//! one not answered yet, it is parked until the answer comes (at the
//! latest, at the end of the input, which waits for every answer).
//!
//! This gives exactly the matches of the blocking mode only where taking
//! an event never stops a run from taking another one instead: under
//! skip-till-any-match (the run that skips the event lives on beside the
//! one that takes it) and strict contiguity (a run that does not take the
//! next event dies anyway). Under skip-till-next-match a run that takes an
//! event gives up the later ones, so a false answer would have to bring
//! back the run that waited; `SELECT` and `AFTER MATCH SKIP` compare
//! matches that become final together, which parked matches do not. Those
//! queries stay blocking ([`lazy_fits`]).

use std::time::Duration;

use ahash::AHashMap;
use cep_core::Value;
use cep_core::remote::{CallId, RemoteLink, Verdict};

use crate::buffer::Debt;
use crate::engines::api::StreamEvent;
use crate::program::{Program, RemoteCond, Selection, SkipTo, Strategy};

use super::Engine;
use super::emit::Done;
use super::step::{ask_remote, ask_remote_calls};

/// The fewest answers between two early settlements.
const EARLY_EVERY: usize = 64;

/// `auto` makes a function's new calls lazily while its requests take
/// longer than this on average, and waits for its answers below it: an answer
/// that comes back about as fast as the engine handles an event costs less
/// to wait for than to carry as a debt (W7 in docs/perf-log.md: with no
/// delay blocking runs 1.4–1.6× lazy; with 100 µs lazy runs 20× blocking
/// and more).
const AUTO_LAZY_ABOVE: Duration = Duration::from_micros(5);

/// Remote steps between two choices of `auto`.
const AUTO_EVERY: u64 = 64;

/// What `auto` counts: the remote steps since it last chose.
#[derive(Debug, Default)]
struct AutoMode {
    steps: u64,
}

/// An engine's lazy state: its owner number at the link, the answers its
/// live debts need, and the final matches waiting for answers.
#[derive(Debug, Default)]
pub(super) struct Lazy {
    owner: usize,
    /// Answers of calls some live node still owes.
    answers: AHashMap<u64, Verdict>,
    /// Final matches with a debt not answered yet.
    parked: Vec<Done>,
    /// The calls made and not answered yet, with their functions and
    /// arguments: a checkpoint keeps them, and a resumed run makes them
    /// again.
    outstanding: AHashMap<u64, (u16, Vec<Value>)>,
    /// Answers taken since live runs were last checked against them
    /// ([`Engine::settle_early`]).
    since_check: usize,
    /// Per function (by index): whether its new calls are made lazily
    /// (`false`: blocking, under `auto`). Sized to the query's functions.
    lazy_funcs: Vec<bool>,
    /// The query's functions, each once.
    funcs: Vec<u16>,
    /// Scratch: their round trips.
    trips: Vec<Option<Duration>>,
    /// `auto`: the mode follows the measured answer delay.
    auto: Option<AutoMode>,
    /// Scratch: answers drained, calls no node owes any more, a path's debts.
    got: Vec<(CallId, Verdict)>,
    gone: Vec<u64>,
    debts: Vec<Debt>,
}

/// What a binding owes to its element's remote conditions: whether one
/// took the failure policy's value (blocking), and the calls whose answers
/// it needs (lazy). Nothing for an element without remote conditions.
#[derive(Debug, Default)]
pub(super) struct Owed {
    pub(super) unverified: bool,
    pub(super) debts: Option<Box<[Debt]>>,
}

/// How a match's debts stand.
enum Settled {
    /// All paid: emit it (`true`: one took the failure policy's value).
    Paid(bool),
    /// One answered against it: drop it.
    Refused,
    /// One not answered yet.
    Open,
}

/// Why a program cannot be evaluated lazily (its remote calls stay
/// blocking), or `None` when it can.
pub fn lazy_fits<E>(prog: &Program<E>) -> Option<&'static str> {
    if prog.strategy == Strategy::NextMatch {
        Some("under skip-till-next-match a run that takes an event gives up later ones")
    } else if prog.select != Selection::All {
        Some("SELECT EARLIEST/LATEST compares matches that become final together")
    } else if prog.skip != SkipTo::None {
        Some("AFTER MATCH SKIP discards matches as others are emitted")
    } else {
        None
    }
}

impl<E: StreamEvent> Engine<E> {
    /// Evaluates this query's remote conditions lazily where that gives
    /// the same matches ([`lazy_fits`]); otherwise they stay blocking.
    /// Needs a link ([`set_remote`](Self::set_remote)) first. Returns
    /// whether the query is lazy now.
    pub fn set_lazy(&mut self) -> bool {
        let Some(link) = &self.remote else { return false };
        if lazy_fits(&self.prog).is_some() || self.prog.elements.iter().all(|e| e.remote.is_empty()) {
            return false;
        }
        let mut funcs: Vec<u16> = self.prog.elements.iter().flat_map(|e| e.remote.iter().map(|c| c.func)).collect();
        funcs.sort_unstable();
        funcs.dedup();
        let lazy_funcs = vec![true; funcs.last().map_or(0, |&f| usize::from(f) + 1)];
        self.lazy = Some(Box::new(Lazy { owner: link.register(), lazy_funcs, funcs, ..Lazy::default() }));
        true
    }

    /// `--remote-mode auto`: where lazy evaluation gives the same matches
    /// ([`lazy_fits`]), each function's new calls are made lazily while
    /// its mean request round trip is above a few microseconds and
    /// blocking below (re-chosen every 64 remote steps, lazy at first), so
    /// that a query with a slow function and a fast one waits for the fast
    /// one's answers and carries the slow one's as debts; elsewhere calls
    /// stay blocking. A resolver that does not measure functions apart
    /// ([`Resolver::round_trip_of`](cep_core::remote::Resolver::round_trip_of))
    /// gives every function its mean over all calls.
    /// Returns whether the query may be lazy.
    pub fn set_auto(&mut self) -> bool {
        if !self.set_lazy() {
            return false;
        }
        if let Some(lazy) = self.lazy.as_deref_mut() {
            lazy.auto = Some(AutoMode::default());
        }
        true
    }

    /// Whether some function's new remote calls are made lazily now.
    pub fn lazy_now(&self) -> bool {
        self.lazy.as_ref().is_some_and(|l| l.lazy_funcs.iter().any(|&b| b))
    }

    /// Whether function `func`'s new calls are made lazily now.
    pub fn lazy_now_for(&self, func: u16) -> bool {
        self.lazy.as_ref().is_some_and(|l| l.is_lazy(func))
    }

    /// Takes the answers that have come (waiting up to `wait` for one when
    /// matches are parked), forgets those no binding owes, and settles the
    /// parked matches they decide.
    #[inline(never)]
    pub(super) fn pump(&mut self, wait: Option<Duration>) {
        let (Some(lazy), Some(link)) = (self.lazy.as_deref_mut(), self.remote.as_deref()) else { return };
        if lazy.outstanding.is_empty() && lazy.answers.is_empty() {
            // No call of this engine in flight (auto while blocking, or
            // all answered and forgotten): no answer can come, no debt is
            // open, nothing is parked, so no lock need be taken.
            debug_assert!(lazy.parked.is_empty());
            return;
        }
        link.drain(lazy.owner, &mut lazy.got, wait);
        let news = !lazy.got.is_empty();
        lazy.since_check += lazy.got.len();
        for (id, v) in lazy.got.drain(..) {
            lazy.outstanding.remove(&id.0);
            if self.buffer.owes(id.0) {
                lazy.answers.insert(id.0, v);
            }
        }
        self.buffer.take_unreferenced(&mut lazy.gone);
        for g in lazy.gone.drain(..) {
            lazy.answers.remove(&g);
        }
        let check = lazy.since_check >= (self.live_total / 4).max(EARLY_EVERY);
        if news && !lazy.parked.is_empty() {
            let parked = std::mem::take(&mut lazy.parked);
            for d in parked {
                self.settle_done(d);
            }
            self.emit_done();
        }
        if check {
            self.settle_early();
        }
    }

    /// Drops the live runs and pending matches that owe an answer which
    /// came back against them: they can never make a match (DESIGN.md
    /// §2.4, early settlement). Run when the answers taken since the last
    /// check reach a quarter of the live runs, so that walking their paths
    /// costs a few steps per answer.
    #[inline(never)]
    fn settle_early(&mut self) {
        let Some(mut lazy) = self.lazy.take() else { return };
        lazy.since_check = 0;
        let dropped = if lazy.answers.is_empty() { 0 } else { self.drop_refused(&mut lazy) };
        self.lazy = Some(lazy);
        if dropped > 0
            && let Some(link) = self.remote.as_deref()
        {
            link.count_dropped_early(dropped);
        }
    }

    /// [`settle_early`](Self::settle_early)'s walk: drops the runs and
    /// pending matches whose path owes an answer `lazy` has against it;
    /// returns how many.
    fn drop_refused(&mut self, lazy: &mut Lazy) -> u64 {
        let mut dropped = 0u64;
        for pid in 0..self.parts.len() {
            let part = &mut self.parts[pid];
            if part.runs.len() + part.pending.len() == 0 {
                continue;
            }
            for set in [&mut part.runs, &mut part.pending] {
                let owes_refused: Vec<bool> = set
                    .runs
                    .iter()
                    .map(|r| {
                        lazy.debts.clear();
                        self.buffer.debts_on_path(r.node, &mut lazy.debts);
                        matches!(settle(&lazy.debts, &lazy.answers), Settled::Refused)
                    })
                    .collect();
                if owes_refused.iter().any(|&x| x) {
                    let mut i = 0;
                    set.retain(&mut self.buffer, |_| {
                        i += 1;
                        owes_refused[i - 1]
                    });
                    dropped += owes_refused.iter().filter(|&&x| x).count() as u64;
                }
            }
            let live = part.runs.len() + part.pending.len();
            self.set_live(pid as u32, live);
        }
        dropped
    }

    /// At the end of the input: waits for the answers every parked match
    /// needs, and settles them.
    pub(super) fn pump_to_the_end(&mut self) {
        while self.lazy.as_ref().is_some_and(|l| !l.parked.is_empty()) {
            self.pump(Some(Duration::from_millis(50)));
            // Every parked match owes a call in flight (the resolver answers
            // each call once): none in flight and some parked would be a
            // bug, which must not hang the run.
            if self.lazy.as_ref().is_some_and(|l| l.outstanding.is_empty() && !l.parked.is_empty()) {
                debug_assert!(false, "parked matches owe no call in flight");
                self.drop_parked();
            }
        }
    }

    /// A final match under lazy evaluation: queued to be emitted when its
    /// debts are paid, dropped when one is refused, parked otherwise.
    pub(super) fn settle_done(&mut self, mut d: Done) {
        let Some(lazy) = self.lazy.as_deref_mut() else {
            self.done.push(d);
            return;
        };
        lazy.debts.clear();
        self.buffer.debts_on_path(d.node, &mut lazy.debts);
        let settled = settle(&lazy.debts, &lazy.answers);
        let link = self.remote.as_deref().expect("lazy with a link");
        match settled {
            Settled::Paid(unverified) => {
                if !lazy.debts.is_empty() {
                    link.count_settled(true);
                }
                d.unverified |= unverified;
                self.done.push(d);
            }
            Settled::Refused => {
                link.count_settled(false);
                self.buffer.release(d.node);
            }
            Settled::Open => lazy.parked.push(d),
        }
    }

    /// The final matches waiting for answers.
    pub(super) fn parked(&self) -> usize {
        self.lazy.as_ref().map_or(0, |l| l.parked.len())
    }

    /// Drops the parked matches (the state bound halted the engine).
    pub(super) fn drop_parked(&mut self) {
        if let Some(lazy) = self.lazy.as_deref_mut() {
            for d in lazy.parked.drain(..) {
                self.buffer.release(d.node);
            }
        }
    }
}

impl Lazy {
    /// Under `auto`, every [`AUTO_EVERY`] remote steps: each function
    /// lazy while its mean request round trip (which leaves out the time a
    /// call waits to fill a batch) is above [`AUTO_LAZY_ABOVE`].
    #[inline]
    fn choose(&mut self, link: &RemoteLink) {
        let Some(auto) = self.auto.as_mut() else { return };
        auto.steps += 1;
        if auto.steps % AUTO_EVERY == 0 {
            link.round_trips_of(&self.funcs, &mut self.trips);
            for (&f, trip) in self.funcs.iter().zip(&self.trips) {
                if let Some(t) = trip {
                    self.lazy_funcs[usize::from(f)] = *t > AUTO_LAZY_ABOVE;
                }
            }
        }
    }

    fn is_lazy(&self, func: u16) -> bool {
        self.lazy_funcs.get(usize::from(func)).copied().unwrap_or(false)
    }
}

fn settle(debts: &[Debt], answers: &AHashMap<u64, Verdict>) -> Settled {
    let (mut open, mut unverified) = (false, false);
    for d in debts {
        match answers.get(&d.call) {
            None => open = true,
            Some(Verdict::Value(v)) if *v == d.want => {}
            Some(Verdict::Unverified(v)) if *v == d.want => unverified = true,
            Some(_) => return Settled::Refused,
        }
    }
    if open { Settled::Open } else { Settled::Paid(unverified) }
}

/// Element `j`'s remote conditions on the candidate, as the engine's mode
/// says: lazy, the calls made without waiting and owed; blocking, `Some`
/// when they hold (marked when one took the failure policy's value) and
/// `None` when one does not (see [`ask_remote`]).
#[inline]
pub(super) fn remote_step<E>(
    link: Option<&RemoteLink>,
    lazy: Option<&mut Lazy>,
    prog: &Program<E>,
    j: usize,
    frame: &[Value],
    regs: &[Value],
) -> Option<Owed> {
    let conds = &prog.elements[j].remote;
    if conds.is_empty() {
        return Some(Owed::default());
    }
    let blocking = |link| ask_remote(link, prog, j, frame, regs).map(|unverified| Owed { unverified, debts: None });
    match (lazy, link) {
        (Some(lazy), Some(link)) => {
            lazy.choose(link);
            let lazy_conds = conds.iter().filter(|c| lazy.is_lazy(c.func)).count();
            if lazy_conds == conds.len() {
                Some(Owed { unverified: false, debts: Some(owe_calls(link, lazy, conds.iter(), frame, regs)) })
            } else if lazy_conds == 0 {
                blocking(Some(link))
            } else {
                // Some functions fast, some slow (`auto`): wait for the
                // fast ones' answers first (a false one saves the slow
                // calls), then owe the slow ones.
                let unverified = ask_remote_calls(link, conds.iter().filter(|c| !lazy.is_lazy(c.func)), frame, regs)?;
                let lazy_funcs = std::mem::take(&mut lazy.lazy_funcs);
                let slow = conds.iter().filter(|c| lazy_funcs.get(usize::from(c.func)).copied().unwrap_or(false));
                let debts = owe_calls(link, lazy, slow, frame, regs);
                lazy.lazy_funcs = lazy_funcs;
                Some(Owed { unverified, debts: Some(debts) })
            }
        }
        (_, link) => blocking(link),
    }
}

#[inline(never)]
fn owe_calls<'c>(
    link: &RemoteLink,
    lazy: &mut Lazy,
    conds: impl Iterator<Item = &'c RemoteCond>,
    frame: &[Value],
    regs: &[Value],
) -> Box<[Debt]> {
    conds
        .map(|c| {
            let args: Vec<Value> = c.args.iter().map(|f| f(frame, regs)).collect();
            let id = link.submit(lazy.owner, c.func, args.clone());
            lazy.outstanding.insert(id.0, (c.func, args));
            Debt { call: id.0, want: !c.negated }
        })
        .collect()
}

/// What a checkpoint keeps of an engine's lazy state: the debts of the
/// buffer's nodes (by saved node id), the answers they still need, the
/// parked matches, and the calls in flight with their arguments.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub(super) struct SavedLazy {
    pub(super) debts: Vec<(u32, Vec<Debt>)>,
    answers: Vec<(u64, Verdict)>,
    pub(super) parked: Vec<Done>,
    calls: Vec<(u64, u16, Vec<Value>)>,
}

impl<E: StreamEvent> Engine<E> {
    /// The lazy state for a snapshot (`None` when the engine is not lazy
    /// or owes nothing).
    pub(super) fn saved_lazy(&self) -> Option<SavedLazy> {
        let lazy = self.lazy.as_deref()?;
        if !self.buffer.has_debts() && lazy.parked.is_empty() && lazy.outstanding.is_empty() {
            return None;
        }
        let mut calls: Vec<(u64, u16, Vec<Value>)> =
            lazy.outstanding.iter().map(|(&id, (f, a))| (id, *f, a.clone())).collect();
        calls.sort_by_key(|c| c.0);
        let mut answers: Vec<(u64, Verdict)> = lazy.answers.iter().map(|(&id, &v)| (id, v)).collect();
        answers.sort_by_key(|a| a.0);
        Some(SavedLazy { debts: self.buffer.saved_debts(), answers, parked: lazy.parked.clone(), calls })
    }

    /// Restores a saved lazy state whose nodes `ids` maps to the restored
    /// buffer's (the parked matches' nodes already mapped, see
    /// `checked_state`). Calls get fresh ids (ids restart with the
    /// process): those in flight are made again, those answered keep their
    /// answers under the new ids. Without a lazy link, an error.
    pub(super) fn restore_lazy(
        &mut self,
        saved: SavedLazy,
        ids: &ahash::AHashMap<u32, u32>,
    ) -> Result<(), &'static str> {
        let (Some(lazy), Some(link)) = (self.lazy.as_deref_mut(), self.remote.as_deref()) else {
            return Err("remote debts, and the query is not evaluated lazily here");
        };
        let mut remap: AHashMap<u64, u64> = AHashMap::new();
        for (old, func, args) in saved.calls {
            let new = link.submit(lazy.owner, func, args.clone()).0;
            lazy.outstanding.insert(new, (func, args));
            remap.insert(old, new);
        }
        for (old, v) in saved.answers {
            let new = link.fresh_id().0;
            lazy.answers.insert(new, v);
            remap.insert(old, new);
        }
        for (node, debts) in saved.debts {
            let id = *ids.get(&node).ok_or("debts of a missing buffer node")?;
            let debts: Option<Box<[Debt]>> =
                debts.iter().map(|d| remap.get(&d.call).map(|&call| Debt { call, want: d.want })).collect();
            self.buffer.set_debts(id, debts.ok_or("a debt of a call neither in flight nor answered")?);
        }
        lazy.parked = saved.parked;
        Ok(())
    }
}
