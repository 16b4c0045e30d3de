//! The statement's semantic checks: variables and their kinds, event
//! types, windows, the partition key and the skip strategy (LANGUAGE.md §2).
//! Apart from lowering so that what is refused, and why, reads in one place.

use cep_core::time::{DurationUnit, to_ticks};
use cep_core::{Event, Sym};

use super::{MAX_ELEMENTS, StatementCompiler, Var, VarKind};
use crate::diag::Diagnostic;
use crate::program::*;
use crate::syntax::ast::{self, Conjunct, Ident, Quant};

impl StatementCompiler<'_> {
    /// Declares the pattern's variables; false when the pattern's shape is
    /// too broken to check its conditions.
    pub(super) fn declare_vars(&mut self) -> bool {
        let st = self.st;
        let first_pos = st.elements.iter().position(|e| !e.negated);
        let last_pos = st.elements.iter().rposition(|e| !e.negated);
        let (Some(first_pos), Some(last_pos)) = (first_pos, last_pos) else {
            self.error(st.elements[0].span, "a pattern needs at least one element without NOT");
            return false;
        };
        let mut sound = true;
        let trailing_count = st.elements.len() - 1 - last_pos;
        let positives = st.elements.iter().filter(|e| !e.negated).count();
        if positives > MAX_ELEMENTS || st.elements.len() - positives > MAX_ELEMENTS {
            self.error(
                st.elements[MAX_ELEMENTS.min(st.elements.len() - 1)].span,
                format!("a pattern has at most {MAX_ELEMENTS} positive and {MAX_ELEMENTS} NOT elements"),
            );
            return false;
        }
        let mut n_neg = 0;
        for (i, el) in st.elements.iter().enumerate() {
            if self.vars.iter().any(|v| v.name == el.var.name) {
                self.diags.push(
                    Diagnostic::error(el.var.span, format!("variable `{}` is declared twice", el.var.name))
                        .with_note("each element needs its own variable name"),
                );
                sound = false;
                continue;
            }
            let types = self.check_types(&el.types);
            let kind = if el.negated {
                if i < first_pos {
                    self.diags.push(
                        Diagnostic::error(el.span, "a pattern cannot start with NOT")
                            .with_note("a negation needs a positive element before it"),
                    );
                }
                if el.quant != Quant::One || el.brackets {
                    let mut marks = Vec::new();
                    if el.quant != Quant::One {
                        marks.push(format!("`{}`", el.quant.symbol()));
                    }
                    if el.brackets {
                        marks.push("`[]`".to_owned());
                    }
                    self.error(el.var.span, format!("a NOT element cannot be quantified ({})", marks.join(", ")));
                }
                if i > last_pos {
                    if trailing_count > 1 {
                        self.error(el.span, "there can be at most one trailing NOT");
                    }
                    match &el.within {
                        None => self.diags.push(
                            Diagnostic::error(el.span, "a trailing NOT needs a WITHIN of its own: the quiet period")
                                .with_note(format!(
                                    "for example `NOT {} {} WITHIN 10 s`",
                                    el.types[0].name, el.var.name
                                )),
                        ),
                        Some(w) if matches!(w.kind, ast::WindowKind::Events(_)) => {
                            self.error(w.span, "the quiet period of a trailing NOT must be a duration, not EVENTS")
                        }
                        _ => {}
                    }
                    VarKind::Trailing
                } else {
                    if let Some(w) = &el.within {
                        self.diags.push(
                            Diagnostic::error(w.span, "a NOT between two elements takes no WITHIN")
                                .with_note("only a trailing NOT has a quiet period"),
                        );
                    }
                    n_neg += 1;
                    VarKind::Neg { idx: n_neg - 1 }
                }
            } else {
                if el.brackets && !el.quant.is_kleene() {
                    self.error(
                        el.var.span,
                        format!("`{}[]` marks a Kleene variable, but the element has no `+` or `*`", el.var.name),
                    );
                }
                self.n_pos += 1;
                VarKind::Pos { idx: self.n_pos - 1, quant: el.quant }
            };
            self.vars.push(Var { name: el.var.name.clone(), kind, types });
        }
        sound
    }

    /// Resolves the types of an element. A type the input has not shown is
    /// an error only when the input's types are fixed by its form
    /// ([`Schema::types_closed`]: a CSV file without a `type` column holds
    /// only `Event`); otherwise it is a warning, even when the whole input
    /// was read, since a type that does not occur is no error in the query
    /// (a `NOT` of it never blocks, a positive element of it never matches).
    pub(super) fn check_types(&mut self, types: &[Ident]) -> Vec<Sym> {
        let mut out = Vec::new();
        for t in types {
            let sym = Sym::new(&t.name);
            if self.schema.type_info(sym).is_none() {
                let known = self.schema.type_names();
                if self.schema.types_closed() {
                    let only = if known.is_empty() {
                        "the input can hold no events".to_owned()
                    } else {
                        format!("the input can only hold events of type {}", known.join(" or "))
                    };
                    self.diags.push(Diagnostic::error(t.span, format!("unknown type `{}`", t.name)).with_note(only));
                } else if !known.is_empty() {
                    // With no event seen at all (no input yet, or an empty
                    // one) there is nothing to check against: an empty input
                    // is not a bad query.
                    let msg = if self.schema.is_complete() {
                        format!("type `{}` does not appear in the input", t.name)
                    } else {
                        format!("type `{}` has not been seen in the input so far", t.name)
                    };
                    self.diags.push(
                        Diagnostic::warning(t.span, msg).with_note(format!("types in the input: {}", known.join(", "))),
                    );
                }
            }
            out.push(sym);
        }
        out
    }

    pub(super) fn window(&mut self, w: &ast::Window, allow_events: bool) -> Option<Window> {
        match &w.kind {
            ast::WindowKind::Events(n) if allow_events => Some(Window::Events(*n)),
            ast::WindowKind::Events(_) => None,
            ast::WindowKind::Time { number, unit } => {
                let u = match unit {
                    None => DurationUnit::Ticks,
                    Some(u) => DurationUnit::parse(&u.name).expect("parser checked the unit"),
                };
                match to_ticks(number, u, self.opts.time_unit) {
                    Ok(t) => Some(Window::Time(t)),
                    Err(e) => {
                        self.diags.push(
                            Diagnostic::error(w.span, format!("invalid duration: {e}"))
                                .with_note(format!("timestamps are in {}", self.opts.time_unit.name())),
                        );
                        None
                    }
                }
            }
        }
    }

    pub(super) fn partition(&mut self) -> Option<(String, FrameSlot<Event>)> {
        let st = self.st;
        let mut field: Option<&Ident> = st.partition.as_ref();
        for c in &st.conjuncts {
            if let Conjunct::Partition(f) = c {
                match field {
                    Some(prev) if prev.name != f.name => {
                        self.diags.push(
                            Diagnostic::error(
                                f.span,
                                format!("partition by `{}` conflicts with partition by `{}`", f.name, prev.name),
                            )
                            .with_note("a statement has one partition field"),
                        );
                    }
                    _ => field = Some(f),
                }
            }
        }
        let f = field?;
        let all_types: Vec<Sym> = self.vars.iter().flat_map(|v| v.types.clone()).collect();
        let fid = self.field(&f.name, f.span, &all_types)?;
        Some((f.name.clone(), FrameSlot::At(fid)))
    }

    pub(super) fn skip(&mut self) -> SkipTo {
        let Some((skip, _)) = &self.st.skip else { return SkipTo::None };
        match skip {
            ast::Skip::None => SkipTo::None,
            ast::Skip::ToNextEvent => SkipTo::NextEvent,
            ast::Skip::PastLastEvent => SkipTo::PastLastEvent,
            ast::Skip::ToFirst(v) | ast::Skip::ToLast(v) => {
                let idx = match self.var_index(&v.name).map(|i| self.vars[i].kind.clone()) {
                    Some(VarKind::Pos { idx, .. }) => idx,
                    Some(_) => {
                        self.error(v.span, format!("cannot skip to `{}`: it is a NOT variable", v.name));
                        return SkipTo::None;
                    }
                    None => {
                        let d = self.unknown_var(v);
                        self.diags.push(d);
                        return SkipTo::None;
                    }
                };
                if matches!(skip, ast::Skip::ToFirst(_)) { SkipTo::First(idx) } else { SkipTo::Last(idx) }
            }
        }
    }
}
