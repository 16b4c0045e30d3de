//! Remote conditions (LANGUAGE.md §8): `REMOTE` declarations checked once
//! per file, and a conjunct that is a call of one (or `NOT` of one)
//! lowered to a [`RemoteCond`] of its element: the function's index and
//! one value closure per argument, converted to the declared type.
//!
//! A call is checked per candidate event of the element of the last
//! variable it names, after that element's local conditions held, so that
//! a call is made only for an event that could bind. Its arguments read
//! the candidate and events bound before it, as any condition does. Calls
//! on Kleene elements are refused for now: whether every iteration or the
//! completed element is asked is not settled by the contract.

use ahash::AHashMap;
use cep_core::Event;

use super::expr::{self, Ty};
use super::{Ctx, StatementCompiler, VarKind};
use crate::diag::{Diagnostic, Span};
use crate::program::{Element, FrameValue, RemoteCond, RemoteFn};
use crate::syntax::ast::{self, Expr, Ident, ParamType, Quant};

/// The names of the built-in functions, which a declaration may not take.
const BUILT_IN: [&str; 9] = ["prev", "abs", "count", "sum", "avg", "min", "max", "first", "last"];

/// The file's declarations as [`RemoteFn`]s, in order; a name declared
/// twice (names are case-insensitive, as function names are) or one of a
/// built-in function is an error pushed to `errors`.
pub(super) fn declarations(file: &ast::File, errors: &mut Vec<Diagnostic>) -> Vec<RemoteFn> {
    let mut seen: AHashMap<String, Span> = AHashMap::new();
    let mut out = Vec::new();
    for d in &file.remotes {
        let folded = d.name.name.to_ascii_lowercase();
        if BUILT_IN.contains(&folded.as_str()) {
            errors.push(Diagnostic::error(d.name.span, format!("`{}` is a built-in function", d.name.name)));
        } else if seen.contains_key(&folded) {
            errors.push(Diagnostic::error(d.name.span, format!("remote function `{}` is declared twice", d.name.name)));
        } else if out.len() > u16::MAX as usize {
            errors.push(Diagnostic::error(d.span, "too many remote functions"));
        }
        seen.insert(folded, d.name.span);
        let mut params: AHashMap<&str, Span> = AHashMap::new();
        for (p, _) in &d.params {
            if params.insert(p.name.as_str(), p.span).is_some() {
                errors.push(Diagnostic::error(p.span, format!("parameter `{}` is declared twice", p.name)));
            }
        }
        out.push(RemoteFn {
            name: d.name.name.clone(),
            params: d.params.iter().map(|(p, t)| (p.name.clone(), *t)).collect(),
        });
    }
    out
}

/// A call as written: the function's name, the arguments, the span.
pub(super) type CallExpr<'e> = (&'e Ident, &'e [Expr], Span);

/// The call a conjunct is, and whether it is negated: `f(…)` or `NOT f(…)`.
pub(super) fn as_call(e: &Expr) -> Option<(CallExpr<'_>, bool)> {
    match e {
        Expr::Call(f, args, span) => Some(((f, args, *span), false)),
        Expr::Not(inner, _) => match &**inner {
            Expr::Call(f, args, span) => Some(((f, args, *span), true)),
            _ => None,
        },
        _ => None,
    }
}

impl<'a> StatementCompiler<'a> {
    /// The declaration of remote function `name` (case-insensitive) and
    /// its index.
    pub(super) fn remote_fn(&self, name: &str) -> Option<(u16, &'a ast::RemoteDecl)> {
        let file: &'a ast::File = self.file;
        let i = file.remotes.iter().position(|d| d.name.name.eq_ignore_ascii_case(name))?;
        Some((i as u16, &file.remotes[i]))
    }

    /// The error for a call of a function neither built in nor declared.
    pub(super) fn unknown_function(&self, f: &Ident) -> Diagnostic {
        let declared: Vec<&str> = self.file.remotes.iter().map(|d| d.name.name.as_str()).collect();
        let mut note = "functions: PREV, abs, count, sum, avg, min, max, first, last".to_string();
        if !declared.is_empty() {
            note.push_str(&format!("; declared remote: {}", declared.join(", ")));
        }
        Diagnostic::error(f.span, format!("unknown function `{}`", f.name)).with_note(note).with_note(format!(
            "a function answered by another service is declared before the statements: `REMOTE {}(arg int, …);`",
            f.name
        ))
    }

    /// Checks and lowers conjunct `e`, the call `call` (negated or not),
    /// into a remote condition of its element.
    pub(super) fn remote_conjunct(
        &mut self,
        e: &Expr,
        (f, args, span): CallExpr<'_>,
        negated: bool,
        elements: &mut [Element<Event>],
    ) {
        let Some((func, decl)) = self.remote_fn(&f.name) else {
            let d = self.unknown_function(f);
            self.diags.push(d);
            return;
        };
        let params: Vec<(String, ParamType)> = decl.params.iter().map(|(p, t)| (p.name.clone(), *t)).collect();
        if args.len() != params.len() {
            let list: Vec<String> = params.iter().map(|(p, t)| format!("{p} {}", t.name())).collect();
            let n = |k: usize| if k == 1 { "1 argument".to_string() } else { format!("{k} arguments") };
            self.diags.push(
                Diagnostic::error(
                    span,
                    format!("`{}` takes {}, but this call has {}", f.name, n(params.len()), args.len()),
                )
                .with_note(format!("declared: REMOTE {}({})", decl.name.name, list.join(", "))),
            );
            return;
        }
        let Some(named) = self.known_vars(e) else { return };
        let mut owner: Option<(usize, Quant, &Ident)> = None;
        for v in &named {
            match self.vars[self.var_index(&v.name).expect("checked")].kind {
                VarKind::Pos { idx, quant } => {
                    if owner.is_none_or(|(o, _, _)| idx > o) {
                        owner = Some((idx, quant, v));
                    }
                }
                _ => {
                    self.error(v.span, format!("a remote call cannot name NOT variable `{}`", v.name));
                    return;
                }
            }
        }
        let Some((owner, quant, var)) = owner else {
            self.diags.push(
                Diagnostic::error(span, "this call names no variable")
                    .with_note("a remote condition belongs to the element of the last variable it names"),
            );
            return;
        };
        if quant.is_kleene() {
            self.diags.push(
                Diagnostic::error(
                    var.span,
                    format!("a remote call on Kleene variable `{}` is not supported", var.name),
                )
                .with_note("a remote condition belongs to a single-event element (the last variable it names)"),
            );
            return;
        }
        let mut lowered: Vec<FrameValue> = Vec::with_capacity(args.len());
        for (k, (arg, (pname, pty))) in args.iter().zip(&params).enumerate() {
            let Some((node, ty)) = self.lower(arg, Ctx::Own(owner)) else { return };
            if !accepts(*pty, ty) {
                self.diags.push(
                    Diagnostic::error(
                        arg.span(),
                        format!(
                            "argument {} of `{}` ({pname}) is declared {}, but this is {}",
                            k + 1,
                            f.name,
                            pty.name(),
                            ty.name()
                        ),
                    )
                    .with_note(format!("declared: {}", self.file.text(decl.span))),
                );
                continue;
            }
            lowered.push(converted(expr::value_fn(&node), *pty));
        }
        if lowered.len() != args.len() {
            return;
        }
        let text = self.text(e.span());
        let name = decl.name.name.clone();
        elements[owner].remote.push(RemoteCond { func, name, args: lowered, negated, text });
    }
}

/// Whether an argument of compile-time type `ty` may be passed for a
/// parameter of type `p` (an int for a float is converted).
fn accepts(p: ParamType, ty: Ty) -> bool {
    matches!(
        (p, ty),
        (_, Ty::Any | Ty::Null)
            | (ParamType::Int, Ty::Int | Ty::Num)
            | (ParamType::Float, Ty::Int | Ty::Float | Ty::Num)
            | (ParamType::Bool, Ty::Bool)
            | (ParamType::String, Ty::Str)
    )
}

/// `f`, its value converted to parameter type `p` ([`ParamType::convert`]).
fn converted(f: expr::ValFn, p: ParamType) -> FrameValue {
    Box::new(move |frame, regs| p.convert(f(frame, regs)))
}
