//! Patterns over your own event type, built in Rust without query text.
//!
//! The text compiler turns a query into a [`Program`]; this builder makes the
//! same kind of program from closures over any event struct, so the engines
//! and their guarantees are the same. Conditions read the candidate event
//! directly and earlier events through *captures*: values taken from an
//! element's latest event when it binds, kept per partial match.
//!
//! # Examples
//! A rise of 2 % over the previous tick of the same key, then a volume
//! spike within 60 s, then 10 s without a 1 % reversal (LANGUAGE.md §7):
//!
//! ```
//! use cep_core::Value;
//! use cep_nfa::builder::PatternBuilder;
//! use cep_nfa::engine::{Engine, StreamEvent};
//! use cep_nfa::program::{Selection, Window};
//!
//! struct Tick { ts: i64, key: i64, price: i64, vol: i64 }
//! impl StreamEvent for Tick {
//!     fn timestamp(&self) -> i64 { self.ts }
//! }
//!
//! let mut p = PatternBuilder::<Tick>::new("rise_spike");
//! p.partition_by(|t| Value::Int(t.key)).select(Selection::Earliest);
//! let prev_price = p.previous(|t| Value::Int(t.price), 1);
//! let r = p.element("r", |_| true);
//! p.condition(r, move |t, ctx| ctx.frame(prev_price).as_i64().is_some_and(|prev| t.price * 100 >= prev * 102));
//! let s = p.element("s", |t| t.vol >= 1000);
//! p.element_within(s, Window::Time(60_000));
//! let s_price = p.capture(s, |t| Value::Int(t.price));
//! p.trailing_not("v", |_| true, 10_000, move |t, ctx| {
//!     ctx.captured(s_price).as_i64().is_some_and(|sp| t.price * 100 <= sp * 99)
//! });
//! let mut engine = Engine::new(p.build().unwrap());
//!
//! let ticks = [(0, 10000, 10), (1000, 10250, 10), (21000, 10260, 5000), (40000, 10270, 10)];
//! for (ts, price, vol) in ticks {
//!     engine.push(&Tick { ts, key: 1, price, vol }).unwrap();
//! }
//! engine.finish();
//! let m: Vec<_> = engine.drain().collect();
//! assert_eq!((m.len(), m[0].start, m[0].end, m[0].rows.clone()), (1, 1000, 31000, vec![1, 2]));
//! ```

use std::fmt;

use cep_core::Value;

use crate::program::*;

/// Handle of a positive element.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ElementId(usize);

/// Handle of a value captured from an element's latest event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Captured(Reg);

/// Handle of a per-event value (a `PREV`), computed once per event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameValue(Slot);

/// What a condition sees besides the candidate event.
#[derive(Clone, Copy, Debug)]
pub struct Ctx<'a> {
    frame: &'a [Value],
    regs: &'a [Value],
}

impl Ctx<'_> {
    /// A captured value of an earlier element (NULL when it bound nothing).
    pub fn captured(&self, c: Captured) -> Value {
        self.regs[c.0 as usize]
    }

    /// A per-event value of the candidate (see [`PatternBuilder::previous`]).
    pub fn frame(&self, v: FrameValue) -> Value {
        self.frame[v.0 as usize]
    }
}

/// Why a pattern cannot be built.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BuildError(pub String);

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BuildError {}

/// Builds a [`Program`] over event type `E`.
pub struct PatternBuilder<E> {
    prog: Program<E>,
    /// Problems found while building, reported by `build`.
    errors: Vec<String>,
}

impl<E> fmt::Debug for PatternBuilder<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PatternBuilder").field("prog", &self.prog).finish()
    }
}

impl<E: 'static> PatternBuilder<E> {
    /// A pattern named `name`, skip-till-next-match, no window, no partition.
    pub fn new(name: &str) -> PatternBuilder<E> {
        PatternBuilder {
            prog: Program {
                name: name.to_owned(),
                elements: Vec::new(),
                negations: Vec::new(),
                trailing: None,
                strategy: Strategy::NextMatch,
                window: None,
                select: Selection::All,
                skip: SkipTo::None,
                key: None,
                frame: Vec::new(),
                history: Vec::new(),
                accepts_by_kind: false,
                history_depth: 0,
                regs: 0,
                reg_names: Vec::new(),
                slot_names: Vec::new(),
                emit: Vec::new(),
                object: None,
                graph: Default::default(),
            },
            errors: Vec::new(),
        }
    }

    /// Appends a positive element binding exactly one event that `accepts`.
    pub fn element(&mut self, var: &str, accepts: impl Fn(&E) -> bool + Send + Sync + 'static) -> ElementId {
        self.element_q(var, Quant::One, accepts)
    }

    /// Appends a positive element with a quantifier (`+`, `*`, `?`).
    pub fn element_q(
        &mut self,
        var: &str,
        quant: Quant,
        accepts: impl Fn(&E) -> bool + Send + Sync + 'static,
    ) -> ElementId {
        if self.prog.trailing.is_some() {
            self.errors.push(format!("element `{var}` after the trailing negation"));
        }
        self.prog.elements.push(Element {
            var: var.to_owned(),
            quant,
            types: vec!["(closure)".to_owned()],
            accepts: Box::new(accepts),
            conds: Vec::new(),
            completion: Vec::new(),
            updates: Vec::new(),
            within: None,
            remote: Vec::new(),
        });
        ElementId(self.prog.elements.len() - 1)
    }

    /// Adds a condition on each event considered for `el`.
    pub fn condition(&mut self, el: ElementId, f: impl Fn(&E, &Ctx<'_>) -> bool + Send + Sync + 'static) -> &mut Self {
        let pred: EventPred<E> = Box::new(move |e, frame, regs| f(e, &Ctx { frame, regs }));
        self.prog.elements[el.0].conds.push(closure_cond(pred));
        self
    }

    /// Bounds the time or positions between the previous element's last
    /// event and `el`'s first event.
    pub fn element_within(&mut self, el: ElementId, w: Window) -> &mut Self {
        self.prog.elements[el.0].within = Some(w);
        self
    }

    /// Captures `f` of `el`'s latest event for later conditions.
    pub fn capture(&mut self, el: ElementId, f: impl Fn(&E) -> Value + Send + Sync + 'static) -> Captured {
        self.prog.frame.push(FrameSlot::Field(Box::new(f)));
        self.prog.slot_names.push(format!("capture of {}", self.prog.elements[el.0].var));
        let slot = (self.prog.frame.len() - 1) as Slot;
        let reg = self.prog.regs as Reg;
        self.prog.regs += 1;
        self.prog.reg_names.push(format!("{} capture #{}", self.prog.elements[el.0].var, reg));
        self.prog.elements[el.0].updates.push(RegUpdate { reg, op: RegOp::Last(slot) });
        Captured(reg)
    }

    /// `f` of the event `n` (≥ 1) positions before the candidate in its
    /// partition, whatever its type (NULL when there is none).
    pub fn previous(&mut self, f: impl Fn(&E) -> Value + Send + Sync + 'static, n: usize) -> FrameValue {
        self.prog.history.push(FrameSlot::Field(Box::new(f)));
        let col = self.prog.history.len() - 1;
        self.prog.history_depth = self.prog.history_depth.max(n.max(1));
        self.prog.frame.push(FrameSlot::Prev { col, n: n.max(1) });
        self.prog.slot_names.push(format!("previous #{col} ({n} back)"));
        FrameValue((self.prog.frame.len() - 1) as Slot)
    }

    /// A negation between the last element added and the next one: no
    /// event accepted by `accepts` and `cond` may come between them.
    pub fn not_between(
        &mut self,
        var: &str,
        accepts: impl Fn(&E) -> bool + Send + Sync + 'static,
        cond: impl Fn(&E, &Ctx<'_>) -> bool + Send + Sync + 'static,
    ) -> &mut Self {
        let Some(after) = self.prog.elements.len().checked_sub(1) else {
            self.errors.push(format!("negation `{var}` before any element"));
            return self;
        };
        let pred: EventPred<E> = Box::new(move |e, frame, regs| cond(e, &Ctx { frame, regs }));
        self.prog.negations.push(Negation {
            var: var.to_owned(),
            types: vec!["(closure)".to_owned()],
            after,
            accepts: Box::new(accepts),
            early: vec![closure_cond(pred)],
            late: Vec::new(),
            deferred: None,
        });
        self
    }

    /// A trailing negation: the match is final only after `quiet` time
    /// units without an event accepted by `accepts` and `cond`.
    pub fn trailing_not(
        &mut self,
        var: &str,
        accepts: impl Fn(&E) -> bool + Send + Sync + 'static,
        quiet: i64,
        cond: impl Fn(&E, &Ctx<'_>) -> bool + Send + Sync + 'static,
    ) -> &mut Self {
        let pred: EventPred<E> = Box::new(move |e, frame, regs| cond(e, &Ctx { frame, regs }));
        self.prog.trailing = Some(Trailing {
            var: var.to_owned(),
            types: vec!["(closure)".to_owned()],
            accepts: Box::new(accepts),
            conds: vec![closure_cond(pred)],
            quiet,
        });
        self
    }

    /// Sets the contiguity strategy.
    pub fn strategy(&mut self, s: Strategy) -> &mut Self {
        self.prog.strategy = s;
        self
    }

    /// Bounds the whole match.
    pub fn within(&mut self, w: Window) -> &mut Self {
        self.prog.window = Some(w);
        self
    }

    /// Partitions the stream by a key.
    pub fn partition_by(&mut self, key: impl Fn(&E) -> Value + Send + Sync + 'static) -> &mut Self {
        self.prog.key = Some(("(closure)".to_owned(), FrameSlot::Field(Box::new(key))));
        self
    }

    /// Partitions the stream by field `field` of the event
    /// ([`StreamEvent::field`](crate::engine::StreamEvent::field); for a
    /// `cep_core::Event`, its field with that id in the schema), shown as
    /// `name`. Unlike [`partition_by`](Self::partition_by)'s closure, a
    /// runtime on several threads can route the events by this key, so
    /// that each thread runs some of the keys.
    pub fn partition_by_field(&mut self, name: &str, field: u32) -> &mut Self {
        self.prog.key = Some((name.to_owned(), FrameSlot::At(field)));
        self
    }

    /// Sets the match selection.
    pub fn select(&mut self, s: Selection) -> &mut Self {
        self.prog.select = s;
        self
    }

    /// Sets the after-match skip.
    pub fn skip(&mut self, s: SkipTo) -> &mut Self {
        self.prog.skip = s;
        self
    }

    /// Checks the pattern and returns the program.
    pub fn build(mut self) -> Result<Program<E>, BuildError> {
        if self.prog.elements.is_empty() {
            self.errors.push("a pattern needs at least one element".to_owned());
        }
        if self.prog.select != Selection::All && self.prog.skip != SkipTo::None {
            self.errors.push("a selection other than ALL cannot be combined with an after-match skip".to_owned());
        }
        if let Some(g) = self.prog.negations.iter().find(|g| g.after + 1 >= self.prog.elements.len()) {
            self.errors.push(format!("negation `{}` has no element after it: use trailing_not", g.var));
        }
        if let SkipTo::First(i) | SkipTo::Last(i) = self.prog.skip
            && i >= self.prog.elements.len()
        {
            self.errors.push(format!("skip to element #{i}, which does not exist"));
        }
        if self.prog.negations.len() > 64 || self.prog.elements.len() > 64 {
            self.errors.push("at most 64 elements and 64 negations".to_owned());
        }
        if !self.errors.is_empty() {
            return Err(BuildError(self.errors.join("; ")));
        }
        Ok(self.prog.finish())
    }
}

/// A condition from a closure over the event: it may read anything, so
/// engines treat it as reading every register and the event itself.
fn closure_cond<E>(pred: EventPred<E>) -> Cond<E> {
    Cond {
        pred,
        frame_pred: None,
        skip_first: false,
        earliest: Some(0),
        own_regs: true,
        text: "(closure)".to_owned(),
        bound: None,
    }
}
