//! The abstract syntax tree of a query file, with spans.

use crate::diag::Span;

/// A name with its place.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ident {
    /// The text.
    pub name: String,
    /// Where.
    pub span: Span,
}

/// A parsed query file.
#[derive(Clone, Debug, PartialEq)]
pub struct File {
    /// Statements in order.
    pub statements: Vec<Statement>,
    /// `REMOTE` declarations, in order (LANGUAGE.md §8).
    pub remotes: Vec<RemoteDecl>,
    /// The text the spans point into.
    pub source: String,
}

impl File {
    /// The source text of a span, with runs of white space folded to one
    /// space (for plans and messages).
    pub fn text(&self, span: crate::diag::Span) -> String {
        let (a, b) = (span.start as usize, span.end as usize);
        self.source.get(a..b).unwrap_or("").split_whitespace().collect::<Vec<_>>().join(" ")
    }
}

/// `REMOTE name(param type, …);`: a function answered by another service.
#[derive(Clone, Debug, PartialEq)]
pub struct RemoteDecl {
    /// The function's name.
    pub name: Ident,
    /// Its parameters, in order: a name and a type each.
    pub params: Vec<(Ident, ParamType)>,
    /// The whole declaration.
    pub span: Span,
}

/// The type of a remote function's parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamType {
    /// `int`
    Int,
    /// `float` (an int argument is taken as a float)
    Float,
    /// `bool`
    Bool,
    /// `string`
    String,
}

impl ParamType {
    /// The type as written.
    pub fn name(self) -> &'static str {
        match self {
            ParamType::Int => "int",
            ParamType::Float => "float",
            ParamType::Bool => "bool",
            ParamType::String => "string",
        }
    }

    /// `v` as an argument of this type: an int for a float becomes a
    /// float; a value of another kind becomes NULL (the service receives
    /// `null`).
    pub fn convert(self, v: cep_core::Value) -> cep_core::Value {
        use cep_core::Value;
        match (self, v) {
            (ParamType::Float, Value::Int(i)) => Value::Float(i as f64),
            (ParamType::Int, Value::Int(_))
            | (ParamType::Float, Value::Float(_))
            | (ParamType::Bool, Value::Bool(_))
            | (ParamType::String, Value::Str(_)) => v,
            _ => Value::Null,
        }
    }

    /// The type a word names (case-insensitive), if any.
    pub fn from_word(word: &str) -> Option<ParamType> {
        Some(match word.to_ascii_lowercase().as_str() {
            "int" => ParamType::Int,
            "float" => ParamType::Float,
            "bool" => ParamType::Bool,
            "string" => ParamType::String,
            _ => return None,
        })
    }
}

/// One `PATTERN … ;` statement.
#[derive(Clone, Debug, PartialEq)]
pub struct Statement {
    /// `QUERY name`, if given.
    pub name: Option<Ident>,
    /// The elements, in order (a pattern without `SEQ` has one).
    pub elements: Vec<Element>,
    /// Whether the pattern was written `SEQ(...)`.
    pub seq: bool,
    /// The contiguity strategy, if given.
    pub strategy: Option<(Strategy, Span)>,
    /// Top-level conjuncts of `WHERE`.
    pub conjuncts: Vec<Conjunct>,
    /// The statement's `WITHIN`.
    pub within: Option<Window>,
    /// `PARTITION BY field`.
    pub partition: Option<Ident>,
    /// `SELECT …`.
    pub select: Option<(Selection, Span)>,
    /// `AFTER MATCH SKIP …`.
    pub skip: Option<(Skip, Span)>,
    /// The items of `EMIT`, in order (empty without `EMIT`).
    pub emit: Vec<EmitItem>,
    /// The whole statement.
    pub span: Span,
}

/// Quantifier of an element.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Quant {
    /// Exactly one event.
    One,
    /// `+`: one or more.
    Plus,
    /// `*`: zero or more.
    Star,
    /// `?`: zero or one.
    Opt,
}

impl Quant {
    /// Whether the element may bind several events.
    pub fn is_kleene(self) -> bool {
        matches!(self, Quant::Plus | Quant::Star)
    }

    /// Whether the element may bind no event.
    pub fn is_skippable(self) -> bool {
        matches!(self, Quant::Star | Quant::Opt)
    }

    /// The symbol as written (`""` for one).
    pub fn symbol(self) -> &'static str {
        match self {
            Quant::One => "",
            Quant::Plus => "+",
            Quant::Star => "*",
            Quant::Opt => "?",
        }
    }
}

/// One element of a pattern: `[NOT] types [quant] var [[]] [WITHIN w]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Element {
    /// `NOT`.
    pub negated: bool,
    /// The accepted event types (alternatives).
    pub types: Vec<Ident>,
    /// Quantifier.
    pub quant: Quant,
    /// The variable.
    pub var: Ident,
    /// Whether `[]` followed the variable.
    pub brackets: bool,
    /// The element's own `WITHIN`.
    pub within: Option<Window>,
    /// The whole element.
    pub span: Span,
}

/// A window bound: a duration or a count of events.
#[derive(Clone, Debug, PartialEq)]
pub struct Window {
    /// Time or events.
    pub kind: WindowKind,
    /// Where.
    pub span: Span,
}

/// The two kinds of window.
#[derive(Clone, Debug, PartialEq)]
pub enum WindowKind {
    /// `number [unit]`: the number as written and the unit word, if any.
    Time {
        /// The decimal number as written.
        number: String,
        /// The unit word (`s`, `minutes`, …); `None` means timestamp units.
        unit: Option<Ident>,
    },
    /// `n EVENTS`.
    Events(u64),
}

/// The contiguity strategy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// `strict-contiguity` / `partition-contiguity`.
    Strict,
    /// `skip-till-next-match` (the default).
    NextMatch,
    /// `skip-till-any-match`.
    AnyMatch,
}

impl Strategy {
    /// The keyword.
    pub fn name(self) -> &'static str {
        match self {
            Strategy::Strict => "strict-contiguity",
            Strategy::NextMatch => "skip-till-next-match",
            Strategy::AnyMatch => "skip-till-any-match",
        }
    }
}

/// `SELECT …`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Selection {
    /// Every match.
    All,
    /// Per last event, the earliest start.
    Earliest,
    /// Per last event, the latest start.
    Latest,
}

/// `AFTER MATCH SKIP …`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Skip {
    /// `NONE`.
    None,
    /// `TO NEXT EVENT`.
    ToNextEvent,
    /// `PAST LAST EVENT`.
    PastLastEvent,
    /// `TO FIRST var`.
    ToFirst(Ident),
    /// `TO LAST var`.
    ToLast(Ident),
}

/// One item of `EMIT`: `expr [AS name]` or `var.*`.
#[derive(Clone, Debug, PartialEq)]
pub struct EmitItem {
    /// What it emits.
    pub kind: EmitKind,
    /// `AS name`, if given.
    pub alias: Option<Ident>,
    /// The item as written, `AS name` excluded (its text names an item
    /// without `AS`).
    pub span: Span,
}

/// What an `EMIT` item emits.
#[derive(Clone, Debug, PartialEq)]
pub enum EmitKind {
    /// An expression, evaluated on the final match as in a later element.
    Expr(Expr),
    /// `var.*`: the bound event(s) as objects.
    Event(Ident),
}

/// A top-level conjunct of `WHERE`.
#[derive(Clone, Debug, PartialEq)]
pub enum Conjunct {
    /// `[field]`: partition by the field.
    Partition(Ident),
    /// A condition.
    Expr(Expr),
}

/// Binary operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    /// `OR`
    Or,
    /// `AND`
    And,
    /// `=`
    Eq,
    /// `!=` or `<>`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/`
    Div,
    /// `%`
    Rem,
}

impl BinOp {
    /// The operator as written.
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Or => "OR",
            BinOp::And => "AND",
            BinOp::Eq => "=",
            BinOp::Ne => "!=",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Rem => "%",
        }
    }

    /// Whether the operator compares two values.
    pub fn is_comparison(self) -> bool {
        matches!(self, BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge)
    }

    /// Whether the operator is arithmetic.
    pub fn is_arithmetic(self) -> bool {
        matches!(self, BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Rem)
    }
}

/// A literal.
#[derive(Clone, Debug, PartialEq)]
pub enum Lit {
    /// Integer.
    Int(i64),
    /// Float.
    Float(f64),
    /// String.
    Str(String),
    /// Boolean.
    Bool(bool),
    /// NULL.
    Null,
}

/// The event a reference selects within its variable.
#[derive(Clone, Debug, PartialEq)]
pub enum Index {
    /// No index: `b.f`.
    None,
    /// `b[i]`: the candidate event.
    I,
    /// `b[i-1]`: the event taken just before the candidate.
    IMinus1,
    /// `b[k]`, 1-based.
    Const(u64),
    /// `b[v.LEN]`, naming variable `v`.
    Len(Ident),
}

/// What a reference reads.
#[derive(Clone, Debug, PartialEq)]
pub enum Attr {
    /// A field.
    Field(Ident),
    /// `LEN`: the number of events bound.
    Len,
}

/// `var[index].field` or `var.LEN`.
#[derive(Clone, Debug, PartialEq)]
pub struct Ref {
    /// The variable.
    pub var: Ident,
    /// The index, if any.
    pub index: Index,
    /// Field or LEN.
    pub attr: Attr,
    /// The whole reference.
    pub span: Span,
}

/// Aggregate functions over a Kleene variable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AggFn {
    /// `sum`
    Sum,
    /// `avg`
    Avg,
    /// `min`
    Min,
    /// `max`
    Max,
    /// `first`
    First,
    /// `last`
    Last,
}

impl AggFn {
    /// The function name.
    pub fn name(self) -> &'static str {
        match self {
            AggFn::Sum => "sum",
            AggFn::Avg => "avg",
            AggFn::Min => "min",
            AggFn::Max => "max",
            AggFn::First => "first",
            AggFn::Last => "last",
        }
    }
}

/// An expression.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// A literal.
    Lit(Lit, Span),
    /// A reference to a bound event's field or a variable's length.
    Ref(Ref),
    /// `PREV(ref, n)`.
    Prev(Ref, u32, Span),
    /// `abs(e)`.
    Abs(Box<Expr>, Span),
    /// `count(var)`.
    Count(Ident, Span),
    /// `sum|avg|min|max|first|last(var.field)`.
    Agg(AggFn, Ident, Ident, Span),
    /// `NOT e`.
    Not(Box<Expr>, Span),
    /// `-e`.
    Neg(Box<Expr>, Span),
    /// `a op b`.
    Binary(BinOp, Box<Expr>, Box<Expr>, Span),
    /// `f(a, …)` for a function that is not built in: a `REMOTE` one, or
    /// an unknown name (the compiler says which).
    Call(Ident, Vec<Expr>, Span),
}

impl Expr {
    /// The expression's span.
    pub fn span(&self) -> Span {
        match self {
            Expr::Lit(_, s)
            | Expr::Prev(_, _, s)
            | Expr::Abs(_, s)
            | Expr::Count(_, s)
            | Expr::Agg(_, _, _, s)
            | Expr::Not(_, s)
            | Expr::Neg(_, s)
            | Expr::Binary(_, _, _, s)
            | Expr::Call(_, _, s) => *s,
            Expr::Ref(r) => r.span,
        }
    }

    /// Calls `f` on every sub-expression, this one included (pre-order),
    /// without recursion on the Rust stack.
    pub fn walk<'a>(&'a self, mut f: impl FnMut(&'a Expr)) {
        let mut stack = vec![self];
        while let Some(e) = stack.pop() {
            f(e);
            match e {
                Expr::Abs(x, _) | Expr::Not(x, _) | Expr::Neg(x, _) => stack.push(x),
                Expr::Binary(_, a, b, _) => {
                    stack.push(b);
                    stack.push(a);
                }
                Expr::Call(_, args, _) => stack.extend(args.iter().rev()),
                _ => {}
            }
        }
    }

    /// The variables this expression names, in order of first appearance.
    pub fn vars(&self) -> Vec<&Ident> {
        let mut out: Vec<&Ident> = Vec::new();
        self.walk(|e| match e {
            Expr::Ref(r) | Expr::Prev(r, _, _) => {
                push_unique(&mut out, &r.var);
                if let Index::Len(v) = &r.index {
                    push_unique(&mut out, v);
                }
            }
            Expr::Count(v, _) | Expr::Agg(_, v, _, _) => push_unique(&mut out, v),
            _ => {}
        });
        out
    }
}

fn push_unique<'a>(out: &mut Vec<&'a Ident>, id: &'a Ident) {
    if !out.iter().any(|o| o.name == id.name) {
        out.push(id);
    }
}
