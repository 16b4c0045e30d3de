//! The brute-force reference matcher: LANGUAGE.md §3 ("What a match is"),
//! with the choices of `docs/semantics.md`, written as directly as we could.
//!
//! This module is the **specification in code**. It shares nothing with the
//! compiler or the engines but the parser's AST: it resolves the statement
//! itself, evaluates conditions with its own small interpreter over
//! [`Value`]s, and finds matches by enumerating every candidate binding of
//! positions to the positive elements and keeping those that satisfy the five
//! rules of §3. Property tests compare the engines with it on small random
//! streams; when they disagree, and this module follows the text, the engine
//! is wrong.
//!
//! # How it works
//!
//! 1. **Resolve** the statement: partition field, strategy,
//!    windows in timestamp units, the owner of every conjunct (the element of
//!    the last variable it names; a conjunct naming a `NOT` variable belongs
//!    to that negation) and, for a positive owner `b`, whether the conjunct is
//!    an *iteration conjunct* (it reads the candidate: `b.f`, `b[i].f`,
//!    `b[i-1].f` or `PREV` of one) or a *completion condition*, and whether it
//!    *needs an earlier event* of `b`.
//! 2. **Partition** the events by key (missing field: the NULL key), keeping
//!    processing order; a position is an index within the partition.
//! 3. **Enumerate** candidate bindings depth first. A candidate is built one
//!    bound position at a time, left to right, and every rule that is a
//!    condition on a prefix is checked as soon as the prefix is known:
//!    rule 1 (quantifiers, increasing positions), rule 2 (type, iteration
//!    conjuncts with the earlier events of the variable as history, completion
//!    conditions when the next positive element binds or the match ends),
//!    rule 3 (statement and element windows) and rule 5 (the strategy, which
//!    only looks at the partial match ending at the previous bound position).
//!    Checking them early prunes the search but decides exactly the same set
//!    as filtering complete candidates would.
//! 4. **Negations** (rule 4) are checked on each complete candidate, with every
//!    positive variable bound.
//! 5. **Order**: each match gets its *moment* (the processing of its last
//!    bound event, or, with a trailing `NOT … WITHIN d`, the watermark passing
//!    `end`), then `SELECT EARLIEST/LATEST` and `AFTER MATCH SKIP` are applied
//!    in emission order.
//!
//! # Complexity and limits
//!
//! Exponential: a partition of `n` events and a pattern of `k` positive
//! elements can have on the order of `2^n · C(n+k, k)` candidates under
//! `skip-till-any-match`, and each is checked by re-evaluating conditions from
//! scratch (`O(n)` per event for aggregates). It is meant for streams of a
//! dozen or so events per partition and patterns of up to four or five
//! elements, nothing larger.
//!
//! It assumes the statement passed the compiler's semantic checks and that
//! the events are sorted by `ts` (processing order). Things the compiler
//! rejects are not diagnosed here: an unknown variable or field reads as
//! NULL, `b[i]` outside `b`'s own conditions reads as NULL, an aggregate of a
//! non-Kleene variable is computed anyway, a middle `NOT`'s `WITHIN` is
//! ignored. It knows nothing of `--max-delay` or late events: the input is the
//! processing order, and the watermark is the largest `ts` processed.
//!
//! # Small decisions the texts leave open
//!
//! - `i64::MIN % -1` is 0 (the remainder fits, though `i64::MIN / -1`
//!   overflows and gives NULL; Rust's `checked_rem` would say NULL).
//! - `sum` is a float sum of every numeric value as soon as one of them is a
//!   float, otherwise an int sum that is NULL if it overflows anywhere.
//! - Emission moments are ordered as `(ts, 0, global index)` for the
//!   processing of an event and `(deadline, 1)` for a trailing `NOT`'s
//!   deadline: a deadline fires after every event with `ts <= deadline` and
//!   before the first one with a larger `ts`.

use std::collections::{BTreeMap, HashMap};

use cep_core::time::{DurationUnit, TimeUnit, to_ticks};
use cep_core::{EmitValue, Event, EventObject, FieldId, Schema, Sym, Value};

use crate::syntax::ast::{
    AggFn, Attr, BinOp, Conjunct, Element, EmitItem, EmitKind, Expr, Index, Lit, Quant, Ref, Selection, Skip,
    Statement, Strategy, Window, WindowKind,
};

/// One match, as the reference finds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RefMatch {
    /// The partition key (NULL without a partition).
    pub key: Value,
    /// ts of the first bound event.
    pub start: i64,
    /// ts of the last bound event, plus the quiet period of a trailing `NOT`.
    pub end: i64,
    /// Rows bound to each positive variable, in `SEQ` order (`[]` for an
    /// absent `?` or an empty `*`).
    pub vars: Vec<Vec<u64>>,
    /// The values of the statement's `EMIT` items, in item order (empty
    /// without `EMIT`).
    pub emit: Vec<EmitValue>,
}

/// The names of the positive variables, in `SEQ` order: the names of
/// [`RefMatch::vars`].
pub fn positive_vars(stmt: &Statement) -> Vec<&str> {
    stmt.elements.iter().filter(|e| !e.negated).map(|e| e.var.name.as_str()).collect()
}

/// Finds every match of `stmt` over `events`, in emission order.
///
/// `events` must be in processing order (non-decreasing `ts`); `schema` maps
/// the field names of the query to the events' `fields`; `unit` is the unit
/// of `ts` (for durations written with a unit).
pub fn run(stmt: &Statement, events: &[Event], schema: &Schema, unit: TimeUnit) -> Vec<RefMatch> {
    run_inner(Resolved::new(stmt, schema, unit), stmt, events)
}

/// [`run`] for a statement with remote calls (LANGUAGE.md §8): each call
/// takes the value `answer(function, arguments)` gives, the function being
/// its index among `fns` (the file's declarations, by name, case-insensitive)
/// and the arguments converted to the declared types. (In [`run`], a call
/// is NULL: false.)
pub fn run_with_remote(
    stmt: &Statement,
    events: &[Event],
    schema: &Schema,
    unit: TimeUnit,
    fns: &[crate::program::RemoteFn],
    answer: &dyn Fn(u16, &[Value]) -> bool,
) -> Vec<RefMatch> {
    let mut q = Resolved::new(stmt, schema, unit);
    q.remote = Some(Remote { fns, answer });
    run_inner(q, stmt, events)
}

fn run_inner(q: Resolved<'_>, stmt: &Statement, events: &[Event]) -> Vec<RefMatch> {
    let parts = partitions(&q, events);

    // Rules 1–5, partition by partition, then SELECT.
    let mut found: Vec<Found> = Vec::new();
    for (pi, part) in parts.iter().enumerate() {
        let mut bindings = Vec::new();
        let mut st = Partial { bind: vec![Vec::new(); stmt.elements.len()], rank: None, first: None, last: None };
        q.search(part, &mut st, &mut bindings);
        let all: Vec<Found> = bindings.into_iter().map(|b| q.found(pi, part, b)).collect();
        found.extend(select(q.selection, all));
    }

    // Emission order: moment, then start, then rows variable by variable.
    found.sort_by(|a, b| (a.moment, a.start, &a.rows).cmp(&(b.moment, b.start, &b.rows)));

    // AFTER MATCH SKIP: an emitted match discards the not-yet-emitted matches
    // of its partition that started in a range of positions. A match is
    // discarded iff some match emitted before it covers its start.
    let mut blocked: Vec<Vec<bool>> = parts.iter().map(|p| vec![false; p.events.len()]).collect();
    let mut out = Vec::new();
    for f in found {
        if blocked[f.part][f.first] {
            continue;
        }
        if let Some(range) = q.skip_range(&f) {
            for s in range {
                blocked[f.part][s] = true;
            }
        }
        let emit = if q.emit.is_empty() { Vec::new() } else { q.emit_values(&parts[f.part], &f.bind) };
        out.push(RefMatch { key: parts[f.part].key, start: f.start, end: f.end, vars: f.rows, emit });
    }
    out
}

// ---------------------------------------------------------------------------
// Resolution

/// A window bound in timestamp units or in positions.
#[derive(Clone, Copy, Debug)]
enum Bound {
    Ticks(i64),
    Events(u64),
}

impl Bound {
    fn new(w: &Window, unit: TimeUnit) -> Bound {
        match &w.kind {
            WindowKind::Events(n) => Bound::Events(*n),
            WindowKind::Time { number, unit: word } => {
                let du = match word {
                    Some(word) => DurationUnit::parse(&word.name).expect("a duration unit the parser accepted"),
                    None => DurationUnit::Ticks,
                };
                Bound::Ticks(to_ticks(number, du, unit).expect("a valid duration"))
            }
        }
    }

    /// Whether the event at position `to` is within the bound from `from`.
    fn holds(self, part: &Partition<'_>, from: usize, to: usize) -> bool {
        match self {
            Bound::Ticks(w) => i128::from(part.ts(to)) - i128::from(part.ts(from)) <= i128::from(w),
            Bound::Events(n) => (to as u128).saturating_sub(from as u128) <= u128::from(n),
        }
    }
}

/// An iteration conjunct of a positive element.
struct IterCond<'s> {
    expr: &'s Expr,
    /// Not checked for the element's first event.
    needs_earlier: bool,
}

/// The statement, resolved for matching.
struct Resolved<'s> {
    elements: &'s [Element],
    /// Element indexes of the positive elements, in SEQ order.
    positives: Vec<usize>,
    /// Variable name → element index.
    var_elem: HashMap<&'s str, usize>,
    /// Accepted types per element.
    types: Vec<Vec<Sym>>,
    /// Field name → id (None: the schema does not know it; reads as NULL).
    fields: HashMap<String, Option<FieldId>>,
    /// `None`: no partition. `Some(None)`: a partition field the schema does
    /// not know (every event has the NULL key).
    key_field: Option<Option<FieldId>>,
    strategy: Strategy,
    window: Option<Bound>,
    /// Per element: its own WITHIN (for a trailing NOT, the quiet period).
    elem_window: Vec<Option<Bound>>,
    /// Per element: iteration conjuncts (positive elements).
    iteration: Vec<Vec<IterCond<'s>>>,
    /// Per element: completion conditions (positive elements).
    completion: Vec<Vec<&'s Expr>>,
    /// Per element: the negation's conjuncts (NOT elements).
    negation: Vec<Vec<&'s Expr>>,
    /// The trailing NOT, if any: a NOT with no positive element after it.
    trailing: Option<usize>,
    selection: Selection,
    skip: Skip,
    /// The `EMIT` items.
    emit: &'s [EmitItem],
    /// Field names by id, for `x.*` objects.
    names: Vec<Sym>,
    /// How remote calls are answered (`None`: they are NULL).
    remote: Option<Remote<'s>>,
}

/// The remote functions of [`run_with_remote`] and their answers.
struct Remote<'s> {
    fns: &'s [crate::program::RemoteFn],
    answer: &'s dyn Fn(u16, &[Value]) -> bool,
}

impl Remote<'_> {
    fn call(&self, name: &str, args: Vec<Value>) -> Value {
        let Some(i) = self.fns.iter().position(|f| f.name.eq_ignore_ascii_case(name)) else { return Value::Null };
        let f = &self.fns[i];
        if f.params.len() != args.len() {
            return Value::Null;
        }
        let args: Vec<Value> = args.into_iter().zip(&f.params).map(|(v, (_, t))| t.convert(v)).collect();
        Value::Bool((self.answer)(i as u16, &args))
    }
}

impl<'s> Resolved<'s> {
    fn new(stmt: &'s Statement, schema: &Schema, unit: TimeUnit) -> Resolved<'s> {
        let elements = &stmt.elements[..];
        let n = elements.len();
        let positives: Vec<usize> = (0..n).filter(|&i| !elements[i].negated).collect();
        let var_elem: HashMap<&str, usize> =
            elements.iter().enumerate().map(|(i, e)| (e.var.name.as_str(), i)).collect();
        let types = elements.iter().map(|e| e.types.iter().map(|t| Sym::new(&t.name)).collect()).collect();

        let mut key_name: Option<&str> = stmt.partition.as_ref().map(|p| p.name.as_str());
        let mut iteration: Vec<Vec<IterCond<'s>>> = (0..n).map(|_| Vec::new()).collect();
        let mut completion: Vec<Vec<&Expr>> = vec![Vec::new(); n];
        let mut negation: Vec<Vec<&Expr>> = vec![Vec::new(); n];
        let mut fields = HashMap::new();
        for c in &stmt.conjuncts {
            let e = match c {
                Conjunct::Partition(f) => {
                    key_name = Some(&f.name);
                    continue;
                }
                Conjunct::Expr(e) => e,
            };
            e.walk(|x| {
                let name = match x {
                    Expr::Ref(Ref { attr: Attr::Field(f), .. })
                    | Expr::Prev(Ref { attr: Attr::Field(f), .. }, _, _)
                    | Expr::Agg(_, _, f, _) => &f.name,
                    _ => return,
                };
                fields.entry(name.clone()).or_insert_with(|| schema.lookup(name));
            });
            let named: Vec<usize> = e.vars().iter().filter_map(|v| var_elem.get(v.name.as_str()).copied()).collect();
            if let Some(&m) = named.iter().filter(|&&i| elements[i].negated).max() {
                // A conjunct naming a NOT variable belongs to that negation.
                negation[m].push(e);
            } else if let Some(&owner) = named.iter().max() {
                // Otherwise to the element of the last variable it names.
                let v = elements[owner].var.name.as_str();
                if reads_candidate(e, v) {
                    iteration[owner].push(IterCond { expr: e, needs_earlier: needs_earlier(e, v) });
                } else {
                    completion[owner].push(e);
                }
            }
        }
        for item in &stmt.emit {
            if let EmitKind::Expr(e) = &item.kind {
                e.walk(|x| {
                    if let Expr::Ref(Ref { attr: Attr::Field(f), .. })
                    | Expr::Prev(Ref { attr: Attr::Field(f), .. }, _, _)
                    | Expr::Agg(_, _, f, _) = x
                    {
                        fields.entry(f.name.clone()).or_insert_with(|| schema.lookup(&f.name));
                    }
                });
            }
        }
        let key_field = key_name.map(|k| schema.lookup(k));
        let trailing = (0..n).find(|&i| elements[i].negated && positives.iter().all(|&p| p < i));
        Resolved {
            elements,
            var_elem,
            types,
            fields,
            key_field,
            strategy: stmt.strategy.map_or(Strategy::NextMatch, |(s, _)| s),
            window: stmt.within.as_ref().map(|w| Bound::new(w, unit)),
            elem_window: elements.iter().map(|e| e.within.as_ref().map(|w| Bound::new(w, unit))).collect(),
            iteration,
            completion,
            negation,
            trailing,
            positives,
            selection: stmt.select.map_or(Selection::All, |(s, _)| s),
            skip: stmt.skip.as_ref().map_or(Skip::None, |(s, _)| s.clone()),
            emit: &stmt.emit,
            names: schema.field_names().map(Sym::new).collect(),
            remote: None,
        }
    }

    /// The `EMIT` items of a final match, straight from LANGUAGE.md §5:
    /// an expression evaluated with every variable complete (as in a later
    /// element), `x.*` the bound events as objects.
    fn emit_values(&self, part: &Partition<'_>, bind: &[Vec<usize>]) -> Vec<EmitValue> {
        let env = Env { q: self, part, bind, cand: None };
        let object = |p: usize| EventObject::of(part.events[p], &self.names);
        self.emit
            .iter()
            .map(|item| match &item.kind {
                EmitKind::Expr(e) => EmitValue::Value(env.eval(e)),
                EmitKind::Event(v) => {
                    let e = self.var_elem[v.name.as_str()];
                    let ps = &bind[e];
                    match self.elements[e].quant {
                        Quant::Plus | Quant::Star => EmitValue::Events(ps.iter().map(|&p| object(p)).collect()),
                        _ => ps.first().map_or(EmitValue::Null, |&p| EmitValue::Event(object(p))),
                    }
                }
            })
            .collect()
    }

    fn quant(&self, rank: usize) -> Quant {
        self.elements[self.positives[rank]].quant
    }
}

/// Whether a conjunct owned by `v` reads the candidate event: it contains
/// `v.f`, `v[i].f`, `v[i-1].f` or `PREV` of one of these.
fn reads_candidate(e: &Expr, v: &str) -> bool {
    let mut yes = false;
    e.walk(|x| {
        if let Expr::Ref(r) | Expr::Prev(r, _, _) = x
            && r.var.name == v
            && matches!(r.attr, Attr::Field(_))
            && matches!(r.index, Index::None | Index::I | Index::IMinus1)
        {
            yes = true;
        }
    });
    yes
}

/// Whether a conjunct of `v` needs an earlier event of `v`: it reads
/// `v[i-1]`, `v[v.LEN]` or an aggregate of `v` other than `count`.
fn needs_earlier(e: &Expr, v: &str) -> bool {
    let mut yes = false;
    e.walk(|x| match x {
        Expr::Ref(r) | Expr::Prev(r, _, _)
            if r.var.name == v
                && (matches!(&r.index, Index::IMinus1) || matches!(&r.index, Index::Len(w) if w.name == v)) =>
        {
            yes = true;
        }
        Expr::Agg(_, w, _, _) if w.name == v => yes = true,
        _ => {}
    });
    yes
}

// ---------------------------------------------------------------------------
// Partitions

/// The events of one key, in processing order.
struct Partition<'e> {
    key: Value,
    events: Vec<&'e Event>,
    /// Index in the whole input of each event (its processing order).
    global: Vec<usize>,
}

impl Partition<'_> {
    fn ts(&self, pos: usize) -> i64 {
        self.events[pos].ts
    }
}

fn partitions<'e>(q: &Resolved<'_>, events: &'e [Event]) -> Vec<Partition<'e>> {
    let mut parts: Vec<Partition<'e>> = Vec::new();
    for (g, ev) in events.iter().enumerate() {
        let key = match q.key_field {
            Some(Some(f)) => ev.get(f),
            _ => Value::Null,
        };
        let i = match parts.iter().position(|p| p.key == key) {
            Some(i) => i,
            None => {
                parts.push(Partition { key, events: Vec::new(), global: Vec::new() });
                parts.len() - 1
            }
        };
        parts[i].events.push(ev);
        parts[i].global.push(g);
    }
    parts
}

// ---------------------------------------------------------------------------
// Enumeration (rules 1, 2, 3, 5) and negations (rule 4)

/// A partial match: the positions bound so far.
struct Partial {
    /// Per element index: its bound positions (empty for NOT elements).
    bind: Vec<Vec<usize>>,
    /// Rank (index into `positives`) of the element of the last bound event.
    rank: Option<usize>,
    first: Option<usize>,
    last: Option<usize>,
}

impl Resolved<'_> {
    /// Extends `st` in every way the rules allow; pushes each complete match.
    fn search(&self, part: &Partition<'_>, st: &mut Partial, out: &mut Vec<Vec<Vec<usize>>>) {
        // The partial match may end here (rule 1: the rest is skippable;
        // rule 2: completion conditions; rule 4: negations).
        if st.rank.is_some() && self.may_end(part, st) && self.negations_hold(part, &st.bind, st.last) {
            out.push(st.bind.clone());
        }
        let from = st.last.map_or(0, |l| l + 1);
        for q in from..part.events.len() {
            // Rule 3 (statement window): ts and positions only grow, so no
            // later event fits either.
            if let (Some(f), Some(w)) = (st.first, self.window)
                && !w.holds(part, f, q)
            {
                break;
            }
            // Rule 5, strict-contiguity: only the next position.
            if self.strategy == Strategy::Strict
                && let Some(l) = st.last
                && q != l + 1
            {
                break;
            }
            let mut relevant = false;
            for j in st.rank.unwrap_or(0)..self.positives.len() {
                if self.may_bind(part, st, j, q) {
                    relevant = true;
                    let e = self.positives[j];
                    let saved = (st.rank, st.first, st.last);
                    st.bind[e].push(q);
                    st.rank = Some(j);
                    st.first.get_or_insert(q);
                    st.last = Some(q);
                    self.search(part, st, out);
                    st.bind[e].pop();
                    (st.rank, st.first, st.last) = saved;
                }
            }
            // Rule 5, skip-till-next-match: an event that could be bound next
            // (under rules 2 and 3: exactly `may_bind`) may not be skipped.
            if self.strategy == Strategy::NextMatch && st.last.is_some() && relevant {
                break;
            }
        }
    }

    /// Whether position `q` can be bound next to the positive element of rank
    /// `j` (rules 1, 2 and 3): as one more event of the current Kleene element,
    /// or as the first event of a later element reachable by skipping `*`/`?`
    /// elements, whose completion conditions (and the left element's) hold.
    fn may_bind(&self, part: &Partition<'_>, st: &Partial, j: usize, q: usize) -> bool {
        let e = self.positives[j];
        if !self.type_ok(part, e, q) {
            return false;
        }
        match st.rank {
            Some(k) if k == j => {
                if !self.quant(j).is_kleene() {
                    return false;
                }
            }
            Some(k) if k < j => {
                if !(k + 1..j).all(|t| self.quant(t).is_skippable())
                    || !(k..j).all(|t| self.completion_holds(part, &st.bind, self.positives[t]))
                {
                    return false;
                }
            }
            Some(_) => return false,
            None => {
                if !(0..j).all(|t| self.quant(t).is_skippable())
                    || !(0..j).all(|t| self.completion_holds(part, &st.bind, self.positives[t]))
                {
                    return false;
                }
            }
        }
        // Rule 3: the element's own window, from the last event bound before it.
        if st.rank != Some(j)
            && let (Some(l), Some(w)) = (st.last, self.elem_window[e])
            && !w.holds(part, l, q)
        {
            return false;
        }
        // Rule 3: the statement window.
        if let (Some(f), Some(w)) = (st.first, self.window)
            && !w.holds(part, f, q)
        {
            return false;
        }
        // Rule 2: the iteration conjuncts, with the element's earlier events
        // as history and every earlier variable complete.
        let env = Env { q: self, part, bind: &st.bind, cand: Some((e, q)) };
        let first_event = st.bind[e].is_empty();
        self.iteration[e].iter().all(|c| (first_event && c.needs_earlier) || env.holds(c.expr))
    }

    /// Whether the match may end after `st` (rule 1: the remaining elements
    /// are skippable; rule 2: completion conditions of the last element and
    /// of the skipped ones).
    fn may_end(&self, part: &Partition<'_>, st: &Partial) -> bool {
        let k = st.rank.expect("at least one event is bound");
        (k + 1..self.positives.len()).all(|t| self.quant(t).is_skippable())
            && (k..self.positives.len()).all(|t| self.completion_holds(part, &st.bind, self.positives[t]))
    }

    fn completion_holds(&self, part: &Partition<'_>, bind: &[Vec<usize>], e: usize) -> bool {
        let env = Env { q: self, part, bind, cand: None };
        self.completion[e].iter().all(|c| env.holds(c))
    }

    fn type_ok(&self, part: &Partition<'_>, e: usize, pos: usize) -> bool {
        self.types[e].contains(&part.events[pos].ty)
    }

    /// Rule 4 over a complete binding.
    fn negations_hold(&self, part: &Partition<'_>, bind: &[Vec<usize>], last: Option<usize>) -> bool {
        let last = last.expect("at least one event is bound");
        for m in (0..self.elements.len()).filter(|&m| self.elements[m].negated) {
            let region: Vec<usize> = if self.trailing == Some(m) {
                // Trailing NOT v WITHIN d: events after the last bound one with
                // ts <= ts(last) + d.
                (last + 1..part.events.len())
                    .take_while(|&r| self.elem_window[m].is_none_or(|w| w.holds(part, last, r)))
                    .collect()
            } else {
                // Middle NOT: strictly between the last position bound before
                // it and the first one bound after it.
                let before = self.positives.iter().filter(|&&p| p < m).flat_map(|&p| bind[p].iter().copied()).max();
                let after = self.positives.iter().filter(|&&p| p > m).flat_map(|&p| bind[p].iter().copied()).min();
                match (before, after) {
                    (Some(b), Some(a)) => (b + 1..a).collect(),
                    _ => Vec::new(),
                }
            };
            if region.into_iter().any(|r| self.negated_by(part, bind, m, r)) {
                return false;
            }
        }
        true
    }

    /// Whether the event at `r` is one the NOT element `m` forbids, with every
    /// positive variable bound as in `bind`.
    fn negated_by(&self, part: &Partition<'_>, bind: &[Vec<usize>], m: usize, r: usize) -> bool {
        if !self.type_ok(part, m, r) {
            return false;
        }
        let mut with_n = bind.to_vec();
        with_n[m] = vec![r];
        let env = Env { q: self, part, bind: &with_n, cand: None };
        self.negation[m].iter().all(|c| env.holds(c))
    }
}

// ---------------------------------------------------------------------------
// Results, SELECT and SKIP

/// A final match with what ordering needs.
struct Found {
    part: usize,
    /// Per element index: the bound positions (for `EMIT`).
    bind: Vec<Vec<usize>>,
    /// Positions of the first and last bound events.
    first: usize,
    last: usize,
    /// Positions per positive variable.
    pos: Vec<Vec<usize>>,
    rows: Vec<Vec<u64>>,
    start: i64,
    end: i64,
    /// When it becomes final: `(ts, 0, global index)` for the processing of
    /// its last event, `(deadline, 1, 0)` for a trailing NOT's deadline.
    moment: (i64, u8, usize),
}

impl Resolved<'_> {
    fn found(&self, pi: usize, part: &Partition<'_>, bind: Vec<Vec<usize>>) -> Found {
        let pos: Vec<Vec<usize>> = self.positives.iter().map(|&e| bind[e].clone()).collect();
        let rows = pos.iter().map(|ps| ps.iter().map(|&p| part.events[p].row).collect()).collect();
        let first = pos.iter().flatten().copied().min().expect("at least one event is bound");
        let last = pos.iter().flatten().copied().max().expect("at least one event is bound");
        let start = part.ts(first);
        let (end, moment) = match self.trailing.and_then(|m| self.elem_window[m]) {
            Some(Bound::Ticks(d)) => {
                let end = part.ts(last).saturating_add(d);
                (end, (end, 1, 0))
            }
            _ => (part.ts(last), (part.ts(last), 0, part.global[last])),
        };
        Found { part: pi, bind, first, last, pos, rows, start, end, moment }
    }

    /// The positions (in `f`'s partition) whose not-yet-emitted matches `f`
    /// discards when emitted.
    fn skip_range(&self, f: &Found) -> Option<std::ops::Range<usize>> {
        let var_positions = |name: &str| -> &[usize] {
            let e = self.var_elem[name];
            let rank = self.positives.iter().position(|&p| p == e).expect("a positive variable");
            &f.pos[rank]
        };
        match &self.skip {
            Skip::None => None,
            Skip::ToNextEvent => Some(f.first..f.first + 1),
            Skip::PastLastEvent => Some(f.first..f.last + 1),
            Skip::ToFirst(x) => var_positions(&x.name).first().map(|&p| f.first..p),
            Skip::ToLast(x) => var_positions(&x.name).last().map(|&p| f.first..p),
        }
    }
}

/// `SELECT`: of the matches sharing their last bound event, keep the one with
/// the earliest (latest) start, ties by the smallest (largest) rows.
fn select(sel: Selection, all: Vec<Found>) -> Vec<Found> {
    if sel == Selection::All {
        return all;
    }
    let mut best: BTreeMap<usize, Found> = BTreeMap::new();
    for f in all {
        let replace = match best.get(&f.last) {
            None => true,
            Some(b) => {
                let ord = (f.start, &f.rows).cmp(&(b.start, &b.rows));
                match sel {
                    Selection::Earliest => ord.is_lt(),
                    _ => ord.is_gt(),
                }
            }
        };
        if replace {
            best.insert(f.last, f);
        }
    }
    best.into_values().collect()
}

// ---------------------------------------------------------------------------
// Expressions

/// What the variables are bound to while evaluating a condition.
struct Env<'a> {
    q: &'a Resolved<'a>,
    part: &'a Partition<'a>,
    /// Per element index: bound positions. For the element being iterated,
    /// the events taken before the candidate; for a NOT element, `[r]`.
    bind: &'a [Vec<usize>],
    /// `(element, position)` of the candidate inside that element's own
    /// iteration conjuncts.
    cand: Option<(usize, usize)>,
}

impl Env<'_> {
    /// A condition holds when it evaluates to TRUE (NULL counts as false).
    fn holds(&self, e: &Expr) -> bool {
        truth(self.eval(e))
    }

    fn eval(&self, e: &Expr) -> Value {
        match e {
            Expr::Lit(l, _) => match l {
                Lit::Int(i) => Value::Int(*i),
                Lit::Float(f) => Value::float(*f),
                Lit::Str(s) => Value::str(s),
                Lit::Bool(b) => Value::Bool(*b),
                Lit::Null => Value::Null,
            },
            Expr::Ref(r) => match &r.attr {
                Attr::Len => self.len(&r.var.name).map_or(Value::Null, int),
                Attr::Field(f) => self.select(r).map_or(Value::Null, |p| self.field(p, &f.name)),
            },
            Expr::Prev(r, n, _) => match &r.attr {
                Attr::Field(f) => self
                    .select(r)
                    .and_then(|p| p.checked_sub(*n as usize))
                    .map_or(Value::Null, |p| self.field(p, &f.name)),
                Attr::Len => Value::Null,
            },
            Expr::Abs(x, _) => match self.eval(x) {
                Value::Int(i) => i.checked_abs().map_or(Value::Null, Value::Int),
                Value::Float(f) => Value::float(f.abs()),
                _ => Value::Null,
            },
            Expr::Neg(x, _) => match self.eval(x) {
                Value::Int(i) => i.checked_neg().map_or(Value::Null, Value::Int),
                Value::Float(f) => Value::float(-f),
                _ => Value::Null,
            },
            Expr::Not(x, _) => Value::Bool(!self.holds(x)),
            Expr::Call(f, args, _) => match &self.q.remote {
                Some(r) => r.call(&f.name, args.iter().map(|a| self.eval(a)).collect()),
                None => Value::Null,
            },
            Expr::Count(v, _) => self.len(&v.name).map_or(Value::Null, int),
            Expr::Agg(f, v, field, _) => {
                let vals: Vec<Value> = self.events(&v.name).iter().map(|&p| self.field(p, &field.name)).collect();
                aggregate(*f, &vals)
            }
            Expr::Binary(op, a, b, _) => match op {
                BinOp::Or => Value::Bool(self.holds(a) || self.holds(b)),
                BinOp::And => Value::Bool(self.holds(a) && self.holds(b)),
                _ if op.is_comparison() => Value::Bool(compare(*op, &self.eval(a), &self.eval(b))),
                _ => arith(*op, self.eval(a), self.eval(b)),
            },
        }
    }

    fn elem(&self, var: &str) -> Option<usize> {
        self.q.var_elem.get(var).copied()
    }

    /// The events a variable covers here (for the iterated element: those
    /// taken before the candidate).
    fn events(&self, var: &str) -> &[usize] {
        self.elem(var).map_or(&[], |e| &self.bind[e])
    }

    fn len(&self, var: &str) -> Option<usize> {
        self.elem(var).map(|e| self.bind[e].len())
    }

    /// The position a reference selects, if any.
    fn select(&self, r: &Ref) -> Option<usize> {
        let e = self.elem(&r.var.name)?;
        let taken = &self.bind[e];
        // k-th event (1-based) of a sequence.
        let nth = |seq: &[usize], k: usize| if k >= 1 { seq.get(k - 1).copied() } else { None };
        match self.cand {
            // Inside the variable's own iteration conjuncts.
            Some((ce, c)) if ce == e => {
                let with_cand: Vec<usize> = taken.iter().copied().chain([c]).collect();
                match &r.index {
                    Index::None | Index::I => Some(c),
                    Index::IMinus1 => taken.last().copied(),
                    Index::Const(k) => nth(&with_cand, usize::try_from(*k).ok()?),
                    Index::Len(w) => nth(&with_cand, self.len(&w.name)?),
                }
            }
            // A complete variable (earlier element, or any variable in a
            // completion condition or a negation).
            _ => match &r.index {
                Index::None => taken.last().copied(),
                Index::I | Index::IMinus1 => None,
                Index::Const(k) => nth(taken, usize::try_from(*k).ok()?),
                Index::Len(w) => nth(taken, self.len(&w.name)?),
            },
        }
    }

    fn field(&self, pos: usize, name: &str) -> Value {
        match self.q.fields.get(name) {
            Some(Some(id)) => self.part.events[pos].get(*id),
            // `ts` and `type`, when no field has the name: the event's own.
            _ if name == "ts" => Value::Int(self.part.events[pos].ts),
            _ if name == "type" => Value::Str(self.part.events[pos].ty),
            _ => Value::Null,
        }
    }
}

fn int(n: usize) -> Value {
    Value::Int(n as i64)
}

fn truth(v: Value) -> bool {
    matches!(v, Value::Bool(true))
}

/// A comparison: false when either side is NULL or they do not compare.
fn compare(op: BinOp, a: &Value, b: &Value) -> bool {
    let Some(o) = a.compare(b) else { return false };
    match op {
        BinOp::Eq => o.is_eq(),
        BinOp::Ne => o.is_ne(),
        BinOp::Lt => o.is_lt(),
        BinOp::Le => o.is_le(),
        BinOp::Gt => o.is_gt(),
        BinOp::Ge => o.is_ge(),
        _ => false,
    }
}

/// Arithmetic: int op int is int (`/` truncates), with a float it is a float;
/// overflow, division by zero or a non-number gives NULL.
fn arith(op: BinOp, a: Value, b: Value) -> Value {
    if let (Value::Int(x), Value::Int(y)) = (a, b) {
        let r = match op {
            BinOp::Add => x.checked_add(y),
            BinOp::Sub => x.checked_sub(y),
            BinOp::Mul => x.checked_mul(y),
            BinOp::Div => x.checked_div(y),
            // `i64::MIN % -1` is 0, though `i64::MIN / -1` overflows.
            BinOp::Rem if y == -1 => Some(0),
            BinOp::Rem => x.checked_rem(y),
            _ => None,
        };
        return r.map_or(Value::Null, Value::Int);
    }
    let (Some(x), Some(y)) = (a.as_f64(), b.as_f64()) else { return Value::Null };
    let r = match op {
        BinOp::Add => x + y,
        BinOp::Sub => x - y,
        BinOp::Mul => x * y,
        BinOp::Div if y == 0.0 => return Value::Null,
        BinOp::Div => x / y,
        BinOp::Rem if y == 0.0 => return Value::Null,
        BinOp::Rem => x % y,
        _ => return Value::Null,
    };
    Value::float(r)
}

/// `sum avg min max first last` over the values of a variable's events
/// (NULL for a missing field), per docs/semantics.md.
fn aggregate(f: AggFn, vals: &[Value]) -> Value {
    let nums: Vec<Value> = vals.iter().copied().filter(|v| v.as_f64().is_some()).collect();
    match f {
        AggFn::First => vals.first().copied().unwrap_or(Value::Null),
        AggFn::Last => vals.last().copied().unwrap_or(Value::Null),
        // The sum is the left fold of `+` over the non-NULL numbers, so an
        // int overflow gives NULL and stays NULL.
        AggFn::Sum | AggFn::Avg if nums.is_empty() => Value::Null,
        AggFn::Sum => {
            nums[1..].iter().fold(nums[0], |acc, v| if acc.is_null() { acc } else { arith(BinOp::Add, acc, *v) })
        }
        // avg is a float, so an int overflow of the sum does not make it
        // NULL: over ints it is the exact sum / count, rounded once to the
        // nearest float; from the first float on, the sum is a float (the
        // exact int sum before it, rounded, plus it, then `+` as in sum).
        AggFn::Avg => {
            let ints = nums.iter().take_while(|v| matches!(v, Value::Int(_))).count();
            let exact: i128 = nums[..ints].iter().filter_map(Value::as_i64).map(i128::from).sum();
            let sum = match nums[ints..].split_first() {
                None => return Value::Float(crate::compile::ops::int_avg(exact, nums.len() as u64)),
                Some((first, rest)) => {
                    let start = if ints == 0 { *first } else { arith(BinOp::Add, Value::float(exact as f64), *first) };
                    rest.iter().fold(start, |acc, v| if acc.is_null() { acc } else { arith(BinOp::Add, acc, *v) })
                }
            };
            sum.as_f64().map_or(Value::Null, |s| Value::float(s / nums.len() as f64))
        }
        AggFn::Min | AggFn::Max => {
            let better = if f == AggFn::Min { std::cmp::Ordering::Less } else { std::cmp::Ordering::Greater };
            let mut best: Option<Value> = None;
            for v in vals.iter().copied().filter(|v| !v.is_null()) {
                match best {
                    None => best = Some(v),
                    Some(b) if v.compare(&b) == Some(better) => best = Some(v),
                    Some(_) => {}
                }
            }
            best.unwrap_or(Value::Null)
        }
    }
}
