//! AST → [`Program`]: semantic checks, name resolution, the register plan,
//! and predicate closures.
//!
//! For each statement the compiler
//! 1. checks the pattern's shape (no leading `NOT`, a trailing `NOT` has a
//!    quiet period, unique variables, types the input can hold);
//! 2. assigns each conjunct to its owner (the element of the last variable it
//!    names, or the negation it names) and classifies it (iteration
//!    condition, completion condition, early or late negation condition);
//! 3. resolves every reference to a frame slot (a value of the candidate
//!    event) or a register (a value of an event already bound), checking
//!    fields against the schema and types against each other;
//! 4. lowers each condition to a closure (module `expr`).
//!
//! The rules it implements are LANGUAGE.md §2 and `docs/semantics.md`.

mod check;
mod emit;
mod expr;
mod lower;
pub mod ops;
pub mod plan;
mod remote;

use ahash::AHashMap;
use cep_core::{Event, FieldId, Kind, KindSet, Schema, Sym, TimeUnit, Value};

use crate::diag::{Diagnostic, Diagnostics, Span};
use crate::program::*;
use crate::syntax::ast::{self, AggFn, Attr, Conjunct, Expr, Ident, Index, Quant, Statement};
use expr::Ty;

/// The most positive elements (and, separately, `NOT` elements) a pattern
/// may have.
pub const MAX_ELEMENTS: usize = 64;

/// Compiler settings.
#[derive(Clone, Copy, Debug, Default)]
pub struct Options {
    /// The unit of timestamps, for converting durations.
    pub time_unit: TimeUnit,
}

/// The result of compiling a query file.
#[derive(Debug)]
pub struct Compiled {
    /// One program per statement, in file order.
    pub programs: Vec<Program<Event>>,
    /// Warnings (the query runs, but perhaps not as meant).
    pub warnings: Vec<Diagnostic>,
    /// The fields the statements read (their partition fields included),
    /// sorted, each once: the others' values never matter to a match, so a
    /// reader may leave them out (as `cep_io::Reader::keep_fields` does).
    pub fields: Vec<FieldId>,
    /// The file's `REMOTE` declarations, in order: a [`RemoteCond`]'s
    /// `func` is an index into it.
    pub remotes: Vec<RemoteFn>,
}

/// Parses and compiles a query file against `schema`.
///
/// Field names the schema lacks are registered in it when its field set is
/// open (JSON lines); with a closed field set (CSV) they are errors.
///
/// # Examples
/// ```
/// use cep_core::Schema;
/// use cep_nfa::compile::{compile, Options};
/// let mut schema = Schema::new();
/// let out = compile("PATTERN SEQ(A a, B b) WHERE b.x > a.x WITHIN 10", &mut schema, &Options::default())
///     .unwrap();
/// assert_eq!(out.programs[0].name, "q1");
/// let err = compile("PATTERN SEQ(A a, B b) WHERE c.x > 1", &mut schema, &Options::default()).unwrap_err();
/// assert!(err.0[0].message.contains("unknown variable `c`"));
/// ```
pub fn compile(src: &str, schema: &mut Schema, opts: &Options) -> Result<Compiled, Diagnostics> {
    let file = crate::syntax::parse(src).map_err(|d| Diagnostics(vec![d]))?;
    compile_file(&file, schema, opts)
}

/// Compiles a parsed file.
pub fn compile_file(file: &ast::File, schema: &mut Schema, opts: &Options) -> Result<Compiled, Diagnostics> {
    let mut programs = Vec::new();
    let mut errors = Vec::new();
    let mut warnings = Vec::new();
    let mut names: AHashMap<String, Span> = AHashMap::new();
    let mut fields = Vec::new();
    let remotes = remote::declarations(file, &mut errors);
    for (i, st) in file.statements.iter().enumerate() {
        let name = statement_name(st, i);
        if names.contains_key(&name) {
            let span = st.name.as_ref().map_or(st.span, |n| n.span);
            errors.push(Diagnostic::error(span, format!("a query named `{name}` is already defined")));
        }
        names.insert(name.clone(), st.span);
        let (program, diags) = compile_statement(st, file, name, schema, opts, &mut fields);
        for d in diags {
            if d.is_error() { errors.push(d) } else { warnings.push(d) }
        }
        if let Some(p) = program {
            programs.push(p);
        }
    }
    if errors.is_empty() {
        fields.sort_unstable();
        fields.dedup();
        Ok(Compiled { programs, warnings, fields, remotes })
    } else {
        errors.extend(warnings);
        Err(Diagnostics(errors))
    }
}

/// Compiles one statement, appending the fields it reads to `fields`.
///
/// A field's kinds in the schema are those seen in the input so far (a
/// reader's look ahead, or the events of a run), not a rule of the input's
/// form: a CSV cell or a JSON value of any kind may come later. So a type
/// error that holds only for the kinds seen (`b.v > a.v` with `v` seen as a
/// string in `B` events and as an int in `A` events) is a warning: the
/// statement is compiled again with every field open to any kind, and only
/// the errors of that compilation stand. What is an error then does not
/// depend on how much of the input was looked at.
fn compile_statement(
    st: &Statement,
    file: &ast::File,
    name: String,
    schema: &mut Schema,
    opts: &Options,
    fields: &mut Vec<FieldId>,
) -> (Option<Program<Event>>, Vec<Diagnostic>) {
    let mut c = StatementCompiler::new(st, file, name.clone(), schema, opts);
    let program = c.run();
    if !c.has_errors() {
        fields.append(&mut c.fields);
        return (program, c.diags);
    }
    let seen = std::mem::take(&mut c.diags);
    let mut c = StatementCompiler::new(st, file, name, schema, opts);
    c.seen_kinds = false;
    let program = c.run();
    fields.append(&mut c.fields);
    let mut diags = c.diags;
    let stands = |d: &Diagnostic| diags.iter().any(|e| e.is_error() && e.span == d.span && e.message == d.message);
    let guessed: Vec<Diagnostic> = seen
        .into_iter()
        .filter(|d| d.is_error() && !stands(d))
        .map(|d| {
            Diagnostic { severity: crate::diag::Severity::Warning, ..d }.with_note(
                "these kinds are the ones seen in the input so far; a value of another kind is matched as usual",
            )
        })
        .collect();
    diags.extend(guessed);
    (program, diags)
}

/// The name of the `i`-th (0-based) statement: its `QUERY` name or `q<i+1>`.
pub fn statement_name(st: &Statement, i: usize) -> String {
    st.name.as_ref().map_or_else(|| format!("q{}", i + 1), |n| n.name.clone())
}

#[derive(Clone, Debug)]
enum VarKind {
    /// Positive element `idx` (index among positive elements).
    Pos { idx: usize, quant: Quant },
    /// Middle negation `idx` (index into `negations`).
    Neg { idx: usize },
    /// The trailing negation.
    Trailing,
}

#[derive(Clone, Debug)]
struct Var {
    name: String,
    kind: VarKind,
    types: Vec<Sym>,
}

/// Where a condition is evaluated, which decides what each reference means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ctx {
    /// An iteration condition of positive element `v` (candidate + earlier).
    Own(usize),
    /// A completion condition of positive element `v`.
    Completion(usize),
    /// A negation's condition.
    Negation { var: usize },
    /// An `EMIT` item: every variable is complete (as in a later element).
    Emit,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum SlotKey {
    Field(FieldId),
    Ts,
    Type,
    Prev(FieldId, u32),
    PrevTs(u32),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum RegKey {
    Count(usize),
    Last(usize, SlotKey),
    First(usize, SlotKey),
    Nth(usize, u32, SlotKey),
    Sum(usize, SlotKey),
    Avg(usize, SlotKey),
    Min(usize, SlotKey),
    Max(usize, SlotKey),
    RegionLo(usize),
    RegionHi(usize),
}

struct StatementCompiler<'a> {
    st: &'a Statement,
    file: &'a ast::File,
    name: String,
    schema: &'a mut Schema,
    opts: &'a Options,
    diags: Vec<Diagnostic>,
    vars: Vec<Var>,
    n_pos: usize,
    slots: Vec<SlotKey>,
    regs: Vec<RegKey>,
    updates: Vec<Vec<RegUpdate>>,
    /// Every field resolved (see [`Compiled::fields`]).
    fields: Vec<FieldId>,
    /// Whether a field's type is taken from the kinds the schema has seen
    /// (`false`: every field may hold any kind). See [`compile_statement`].
    seen_kinds: bool,
}

impl<'a> StatementCompiler<'a> {
    fn new(st: &'a Statement, file: &'a ast::File, name: String, schema: &'a mut Schema, opts: &'a Options) -> Self {
        StatementCompiler {
            st,
            file,
            name,
            schema,
            opts,
            diags: Vec::new(),
            vars: Vec::new(),
            n_pos: 0,
            slots: Vec::new(),
            regs: Vec::new(),
            updates: Vec::new(),
            fields: Vec::new(),
            seen_kinds: true,
        }
    }

    fn error(&mut self, span: Span, msg: impl Into<String>) {
        self.diags.push(Diagnostic::error(span, msg));
    }

    fn has_errors(&self) -> bool {
        self.diags.iter().any(Diagnostic::is_error)
    }

    fn run(&mut self) -> Option<Program<Event>> {
        let st = self.st;
        if !self.declare_vars() {
            return None;
        }
        let strategy = st.strategy.map_or(Strategy::NextMatch, |s| s.0);
        let window = st.within.as_ref().and_then(|w| self.window(w, true));
        let key = self.partition();
        let select = st.select.map_or(Selection::All, |s| s.0);
        let skip = self.skip();
        if select != Selection::All && skip != SkipTo::None {
            let span = st.skip.as_ref().map_or(st.span, |s| s.1);
            self.diags.push(
                Diagnostic::error(span, "SELECT EARLIEST/LATEST cannot be combined with AFTER MATCH SKIP")
                    .with_note("use SELECT ALL, or AFTER MATCH SKIP NONE"),
            );
        }
        self.updates = vec![Vec::new(); self.n_pos];

        let mut elements: Vec<Element<Event>> = Vec::new();
        let mut negations: Vec<Negation<Event>> = Vec::new();
        let mut trailing: Option<Trailing<Event>> = None;
        for el in &st.elements {
            let var = self.var_index(&el.var.name).expect("declared");
            let accepts = type_test(&self.vars[var].types);
            let types = el.types.iter().map(|t| t.name.clone()).collect();
            match self.vars[var].kind {
                VarKind::Pos { quant, .. } => {
                    let within = el.within.as_ref().and_then(|w| self.window(w, true));
                    elements.push(Element {
                        var: el.var.name.clone(),
                        quant,
                        types,
                        accepts,
                        conds: Vec::new(),
                        completion: Vec::new(),
                        updates: Vec::new(),
                        within,
                        remote: Vec::new(),
                    });
                }
                VarKind::Neg { .. } => {
                    let after = self.pos_before(var);
                    negations.push(Negation {
                        var: el.var.name.clone(),
                        types,
                        after,
                        accepts,
                        early: Vec::new(),
                        late: Vec::new(),
                        deferred: None,
                    });
                }
                VarKind::Trailing => {
                    let quiet = match el.within.as_ref().and_then(|w| self.window(w, false)) {
                        Some(Window::Time(t)) => t,
                        _ => 0,
                    };
                    trailing = Some(Trailing { var: el.var.name.clone(), types, accepts, conds: Vec::new(), quiet });
                }
            }
        }

        let mut late_points: Vec<Option<usize>> = vec![None; negations.len()];
        for c in &st.conjuncts {
            let Conjunct::Expr(e) = c else { continue };
            self.conjunct(e, &mut elements, &mut negations, &mut trailing, &mut late_points);
        }
        for (i, point) in late_points.iter().enumerate() {
            if let Some(check_after) = *point {
                let lo = self.reg(RegKey::RegionLo(i));
                let hi = self.reg(RegKey::RegionHi(i));
                negations[i].deferred = Some(Deferred { check_after, lo, hi });
            } else {
                for c in std::mem::take(&mut negations[i].late) {
                    negations[i].early.push(Cond::from_frame(c.pred.into(), false, Some(0), true, c.text));
                }
            }
        }
        // Before the updates are handed to the elements: items add registers.
        let emit = self.emit_items();
        let object = emit.iter().any(|i| matches!(i.what, EmitWhat::Event { .. })).then(|| self.object_fn());
        if self.has_errors() {
            return None;
        }
        for (el, ups) in elements.iter_mut().zip(std::mem::take(&mut self.updates)) {
            el.updates = ups;
        }

        // The frame and the PREV history.
        let mut history_cols: Vec<SlotKey> = Vec::new();
        let mut history_depth = 0usize;
        let mut frame: Vec<FrameSlot<Event>> = Vec::new();
        for key in self.slots.clone() {
            frame.push(match key {
                SlotKey::Field(f) => FrameSlot::At(f),
                SlotKey::Ts => FrameSlot::Field(Box::new(|e: &Event| Value::Int(e.ts))),
                SlotKey::Type => FrameSlot::Field(Box::new(|e: &Event| Value::Str(e.ty))),
                SlotKey::Prev(_, n) | SlotKey::PrevTs(n) => {
                    let base = if let SlotKey::Prev(f, _) = key { SlotKey::Field(f) } else { SlotKey::Ts };
                    let col = match history_cols.iter().position(|k| *k == base) {
                        Some(c) => c,
                        None => {
                            history_cols.push(base);
                            history_cols.len() - 1
                        }
                    };
                    history_depth = history_depth.max(n as usize);
                    FrameSlot::Prev { col, n: n as usize }
                }
            });
        }
        let history: Vec<FrameSlot<Event>> = history_cols
            .iter()
            .map(|k| match *k {
                SlotKey::Field(f) => FrameSlot::At(f),
                _ => FrameSlot::Field(Box::new(|e: &Event| Value::Int(e.ts))),
            })
            .collect();
        let reg_names = self.regs.iter().map(|r| self.reg_name(*r)).collect();
        let slot_names = self.slots.iter().map(|s| self.slot_name(*s)).collect();
        Some(
            Program {
                name: self.name.clone(),
                elements,
                negations,
                trailing,
                strategy,
                window,
                select,
                skip,
                key,
                frame,
                history,
                accepts_by_kind: true,
                history_depth,
                regs: self.regs.len(),
                reg_names,
                slot_names,
                emit,
                object,
                graph: Default::default(),
            }
            .finish(),
        )
    }

    fn var_index(&self, name: &str) -> Option<usize> {
        self.vars.iter().position(|v| v.name == name)
    }

    /// Index of the last positive element declared before variable `var`.
    fn pos_before(&self, var: usize) -> usize {
        self.vars[..var]
            .iter()
            .rev()
            .find_map(|v| match v.kind {
                VarKind::Pos { idx, .. } => Some(idx),
                _ => None,
            })
            .unwrap_or(0)
    }

    fn pos_var(&self, idx: usize) -> usize {
        self.vars
            .iter()
            .position(|v| matches!(v.kind, VarKind::Pos { idx: i, .. } if i == idx))
            .expect("positive element")
    }

    fn unknown_var(&self, v: &Ident) -> Diagnostic {
        let names: Vec<&str> = self.vars.iter().map(|v| v.name.as_str()).collect();
        Diagnostic::error(v.span, format!("unknown variable `{}`", v.name))
            .with_note(format!("the pattern's variables are: {}", names.join(", ")))
    }

    /// Resolves a field name for events of `types`.
    fn field(&mut self, name: &str, span: Span, types: &[Sym]) -> Option<FieldId> {
        let fid = match self.schema.lookup(name) {
            Some(f) => f,
            None if self.schema.fields_closed() => {
                // The first few names (a header may have 100,000 columns).
                const SHOWN: usize = 20;
                let names: Vec<&str> = std::iter::once("ts").chain(self.schema.field_names()).collect();
                let mut note = format!("the input's fields are: {}", names[..names.len().min(SHOWN)].join(", "));
                if names.len() > SHOWN {
                    note.push_str(&format!(" and {} more", names.len() - SHOWN));
                }
                self.diags.push(Diagnostic::error(span, format!("unknown field `{name}`")).with_note(note));
                return None;
            }
            None => self.schema.field(name),
        };
        self.fields.push(fid);
        let kinds = self.kinds(fid, types);
        let seen_types = types.iter().any(|t| self.schema.type_info(*t).is_some_and(|i| i.count > 0));
        if kinds.is_empty() && seen_types {
            let tnames: Vec<&str> = types.iter().map(|t| t.as_str()).collect();
            // A warning even when the whole input was read: it depends on the
            // data, and a missing field is NULL (LANGUAGE.md), which `NOT`
            // or `OR` can still turn into a match.
            // Only the rows read ahead were seen when the input goes on
            // (its schema not complete): the field may come later.
            let diag = if self.schema.is_complete() {
                let msg = format!("field `{name}` never appears in events of type {}", tnames.join(" or "));
                Diagnostic::warning(span, msg).with_note("where it is missing, it is NULL")
            } else {
                let seen: u64 = types.iter().filter_map(|t| self.schema.type_info(*t)).map(|i| i.count).sum();
                let msg = format!(
                    "field `{name}` has not appeared in the first {seen} events of type {} (read ahead)",
                    tnames.join(" or ")
                );
                Diagnostic::warning(span, msg).with_note("it may appear later; where it is missing, it is NULL")
            };
            self.diags.push(diag);
        }
        Some(fid)
    }

    fn kinds(&self, fid: FieldId, types: &[Sym]) -> KindSet {
        types
            .iter()
            .filter_map(|t| self.schema.type_info(*t))
            .fold(KindSet::default(), |acc, i| acc.union(i.kinds_of(fid)))
    }

    fn field_ty(&self, key: SlotKey, types: &[Sym]) -> Ty {
        match key {
            SlotKey::Ts | SlotKey::PrevTs(_) => Ty::Int,
            SlotKey::Type => Ty::Str,
            SlotKey::Field(_) | SlotKey::Prev(..) if !self.seen_kinds => Ty::Any,
            SlotKey::Field(f) | SlotKey::Prev(f, _) => {
                let k = self.kinds(f, types);
                if k.is_empty() {
                    Ty::Any
                } else if k == single(Kind::Int) {
                    Ty::Int
                } else if k == single(Kind::Float) {
                    Ty::Float
                } else if k.all_numeric() {
                    Ty::Num
                } else if k.only_str() {
                    Ty::Str
                } else if k.only_bool() {
                    Ty::Bool
                } else {
                    Ty::Any
                }
            }
        }
    }

    fn slot(&mut self, key: SlotKey) -> Slot {
        if let Some(i) = self.slots.iter().position(|k| *k == key) {
            return i as Slot;
        }
        self.slots.push(key);
        (self.slots.len() - 1) as Slot
    }

    fn reg(&mut self, key: RegKey) -> Reg {
        if let Some(i) = self.regs.iter().position(|k| *k == key) {
            return i as Reg;
        }
        let r = self.regs.len() as Reg;
        self.regs.push(key);
        let (var, op) = match key {
            RegKey::Count(v) => (Some(v), Some(RegOp::Count)),
            RegKey::Last(v, s) => (Some(v), Some(RegOp::Last(self.slot(s)))),
            RegKey::First(v, s) => (Some(v), Some(RegOp::First(self.slot(s)))),
            RegKey::Nth(v, k, s) => (Some(v), Some(RegOp::Nth(k, self.slot(s)))),
            RegKey::Sum(v, s) => {
                // Sum takes two registers: the sum and the count of values.
                self.regs.push(RegKey::Sum(v, s));
                (Some(v), Some(RegOp::Sum(self.slot(s))))
            }
            RegKey::Avg(v, s) => {
                // Avg takes three: the int sum's low and high halves (or a
                // float sum) and the count. Not shared with `sum`, whose
                // register is NULL once the int sum overflows i64.
                self.regs.extend([RegKey::Avg(v, s); 2]);
                (Some(v), Some(RegOp::Avg(self.slot(s))))
            }
            RegKey::Min(v, s) => (Some(v), Some(RegOp::Min(self.slot(s)))),
            RegKey::Max(v, s) => (Some(v), Some(RegOp::Max(self.slot(s)))),
            RegKey::RegionLo(_) | RegKey::RegionHi(_) => (None, None),
        };
        if let (Some(v), Some(op)) = (var, op) {
            self.updates[v].push(RegUpdate { reg: r, op });
        }
        r
    }

    fn reg_name(&self, key: RegKey) -> String {
        let var = |i: usize| self.vars[self.pos_var(i)].name.clone();
        match key {
            RegKey::Count(v) => format!("{}.LEN", var(v)),
            RegKey::Last(v, s) => format!("last {}.{}", var(v), self.slot_name(s)),
            RegKey::First(v, s) => format!("{}[1].{}", var(v), self.slot_name(s)),
            RegKey::Nth(v, k, s) => format!("{}[{k}].{}", var(v), self.slot_name(s)),
            RegKey::Sum(v, s) => format!("sum({}.{})", var(v), self.slot_name(s)),
            RegKey::Avg(v, s) => format!("avg({}.{})", var(v), self.slot_name(s)),
            RegKey::Min(v, s) => format!("min({}.{})", var(v), self.slot_name(s)),
            RegKey::Max(v, s) => format!("max({}.{})", var(v), self.slot_name(s)),
            RegKey::RegionLo(n) => format!("region start of NOT #{}", n + 1),
            RegKey::RegionHi(n) => format!("region end of NOT #{}", n + 1),
        }
    }

    fn slot_name(&self, key: SlotKey) -> String {
        match key {
            SlotKey::Field(f) => self.schema.field_name(f).to_owned(),
            SlotKey::Ts => "ts".to_owned(),
            SlotKey::Type => "type".to_owned(),
            SlotKey::Prev(f, n) => format!("PREV({}, {n})", self.schema.field_name(f)),
            SlotKey::PrevTs(n) => format!("PREV(ts, {n})"),
        }
    }

    /// Assigns a conjunct to its owner and compiles it.
    fn conjunct(
        &mut self,
        e: &Expr,
        elements: &mut [Element<Event>],
        negations: &mut [Negation<Event>],
        trailing: &mut Option<Trailing<Event>>,
        late_points: &mut [Option<usize>],
    ) {
        if let Some((call, negated)) = remote::as_call(e) {
            self.remote_conjunct(e, call, negated, elements);
            return;
        }
        let Some(named) = self.known_vars(e) else { return };
        if named.is_empty() {
            self.diags.push(
                Diagnostic::error(e.span(), "this condition names no variable")
                    .with_note("a condition belongs to the element of the last variable it names"),
            );
            return;
        }
        let idx: Vec<usize> = named.iter().map(|v| self.var_index(&v.name).expect("checked")).collect();
        let negs: Vec<usize> =
            idx.iter().copied().filter(|&i| !matches!(self.vars[i].kind, VarKind::Pos { .. })).collect();
        if negs.len() > 1 {
            self.error(e.span(), "a condition can name at most one NOT variable");
            return;
        }
        let max_pos = idx
            .iter()
            .filter_map(|&i| match self.vars[i].kind {
                VarKind::Pos { idx, .. } => Some(idx),
                _ => None,
            })
            .max();
        let text = self.text(e.span());
        if let Some(&n) = negs.first() {
            let Some((node, ty)) = self.lower(e, Ctx::Negation { var: n }) else { return };
            if !self.is_condition(ty, e.span()) {
                return;
            }
            let f = expr::bool_fn(&node);
            match self.vars[n].kind {
                VarKind::Neg { idx } => {
                    let after = negations[idx].after;
                    if let Some(p) = max_pos.filter(|&p| p > after) {
                        late_points[idx] = Some(late_points[idx].map_or(p, |q| q.max(p)));
                    }
                    // Kept as frame conditions until every conjunct is seen:
                    // one late conjunct defers the whole negation.
                    negations[idx].late.push(LateCond { pred: f, text });
                }
                _ => {
                    let t = trailing.as_mut().expect("trailing var");
                    t.conds.push(Cond::from_frame(f.into(), false, Some(0), true, text));
                }
            }
            return;
        }
        let owner = max_pos.expect("a positive variable");
        let reads_candidate = self.reads_candidate(e, owner);
        if reads_candidate {
            let skip_first = self.needs_earlier(e, owner);
            let Some((node, ty)) = self.lower(e, Ctx::Own(owner)) else { return };
            if !self.is_condition(ty, e.span()) {
                return;
            }
            let f = expr::bool_fn(&node);
            let bound = expr::bound_of(&node);
            let earliest = idx
                .iter()
                .filter_map(|&i| match self.vars[i].kind {
                    VarKind::Pos { idx, .. } if idx != owner => Some(idx),
                    _ => None,
                })
                .min();
            let own_regs = self.reads_own_registers(e, owner);
            let cond = Cond::from_frame(f.into(), skip_first, earliest, own_regs, text);
            elements[owner].conds.push(cond.with_bound(bound.filter(|_| earliest.is_none() && !own_regs)));
        } else {
            let Some((node, ty)) = self.lower(e, Ctx::Completion(owner)) else { return };
            if !self.is_condition(ty, e.span()) {
                return;
            }
            let f = expr::bool_fn(&node);
            let at_first = self.reads_only_first(e, owner);
            elements[owner].completion.push(Completion { pred: Box::new(move |rg| f(&[], rg)), at_first, text });
        }
    }

    fn text(&self, span: Span) -> String {
        self.file.text(span)
    }

    /// The variables `e` names, each declared; `None` (the unknown ones
    /// reported) when one is not.
    fn known_vars<'e>(&mut self, e: &'e Expr) -> Option<Vec<&'e Ident>> {
        let named = e.vars();
        let mut ok = true;
        for v in &named {
            if self.var_index(&v.name).is_none() {
                let d = self.unknown_var(v);
                self.diags.push(d);
                ok = false;
            }
        }
        ok.then_some(named)
    }

    fn is_condition(&mut self, ty: Ty, span: Span) -> bool {
        match ty {
            Ty::Bool | Ty::Any | Ty::Null => true,
            other => {
                self.diags.push(
                    Diagnostic::error(span, format!("a condition must be true or false, but this is {}", other.name()))
                        .with_note("compare it with something, e.g. `… > 0`"),
                );
                false
            }
        }
    }

    /// Whether a conjunct owned by positive element `owner` reads its candidate.
    fn reads_candidate(&self, e: &Expr, owner: usize) -> bool {
        let mut reads = false;
        e.walk(|x| {
            let r = match x {
                Expr::Ref(r) | Expr::Prev(r, _, _) => r,
                _ => return,
            };
            if self.pos_index(&r.var.name) == Some(owner)
                && matches!(r.attr, Attr::Field(_))
                && matches!(r.index, Index::None | Index::I | Index::IMinus1)
            {
                reads = true;
            }
        });
        reads
    }

    /// Whether a condition reads element `owner` only through its first
    /// event (`b[1].f`, `first(b.f)`, `PREV(b[1].f)`).
    fn reads_only_first(&self, e: &Expr, owner: usize) -> bool {
        let mut only = true;
        e.walk(|x| match x {
            Expr::Ref(r) | Expr::Prev(r, _, _)
                if self.pos_index(&r.var.name) == Some(owner)
                    && !(r.index == Index::Const(1) && matches!(r.attr, Attr::Field(_))) =>
            {
                only = false
            }
            Expr::Agg(f, v, _, _) if self.pos_index(&v.name) == Some(owner) && *f != AggFn::First => only = false,
            Expr::Count(v, _) if self.pos_index(&v.name) == Some(owner) => only = false,
            _ => {}
        });
        only
    }

    /// Whether a condition of `owner` reads registers of `owner` (anything
    /// of it but the candidate's own fields and ts).
    fn reads_own_registers(&self, e: &Expr, owner: usize) -> bool {
        let mut reads = false;
        e.walk(|x| match x {
            Expr::Ref(r)
                if self.pos_index(&r.var.name) == Some(owner)
                    && (!matches!(r.index, Index::None | Index::I) || r.attr == Attr::Len) =>
            {
                reads = true
            }
            Expr::Agg(_, v, _, _) | Expr::Count(v, _) if self.pos_index(&v.name) == Some(owner) => reads = true,
            _ => {}
        });
        reads
    }

    /// Whether a condition of `owner` reads an earlier event of `owner`.
    fn needs_earlier(&self, e: &Expr, owner: usize) -> bool {
        let mut needs = false;
        e.walk(|x| match x {
            Expr::Ref(r) | Expr::Prev(r, _, _) if self.pos_index(&r.var.name) == Some(owner) => {
                if matches!(r.index, Index::IMinus1 | Index::Len(_)) {
                    needs = true;
                }
            }
            Expr::Agg(_, v, _, _) if self.pos_index(&v.name) == Some(owner) => needs = true,
            _ => {}
        });
        needs
    }

    fn pos_index(&self, name: &str) -> Option<usize> {
        self.var_index(name).and_then(|i| match self.vars[i].kind {
            VarKind::Pos { idx, .. } => Some(idx),
            _ => None,
        })
    }
}

fn single(k: Kind) -> KindSet {
    let mut s = KindSet::default();
    s.insert(k);
    s
}

/// `ts` and `type` read the event's own timestamp and type.
fn special(name: &str) -> Option<SlotKey> {
    match name {
        "ts" => Some(SlotKey::Ts),
        "type" => Some(SlotKey::Type),
        _ => None,
    }
}

fn type_test(types: &[Sym]) -> TypeTest<Event> {
    match *types {
        [t] => Box::new(move |e: &Event| e.ty == t),
        [a, b] => Box::new(move |e: &Event| e.ty == a || e.ty == b),
        _ => {
            let ts = types.to_vec();
            Box::new(move |e: &Event| ts.contains(&e.ty))
        }
    }
}
