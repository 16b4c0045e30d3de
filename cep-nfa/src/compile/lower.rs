//! Lowering a checked expression to a [`Node`]: references resolved to frame
//! slots or registers, `COUNT` and aggregates, with the type of each part.
//! Apart from the checks because it is the one part that builds code.

use cep_core::Value;

use super::expr::{Node, Ty};
use super::ops;
use super::{Ctx, RegKey, SlotKey, StatementCompiler, VarKind, special};
use crate::diag::{Diagnostic, Span};
use crate::syntax::ast::{self, AggFn, Attr, BinOp, Expr, Ident, Index, Lit};

impl StatementCompiler<'_> {
    /// Lowers an expression in a context; reports errors and returns None
    /// when it cannot be compiled.
    pub(super) fn lower(&mut self, e: &Expr, ctx: Ctx) -> Option<(Node, Ty)> {
        let before = self.diags.iter().filter(|d| d.is_error()).count();
        let out = self.lower_rec(e, ctx, 0);
        let after = self.diags.iter().filter(|d| d.is_error()).count();
        if after > before { None } else { Some(out) }
    }

    pub(super) fn lower_rec(&mut self, e: &Expr, ctx: Ctx, depth: usize) -> (Node, Ty) {
        // The parser bounds the depth of the tree, so this recursion is
        // bounded too.
        debug_assert!(depth <= crate::syntax::MAX_TREE_DEPTH);
        match e {
            Expr::Lit(l, _) => match l {
                Lit::Int(i) => (Node::Const(Value::Int(*i)), Ty::Int),
                Lit::Float(f) => (Node::Const(Value::Float(*f)), Ty::Float),
                Lit::Str(s) => (Node::Const(Value::str(s)), Ty::Str),
                Lit::Bool(b) => (Node::Const(Value::Bool(*b)), Ty::Bool),
                Lit::Null => (Node::Const(Value::Null), Ty::Null),
            },
            Expr::Ref(r) => self.reference(r, None, ctx),
            Expr::Prev(r, n, _) => self.reference(r, Some(*n), ctx),
            Expr::Count(v, _) => self.count(v),
            Expr::Agg(f, v, field, span) => self.aggregate(*f, v, field, *span),
            Expr::Abs(x, span) => {
                let (n, t) = self.lower_rec(x, ctx, depth + 1);
                if !(t.is_numeric() || matches!(t, Ty::Any | Ty::Null)) {
                    self.error(*span, format!("abs needs a number, but its argument is {}", t.name()));
                }
                (Node::Abs(Box::new(n)), t)
            }
            Expr::Neg(x, span) => {
                let (n, t) = self.lower_rec(x, ctx, depth + 1);
                if !(t.is_numeric() || matches!(t, Ty::Any | Ty::Null)) {
                    self.error(*span, format!("cannot negate {}", t.name()));
                }
                (Node::Neg(Box::new(n)), t)
            }
            Expr::Not(x, _) => {
                let (n, t) = self.lower_rec(x, ctx, depth + 1);
                self.is_condition(t, x.span());
                (Node::Not(Box::new(n)), Ty::Bool)
            }
            Expr::Call(f, _, span) => {
                // A remote call is a conjunct of its own (`conjunct` takes
                // it before lowering); anywhere else it is an error.
                let d = match self.remote_fn(&f.name) {
                    Some(_) => Diagnostic::error(*span, format!("a call of remote function `{}` must be a conjunct of its own", f.name))
                        .with_note("write it directly after WHERE or AND, alone or as `NOT f(…)`: its answer comes from another service"),
                    None => self.unknown_function(f),
                };
                self.diags.push(d);
                (Node::Const(Value::Null), Ty::Any)
            }
            Expr::Binary(op, a, b, span) => {
                let (na, ta) = self.lower_rec(a, ctx, depth + 1);
                let (nb, tb) = self.lower_rec(b, ctx, depth + 1);
                match op {
                    BinOp::And | BinOp::Or => {
                        self.is_condition(ta, a.span());
                        self.is_condition(tb, b.span());
                        let node = if *op == BinOp::And {
                            Node::And(Box::new(na), Box::new(nb))
                        } else {
                            Node::Or(Box::new(na), Box::new(nb))
                        };
                        (node, Ty::Bool)
                    }
                    op if op.is_comparison() => {
                        if ta.incomparable(tb) {
                            self.diags.push(
                                Diagnostic::error(
                                    *span,
                                    format!("comparing {} with {} is always false", ta.name(), tb.name()),
                                )
                                .with_note("values of different kinds never compare"),
                            );
                        }
                        (Node::Cmp(*op, Box::new(na), Box::new(nb)), Ty::Bool)
                    }
                    op => {
                        for (t, x) in [(ta, a), (tb, b)] {
                            if matches!(t, Ty::Str | Ty::Bool) {
                                self.error(
                                    x.span(),
                                    format!("`{}` needs numbers, but this is {}", op.symbol(), t.name()),
                                );
                            }
                        }
                        let node = match (&na, &nb) {
                            (Node::Const(x), Node::Const(y)) => Node::Const(ops::arith(*op, *x, *y)),
                            _ => Node::Arith(*op, Box::new(na), Box::new(nb)),
                        };
                        (node, ta.arith(tb))
                    }
                }
            }
        }
    }

    pub(super) fn count(&mut self, v: &Ident) -> (Node, Ty) {
        match self.pos_index(&v.name) {
            Some(p) => (Node::CountReg(self.reg(RegKey::Count(p))), Ty::Int),
            None => {
                self.error(v.span, format!("count of `{}`: a NOT variable binds no events", v.name));
                (Node::Const(Value::Null), Ty::Any)
            }
        }
    }

    pub(super) fn aggregate(&mut self, f: AggFn, v: &Ident, field: &Ident, span: Span) -> (Node, Ty) {
        let Some(p) = self.pos_index(&v.name) else {
            self.error(v.span, format!("{} of `{}`: a NOT variable binds no events", f.name(), v.name));
            return (Node::Const(Value::Null), Ty::Any);
        };
        let var = self.pos_var(p);
        if !matches!(self.vars[var].kind, VarKind::Pos { quant, .. } if quant.is_kleene()) {
            self.diags.push(
                Diagnostic::error(
                    span,
                    format!("{} needs a Kleene variable, but `{}` binds one event", f.name(), v.name),
                )
                .with_note(format!(
                    "declare it with `+` or `*` to bind several events, or use `{}.{}`",
                    v.name, field.name
                )),
            );
            return (Node::Const(Value::Null), Ty::Any);
        }
        let types = self.vars[var].types.clone();
        let Some(fid) =
            self.field(&field.name, field.span, &types).map(SlotKey::Field).or_else(|| special(&field.name))
        else {
            return (Node::Const(Value::Null), Ty::Any);
        };
        let ty = self.field_ty(fid, &types);
        if matches!(f, AggFn::Sum | AggFn::Avg) && matches!(ty, Ty::Str | Ty::Bool) {
            self.error(span, format!("{} needs numbers, but `{}.{}` is {}", f.name(), v.name, field.name, ty.name()));
        }
        match f {
            AggFn::Sum => {
                let r = self.reg(RegKey::Sum(p, fid));
                (Node::Reg(r), if ty == Ty::Int { Ty::Int } else { ty.arith(Ty::Int) })
            }
            AggFn::Avg => {
                let r = self.reg(RegKey::Avg(p, fid));
                (Node::Avg(r), Ty::Float)
            }
            AggFn::Min => (Node::Reg(self.reg(RegKey::Min(p, fid))), ty),
            AggFn::Max => (Node::Reg(self.reg(RegKey::Max(p, fid))), ty),
            AggFn::First => (Node::Reg(self.reg(RegKey::First(p, fid))), ty),
            AggFn::Last => (Node::Reg(self.reg(RegKey::Last(p, fid))), ty),
        }
    }

    /// `v.f`, `v[idx].f`, `v.LEN`, and with `prev = Some(n)` `PREV(…, n)`.
    pub(super) fn reference(&mut self, r: &ast::Ref, prev: Option<u32>, ctx: Ctx) -> (Node, Ty) {
        let null = (Node::Const(Value::Null), Ty::Any);
        let var = self.var_index(&r.var.name).expect("checked");
        let types = self.vars[var].types.clone();
        let kind = self.vars[var].kind.clone();
        // The attribute: a frame slot key, or LEN.
        let slot_key = match &r.attr {
            Attr::Len => {
                if prev.is_some() {
                    self.error(r.span, "PREV needs a field, not LEN");
                    return null;
                }
                None
            }
            Attr::Field(f) => {
                let key = match special(&f.name) {
                    Some(k) if self.schema.lookup(&f.name).is_none() => k,
                    _ => match self.field(&f.name, f.span, &types) {
                        Some(fid) => SlotKey::Field(fid),
                        None => return null,
                    },
                };
                Some(match (key, prev) {
                    (SlotKey::Field(fid), Some(n)) => SlotKey::Prev(fid, n),
                    (SlotKey::Ts, Some(n)) => SlotKey::PrevTs(n),
                    (SlotKey::Type, Some(_)) => {
                        self.error(r.span, "PREV of `type` is not supported");
                        return null;
                    }
                    (k, _) => k,
                })
            }
        };
        let ty = slot_key.map_or(Ty::Int, |k| self.field_ty(k, &types));
        match kind {
            VarKind::Neg { .. } | VarKind::Trailing => {
                if ctx != (Ctx::Negation { var }) {
                    self.error(
                        r.span,
                        format!("`{}` is a NOT variable: only its own conditions can read it", r.var.name),
                    );
                    return null;
                }
                if r.index != Index::None {
                    self.error(r.span, format!("`{}` is a NOT variable: it cannot be indexed", r.var.name));
                    return null;
                }
                match slot_key {
                    None => {
                        self.error(r.span, format!("`{}` is a NOT variable: it has no LEN", r.var.name));
                        null
                    }
                    Some(k) => (Node::Slot(self.slot(k)), ty),
                }
            }
            VarKind::Pos { idx, quant } => {
                let kleene = quant.is_kleene();
                if !kleene && r.index != Index::None {
                    self.diags.push(
                        Diagnostic::error(r.span, format!("`{}` binds one event and cannot be indexed", r.var.name))
                            .with_note(format!(
                                "only Kleene variables (`+`, `*`) are indexed; write `{}.…`",
                                r.var.name
                            )),
                    );
                    return null;
                }
                if let Index::Len(w) = &r.index
                    && w.name != r.var.name
                {
                    self.error(w.span, format!("only `{0}[{0}.LEN]` is supported as a length index", r.var.name));
                    return null;
                }
                let own = ctx == Ctx::Own(idx);
                if matches!(r.index, Index::I | Index::IMinus1) && !own {
                    self.diags.push(
                        Diagnostic::error(
                            r.span,
                            format!(
                                "`{}[i]` and `{}[i-1]` can only be used in conditions on `{}` itself",
                                r.var.name, r.var.name, r.var.name
                            ),
                        )
                        .with_note(format!("in later elements use `{0}[1]`, `{0}[{0}.LEN]` or aggregates", r.var.name)),
                    );
                    return null;
                }
                let Some(key) = slot_key else {
                    return (Node::CountReg(self.reg(RegKey::Count(idx))), Ty::Int);
                };
                let node = match (&r.index, own) {
                    (Index::None | Index::I, true) => Node::Slot(self.slot(key)),
                    (Index::IMinus1, _) | (Index::Len(_), _) => Node::Reg(self.reg(RegKey::Last(idx, key))),
                    (Index::None, false) => Node::Reg(self.reg(RegKey::Last(idx, key))),
                    (Index::Const(k), true) => {
                        let k = u32::try_from(*k).unwrap_or(u32::MAX);
                        let count = self.reg(RegKey::Count(idx));
                        let nth = Some(if k == 1 {
                            self.reg(RegKey::First(idx, key))
                        } else {
                            self.reg(RegKey::Nth(idx, k, key))
                        });
                        let cand = self.slot(key);
                        Node::NthOwn { count, nth, k, cand }
                    }
                    (Index::Const(k), false) => {
                        let k = u32::try_from(*k).unwrap_or(u32::MAX);
                        Node::Reg(if k == 1 {
                            self.reg(RegKey::First(idx, key))
                        } else {
                            self.reg(RegKey::Nth(idx, k, key))
                        })
                    }
                    (Index::I, false) => unreachable!("rejected above"),
                };
                (node, ty)
            }
        }
    }
}
