//! Choosing an engine for a query: [`QueryEngine`] runs a program on the run
//! engine ([`Engine`]) or on the stack engine ([`StackEngine`]) behind one
//! interface, and [`EngineChoice`] says which. Each of its methods is one
//! `match` calling the engine's [`MatchEngine`] method, so a third engine
//! is a variant here (and in [`QuerySnapshot`]) plus its trait impl.
//!
//! `Auto` picks the stack engine when the query qualifies
//! ([`stack::qualifies`]: a sequence of
//! single-event elements under skip-till-any-match, without negation,
//! `PREV`, element windows, `SELECT` or `AFTER MATCH SKIP`), because there
//! it builds each match once from the stacks where the run engine keeps one
//! run per partial match; otherwise the run engine, which runs every query.

use cep_core::{Match, Timestamp};

use crate::engines::api::{LateEvent, MatchEngine, Stats, StreamEvent};
use crate::engines::error::{EngineError, RestoreError};
use crate::engines::run::Engine;
use crate::engines::stack::{self, Construction, StackEngine};
use crate::program::Program;

/// Which engine runs a query.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum EngineChoice {
    /// The stack engine when the query qualifies, else the run engine.
    #[default]
    Auto,
    /// The run engine.
    Run,
    /// The stack engine (an error when the query does not qualify).
    Stack,
}

impl EngineChoice {
    /// Parses `auto`, `run` or `stack`.
    pub fn parse(s: &str) -> Option<EngineChoice> {
        match s {
            "auto" => Some(EngineChoice::Auto),
            "run" => Some(EngineChoice::Run),
            "stack" => Some(EngineChoice::Stack),
            _ => None,
        }
    }
}

/// An engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EngineKind {
    /// The run engine ([`Engine`]).
    Run,
    /// The stack engine ([`StackEngine`]).
    Stack,
}

impl EngineKind {
    /// `"run"` or `"stack"`.
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Run => "run",
            EngineKind::Stack => "stack",
        }
    }
}

/// The engine `choice` gives `prog`, and why (as `cep check` prints it).
///
/// # Examples
/// ```
/// use cep_core::Schema;
/// use cep_nfa::compile::{compile, Options};
/// use cep_nfa::select::{explain, EngineChoice, EngineKind};
/// let q = "PATTERN SEQ(A a, B b) WHERE skip-till-any-match WITHIN 10";
/// let p = &compile(q, &mut Schema::new(), &Options::default()).unwrap().programs[0];
/// assert_eq!(explain(p, EngineChoice::Auto).unwrap().0, EngineKind::Stack);
/// let q = "PATTERN SEQ(A a, B b) WITHIN 10";
/// let p = &compile(q, &mut Schema::new(), &Options::default()).unwrap().programs[0];
/// let (engine, why) = explain(p, EngineChoice::Auto).unwrap();
/// assert_eq!(engine, EngineKind::Run);
/// assert!(why.contains("skip-till-next-match"), "{why}");
/// assert!(explain(p, EngineChoice::Stack).is_err());
/// ```
pub fn explain<E>(prog: &Program<E>, choice: EngineChoice) -> Result<(EngineKind, String), EngineError> {
    let qualifies = stack::qualifies(prog);
    match (choice, qualifies) {
        (EngineChoice::Run, Ok(())) => Ok((EngineKind::Run, "forced (the stack engine would apply)".into())),
        (EngineChoice::Run, Err(why)) => {
            Ok((EngineKind::Run, format!("forced (the stack engine does not apply: {why})")))
        }
        (_, Ok(())) => Ok((
            EngineKind::Stack,
            "a sequence of single events under skip-till-any-match: matches are built from per-element stacks".into(),
        )),
        (EngineChoice::Auto, Err(why)) => Ok((EngineKind::Run, format!("the stack engine does not apply: {why}"))),
        (EngineChoice::Stack, Err(why)) => Err(why.forced(&prog.name)),
    }
}

/// Whether every count of a saved state is below 2^62. No run counts that
/// far (a century at a billion a second), so a restored count can go on
/// without overflowing; a larger one was made by hand or by another
/// program, and the state is refused.
pub fn saved_counts_fit(counts: impl IntoIterator<Item = u64>) -> bool {
    counts.into_iter().all(|n| n < 1 << 62)
}

/// The saved state of a [`QueryEngine`].
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub enum QuerySnapshot {
    /// Of the run engine.
    Run(crate::engines::run::EngineSnapshot),
    /// Of the stack engine.
    Stack(crate::engines::stack::StackSnapshot),
}

// One per query, so the size difference costs nothing; unboxed, a push
// reaches either engine without an extra indirection.
/// A query on one of the engines.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum QueryEngine<E> {
    /// The run engine.
    Run(Engine<E>),
    /// The stack engine.
    Stack(StackEngine<E>),
}

/// `$body` with `$x` bound to the engine behind `$q` (a `&QueryEngine` or
/// `&mut QueryEngine`): one `match`, a static call per engine.
macro_rules! each {
    ($q:expr, $x:ident => $body:expr) => {
        match $q {
            QueryEngine::Run($x) => $body,
            QueryEngine::Stack($x) => $body,
        }
    };
}

impl<E: StreamEvent> QueryEngine<E> {
    /// The engine `choice` gives `prog` (the stack engine builds matches as
    /// `construction` says), or why the forced one cannot run it.
    pub fn new(
        prog: Program<E>,
        choice: EngineChoice,
        construction: Construction,
    ) -> Result<QueryEngine<E>, EngineError> {
        let (kind, _) = explain(&prog, choice)?;
        Ok(match kind {
            EngineKind::Stack => QueryEngine::Stack(StackEngine::new(prog, construction)?),
            EngineKind::Run => QueryEngine::Run(Engine::new(prog)),
        })
    }

    /// Which engine it is.
    pub fn kind(&self) -> EngineKind {
        match self {
            QueryEngine::Run(_) => EngineKind::Run,
            QueryEngine::Stack(_) => EngineKind::Stack,
        }
    }

    /// The program.
    pub fn program(&self) -> &Program<E> {
        each!(self, x => MatchEngine::program(x))
    }

    /// Whether moving the watermark alone can make matches final: a trailing
    /// `NOT`'s quiet period ending (the run engine), or a batch boundary
    /// passing (the stack engine's batch construction). Otherwise matches
    /// come out only as events are pushed, and at the end.
    #[inline]
    pub fn emits_on_advance(&self) -> bool {
        each!(self, x => MatchEngine::emits_on_advance(x))
    }

    /// Processes one event (see [`Engine::push`]).
    #[inline]
    pub fn push(&mut self, e: &E) -> Result<(), LateEvent> {
        each!(self, x => MatchEngine::push(x, e))
    }

    /// Processes events in order (see [`Engine::push_batch`]); stops at the
    /// first late event, with its index.
    #[inline]
    pub fn push_batch(&mut self, events: &[E]) -> Result<(), (usize, LateEvent)> {
        each!(self, x => MatchEngine::push_batch(x, events))
    }

    /// The watermark: the largest of the events' `ts` and the watermarks
    /// it was moved to.
    pub fn watermark(&self) -> Timestamp {
        each!(self, x => MatchEngine::watermark(x))
    }

    /// Moves the watermark (see [`Engine::advance`]).
    #[inline]
    pub fn advance(&mut self, wm: Timestamp) {
        each!(self, x => MatchEngine::advance(x, wm))
    }

    /// Ends the input.
    pub fn finish(&mut self) {
        each!(self, x => MatchEngine::finish(x))
    }

    /// Takes the oldest match not yet taken.
    #[inline]
    pub fn pop(&mut self) -> Option<Match> {
        each!(self, x => MatchEngine::pop(x))
    }

    /// Hands back a match taken with [`pop`](Self::pop) and done with, so
    /// that a later one reuses its memory.
    #[inline]
    pub fn recycle(&mut self, m: Match) {
        each!(self, x => MatchEngine::recycle(x, m))
    }

    /// Whether a match waits to be taken ([`pop`](Self::pop) would give
    /// one): a look that costs next to nothing, for the many events that
    /// complete no match.
    #[inline]
    pub fn has_matches(&self) -> bool {
        each!(self, x => MatchEngine::has_matches(x))
    }

    /// Bounds the live state per key (see
    /// [`Engine::set_max_partials_per_key`] and
    /// [`StackEngine::set_max_partials_per_key`]).
    pub fn set_max_partials_per_key(&mut self, cap: usize) {
        each!(self, x => MatchEngine::set_max_partials_per_key(x, cap))
    }

    /// Bounds the engine's state by a job's shared budget (see
    /// [`MatchEngine::set_state_budget`]).
    pub fn set_state_budget(&mut self, budget: std::sync::Arc<cep_core::budget::StateBudget>) {
        each!(self, x => MatchEngine::set_state_budget(x, budget))
    }

    /// Where the query's remote conditions are asked (see
    /// [`Engine::set_remote`]).
    pub fn set_remote(&mut self, link: std::sync::Arc<cep_core::remote::RemoteLink>) {
        each!(self, x => MatchEngine::set_remote(x, link))
    }

    /// Evaluates the remote conditions lazily where that gives the same
    /// matches (see [`Engine::set_lazy`]); whether it does.
    pub fn set_lazy(&mut self) -> bool {
        each!(self, x => MatchEngine::set_lazy(x))
    }

    /// Chooses between lazy and blocking from measurements (see
    /// [`Engine::set_auto`]); whether it may be lazy.
    pub fn set_auto(&mut self) -> bool {
        each!(self, x => MatchEngine::set_auto(x))
    }

    /// Settles the final matches whose remote answers have come (see
    /// [`MatchEngine::settle_answers`]); how many still wait.
    pub fn settle_answers(&mut self) -> usize {
        each!(self, x => MatchEngine::settle_answers(x))
    }

    /// Whether the engine stopped at the state bound.
    pub fn halted(&self) -> bool {
        each!(self, x => MatchEngine::halted(x))
    }

    /// The engine's state, for a checkpoint (see [`Engine::snapshot`] and
    /// [`StackEngine::snapshot`]).
    pub fn snapshot(&self) -> QuerySnapshot {
        match self {
            QueryEngine::Run(x) => QuerySnapshot::Run(MatchEngine::snapshot(x)),
            QueryEngine::Stack(x) => QuerySnapshot::Stack(MatchEngine::snapshot(x)),
        }
    }

    /// Restores a [`snapshot`](Self::snapshot) of the same query on the
    /// same engine; an error when the engine differs or the state does not
    /// fit.
    pub fn restore(&mut self, snap: QuerySnapshot) -> Result<(), RestoreError> {
        match (self, snap) {
            (QueryEngine::Run(x), QuerySnapshot::Run(s)) => MatchEngine::restore(x, s),
            (QueryEngine::Stack(x), QuerySnapshot::Stack(s)) => MatchEngine::restore(x, s),
            (x, _) => Err(RestoreError::other_engine(&x.program().name)),
        }
    }

    /// Counters and gauges, alike for both engines (see [`Stats`]).
    pub fn stats(&self) -> Stats {
        each!(self, x => MatchEngine::stats(x))
    }
}
