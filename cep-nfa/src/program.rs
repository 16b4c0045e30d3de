//! The compiled form of one query: an NFA over positive elements, with
//! predicates compiled to closures and a register plan.
//!
//! A pattern `SEQ(e1, …, en)` compiles to a chain of states, one per positive
//! element. From the last bound element `k` a run may take the next event
//! as one more event of `k` (a Kleene loop) or as the first event of any
//! later element reachable by skipping `*`/`?` elements (forward edges).
//! `NOT` elements sit on the forward edges they lie between ([`Negation`]);
//! a trailing `NOT` is a quiet period after acceptance ([`Trailing`]).
//!
//! Predicates never see the AST. Each event is first turned into a *frame*:
//! the few values any predicate reads from a candidate event (fields and
//! `PREV` values), extracted once per event. Each run carries *registers*:
//! the values later predicates read from events already bound (a field of
//! the last event of `a`, `count(b)`, `sum(b.x)`, …), updated when it binds.
//! A predicate is a closure over (event, frame, registers).
//!
//! [`Program`] is generic over the event type: the text compiler
//! ([`compile`](crate::compile)) builds `Program<cep_core::Event>`; the
//! [`builder`](crate::builder) builds one over a user's own struct.

use std::fmt;

use cep_core::{EmitValue, EventObject, Value};

pub use crate::syntax::ast::{Quant, Selection, Strategy};

/// Reads one value from an event.
pub type Extract<E> = Box<dyn Fn(&E) -> Value + Send + Sync>;
/// Tests an event's type.
pub type TypeTest<E> = Box<dyn Fn(&E) -> bool + Send + Sync>;
/// A condition on (event, frame, registers).
pub type EventPred<E> = Box<dyn Fn(&E, &[Value], &[Value]) -> bool + Send + Sync>;
/// A condition on (frame, registers): usable without the event itself.
pub type FramePred = Box<dyn Fn(&[Value], &[Value]) -> bool + Send + Sync>;
/// A condition on registers only.
pub type RegPred = Box<dyn Fn(&[Value]) -> bool + Send + Sync>;
/// A condition on (frame, registers), shareable.
pub type SharedFramePred = std::sync::Arc<dyn Fn(&[Value], &[Value]) -> bool + Send + Sync>;

/// A value computed from a final run's registers (an `EMIT` expression).
pub type RegValue = Box<dyn Fn(&[Value]) -> Value + Send + Sync>;
/// Makes the object `x.*` shows of a bound event.
pub type ObjectFn<E> = Box<dyn Fn(&E) -> EventObject + Send + Sync>;

/// Index of a register in a run.
pub type Reg = u16;
/// Index of a value in an event's frame.
pub type Slot = u16;

/// A window bound: time in timestamp units, or a count of positions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Window {
    /// ts difference at most this.
    Time(i64),
    /// position difference at most this.
    Events(u64),
}

/// What to discard after a match (LANGUAGE.md §3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SkipTo {
    /// Discard nothing.
    None,
    /// Partial matches that started with the match's first event.
    NextEvent,
    /// Partial matches that started within the match.
    PastLastEvent,
    /// Partial matches that started before the first event of this element.
    First(usize),
    /// Partial matches that started before the last event of this element.
    Last(usize),
}

/// A predicate with the text it came from (for `cep check`).
pub struct Cond<E> {
    /// The test.
    pub pred: EventPred<E>,
    /// The same test without the event, when it reads only the frame and
    /// the registers (every condition compiled from text): engines that keep
    /// frames rather than events can run it after the event has gone.
    pub frame_pred: Option<SharedFramePred>,
    /// Not checked for the first event of a Kleene element (it reads an
    /// earlier event of the same element).
    pub skip_first: bool,
    /// The earliest other positive element whose registers it reads, `None`
    /// when it reads only its candidate (a filter on one variable). Unknown
    /// (builder closures): `Some(0)`.
    pub earliest: Option<usize>,
    /// It reads registers of its own element (`b.LEN`, `b[1].x`, an
    /// aggregate of `b`), not just the candidate. Unknown: `true`.
    pub own_regs: bool,
    /// Source text, for plans and messages.
    pub text: String,
    /// The condition compares one frame value with a number
    /// (`a.speed > 5.0`): what an index over many queries' constants needs
    /// ([`share`](crate::share)). `None` for every other shape.
    pub bound: Option<Bound>,
}

/// A comparison of a frame value with a numeric constant, `slot op value`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bound {
    /// The frame value compared.
    pub slot: Slot,
    /// The comparison, with the frame value on the left.
    pub op: BoundOp,
    /// The constant: an int or a finite float.
    pub value: Value,
}

/// The comparison of a [`Bound`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BoundOp {
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

impl Bound {
    /// Whether `v op value` holds (as the condition's closure says: false
    /// when the two do not compare, e.g. for NULL).
    ///
    /// # Examples
    /// ```
    /// use cep_core::Value;
    /// use cep_nfa::program::{Bound, BoundOp};
    /// let b = Bound { slot: 0, op: BoundOp::Gt, value: Value::Float(5.0) };
    /// assert!(b.holds(Value::Int(6)) && !b.holds(Value::Float(5.0)) && !b.holds(Value::Null));
    /// ```
    pub fn holds(&self, v: Value) -> bool {
        use std::cmp::Ordering::*;
        match (v.compare(&self.value), self.op) {
            (None, _) => false,
            (Some(o), BoundOp::Lt) => o == Less,
            (Some(o), BoundOp::Le) => o != Greater,
            (Some(o), BoundOp::Gt) => o == Greater,
            (Some(o), BoundOp::Ge) => o != Less,
        }
    }
}

impl<E> Cond<E> {
    /// A condition over (frame, registers) only; `earliest` and `own_regs`
    /// as the fields.
    pub fn from_frame(
        f: SharedFramePred,
        skip_first: bool,
        earliest: Option<usize>,
        own_regs: bool,
        text: String,
    ) -> Cond<E> {
        let g = f.clone();
        let pred = Box::new(move |_: &E, fr: &[Value], rg: &[Value]| g(fr, rg));
        Cond { pred, frame_pred: Some(f), skip_first, earliest, own_regs, text, bound: None }
    }

    /// The same condition, known to be `bound` (see [`Cond::bound`]).
    pub fn with_bound(mut self, bound: Option<Bound>) -> Cond<E> {
        self.bound = bound;
        self
    }
}

impl<E> Cond<E> {
    /// Runs the test: through [`frame_pred`](Self::frame_pred) when there
    /// is one (one indirect call instead of two).
    #[inline(always)]
    pub fn test(&self, e: &E, frame: &[Value], regs: &[Value]) -> bool {
        match &self.frame_pred {
            Some(p) => p(frame, regs),
            None => (self.pred)(e, frame, regs),
        }
    }
}

/// A condition over registers only, with its text.
pub struct Completion {
    /// The test.
    pub pred: RegPred,
    /// It reads its element only through the element's first event, so its
    /// value is known once that event binds: a run for which it is false
    /// can never match and is dropped at once.
    pub at_first: bool,
    /// Source text.
    pub text: String,
}

/// How a register changes when its element binds an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RegOp {
    /// Number of events bound.
    Count,
    /// The frame slot of the latest event.
    Last(Slot),
    /// The frame slot of the first event.
    First(Slot),
    /// The frame slot of the k-th event (1-based).
    Nth(u32, Slot),
    /// Sum of non-NULL values (`sum`): NULL for good once an int addition
    /// overflows; the next register counts the values.
    Sum(Slot),
    /// The running state of `avg` in this and the next two registers: the
    /// exact int sum (low and high 64 bits) or a float sum, and the count
    /// (see [`avg_step`](crate::compile::ops::avg_step)). Apart from `Sum`
    /// because an overflowing int sum makes `sum` NULL but not `avg`.
    Avg(Slot),
    /// Smallest non-NULL value.
    Min(Slot),
    /// Largest non-NULL value.
    Max(Slot),
}

/// A register and its update.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegUpdate {
    /// Which register.
    pub reg: Reg,
    /// How it changes.
    pub op: RegOp,
}

/// A positive element: a state of the NFA.
pub struct Element<E> {
    /// Variable name.
    pub var: String,
    /// Quantifier.
    pub quant: Quant,
    /// Accepted type names (for plans).
    pub types: Vec<String>,
    /// Type test.
    pub accepts: TypeTest<E>,
    /// Conditions on each candidate event.
    pub conds: Vec<Cond<E>>,
    /// Conditions on the complete element.
    pub completion: Vec<Completion>,
    /// Register updates when an event binds.
    pub updates: Vec<RegUpdate>,
    /// The element's own window.
    pub within: Option<Window>,
    /// Remote conditions on each candidate event (LANGUAGE.md §8), checked
    /// after its local conditions held.
    pub remote: Vec<RemoteCond>,
}

/// A value computed from a candidate's frame and a run's registers (a
/// remote call's argument).
pub type FrameValue = Box<dyn Fn(&[Value], &[Value]) -> Value + Send + Sync>;

/// A conjunct that calls a remote function: `f(args…)` or `NOT f(args…)`.
pub struct RemoteCond {
    /// The function: its index among the query file's declarations
    /// ([`Compiled::remotes`](crate::compile::Compiled::remotes)).
    pub func: u16,
    /// The function's name as declared (for plans and messages).
    pub name: String,
    /// The arguments, in the declaration's order, converted to its types.
    pub args: Vec<FrameValue>,
    /// `NOT f(…)`: the condition holds when the answer is false.
    pub negated: bool,
    /// The conjunct as written (for plans).
    pub text: String,
}

impl std::fmt::Debug for RemoteCond {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteCond")
            .field("func", &self.func)
            .field("negated", &self.negated)
            .field("text", &self.text)
            .finish()
    }
}

/// A declared remote function (`REMOTE name(param type, …);`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RemoteFn {
    /// Its name as declared.
    pub name: String,
    /// Its parameters: names and types.
    pub params: Vec<(String, crate::syntax::ast::ParamType)>,
}

/// A negation between two positive elements.
pub struct Negation<E> {
    /// Variable name.
    pub var: String,
    /// Accepted type names.
    pub types: Vec<String>,
    /// Index of the positive element before it: it lies between `after`
    /// and `after + 1`.
    pub after: usize,
    /// Type test.
    pub accepts: TypeTest<E>,
    /// Conditions naming only variables bound before it (checked as the
    /// candidate arrives).
    pub early: Vec<Cond<E>>,
    /// Conditions naming later variables; when non-empty the whole negation
    /// is checked later, against the logged candidates of its region.
    pub late: Vec<LateCond>,
    /// With late conditions: the positive element whose completion makes
    /// them checkable, and the two registers holding the region bounds.
    pub deferred: Option<Deferred>,
}

/// Bookkeeping of a negation checked after the fact.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Deferred {
    /// Checked when the run moves past this positive element (or ends).
    pub check_after: usize,
    /// Register holding the region's lower bound (exclusive position).
    pub lo: Reg,
    /// Register holding the region's upper bound (exclusive position).
    pub hi: Reg,
}

/// A condition of a deferred negation.
pub struct LateCond {
    /// The test, over the candidate's frame and the run's registers.
    pub pred: FramePred,
    /// Source text.
    pub text: String,
}

/// A trailing `NOT v WITHIN d`.
pub struct Trailing<E> {
    /// Variable name.
    pub var: String,
    /// Accepted type names.
    pub types: Vec<String>,
    /// Type test.
    pub accepts: TypeTest<E>,
    /// Conditions (every positive variable is bound).
    pub conds: Vec<Cond<E>>,
    /// The quiet period, in timestamp units.
    pub quiet: i64,
}

/// One item of `EMIT`: a value every match carries (LANGUAGE.md §5).
pub struct EmitItem {
    /// Its output name: the `AS` name, or the item's text as written,
    /// trimmed (`x` for `x.*`).
    pub name: String,
    /// How it is computed.
    pub what: EmitWhat,
    /// What it reads, for plans: the registers, or the bound events.
    pub reads: String,
}

/// How an `EMIT` item is computed on a final match.
pub enum EmitWhat {
    /// An expression read as in a later element, lowered to a function of
    /// the final run's registers (the registers conditions use, so an item
    /// costs one evaluation per match and the register updates of what it
    /// reads).
    Value(RegValue),
    /// `x.*` of positive element `elem`: the bound events' objects, kept
    /// beside the buffer's nodes of that element only
    /// ([`Program::object`] makes them).
    Event {
        /// The positive element.
        elem: usize,
        /// Its quantifier: one event, an array (`+`, `*`), or null when
        /// absent (`?`).
        quant: Quant,
    },
}

/// A value of an event's frame.
pub enum FrameSlot<E> {
    /// Field `i` of the event, through
    /// [`StreamEvent::field`](crate::engine::StreamEvent::field).
    At(u32),
    /// Read from the event.
    Field(Extract<E>),
    /// The value of history column `col` of the event `n` positions earlier
    /// in the partition.
    Prev {
        /// History column.
        col: usize,
        /// Positions back (≥ 1).
        n: usize,
    },
}

/// One compiled query.
pub struct Program<E> {
    /// Query name.
    pub name: String,
    /// Positive elements in order.
    pub elements: Vec<Element<E>>,
    /// Middle negations.
    pub negations: Vec<Negation<E>>,
    /// The trailing negation.
    pub trailing: Option<Trailing<E>>,
    /// Contiguity strategy.
    pub strategy: Strategy,
    /// Statement window.
    pub window: Option<Window>,
    /// Match selection.
    pub select: Selection,
    /// After-match skip.
    pub skip: SkipTo,
    /// Partition key, and its field name.
    pub key: Option<(String, FrameSlot<E>)>,
    /// How to build a frame.
    pub frame: Vec<FrameSlot<E>>,
    /// Values kept per event for `PREV` (never [`FrameSlot::Prev`]).
    pub history: Vec<FrameSlot<E>>,
    /// Whether the type tests of elements and negations depend on the
    /// event's kind ([`StreamEvent::kind`](crate::engine::StreamEvent::kind))
    /// only, so the engine may run them once per kind.
    pub accepts_by_kind: bool,
    /// How many events back `PREV` reaches.
    pub history_depth: usize,
    /// Registers per run.
    pub regs: usize,
    /// Register names (for plans).
    pub reg_names: Vec<String>,
    /// Frame slot names (for plans).
    pub slot_names: Vec<String>,
    /// The `EMIT` items, in order (empty without `EMIT`).
    pub emit: Vec<EmitItem>,
    /// Makes a bound event's object for `x.*` items (`None` when no item
    /// is `x.*`).
    pub object: Option<ObjectFn<E>>,
    pub(crate) graph: Graph,
}

/// The edges of the NFA, derived from the quantifiers.
#[derive(Clone, Debug, Default)]
pub(crate) struct Graph {
    /// Elements an event can bind from the start.
    pub start: Vec<u16>,
    /// Per element: later elements reachable by skipping `*`/`?`.
    pub next: Vec<Vec<u16>>,
    /// Per element: whether every later element may be skipped (a match).
    pub accepting: Vec<bool>,
    /// Per element: the elements the next event may bind (itself first when
    /// Kleene, then the forward edges).
    pub cands: Vec<Vec<u16>>,
    /// Per element: whether it may bind more than one event.
    pub kleene: Vec<bool>,
    /// Bit `j`: element `j` is named by an `x.*` item of `EMIT`, so its
    /// bindings keep their event's object.
    pub objects: u64,
}

impl Graph {
    pub(crate) fn build(quants: &[Quant]) -> Graph {
        let n = quants.len();
        let reach = |from: usize| -> Vec<u16> {
            let mut v = Vec::new();
            for (j, q) in quants.iter().enumerate().skip(from) {
                v.push(j as u16);
                if !q.is_skippable() {
                    break;
                }
            }
            v
        };
        let next: Vec<Vec<u16>> = (0..n).map(|k| reach(k + 1)).collect();
        let cands = (0..n)
            .map(|k| {
                let mut c = if quants[k].is_kleene() { vec![k as u16] } else { Vec::new() };
                c.extend_from_slice(&next[k]);
                c
            })
            .collect();
        Graph {
            start: reach(0),
            accepting: (0..n).map(|k| quants[k + 1..].iter().all(|q| q.is_skippable())).collect(),
            kleene: quants.iter().map(|q| q.is_kleene()).collect(),
            next,
            cands,
            objects: 0,
        }
    }
}

impl<E> Program<E> {
    /// Finishes a program assembled field by field: derives the NFA's edges.
    pub fn finish(mut self) -> Program<E> {
        let quants: Vec<Quant> = self.elements.iter().map(|e| e.quant).collect();
        self.graph = Graph::build(&quants);
        for item in &self.emit {
            if let EmitWhat::Event { elem, .. } = item.what
                && elem < 64
            {
                self.graph.objects |= 1 << elem;
            }
        }
        self
    }

    /// Bit `j` set: element `j`'s bindings keep their event's object (it
    /// is named by an `x.*` item of `EMIT`).
    pub fn object_mask(&self) -> u64 {
        self.graph.objects
    }

    /// Appends to `out` the values of the `EMIT` items of a final match:
    /// expressions from its registers `regs`, `x.*` items from `event`
    /// (given the element and its quantifier). Both engines call this, so
    /// an item means the same whichever engine built the match; they differ
    /// only in where a bound event's object is kept.
    #[inline]
    pub(crate) fn emit_values(
        &self,
        regs: &[Value],
        mut event: impl FnMut(usize, Quant) -> EmitValue,
        out: &mut Vec<EmitValue>,
    ) {
        for item in &self.emit {
            out.push(match &item.what {
                EmitWhat::Value(f) => EmitValue::Value(f(regs)),
                EmitWhat::Event { elem, quant } => event(*elem, *quant),
            });
        }
    }

    /// Names of the positive variables, in order.
    pub fn var_names(&self) -> Vec<&str> {
        self.elements.iter().map(|e| e.var.as_str()).collect()
    }

    /// Elements reachable from the start.
    pub fn start_edges(&self) -> &[u16] {
        &self.graph.start
    }

    /// Forward edges of element `k`.
    pub fn next_edges(&self, k: usize) -> &[u16] {
        &self.graph.next[k]
    }

    /// Whether a run whose last element is `k` is a match.
    pub fn is_accepting(&self, k: usize) -> bool {
        self.graph.accepting[k]
    }
}

impl<E> fmt::Debug for Program<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Program")
            .field("name", &self.name)
            .field("vars", &self.var_names())
            .field("strategy", &self.strategy)
            .field("window", &self.window)
            .finish_non_exhaustive()
    }
}

/// `Debug` for structs holding closures: shows the named fields only.
macro_rules! debug_fields {
    ($ty:ident $(<$g:ident>)?, $($field:ident),*) => {
        impl$(<$g>)? fmt::Debug for $ty$(<$g>)? {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_struct(stringify!($ty))$(.field(stringify!($field), &self.$field))*.finish_non_exhaustive()
            }
        }
    };
}

debug_fields!(Cond<E>, text, skip_first);
debug_fields!(Completion, text, at_first);
debug_fields!(Element<E>, var, quant, types, conds, completion, updates, within);
debug_fields!(Negation<E>, var, types, after, early, late, deferred);
debug_fields!(LateCond, text);
debug_fields!(Trailing<E>, var, types, conds, quiet);
debug_fields!(EmitItem, name, what, reads);

impl fmt::Debug for EmitWhat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EmitWhat::Value(_) => f.write_str("Value(..)"),
            EmitWhat::Event { elem, quant } => write!(f, "Event {{ elem: {elem}, quant: {quant:?} }}"),
        }
    }
}

impl<E> fmt::Debug for FrameSlot<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameSlot::At(i) => write!(f, "At({i})"),
            FrameSlot::Field(_) => f.write_str("Field(..)"),
            FrameSlot::Prev { col, n } => write!(f, "Prev {{ col: {col}, n: {n} }}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn graph_skips_optional_elements() {
        let g = Graph::build(&[Quant::Star, Quant::One, Quant::Opt, Quant::Plus, Quant::Opt]);
        assert_eq!(g.start, [0, 1]);
        assert_eq!(g.next[1], [2, 3]);
        assert_eq!(g.next[3], [4]);
        assert!(g.next[4].is_empty());
        assert_eq!(g.accepting, [false, false, false, true, true]);
    }
}
