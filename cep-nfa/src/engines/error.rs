//! The engines' errors: why an engine cannot run a query
//! ([`EngineError`]) and why a saved state cannot be restored
//! ([`RestoreError`]).
//!
//! Each is a struct around a private kind, as regex-automata's
//! `BuildError` is: its `Display` is the sentence a user reads (the CLI
//! prints it as is), accessors give a program what it may branch on, and
//! the kinds can grow without breaking callers.

use std::fmt;

/// Why an engine cannot run a query: what in the program the stack engine
/// does not handle ([`stack::qualifies`](crate::engines::stack::qualifies),
/// [`StackEngine::new`](crate::engines::stack::StackEngine::new)), and, when the
/// stack engine was forced on a query
/// ([`select::explain`](crate::engines::select::explain),
/// [`QueryEngine::new`](crate::engines::select::QueryEngine::new)), which query.
///
/// # Examples
/// ```
/// use cep_core::Schema;
/// use cep_nfa::compile::{compile, Options};
/// use cep_nfa::select::{explain, EngineChoice};
/// let q = "PATTERN SEQ(A a, B+ b[]) WHERE skip-till-any-match";
/// let p = &compile(q, &mut Schema::new(), &Options::default()).unwrap().programs[0];
/// let err = explain(p, EngineChoice::Stack).unwrap_err();
/// assert_eq!(err.variable(), Some("b"));
/// assert_eq!(err.query(), Some(p.name.as_str()));
/// assert!(err.to_string().ends_with("element `b` is not a single event (`+`, `*` and `?` need the run engine)"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EngineError {
    /// The query the stack engine was forced on, if it was.
    query: Option<String>,
    kind: Unfit,
}

/// What in a program only the run engine runs.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Unfit {
    /// A strategy other than skip-till-any-match (its name).
    Strategy(&'static str),
    /// An element that is not one event (`+`, `*`, `?`).
    NotSingle(String),
    /// A negation between elements.
    Negation(String),
    /// A trailing negation.
    Trailing(String),
    /// `SELECT EARLIEST` or `LATEST`.
    Select,
    /// `AFTER MATCH SKIP`.
    Skip,
    /// A window on an element.
    ElementWindow(String),
    /// `PREV`.
    Prev,
    /// A condition that reads more of its own variable than the event.
    OwnRegs { cond: String, var: String },
    /// A remote condition on an element (its variable).
    Remote(String),
    /// A condition on the event itself that can only be checked later.
    Later { cond: String, var: String },
}

impl EngineError {
    pub(crate) fn strategy(name: &'static str) -> EngineError {
        EngineError::of(Unfit::Strategy(name))
    }

    pub(crate) fn not_single(var: &str) -> EngineError {
        EngineError::of(Unfit::NotSingle(var.to_owned()))
    }

    pub(crate) fn negation(var: &str) -> EngineError {
        EngineError::of(Unfit::Negation(var.to_owned()))
    }

    pub(crate) fn trailing(var: &str) -> EngineError {
        EngineError::of(Unfit::Trailing(var.to_owned()))
    }

    pub(crate) fn select() -> EngineError {
        EngineError::of(Unfit::Select)
    }

    pub(crate) fn remote(var: &str) -> EngineError {
        EngineError::of(Unfit::Remote(var.to_owned()))
    }

    pub(crate) fn skip() -> EngineError {
        EngineError::of(Unfit::Skip)
    }

    pub(crate) fn element_window(var: &str) -> EngineError {
        EngineError::of(Unfit::ElementWindow(var.to_owned()))
    }

    pub(crate) fn prev() -> EngineError {
        EngineError::of(Unfit::Prev)
    }

    pub(crate) fn own_regs(cond: &str, var: &str) -> EngineError {
        EngineError::of(Unfit::OwnRegs { cond: cond.to_owned(), var: var.to_owned() })
    }

    pub(crate) fn later(cond: &str, var: &str) -> EngineError {
        EngineError::of(Unfit::Later { cond: cond.to_owned(), var: var.to_owned() })
    }

    fn of(kind: Unfit) -> EngineError {
        EngineError { query: None, kind }
    }

    /// The same reason, for the stack engine forced on query `query`.
    pub(crate) fn forced(self, query: &str) -> EngineError {
        EngineError { query: Some(query.to_owned()), ..self }
    }

    /// The query the stack engine was forced on (`None` when the error
    /// only says what in a program the stack engine does not run).
    pub fn query(&self) -> Option<&str> {
        self.query.as_deref()
    }

    /// The variable whose element, negation or condition only the run
    /// engine runs, when the reason names one.
    pub fn variable(&self) -> Option<&str> {
        match &self.kind {
            Unfit::NotSingle(v)
            | Unfit::Negation(v)
            | Unfit::Trailing(v)
            | Unfit::ElementWindow(v)
            | Unfit::Remote(v) => Some(v),
            Unfit::OwnRegs { var, .. } | Unfit::Later { var, .. } => Some(var),
            Unfit::Strategy(_) | Unfit::Select | Unfit::Skip | Unfit::Prev => None,
        }
    }

    /// The text of the condition only the run engine checks, when the
    /// reason is a condition.
    pub fn condition(&self) -> Option<&str> {
        match &self.kind {
            Unfit::OwnRegs { cond, .. } | Unfit::Later { cond, .. } => Some(cond),
            _ => None,
        }
    }
}

impl fmt::Display for EngineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(q) = &self.query {
            write!(f, "query `{q}` cannot run on the stack engine: ")?;
        }
        match &self.kind {
            Unfit::Strategy(name) => write!(f, "the strategy is {name}, not skip-till-any-match"),
            Unfit::NotSingle(v) => {
                write!(f, "element `{v}` is not a single event (`+`, `*` and `?` need the run engine)")
            }
            Unfit::Negation(v) => write!(f, "`NOT {v}` needs the run engine"),
            Unfit::Trailing(v) => write!(f, "the trailing `NOT {v}` needs the run engine"),
            Unfit::Select => f.write_str("SELECT EARLIEST/LATEST needs the run engine"),
            Unfit::Skip => f.write_str("AFTER MATCH SKIP needs the run engine"),
            Unfit::ElementWindow(v) => write!(f, "the window on element `{v}` needs the run engine"),
            Unfit::Prev => f.write_str("PREV needs the run engine"),
            Unfit::Remote(v) => write!(f, "the remote condition of `{v}` needs the run engine"),
            Unfit::OwnRegs { cond, var } => {
                write!(f, "the condition `{cond}` reads more of `{var}` than the event itself")
            }
            Unfit::Later { cond, var } => write!(f, "the condition `{cond}` of `{var}` needs the event itself later"),
        }
    }
}

impl std::error::Error for EngineError {}

/// Why an engine's saved state cannot be restored: it does not fit the
/// query's program, it holds what no engine writes (made by hand, or by
/// another program), or it was saved from another engine.
///
/// # Examples
/// ```
/// use cep_core::Schema;
/// use cep_nfa::compile::{compile, Options};
/// use cep_nfa::select::{EngineChoice, QueryEngine};
/// use cep_nfa::stack::Construction;
/// use cep_core::Event;
/// let q = "PATTERN SEQ(A a, B b) WHERE skip-till-any-match WITHIN 10";
/// let prog = || compile(q, &mut Schema::new(), &Options::default()).unwrap().programs.remove(0);
/// let stack = QueryEngine::<Event>::new(prog(), EngineChoice::Stack, Construction::Direct).unwrap();
/// let mut run = QueryEngine::new(prog(), EngineChoice::Run, Construction::Direct).unwrap();
/// let err = run.restore(stack.snapshot()).unwrap_err();
/// assert!(err.is_other_engine());
/// assert_eq!(err.to_string(), format!("query `{}` was saved from another engine", err.query()));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RestoreError {
    query: String,
    kind: RestoreKind,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum RestoreKind {
    /// Its shape (elements, registers, history) is another program's.
    Unfit,
    /// It holds what no engine writes; the text says what.
    Inconsistent(String),
    /// It was saved from another engine than the one restoring it.
    OtherEngine,
}

impl RestoreError {
    pub(crate) fn unfit(query: &str) -> RestoreError {
        RestoreError { query: query.to_owned(), kind: RestoreKind::Unfit }
    }

    pub(crate) fn inconsistent(query: &str, what: impl Into<String>) -> RestoreError {
        RestoreError { query: query.to_owned(), kind: RestoreKind::Inconsistent(what.into()) }
    }

    pub(crate) fn other_engine(query: &str) -> RestoreError {
        RestoreError { query: query.to_owned(), kind: RestoreKind::OtherEngine }
    }

    /// The name of the query whose state it is.
    pub fn query(&self) -> &str {
        &self.query
    }

    /// What in the state no engine writes (`None` when the state is
    /// refused for another reason).
    pub fn inconsistency(&self) -> Option<&str> {
        match &self.kind {
            RestoreKind::Inconsistent(what) => Some(what),
            _ => None,
        }
    }

    /// Whether the state was saved from another engine.
    pub fn is_other_engine(&self) -> bool {
        self.kind == RestoreKind::OtherEngine
    }
}

impl fmt::Display for RestoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let q = &self.query;
        match &self.kind {
            RestoreKind::Unfit => write!(f, "the saved state of query `{q}` does not fit its program"),
            RestoreKind::Inconsistent(what) => write!(f, "the saved state of query `{q}` is inconsistent: {what}"),
            RestoreKind::OtherEngine => write!(f, "query `{q}` was saved from another engine"),
        }
    }
}

impl std::error::Error for RestoreError {}
