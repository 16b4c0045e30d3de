//! Tokens → AST. Recursive descent; expressions by precedence climbing.
//!
//! Recursion is bounded: an expression nested deeper than [`MAX_DEPTH`]
//! (parentheses, `NOT`, unary minus, function arguments) is an error, and so
//! is an expression tree deeper than [`MAX_TREE_DEPTH`] (a chain of `+`, `-`,
//! `*`, `/`, `%` is one level per operator), so no query can overflow the
//! stack of the parser, the compiler or a compiled condition. A chain of one
//! logical operator (`a OR b OR c …`) is built as a balanced tree: it may be
//! as long as a query likes.

use super::ast::*;
use super::lexer::{Tok, Token, tokenize};
use crate::diag::{Diagnostic, Span};

/// The deepest expression nesting accepted.
pub const MAX_DEPTH: usize = 64;

/// The deepest expression tree accepted (operators on the way from the
/// root to a leaf, counting each operator of a chain like `a + b + c`).
pub const MAX_TREE_DEPTH: usize = 4 * MAX_DEPTH;

/// Words that cannot name a type or a variable.
const RESERVED: [&str; 12] =
    ["QUERY", "PATTERN", "SEQ", "NOT", "WHERE", "AND", "OR", "WITHIN", "PARTITION", "SELECT", "AFTER", "EVENTS"];

/// Parses a whole query file.
///
/// # Examples
/// ```
/// use cep_nfa::syntax::parse;
/// let file = parse("QUERY q PATTERN SEQ(A a, B+ b[]) WHERE a.x > 1 WITHIN 5 s").unwrap();
/// assert_eq!(file.statements[0].elements.len(), 2);
/// let err = parse("PATTERN SEQ(A a,").unwrap_err();
/// assert!(err.message.contains("expected"));
/// ```
pub fn parse(src: &str) -> Result<File, Diagnostic> {
    let tokens = tokenize(src)?;
    let mut p = Parser { tokens, pos: 0, depth: 0 };
    let mut statements = Vec::new();
    let mut remotes = Vec::new();
    loop {
        while p.eat_punct(";") {}
        if p.at_eof() {
            break;
        }
        if p.is_kw("REMOTE") && matches!(p.peek_at(1).tok, Tok::Ident(_)) {
            remotes.push(p.remote()?);
        } else {
            statements.push(p.statement()?);
        }
        if !p.at_eof() && !p.eat_punct(";") {
            return Err(p.expected("`;` or the end of the query"));
        }
    }
    if statements.is_empty() {
        return Err(Diagnostic::error(Span::new(src.len(), src.len()), "the query file has no statement")
            .with_note("expected `PATTERN …` or `QUERY name PATTERN …`"));
    }
    Ok(File { statements, remotes, source: src.to_owned() })
}

struct Parser {
    tokens: Vec<Token>,
    pos: usize,
    depth: usize,
}

type PResult<T> = Result<T, Diagnostic>;

impl Parser {
    fn peek(&self) -> &Token {
        &self.tokens[self.pos]
    }

    fn peek_at(&self, k: usize) -> &Token {
        &self.tokens[(self.pos + k).min(self.tokens.len() - 1)]
    }

    fn bump(&mut self) -> Token {
        let t = self.tokens[self.pos].clone();
        if self.pos + 1 < self.tokens.len() {
            self.pos += 1;
        }
        t
    }

    fn at_eof(&self) -> bool {
        self.peek().tok == Tok::Eof
    }

    fn is_kw(&self, kw: &str) -> bool {
        matches!(&self.peek().tok, Tok::Ident(s) if s.eq_ignore_ascii_case(kw))
    }

    fn is_kw_at(&self, k: usize, kw: &str) -> bool {
        matches!(&self.peek_at(k).tok, Tok::Ident(s) if s.eq_ignore_ascii_case(kw))
    }

    fn eat_kw(&mut self, kw: &str) -> bool {
        if self.is_kw(kw) {
            self.bump();
            true
        } else {
            false
        }
    }

    fn expect_kw(&mut self, kw: &str) -> PResult<Span> {
        if self.is_kw(kw) { Ok(self.bump().span) } else { Err(self.expected(&format!("`{kw}`"))) }
    }

    fn is_punct(&self, p: &str) -> bool {
        matches!(&self.peek().tok, Tok::Punct(q) if *q == p)
    }

    fn eat_punct(&mut self, p: &str) -> bool {
        if self.is_punct(p) {
            self.bump();
            true
        } else {
            false
        }
    }

    fn expect_punct(&mut self, p: &str) -> PResult<Span> {
        if self.is_punct(p) { Ok(self.bump().span) } else { Err(self.expected(&format!("`{p}`"))) }
    }

    fn expected(&self, what: &str) -> Diagnostic {
        let t = self.peek();
        Diagnostic::error(t.span, format!("expected {what}, found {}", t.tok.describe()))
    }

    fn ident(&mut self, what: &str) -> PResult<Ident> {
        match &self.peek().tok {
            Tok::Ident(s) => {
                let id = Ident { name: s.clone(), span: self.peek().span };
                self.bump();
                Ok(id)
            }
            _ => Err(self.expected(what)),
        }
    }

    /// A name that is not a reserved word (types and variables).
    fn name(&mut self, what: &str) -> PResult<Ident> {
        if let Tok::Ident(s) = &self.peek().tok
            && RESERVED.iter().any(|r| r.eq_ignore_ascii_case(s))
        {
            return Err(self.expected(what).with_note(format!("`{s}` is a keyword")));
        }
        self.ident(what)
    }

    /// `REMOTE name(param type, …)`.
    fn remote(&mut self) -> PResult<RemoteDecl> {
        let start = self.bump().span;
        let name = self.name("a function name")?;
        self.expect_punct("(")?;
        let mut params = Vec::new();
        if !self.is_punct(")") {
            loop {
                let param = self.name("a parameter name")?;
                let ty_word = self.ident("a type (`int`, `float`, `bool` or `string`)")?;
                let Some(ty) = ParamType::from_word(&ty_word.name) else {
                    return Err(Diagnostic::error(ty_word.span, format!("unknown type `{}`", ty_word.name))
                        .with_note("a parameter is `int`, `float`, `bool` or `string`"));
                };
                params.push((param, ty));
                if !self.eat_punct(",") {
                    break;
                }
            }
        }
        let close = self.expect_punct(")")?;
        Ok(RemoteDecl { name, params, span: start.to(close) })
    }

    fn statement(&mut self) -> PResult<Statement> {
        let start = self.peek().span;
        let name = if self.eat_kw("QUERY") { Some(self.name("a query name")?) } else { None };
        self.expect_kw("PATTERN")?;
        let (elements, seq) = if self.is_kw("SEQ") && matches!(self.peek_at(1).tok, Tok::Punct("(")) {
            self.bump();
            self.bump();
            let mut elements = vec![self.element(true)?];
            while self.eat_punct(",") {
                elements.push(self.element(true)?);
            }
            if !self.eat_punct(")") {
                return Err(self.expected("`,` or `)`"));
            }
            (elements, true)
        } else {
            (vec![self.element(false)?], false)
        };
        let mut st = Statement {
            name,
            elements,
            seq,
            strategy: None,
            conjuncts: Vec::new(),
            within: None,
            partition: None,
            select: None,
            skip: None,
            emit: Vec::new(),
            span: start,
        };
        if self.eat_kw("WHERE") {
            self.where_clause(&mut st)?;
        }
        if self.eat_kw("WITHIN") {
            st.within = Some(self.window()?);
        }
        if self.is_kw("PARTITION") {
            self.bump();
            self.expect_kw("BY")?;
            st.partition = Some(self.ident("a field name")?);
        }
        if self.eat_kw("SELECT") {
            let t = self.peek().span;
            let sel = if self.eat_kw("ALL") {
                Selection::All
            } else if self.eat_kw("EARLIEST") {
                Selection::Earliest
            } else if self.eat_kw("LATEST") {
                Selection::Latest
            } else {
                return Err(self.expected("`ALL`, `EARLIEST` or `LATEST`"));
            };
            st.select = Some((sel, t));
        }
        if self.is_kw("AFTER") {
            let s = self.bump().span;
            self.expect_kw("MATCH")?;
            self.expect_kw("SKIP")?;
            let skip = self.skip()?;
            st.skip = Some((skip, s.to(self.tokens[self.pos - 1].span)));
        }
        if self.eat_kw("EMIT") {
            st.emit.push(self.emit_item()?);
            while self.eat_punct(",") {
                st.emit.push(self.emit_item()?);
            }
        }
        st.span = start.to(self.tokens[self.pos.saturating_sub(1)].span);
        Ok(st)
    }

    /// `expr [AS name]` or `var.*`.
    fn emit_item(&mut self) -> PResult<EmitItem> {
        let first = self.peek().span;
        if matches!(self.peek().tok, Tok::Ident(_))
            && matches!(self.peek_at(1).tok, Tok::Punct("."))
            && matches!(self.peek_at(2).tok, Tok::Punct("*"))
        {
            let var = self.name("a variable")?;
            self.bump();
            let star = self.bump().span;
            if self.is_kw("AS") {
                return Err(Diagnostic::error(self.peek().span, format!("`{}.*` takes no `AS`", var.name))
                    .with_note(format!("its values are named by its variable: `{}`", var.name)));
            }
            return Ok(EmitItem { kind: EmitKind::Event(var), alias: None, span: first.to(star) });
        }
        let e = self.expr(0)?;
        // From the first token to the last one taken: the expression's own
        // span leaves out outer parentheses.
        let span = first.to(self.tokens[self.pos - 1].span);
        let alias = if self.eat_kw("AS") { Some(self.ident("a name for the item")?) } else { None };
        Ok(EmitItem { kind: EmitKind::Expr(e), alias, span })
    }

    fn skip(&mut self) -> PResult<Skip> {
        if self.eat_kw("NONE") {
            return Ok(Skip::None);
        }
        if self.eat_kw("PAST") {
            self.expect_kw("LAST")?;
            self.event_word()?;
            return Ok(Skip::PastLastEvent);
        }
        if self.eat_kw("TO") {
            if self.eat_kw("NEXT") {
                self.event_word()?;
                return Ok(Skip::ToNextEvent);
            }
            if self.eat_kw("FIRST") {
                return Ok(Skip::ToFirst(self.name("a variable")?));
            }
            if self.eat_kw("LAST") {
                return Ok(Skip::ToLast(self.name("a variable")?));
            }
            return Err(self.expected("`NEXT`, `FIRST` or `LAST`"));
        }
        Err(self.expected("`NONE`, `TO` or `PAST`"))
    }

    fn event_word(&mut self) -> PResult<()> {
        if self.eat_kw("EVENT") || self.eat_kw("ROW") { Ok(()) } else { Err(self.expected("`EVENT`")) }
    }

    fn element(&mut self, in_seq: bool) -> PResult<Element> {
        let start = self.peek().span;
        let negated = self.eat_kw("NOT");
        let mut types = Vec::new();
        if self.eat_punct("(") {
            types.push(self.name("an event type")?);
            while self.eat_punct("|") {
                types.push(self.name("an event type")?);
            }
            if !self.eat_punct(")") {
                return Err(self.expected("`|` or `)`"));
            }
        } else {
            types.push(self.name("an event type")?);
        }
        let quant = if self.eat_punct("+") {
            Quant::Plus
        } else if self.eat_punct("*") {
            Quant::Star
        } else if self.eat_punct("?") {
            Quant::Opt
        } else {
            Quant::One
        };
        let var = self.name("a variable name")?;
        let mut brackets = false;
        if self.is_punct("[") && matches!(self.peek_at(1).tok, Tok::Punct("]")) {
            self.bump();
            self.bump();
            brackets = true;
        }
        let within = if in_seq && self.eat_kw("WITHIN") { Some(self.window()?) } else { None };
        let span = start.to(self.tokens[self.pos - 1].span);
        Ok(Element { negated, types, quant, var, brackets, within, span })
    }

    fn window(&mut self) -> PResult<Window> {
        let t = self.peek().clone();
        let number = match &t.tok {
            Tok::Int(s) | Tok::Float(s) => s.clone(),
            _ => return Err(self.expected("a duration (`60 s`, `500`) or `n EVENTS`")),
        };
        self.bump();
        if self.is_kw("EVENTS") {
            let end = self.bump().span;
            let n = match t.tok {
                Tok::Int(_) => number.parse::<u64>().ok(),
                _ => None,
            };
            let Some(n) = n else {
                return Err(Diagnostic::error(t.span, format!("`{number}` is not a whole number of events")));
            };
            return Ok(Window { kind: WindowKind::Events(n), span: t.span.to(end) });
        }
        if let Tok::Ident(word) = &self.peek().tok
            && cep_core::time::DurationUnit::parse(word).is_some()
        {
            let unit = Ident { name: word.clone(), span: self.peek().span };
            self.bump();
            return Ok(Window { span: t.span.to(unit.span), kind: WindowKind::Time { number, unit: Some(unit) } });
        }
        Ok(Window { kind: WindowKind::Time { number, unit: None }, span: t.span })
    }

    fn where_clause(&mut self, st: &mut Statement) -> PResult<()> {
        if let Tok::Strategy(s) = &self.peek().tok {
            let strategy = match s.as_str() {
                "skip-till-next-match" => Strategy::NextMatch,
                "skip-till-any-match" => Strategy::AnyMatch,
                _ => Strategy::Strict,
            };
            st.strategy = Some((strategy, self.bump().span));
            if !self.eat_kw("AND") {
                return Ok(());
            }
        }
        loop {
            if self.is_punct("[") {
                let open = self.bump().span;
                let field = self.ident("a field name")?;
                let close = self.expect_punct("]")?;
                st.conjuncts.push(Conjunct::Partition(Ident { span: open.to(close), ..field }));
            } else if let Tok::Strategy(s) = &self.peek().tok {
                return Err(Diagnostic::error(self.peek().span, format!("`{s}` must come first in WHERE")));
            } else {
                let e = self.expr(0)?;
                flatten_and(e, &mut st.conjuncts);
            }
            if !self.eat_kw("AND") {
                return Ok(());
            }
        }
    }

    /// Precedence levels: 1 OR, 2 AND, 3 NOT, 4 comparison, 5 + -, 6 * / %, 7 unary -.
    fn expr(&mut self, min_level: u8) -> PResult<Expr> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            let span = self.peek().span;
            self.depth -= 1;
            return Err(Diagnostic::error(span, format!("expression nested deeper than {MAX_DEPTH} levels")));
        }
        let r = self.expr_inner(min_level);
        self.depth -= 1;
        r
    }

    fn expr_inner(&mut self, min_level: u8) -> PResult<Expr> {
        let mut lhs = if min_level <= 3 && self.is_kw("NOT") {
            let s = self.bump().span;
            let inner = self.expr(3)?;
            let span = s.to(inner.span());
            Expr::Not(Box::new(inner), span)
        } else {
            self.unary()?
        };
        let mut depth = tree_depth(&lhs);
        if depth > MAX_TREE_DEPTH {
            return Err(tree_too_deep(lhs.span()));
        }
        while let Some((op, level)) = self.binop() {
            if level < min_level.max(1) {
                break;
            }
            if self.partition_conjunct_follows(op) {
                break;
            }
            let op_span = self.bump().span;
            // Comparisons do not chain: `a < b < c` is an error.
            let rhs = self.expr(level + 1)?;
            if op.is_comparison()
                && let Some((op2, l2)) = self.binop()
                && l2 == 4
            {
                return Err(Diagnostic::error(
                    self.peek().span,
                    format!("comparisons do not chain: `{}` after `{}`", op2.symbol(), op.symbol()),
                )
                .with_note("use AND: `a < b AND b < c`"));
            }
            if matches!(op, BinOp::And | BinOp::Or) {
                // `a OR b OR c …`: the same value whichever way it is
                // grouped, so grouped as a balanced tree, whose depth grows
                // with the logarithm of its length.
                let mut operands = vec![lhs, rhs];
                while self.binop().is_some_and(|(op2, _)| op2 == op) && !self.partition_conjunct_follows(op) {
                    self.bump();
                    operands.push(self.expr(level + 1)?);
                }
                lhs = balanced(op, operands);
                depth = tree_depth(&lhs);
            } else {
                depth = depth.max(tree_depth(&rhs)) + 1;
                let span = lhs.span().to(rhs.span());
                lhs = Expr::Binary(op, Box::new(lhs), Box::new(rhs), span);
            }
            if depth > MAX_TREE_DEPTH {
                return Err(tree_too_deep(op_span));
            }
        }
        Ok(lhs)
    }

    /// `AND` followed by `[`: a partition conjunct, left to the WHERE loop.
    fn partition_conjunct_follows(&self, op: BinOp) -> bool {
        op == BinOp::And && matches!(self.peek_at(1).tok, Tok::Punct("["))
    }

    fn binop(&self) -> Option<(BinOp, u8)> {
        let t = &self.peek().tok;
        Some(match t {
            Tok::Ident(s) if s.eq_ignore_ascii_case("OR") => (BinOp::Or, 1),
            Tok::Ident(s) if s.eq_ignore_ascii_case("AND") => (BinOp::And, 2),
            Tok::Punct("=") => (BinOp::Eq, 4),
            Tok::Punct("!=") | Tok::Punct("<>") => (BinOp::Ne, 4),
            Tok::Punct("<") => (BinOp::Lt, 4),
            Tok::Punct("<=") => (BinOp::Le, 4),
            Tok::Punct(">") => (BinOp::Gt, 4),
            Tok::Punct(">=") => (BinOp::Ge, 4),
            Tok::Punct("+") => (BinOp::Add, 5),
            Tok::Punct("-") => (BinOp::Sub, 5),
            Tok::Punct("*") => (BinOp::Mul, 6),
            Tok::Punct("/") => (BinOp::Div, 6),
            Tok::Punct("%") => (BinOp::Rem, 6),
            _ => return None,
        })
    }

    fn unary(&mut self) -> PResult<Expr> {
        if self.is_punct("-") {
            let s = self.bump().span;
            // Fold `-123` into a literal so i64::MIN is writable.
            if let Tok::Int(digits) = &self.peek().tok {
                let digits = digits.clone();
                let t = self.bump().span;
                let span = s.to(t);
                return match format!("-{digits}").parse::<i64>() {
                    Ok(v) => Ok(Expr::Lit(Lit::Int(v), span)),
                    Err(_) => Err(int_range_error(span, &format!("-{digits}"))),
                };
            }
            self.depth += 1;
            if self.depth > MAX_DEPTH {
                return Err(Diagnostic::error(s, format!("expression nested deeper than {MAX_DEPTH} levels")));
            }
            let inner = self.unary();
            self.depth -= 1;
            let inner = inner?;
            let span = s.to(inner.span());
            return Ok(Expr::Neg(Box::new(inner), span));
        }
        self.primary()
    }

    fn primary(&mut self) -> PResult<Expr> {
        let t = self.peek().clone();
        match &t.tok {
            Tok::Int(s) => {
                self.bump();
                match s.parse::<i64>() {
                    Ok(v) => Ok(Expr::Lit(Lit::Int(v), t.span)),
                    Err(_) => Err(int_range_error(t.span, s)),
                }
            }
            Tok::Float(s) => {
                self.bump();
                match s.parse::<f64>() {
                    Ok(v) if v.is_finite() => Ok(Expr::Lit(Lit::Float(v), t.span)),
                    _ => Err(Diagnostic::error(t.span, format!("number `{s}` is out of range"))),
                }
            }
            Tok::Str(s) => {
                self.bump();
                Ok(Expr::Lit(Lit::Str(s.clone()), t.span))
            }
            Tok::Punct("(") => {
                self.bump();
                let e = self.expr(0)?;
                if !self.eat_punct(")") {
                    return Err(self.expected("`)`"));
                }
                Ok(e)
            }
            Tok::Ident(word) => {
                let upper = word.to_ascii_uppercase();
                let is_call = matches!(self.peek_at(1).tok, Tok::Punct("("));
                match upper.as_str() {
                    "TRUE" => {
                        self.bump();
                        Ok(Expr::Lit(Lit::Bool(true), t.span))
                    }
                    "FALSE" => {
                        self.bump();
                        Ok(Expr::Lit(Lit::Bool(false), t.span))
                    }
                    "NULL" => {
                        self.bump();
                        Ok(Expr::Lit(Lit::Null, t.span))
                    }
                    "PREV" if is_call => self.prev(),
                    "ABS" if is_call => {
                        self.bump();
                        self.bump();
                        let e = self.expr(0)?;
                        let close = self.expect_punct(")")?;
                        Ok(Expr::Abs(Box::new(e), t.span.to(close)))
                    }
                    "COUNT" if is_call => {
                        self.bump();
                        self.bump();
                        let v = self.name("a variable")?;
                        let close = self.expect_punct(")")?;
                        Ok(Expr::Count(v, t.span.to(close)))
                    }
                    "SUM" | "AVG" | "MIN" | "MAX" | "FIRST" | "LAST" if is_call => {
                        let f = match upper.as_str() {
                            "SUM" => AggFn::Sum,
                            "AVG" => AggFn::Avg,
                            "MIN" => AggFn::Min,
                            "MAX" => AggFn::Max,
                            "FIRST" => AggFn::First,
                            _ => AggFn::Last,
                        };
                        self.bump();
                        self.bump();
                        let v = self.name("a variable")?;
                        self.expect_punct(".")?;
                        let field = self.ident("a field name")?;
                        let close = self.expect_punct(")")?;
                        Ok(Expr::Agg(f, v, field, t.span.to(close)))
                    }
                    _ if is_call => {
                        let name = self.name("a function name")?;
                        self.bump();
                        let mut args = Vec::new();
                        if !self.is_punct(")") {
                            args.push(self.expr(0)?);
                            while self.eat_punct(",") {
                                args.push(self.expr(0)?);
                            }
                        }
                        let close = self.expect_punct(")")?;
                        Ok(Expr::Call(name, args, t.span.to(close)))
                    }
                    _ if RESERVED.iter().any(|r| r.eq_ignore_ascii_case(word)) => Err(self.expected("an expression")),
                    _ => Ok(Expr::Ref(self.reference()?)),
                }
            }
            Tok::Punct("[") => Err(Diagnostic::error(t.span, "`[field]` must be a conjunct of its own")
                .with_note("write it directly after WHERE or AND, not inside an expression")),
            _ => Err(self.expected("an expression")),
        }
    }

    fn prev(&mut self) -> PResult<Expr> {
        let start = self.bump().span;
        self.bump();
        let r = self.reference()?;
        let mut n = 1u32;
        if self.eat_punct(",") {
            let t = self.peek().clone();
            match &t.tok {
                Tok::Int(s) => {
                    self.bump();
                    n = match s.parse::<u32>() {
                        Ok(v) if (1..=crate::syntax::MAX_PREV).contains(&v) => v,
                        _ => {
                            return Err(Diagnostic::error(
                                t.span,
                                format!("PREV offset must be between 1 and {}", crate::syntax::MAX_PREV),
                            ));
                        }
                    };
                }
                _ => return Err(self.expected("a whole number of events")),
            }
        }
        let close = self.expect_punct(")")?;
        Ok(Expr::Prev(r, n, start.to(close)))
    }

    fn reference(&mut self) -> PResult<Ref> {
        let var = self.name("a variable")?;
        let mut index = Index::None;
        if self.eat_punct("[") {
            let t = self.peek().clone();
            index = match &t.tok {
                Tok::Ident(s) if s == "i" => {
                    self.bump();
                    if self.eat_punct("-") {
                        match &self.peek().tok {
                            Tok::Int(one) if one == "1" => {
                                self.bump();
                                Index::IMinus1
                            }
                            _ => return Err(self.expected("`1` (only `i-1` is supported)")),
                        }
                    } else {
                        Index::I
                    }
                }
                Tok::Int(s) => {
                    self.bump();
                    match s.parse::<u64>() {
                        Ok(k) if k >= 1 => Index::Const(k),
                        _ => return Err(Diagnostic::error(t.span, "an index counts from 1")),
                    }
                }
                Tok::Ident(_) if matches!(self.peek_at(1).tok, Tok::Punct(".")) && self.is_kw_at(2, "LEN") => {
                    let v = self.name("a variable")?;
                    self.bump();
                    self.bump();
                    Index::Len(v)
                }
                _ => return Err(self.expected("an index: `i`, `i-1`, a number, or `var.LEN`")),
            };
            self.expect_punct("]")?;
        }
        self.expect_punct(".")?;
        let attr_tok = self.peek().clone();
        let attr = match &attr_tok.tok {
            Tok::Ident(s) if s.eq_ignore_ascii_case("LEN") && index == Index::None => {
                self.bump();
                Attr::Len
            }
            Tok::Ident(_) => Attr::Field(self.ident("a field name")?),
            _ => return Err(self.expected("a field name or `LEN`")),
        };
        let span = var.span.to(attr_tok.span);
        Ok(Ref { var, index, attr, span })
    }
}

/// The depth of an expression tree (a leaf is 0), without recursion.
fn tree_depth(e: &Expr) -> usize {
    let mut deepest = 0;
    let mut stack = vec![(e, 0)];
    while let Some((e, d)) = stack.pop() {
        deepest = deepest.max(d);
        match e {
            Expr::Abs(x, _) | Expr::Not(x, _) | Expr::Neg(x, _) => stack.push((x, d + 1)),
            Expr::Binary(_, a, b, _) => {
                stack.push((a, d + 1));
                stack.push((b, d + 1));
            }
            _ => {}
        }
    }
    deepest
}

fn tree_too_deep(span: Span) -> Diagnostic {
    Diagnostic::error(span, format!("expression nested deeper than {MAX_TREE_DEPTH} levels of operators"))
        .with_note("each operator of a chain like `a + b + c` is a level; group a long chain with parentheses")
}

/// `op` over `operands` (at least one), in order, as a balanced tree.
fn balanced(op: BinOp, mut operands: Vec<Expr>) -> Expr {
    if operands.len() == 1 {
        return operands.pop().expect("one operand");
    }
    let right = operands.split_off(operands.len() / 2);
    let (a, b) = (balanced(op, operands), balanced(op, right));
    let span = a.span().to(b.span());
    Expr::Binary(op, Box::new(a), Box::new(b), span)
}

fn int_range_error(span: Span, digits: &str) -> Diagnostic {
    Diagnostic::error(span, format!("integer literal `{digits}` does not fit in 64 bits"))
        .with_note("integers range from -9223372036854775808 to 9223372036854775807")
}

/// Splits a top-level `a AND b AND c` into its conjuncts.
fn flatten_and(e: Expr, out: &mut Vec<Conjunct>) {
    let mut stack = vec![e];
    let mut parts = Vec::new();
    while let Some(e) = stack.pop() {
        match e {
            Expr::Binary(BinOp::And, a, b, _) => {
                stack.push(*b);
                stack.push(*a);
            }
            other => parts.push(Conjunct::Expr(other)),
        }
    }
    out.extend(parts);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(src: &str) -> Statement {
        parse(src).unwrap().statements.remove(0)
    }

    #[test]
    fn rise_spike_parses() {
        let st = one("QUERY rise_spike
             PATTERN SEQ(Tick r, Tick s WITHIN 60 s, NOT Tick v WITHIN 10 s)
             WHERE skip-till-next-match AND [key]
               AND r.price * 100 >= PREV(r.price) * 102
               AND s.vol >= 1000 AND v.price * 100 <= s.price * 99
             SELECT EARLIEST;");
        assert_eq!(st.name.unwrap().name, "rise_spike");
        assert_eq!(st.elements.len(), 3);
        assert!(st.elements[2].negated);
        assert!(st.elements[1].within.is_some());
        assert_eq!(st.strategy.unwrap().0, Strategy::NextMatch);
        assert_eq!(st.conjuncts.len(), 4);
        assert!(matches!(st.conjuncts[0], Conjunct::Partition(_)));
        assert_eq!(st.select.unwrap().0, Selection::Earliest);
    }

    #[test]
    fn kleene_and_indexes() {
        let st = one("PATTERN SEQ(Stock+ a[], Stock b) WHERE [symbol] AND a[i].price > a[i-1].price \
             AND b.price < a[a.LEN].price WITHIN 1 hour");
        assert_eq!(st.elements[0].quant, Quant::Plus);
        assert!(st.elements[0].brackets);
        let Conjunct::Expr(Expr::Binary(BinOp::Gt, l, r, _)) = &st.conjuncts[1] else { panic!() };
        assert!(matches!(&**l, Expr::Ref(Ref { index: Index::I, .. })));
        assert!(matches!(&**r, Expr::Ref(Ref { index: Index::IMinus1, .. })));
        assert!(matches!(st.within.unwrap().kind, WindowKind::Time { .. }));
    }

    #[test]
    fn precedence() {
        let st = one("PATTERN A a WHERE a.x = 1 OR a.y = 2 AND NOT a.z > 3 + 4 * -a.w");
        assert_eq!(st.conjuncts.len(), 1, "OR at the top is one conjunct");
        let Conjunct::Expr(Expr::Binary(BinOp::Or, _, rhs, _)) = &st.conjuncts[0] else { panic!() };
        let Expr::Binary(BinOp::And, _, not, _) = &**rhs else { panic!() };
        let Expr::Not(cmp, _) = &**not else { panic!() };
        let Expr::Binary(BinOp::Gt, _, sum, _) = &**cmp else { panic!() };
        let Expr::Binary(BinOp::Add, _, prod, _) = &**sum else { panic!() };
        assert!(matches!(&**prod, Expr::Binary(BinOp::Mul, _, _, _)));
    }

    #[test]
    fn skip_and_windows() {
        let st = one("PATTERN SEQ(A a, B b) WITHIN 100 EVENTS AFTER MATCH SKIP TO LAST b");
        assert_eq!(st.within.unwrap().kind, WindowKind::Events(100));
        assert!(matches!(st.skip.unwrap().0, Skip::ToLast(_)));
        let st = one("PATTERN A a AFTER MATCH SKIP PAST LAST ROW");
        assert_eq!(st.skip.unwrap().0, Skip::PastLastEvent);
    }

    #[test]
    fn errors_have_spans() {
        let src = "PATTERN SEQ(A a, B b WITHIN)";
        let e = parse(src).unwrap_err();
        assert!(e.message.starts_with("expected a duration"), "{}", e.message);
        assert_eq!(&src[e.span.start as usize..e.span.end as usize], ")");
        let e = parse("PATTERN SEQ(A a, B b) WHERE a.x = ").unwrap_err();
        assert!(e.message.contains("found the end of the query"), "{}", e.message);
        let e = parse("PATTERN A a WHERE a.x = 99999999999999999999").unwrap_err();
        assert!(e.message.contains("does not fit in 64 bits"));
        assert_eq!(parse("PATTERN A a WHERE a.x = -9223372036854775808").unwrap().statements.len(), 1);
    }

    #[test]
    fn nesting_limit() {
        let deep = format!("PATTERN A a WHERE {}a.x{} = 1", "(".repeat(200), ")".repeat(200));
        let e = parse(&deep).unwrap_err();
        assert!(e.message.contains("nested deeper"));
        let deep = format!("PATTERN A a WHERE {}a.x = 1", "NOT ".repeat(100_000));
        assert!(parse(&deep).is_err());
        let deep = format!("PATTERN A a WHERE {}a.x = 1", "- ".repeat(100_000));
        assert!(parse(&deep).is_err());
    }

    #[test]
    fn long_operator_chains() {
        // A chain of 300 `+` built a tree 300 deep: the compiler's
        // recursion over it failed its depth assertion (a panic in debug
        // builds), and 100,000 overflowed the stack in release builds.
        // Found by tests/robustness.rs (and a probe of long inputs).
        for n in [300, 100_000] {
            let src = format!("PATTERN A a WHERE a.x{} > 0", " + a.x".repeat(n));
            let e = parse(&src).unwrap_err();
            assert!(e.message.contains("deeper than 256 levels of operators"), "{}", e.message);
            assert_eq!(&src[e.span.start as usize..e.span.end as usize], "+");
        }
        let src = format!("PATTERN A a WHERE a.x{} > 0", " + a.x".repeat(MAX_TREE_DEPTH - 1));
        assert!(parse(&src).is_ok());
        // Logical chains have no such limit: they are balanced.
        for op in ["OR", "AND"] {
            let src = format!("PATTERN A a WHERE (a.x = 0{})", format!(" {op} a.x = 1").repeat(100_000));
            let st = one(&src);
            let Conjunct::Expr(e) = &st.conjuncts[0] else { panic!() };
            assert!(tree_depth(e) <= 20, "{}", tree_depth(e));
        }
        // Top-level AND still splits into conjuncts, in order, around `[k]`.
        let st = one("PATTERN A a WHERE a.x = 1 AND a.y = 2 AND [k] AND a.z = 3 AND a.w = 4 AND a.v = 5");
        let names: Vec<String> = st
            .conjuncts
            .iter()
            .map(|c| match c {
                Conjunct::Partition(f) => format!("[{}]", f.name),
                Conjunct::Expr(Expr::Binary(BinOp::Eq, a, _, _)) => match &**a {
                    Expr::Ref(Ref { attr: Attr::Field(f), .. }) => f.name.clone(),
                    other => panic!("{other:?}"),
                },
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(names, ["x", "y", "[k]", "z", "w", "v"]);
    }

    #[test]
    fn several_statements_and_comments() {
        let f = parse("-- first\nPATTERN A a; QUERY two PATTERN B b -- trailing\n;").unwrap();
        assert_eq!(f.statements.len(), 2);
        assert!(parse("  -- nothing\n").is_err());
    }

    #[test]
    fn emit_items() {
        let src = "PATTERN SEQ(A a, B+ b[]) AFTER MATCH SKIP PAST LAST EVENT \
                   EMIT a.x AS entry, (max( b.y ) + 1), b.*, count(b);";
        let st = one(src);
        assert_eq!(st.emit.len(), 4);
        let text = |sp: Span| &src[sp.start as usize..sp.end as usize];
        assert_eq!(st.emit[0].alias.as_ref().unwrap().name, "entry");
        assert_eq!(text(st.emit[0].span), "a.x");
        assert_eq!(text(st.emit[1].span), "(max( b.y ) + 1)", "outer parentheses are part of the item");
        assert!(matches!(&st.emit[2].kind, EmitKind::Event(v) if v.name == "b"));
        assert_eq!(text(st.emit[3].span), "count(b)");
        // EMIT may follow any clause, or none.
        assert_eq!(one("PATTERN A a WHERE a.x > 1 EMIT a.x").emit.len(), 1);
        assert_eq!(one("PATTERN A a WITHIN 5 PARTITION BY k SELECT EARLIEST EMIT a.*").emit.len(), 1);
        assert!(parse("PATTERN A a EMIT").is_err());
        assert!(parse("PATTERN A a EMIT a.x,").is_err());
    }

    #[test]
    fn chained_comparison_rejected() {
        assert!(parse("PATTERN A a WHERE 1 < a.x < 3").is_err());
    }

    #[test]
    fn keyword_as_variable_rejected() {
        let e = parse("PATTERN SEQ(A where)").unwrap_err();
        assert!(e.notes[0].contains("keyword"));
    }
}
