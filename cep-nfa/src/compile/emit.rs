//! `EMIT` items (LANGUAGE.md §5, "What a match carries"): checked, named,
//! and lowered to functions of a final run's registers.
//!
//! An expression item reads variables as a later element does (§2: `b.f`
//! is `b`'s last event, `b[k].f` its k-th, `b.LEN` and the aggregates cover
//! all of its events), which is exactly what the registers conditions of
//! later elements read hold once the match is final. So an item reuses
//! the register plan: it adds the registers (and frame slots) it needs, and
//! the engine evaluates it once per match, when the match becomes final.
//! `x.*` needs whole events, which no register holds: the engine keeps an
//! object beside each binding of `x` (see `Program::object`).

use ahash::AHashMap;
use cep_core::{Event, EventObject, Sym};

use super::expr::{self, Node};
use super::{Ctx, StatementCompiler, VarKind};
use crate::diag::{Diagnostic, Span};
use crate::program::{EmitItem, EmitWhat, ObjectFn, Reg};
use crate::syntax::ast::{EmitKind, Ident};

impl StatementCompiler<'_> {
    /// Checks and lowers the statement's `EMIT` items, in order. Errors:
    /// an unknown variable, a `NOT` variable (it binds no event), two items
    /// of one name, and the type errors of any expression.
    pub(super) fn emit_items(&mut self) -> Vec<EmitItem> {
        let st = self.st;
        let mut items = Vec::new();
        let mut names: AHashMap<String, Span> = AHashMap::new();
        for item in &st.emit {
            let name = match (&item.alias, &item.kind) {
                (Some(a), _) => a.name.clone(),
                (None, EmitKind::Event(v)) => v.name.clone(),
                (None, EmitKind::Expr(_)) => self.written(item.span),
            };
            let name_span = item.alias.as_ref().map_or(item.span, |a| a.span);
            if names.contains_key(&name) {
                self.diags.push(
                    Diagnostic::error(name_span, format!("two EMIT items are named `{name}`"))
                        .with_note("an item without `AS` is named by its text; give one of them a name with `AS`"),
                );
            } else {
                names.insert(name.clone(), name_span);
            }
            match &item.kind {
                EmitKind::Event(v) => {
                    let Some((elem, quant)) = self.emit_var(v, "`.*`") else { continue };
                    let reads = format!("the events bound to `{}`", v.name);
                    items.push(EmitItem { name, what: EmitWhat::Event { elem, quant }, reads });
                }
                EmitKind::Expr(e) => {
                    let named = e.vars();
                    let mut ok = true;
                    for v in named {
                        ok &= self.emit_var(v, "EMIT").is_some();
                    }
                    if !ok {
                        continue;
                    }
                    let Some((node, _ty)) = self.lower(e, Ctx::Emit) else { continue };
                    let mut regs = Vec::new();
                    node_regs(&node, &mut regs);
                    let mut read: Vec<String> = Vec::new();
                    for r in regs {
                        let n = self.reg_name(self.regs[r as usize]);
                        if !read.contains(&n) {
                            read.push(n);
                        }
                    }
                    let reads = if read.is_empty() { "nothing (a constant)".to_owned() } else { read.join(", ") };
                    let f = expr::value_fn(&node);
                    let value = Box::new(move |rg: &[cep_core::Value]| f(&[], rg));
                    items.push(EmitItem { name, what: EmitWhat::Value(value), reads });
                }
            }
        }
        items
    }

    /// The positive element and quantifier of a variable an `EMIT` item
    /// names; an error (and `None`) for an unknown or a `NOT` variable.
    fn emit_var(&mut self, v: &Ident, what: &str) -> Option<(usize, crate::syntax::ast::Quant)> {
        let Some(i) = self.var_index(&v.name) else {
            let d = self.unknown_var(v);
            self.diags.push(d);
            return None;
        };
        match self.vars[i].kind {
            VarKind::Pos { idx, quant } => Some((idx, quant)),
            _ => {
                self.diags.push(
                    Diagnostic::error(v.span, format!("{what} cannot read `{}`: it is a NOT variable", v.name))
                        .with_note("a NOT element binds no event; EMIT reads the positive variables"),
                );
                None
            }
        }
    }

    /// The source text of a span as written, trimmed (the name of an item
    /// without `AS`: LANGUAGE.md §5 keeps the text, inner spaces included).
    fn written(&self, span: Span) -> String {
        let (a, b) = (span.start as usize, span.end as usize);
        self.file.source.get(a..b).unwrap_or("").trim().to_owned()
    }

    /// The object maker of `x.*` items: the event's type, ts and non-NULL
    /// fields, named by the schema's field names as they are now (fields
    /// registered later are not shown; the job keeps every field the schema
    /// has when a query has an `x.*` item).
    pub(super) fn object_fn(&self) -> ObjectFn<Event> {
        let names: Vec<Sym> = self.schema.field_names().map(Sym::new).collect();
        Box::new(move |e: &Event| EventObject::of(e, &names))
    }
}

/// The registers a lowered expression reads.
fn node_regs(node: &Node, out: &mut Vec<Reg>) {
    match node {
        Node::Const(_) | Node::Slot(_) => {}
        Node::Reg(r) | Node::CountReg(r) | Node::Avg(r) => out.push(*r),
        Node::NthOwn { count, nth, .. } => {
            out.push(*count);
            out.extend(nth);
        }
        Node::Neg(a) | Node::Abs(a) | Node::Not(a) => node_regs(a, out),
        Node::Arith(_, a, b) | Node::Cmp(_, a, b) | Node::And(a, b) | Node::Or(a, b) => {
            node_regs(a, out);
            node_regs(b, out);
        }
    }
}
